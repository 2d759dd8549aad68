//! Which CPU a machine has and how many CPUs and NUMA nodes it has, in one place: the
//! machine identity that a history's machine (`numalab_report::Fingerprint`, hashed) and
//! a home map's fingerprint (`numalab_records::home::Fingerprint`, compared) are both
//! made from, so that the two describe a CPU the same way ("MIDR 0x413fd0c1", "family 6
//! model 143 stepping 8").

use crate::machine::CpuIdentity;
use crate::record::Host;
use serde::{Deserialize, Serialize};

/// Which CPU: its vendor, its model name and its exact id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuId {
    /// CPU vendor ("GenuineIntel", "AuthenticAMD", an Arm implementer's name).
    pub vendor: Option<String>,
    /// CPU model name (on Arm the name from numalab's MIDR table).
    pub model_name: Option<String>,
    /// x86 "family F model M stepping S", or Arm "MIDR 0x..." (variant and revision
    /// included): see [`cpu_id`].
    pub cpu_id: Option<String>,
}

/// The exact id of a CPU: Arm "MIDR 0x413fd0c1" (the register rebuilt from its fields),
/// x86 "family 6 model 143 stepping 8" ("stepping ?" when the stepping is unknown);
/// `None` when neither the MIDR fields nor the x86 family and model are known.
pub fn cpu_id(cpu: &CpuIdentity) -> Option<String> {
    match (cpu.midr(), cpu.family, cpu.model, cpu.stepping) {
        (Some(midr), ..) => Some(format!("MIDR {midr:#010x}")),
        (None, Some(f), Some(m), s) => Some(format!(
            "family {f} model {m} stepping {}",
            s.map_or("?".to_string(), |s| s.to_string())
        )),
        _ => None,
    }
}

/// An Arm CPU from its MIDR fields as a machine description names it: the vendor is the
/// implementer's name ("implementer 0x.." for one numalab does not know), the model name
/// the MIDR's ([`CpuIdentity::arm_name`]: "Arm Neoverse N1 (MIDR 0x413fd0c1, r3p1)").
pub fn arm_cpu(
    implementer: u32,
    part: u32,
    variant: Option<u32>,
    revision: Option<u32>,
) -> CpuIdentity {
    let mut cpu = CpuIdentity {
        vendor: Some(implementer_vendor(implementer)),
        implementer: Some(implementer),
        part: Some(part),
        variant,
        revision,
        ..Default::default()
    };
    cpu.model_name = cpu.arm_name();
    cpu
}

/// The vendor an Arm MIDR implementer code names: its name from numalab's table
/// ([`crate::midr::IMPLEMENTERS`]), or "implementer 0x.." for one numalab does not know.
pub fn implementer_vendor(code: u32) -> String {
    crate::midr::implementer_name(code)
        .map(str::to_string)
        .unwrap_or_else(|| format!("implementer 0x{code:02x}"))
}

/// A number as `/proc/cpuinfo` and hwloc's infos write it: "0x41" (hexadecimal, also
/// "0X41") or "143", surrounding white space ignored.
pub fn cpuinfo_number(s: &str) -> Option<u32> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

impl CpuId {
    /// The CPU a machine description's identification describes.
    pub fn of(cpu: &CpuIdentity) -> CpuId {
        CpuId {
            vendor: cpu.vendor.clone(),
            model_name: cpu.model_name.clone(),
            cpu_id: cpu_id(cpu),
        }
    }

    /// The CPU of a machine with several kinds of CPU (hybrid and big.LITTLE parts, mixed
    /// steppings), in order of first appearance: each field the distinct values of the
    /// kinds joined by " + " (one kind: [`CpuId::of`]; none: every field unknown).
    pub fn of_kinds(kinds: &[CpuIdentity]) -> CpuId {
        let ids: Vec<CpuId> = kinds.iter().map(CpuId::of).collect();
        let join = |field: fn(&CpuId) -> Option<&String>| {
            let mut distinct: Vec<&str> = Vec::new();
            for v in ids.iter().filter_map(field) {
                if !distinct.contains(&v.as_str()) {
                    distinct.push(v);
                }
            }
            (!distinct.is_empty()).then(|| distinct.join(" + "))
        };
        CpuId {
            vendor: join(|c| c.vendor.as_ref()),
            model_name: join(|c| c.model_name.as_ref()),
            cpu_id: join(|c| c.cpu_id.as_ref()),
        }
    }
}

/// A machine's identity: which CPU, and how many cores, PUs (logical CPUs) and NUMA nodes;
/// counts a source does not know are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineIdentity {
    /// Which CPU.
    pub cpu: CpuId,
    /// Cores.
    pub cores: Option<u64>,
    /// PUs (hardware threads, the kernel's logical CPUs).
    pub pus: Option<u64>,
    /// NUMA nodes (with memory-only nodes).
    pub numa_nodes: Option<u64>,
}

impl MachineIdentity {
    /// The identity of the host an envelope describes: the CPU and counts of its machine
    /// description, the host's CPU model name where the description has none; what the
    /// envelope does not know stays `None`.
    pub fn of_host(host: &Host) -> MachineIdentity {
        let t = host.topology.as_ref();
        let mut cpu = t.map(|m| CpuId::of(&m.cpu)).unwrap_or_default();
        if cpu.model_name.is_none() {
            cpu.model_name = host.cpu_model.clone();
        }
        MachineIdentity {
            cpu,
            cores: t.map(|m| m.summary.cores as u64),
            pus: t.map(|m| m.summary.pus as u64),
            numa_nodes: t.map(|m| m.summary.numa_nodes as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n1() -> CpuIdentity {
        CpuIdentity {
            vendor: Some("Arm".into()),
            implementer: Some(0x41),
            part: Some(0xd0c),
            variant: Some(3),
            revision: Some(1),
            ..Default::default()
        }
    }

    fn spr(stepping: Option<u32>) -> CpuIdentity {
        CpuIdentity {
            vendor: Some("GenuineIntel".into()),
            model_name: Some("Intel(R) Xeon(R) Platinum 8480+".into()),
            family: Some(6),
            model: Some(143),
            stepping,
            ..Default::default()
        }
    }

    #[test]
    fn cpu_ids_of_arm_and_x86() {
        assert_eq!(cpu_id(&n1()).as_deref(), Some("MIDR 0x413fd0c1"));
        assert_eq!(
            cpu_id(&spr(Some(8))).as_deref(),
            Some("family 6 model 143 stepping 8")
        );
        assert_eq!(
            cpu_id(&spr(None)).as_deref(),
            Some("family 6 model 143 stepping ?")
        );
        assert_eq!(cpu_id(&CpuIdentity::default()), None);
        // Missing variant and revision count as 0, as the register would say.
        let bare = CpuIdentity {
            variant: None,
            revision: None,
            ..n1()
        };
        assert_eq!(cpu_id(&bare).as_deref(), Some("MIDR 0x410fd0c0"));
        let named = arm_cpu(0x41, 0xd0c, Some(3), Some(1));
        assert_eq!(cpu_id(&named).as_deref(), Some("MIDR 0x413fd0c1"));
        assert_eq!(named.vendor.as_deref(), Some("Arm"));
        assert_eq!(
            named.model_name.as_deref(),
            Some("Arm Neoverse N1 (MIDR 0x413fd0c1, r3p1)")
        );
        assert_eq!(
            arm_cpu(0x99, 1, None, None).vendor.as_deref(),
            Some("implementer 0x99")
        );
    }

    #[test]
    fn cpuinfo_numbers_in_both_bases_and_unknown_implementers_by_code() {
        assert_eq!(cpuinfo_number("0x41"), Some(0x41));
        assert_eq!(cpuinfo_number(" 0XD0C\n"), Some(0xd0c));
        assert_eq!(cpuinfo_number("143"), Some(143));
        assert_eq!(cpuinfo_number("0x"), None);
        assert_eq!(cpuinfo_number("r3p1"), None);
        assert_eq!(implementer_vendor(0x41), "Arm");
        assert_eq!(implementer_vendor(0xee), "implementer 0xee");
    }

    #[test]
    fn kinds_join_their_distinct_values() {
        assert_eq!(CpuId::of_kinds(&[n1(), n1()]), CpuId::of(&n1()));
        assert_eq!(CpuId::of_kinds(&[]), CpuId::default());
        let mixed = CpuId::of_kinds(&[spr(Some(7)), spr(Some(8)), spr(Some(7))]);
        assert_eq!(
            mixed.model_name.as_deref(),
            Some("Intel(R) Xeon(R) Platinum 8480+")
        );
        assert_eq!(
            mixed.cpu_id.as_deref(),
            Some("family 6 model 143 stepping 7 + family 6 model 143 stepping 8")
        );
    }

    #[test]
    fn a_host_without_a_description_keeps_its_model_name() {
        let mut h = Host::unknown("00");
        assert_eq!(MachineIdentity::of_host(&h), MachineIdentity::default());
        h.cpu_model = Some("Some CPU".into());
        let id = MachineIdentity::of_host(&h);
        assert_eq!(id.cpu.model_name.as_deref(), Some("Some CPU"));
        assert_eq!((id.cores, id.pus, id.numa_nodes), (None, None, None));
    }
}
