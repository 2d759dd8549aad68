//! A machine's hardware identity (the fingerprint): what has to be equal for two runs to
//! be on "the same machine", as `numalab db` stores it and the fleet report groups nodes
//! by. Kernel and firmware are not part of it; they are shown beside it.

use numalab_schema::record::Host;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A machine's hardware identity: what has to be equal for two runs to be on "the
/// same machine". Kernel and firmware are not part of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// 16 hex digits of SHA-256 over the other fields.
    pub fingerprint: String,
    /// CPU vendor ("GenuineIntel", "AuthenticAMD", an Arm implementer).
    pub vendor: Option<String>,
    /// CPU model name.
    pub model_name: Option<String>,
    /// x86 "family F model M stepping S", or Arm "MIDR 0x..." (variant and revision
    /// included).
    pub cpu_id: Option<String>,
    /// Cores.
    pub cores: Option<u64>,
    /// PUs (hardware threads).
    pub pus: Option<u64>,
    /// NUMA nodes (with memory-only nodes).
    pub numa_nodes: Option<u64>,
    /// Total memory rounded to the nearest GiB (exact sizes move by megabytes between
    /// boots and kernels).
    pub memory_gib: Option<u64>,
}

impl Fingerprint {
    /// The fingerprint of the host an envelope describes; fields the envelope does not
    /// know stay `None` (and are part of the hash as unknown).
    pub fn of(host: &Host) -> Fingerprint {
        let t = host.topology.as_ref();
        let cpu = t.map(|m| &m.cpu);
        let cpu_id = cpu.and_then(|c| match (c.midr(), c.family, c.model, c.stepping) {
            (Some(midr), ..) => Some(format!("MIDR {midr:#010x}")),
            (None, Some(f), Some(m), s) => Some(format!(
                "family {f} model {m} stepping {}",
                s.map_or("?".to_string(), |s| s.to_string())
            )),
            _ => None,
        });
        let memory: Option<u64> = t
            .map(|m| m.summary.numa.iter().map(|n| n.memory_bytes).sum())
            .filter(|b: &u64| *b > 0);
        let mut f = Fingerprint {
            fingerprint: String::new(),
            vendor: cpu.and_then(|c| c.vendor.clone()),
            model_name: cpu
                .and_then(|c| c.model_name.clone())
                .or_else(|| host.cpu_model.clone()),
            cpu_id,
            cores: t.map(|m| m.summary.cores as u64),
            pus: t.map(|m| m.summary.pus as u64),
            numa_nodes: t.map(|m| m.summary.numa_nodes as u64),
            memory_gib: memory.map(|b| (b as f64 / (1u64 << 30) as f64).round() as u64),
        };
        let text = serde_json::to_string(&(
            "numalab-machine-v1",
            &f.vendor,
            &f.model_name,
            &f.cpu_id,
            f.cores,
            f.pus,
            f.numa_nodes,
            f.memory_gib,
        ))
        .expect("fingerprint fields serialize");
        f.fingerprint = Sha256::digest(text.as_bytes())
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        f
    }

    /// "AuthenticAMD AMD EPYC (family 26 model 2 stepping 1), 2 cores, 2 PUs, 1 NUMA
    /// node, 16 GiB".
    pub fn description(&self) -> String {
        let mut s = [self.vendor.as_deref(), self.model_name.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        if s.is_empty() {
            s = "unknown CPU".into();
        }
        if let Some(id) = &self.cpu_id {
            s.push_str(&format!(" ({id})"));
        }
        let count = |n: Option<u64>, one: &str, many: &str| match n {
            Some(1) => format!("1 {one}"),
            Some(n) => format!("{n} {many}"),
            None => format!("? {many}"),
        };
        s.push_str(&format!(
            ", {}, {}, {}, {}",
            count(self.cores, "core", "cores"),
            count(self.pus, "PU", "PUs"),
            count(self.numa_nodes, "NUMA node", "NUMA nodes"),
            self.memory_gib
                .map_or("? GiB".to_string(), |g| format!("{g} GiB"))
        ));
        s
    }
}

/// The firmware as the machine description reports it (DMI BIOS vendor, version and
/// date), if known: shown beside the fingerprint, never part of it.
pub fn firmware_of(host: &Host) -> Option<String> {
    let infos = &host.topology.as_ref()?.infos;
    let parts: Vec<&str> = ["DMIBIOSVendor", "DMIBIOSVersion", "DMIBIOSDate"]
        .iter()
        .filter_map(|k| infos.get(*k).map(|s| s.as_str()))
        .filter(|s| !s.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_of_an_unknown_host_is_stable() {
        let h = Host::unknown("00");
        let a = Fingerprint::of(&h);
        assert_eq!(a, Fingerprint::of(&h));
        assert_eq!(a.fingerprint.len(), 16);
        assert!(a.description().starts_with("unknown CPU"));
        // The hash `numalab db` stored before the fingerprint moved here.
        assert_eq!(a.fingerprint, "acd4c20128d51a37");
    }
}
