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

use numalab_schema::identity::{CpuId, MachineIdentity};
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
    /// included): [`numalab_schema::identity::cpu_id`].
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
    /// The fingerprint of the host an envelope describes: its identity fields are the
    /// machine identity ([`MachineIdentity::of_host`], the one description of a machine's
    /// CPU and counts); fields the envelope does not know stay `None` (and are part of
    /// the hash as unknown).
    pub fn of(host: &Host) -> Fingerprint {
        let memory: Option<u64> = host
            .topology
            .as_ref()
            .map(|m| m.summary.numa.iter().map(|n| n.memory_bytes).sum())
            .filter(|b: &u64| *b > 0);
        Fingerprint::from_identity(MachineIdentity::of_host(host), memory.map(gib))
    }

    /// The fingerprint of a machine identity, with its memory in GiB if known.
    pub fn from_identity(identity: MachineIdentity, memory_gib: Option<u64>) -> Fingerprint {
        let MachineIdentity {
            cpu,
            cores,
            pus,
            numa_nodes,
        } = identity;
        let mut f = Fingerprint {
            fingerprint: String::new(),
            vendor: cpu.vendor,
            model_name: cpu.model_name,
            cpu_id: cpu.cpu_id,
            cores,
            pus,
            numa_nodes,
            memory_gib,
        };
        f.fingerprint = f.hash();
        f
    }

    /// The machine identity this fingerprint holds (what its hash covers).
    pub fn identity(&self) -> MachineIdentity {
        MachineIdentity {
            cpu: CpuId {
                vendor: self.vendor.clone(),
                model_name: self.model_name.clone(),
                cpu_id: self.cpu_id.clone(),
            },
            cores: self.cores,
            pus: self.pus,
            numa_nodes: self.numa_nodes,
        }
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

    /// The envelope's host of a fixture bundle.
    fn fixture_host(bundle: &str) -> Host {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../../tests/fixtures/bundles/{bundle}/results.jsonl"
        ));
        crate::load::load(&p).unwrap().bundle.envelope.host
    }

    #[test]
    fn hashes_of_real_hosts_are_pinned() {
        // Computed outside Rust from each envelope with the recipe of
        // `numalab-machine-v2` (histories key on these: they must not move).
        for (bundle, hash) in [
            ("vm-evaluate", "990bcd4f076a2985"),
            ("vm-quick-run-1", "e14a9a9635e1901d"),
            ("two-node-handmade", "b3e8016ebd6a17cc"),
            ("model-neoverse-v1", "876990c63ee7470a"),
        ] {
            let f = Fingerprint::of(&fixture_host(bundle));
            assert_eq!(f.fingerprint, hash, "{bundle}: {}", f.description());
            assert_eq!(Fingerprint::from_identity(f.identity(), f.memory_gib), f);
        }
        // An Arm CPU is its MIDR: `["numalab-machine-v2","Arm","Arm Neoverse N1",
        // "MIDR 0x413fd0c1",2,2,1]`.
        let mut h = fixture_host("vm-evaluate");
        h.topology.as_mut().unwrap().cpu = numalab_schema::machine::CpuIdentity {
            vendor: Some("Arm".into()),
            model_name: Some("Arm Neoverse N1".into()),
            implementer: Some(0x41),
            part: Some(0xd0c),
            variant: Some(3),
            revision: Some(1),
            ..Default::default()
        };
        let arm = Fingerprint::of(&h);
        assert_eq!(arm.cpu_id.as_deref(), Some("MIDR 0x413fd0c1"));
        assert_eq!(arm.fingerprint, "478fd63b223738f9");
    }

    #[test]
    fn memory_is_shown_but_not_hashed() {
        let mut h = fixture_host("vm-evaluate");
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
