//! A machine's hardware identity (the fingerprint): what has to be equal for two runs to
//! be on "the same machine", as `numalab db` stores it and the fleet report groups nodes
//! by. Kernel, firmware and the amount of memory are not part of it; they are shown
//! beside it.
//!
//! Why memory is not hashed: the size every bundle records is the kernel's MemTotal,
//! which moves with the kernel's reservations, with ballooning, and on VMs whose memory
//! map is filled lazily after boot (`deferred_init=lazy`: 15.4 GB at boot, 24.1 GB an
//! hour later on one 24 GiB VM), so one machine hashed to several "machines" and its
//! history split. A machine whose memory really changed (a DIMM lost) is still the same
//! machine whose figures changed: its history shows it, with the run's memory beside.
//! The fleet report, which compares nodes rather than runs over time, still groups on the
//! memory in GiB ([`Fingerprint::memory_gib`]) beside the hash.

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
    /// boots and kernels): shown, and part of the fleet's grouping key, but not of
    /// [`Fingerprint::fingerprint`] (see the module's text). `None` where unknown, and in
    /// a history's machine (memory is a run's: its `memory_bytes`).
    pub memory_gib: Option<u64>,
}

/// What the hash of [`Fingerprint::hash`] starts with: the version of its recipe. Version
/// 1 hashed the memory in GiB too; `numalab db` re-keys a history's machines when it
/// migrates it (layout 4).
pub const FINGERPRINT_RECIPE: &str = "numalab-machine-v2";

/// Bytes rounded to the nearest GiB, as the fingerprint shows memory.
pub fn gib(bytes: u64) -> u64 {
    (bytes as f64 / (1u64 << 30) as f64).round() as u64
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
            memory_gib: memory.map(gib),
        };
        f.fingerprint = f.hash();
        f
    }

    /// 16 hex digits of SHA-256 over the identity fields (vendor, model name, CPU id,
    /// cores, PUs, NUMA nodes; not memory), with [`FINGERPRINT_RECIPE`].
    pub fn hash(&self) -> String {
        let text = serde_json::to_string(&(
            FINGERPRINT_RECIPE,
            &self.vendor,
            &self.model_name,
            &self.cpu_id,
            self.cores,
            self.pus,
            self.numa_nodes,
        ))
        .expect("fingerprint fields serialize");
        Sha256::digest(text.as_bytes())
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// "AuthenticAMD AMD EPYC (family 26 model 2 stepping 1), 2 cores, 2 PUs, 1 NUMA
    /// node, 16 GiB".
    pub fn description(&self) -> String {
        format!(
            "{}, {}",
            self.identity_description(),
            self.memory_gib
                .map_or("? GiB".to_string(), |g| format!("{g} GiB"))
        )
    }

    /// What the hash covers, in words: "AuthenticAMD AMD EPYC (family 26 model 2
    /// stepping 1), 2 cores, 2 PUs, 1 NUMA node" (a history's machine description).
    pub fn identity_description(&self) -> String {
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
            ", {}, {}, {}",
            count(self.cores, "core", "cores"),
            count(self.pus, "PU", "PUs"),
            count(self.numa_nodes, "NUMA node", "NUMA nodes"),
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
        assert_eq!(a.fingerprint, a.hash());
        // The recipe's hash of an unknown host, pinned (SHA-256 of
        // `["numalab-machine-v2",null,null,null,null,null,null]`, computed outside Rust):
        // a change of the recipe changes every stored machine, so it needs a new recipe
        // version and a history migration.
        assert_eq!(a.fingerprint, "92776e1ec0d4f00f");
    }

    #[test]
    fn memory_is_shown_but_not_hashed() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/bundles/vm-evaluate/results.jsonl");
        let mut h = crate::load::load(&p).unwrap().bundle.envelope.host;
        let a = Fingerprint::of(&h);
        assert!(a.memory_gib.is_some() && a.cores.is_some());
        let m = h.topology.as_mut().unwrap();
        m.summary.numa[0].memory_bytes += 5 << 30;
        let b = Fingerprint::of(&h);
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_eq!(b.memory_gib, a.memory_gib.map(|g| g + 5));
        assert!(b
            .description()
            .ends_with(&format!("{} GiB", a.memory_gib.unwrap() + 5)));
        assert_eq!(a.identity_description(), b.identity_description());
        assert!(!a.identity_description().contains("GiB"));
        // Cores are hashed.
        h.topology.as_mut().unwrap().summary.cores -= 1;
        assert_ne!(Fingerprint::of(&h).fingerprint, a.fingerprint);
    }
}
