//! What the core PMU says it counts, read from sysfs under a root folder (normally `/`;
//! tests point it at fake trees), and which catalog events may therefore be opened.
//!
//! On Arm the kernel lists, under
//! `<root>/sys/bus/event_source/devices/<pmu>/events/`, every *common* architectural
//! event (numbers 0x00-0x3F and 0x4000-0x403F) whose bit is set in the PMU's
//! `PMCEID0/1_EL0` registers, one file per event holding e.g. `event=0x0011`. Those
//! registers are the hardware's (or the hypervisor's) own statement of which common
//! events it implements. IMPLEMENTATION DEFINED events (0x40-0xFF and above, e.g.
//! `LD_SPEC`, `BR_IMMED_SPEC`, `L1D_CACHE_RD`) are never listed there, even on silicon
//! that counts them. Opening an event the PMU does not implement still succeeds on
//! Arm (`PERF_TYPE_RAW` takes any number) and reads 0, so the list must be consulted
//! before anything is opened.
//!
//! The rule (docs/profile.md, "Which events are opened on Arm"):
//!
//! 1. a common event (0x00-0x3F, 0x4000-0x403F) is opened only if listed; unlisted, it
//!    is "not supported by this PMU" (PMCEID says so) and not opened;
//! 2. an IMPLEMENTATION DEFINED event is opened "on trust" when the PMU advertises
//!    every event the architecture requires of a PMUv3 implementation
//!    ([`REQUIRED_COMMON`]: the common set of real silicon), and is "not supported"
//!    when it does not (an emulated or minimal PMU, e.g. QEMU's, which lists only
//!    `cpu_cycles`, `stall_frontend`, `stall_backend` and, with `-icount`,
//!    `inst_retired`): such a PMU has no reason to count events it does not even list.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

// What a profile records of the core PMU lives in numalab-records.
pub use numalab_records::pmu::{is_common, Advertised, CorePmu, REQUIRED_COMMON};

/// Whether a PMU's name is that of an Arm core PMU (`armv8_pmuv3`, `armv8_pmuv3_0`,
/// `armv8_cortex_a72`, `armv9_neoverse_n2`, ...), as the kernel's arm_pmuv3 driver
/// names them.
pub fn is_core_pmu_name(name: &str) -> bool {
    name.starts_with("armv8_") || name.starts_with("armv9_")
}

/// The event number in a sysfs event file (`event=0x0011`, `event=0x11,umask=0x1`).
pub fn parse_event_term(text: &str) -> Option<u64> {
    text.trim().split(',').find_map(|t| {
        let v = t.trim().strip_prefix("event=")?;
        match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => v.parse().ok(),
        }
    })
}

/// The Arm core PMUs under a root folder.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PmuSysfs {
    /// Core PMUs, sorted by name (several on big.LITTLE systems).
    pub core: Vec<CorePmu>,
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Reads the Arm core PMUs under `root` (`<root>/sys/bus/event_source/devices`). A
/// missing or unreadable tree gives an empty list (nothing known, nothing filtered).
pub fn read(root: &Path) -> PmuSysfs {
    let devices: PathBuf = root.join("sys/bus/event_source/devices");
    let Ok(dir) = std::fs::read_dir(&devices) else {
        return PmuSysfs::default();
    };
    let mut core = Vec::new();
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !is_core_pmu_name(&name) {
            continue;
        }
        let path = entry.path();
        let pmu_type = read_trim(&path.join("type")).and_then(|t| t.parse().ok());
        let cpus = read_trim(&path.join("cpus")).or_else(|| read_trim(&path.join("cpumask")));
        // An armv8_* entry without a type is not a PMU the kernel registered.
        if pmu_type.is_none() && cpus.is_none() {
            continue;
        }
        let mut events = BTreeMap::new();
        if let Ok(ev) = std::fs::read_dir(path.join("events")) {
            for e in ev.flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                if let Some(code) = read_trim(&e.path()).as_deref().and_then(parse_event_term) {
                    events.insert(n, code);
                }
            }
        }
        let mut caps = BTreeMap::new();
        if let Ok(cd) = std::fs::read_dir(path.join("caps")) {
            for c in cd.flatten() {
                if let Some(v) = read_trim(&c.path()) {
                    caps.insert(c.file_name().to_string_lossy().to_string(), v);
                }
            }
        }
        core.push(CorePmu {
            name,
            pmu_type,
            cpus,
            events,
            caps,
        });
    }
    core.sort_by(|a, b| a.name.cmp(&b.name));
    PmuSysfs { core }
}

impl PmuSysfs {
    /// The core PMU raw events are opened on: the first by name. On heterogeneous
    /// (big.LITTLE) systems there are several; a per-task counter on one of them counts
    /// only while the task runs on that PMU's CPUs (see [`PmuSysfs::heterogeneous`]).
    pub fn primary(&self) -> Option<&CorePmu> {
        self.core.first()
    }

    /// A warning text when there is more than one core PMU.
    pub fn heterogeneous(&self) -> Option<String> {
        if self.core.len() < 2 {
            return None;
        }
        let p = self.primary()?;
        let list: Vec<String> = self
            .core
            .iter()
            .map(|c| format!("{} (CPUs {})", c.name, c.cpus.as_deref().unwrap_or("?")))
            .collect();
        Some(format!(
            "{} core PMUs ({}): raw events are opened on {} only and count only while the command runs on its CPUs {}",
            self.core.len(),
            list.join(", "),
            p.name,
            p.cpus.as_deref().unwrap_or("?")
        ))
    }
}

#[cfg(test)]
pub(crate) mod fake {
    //! Fake sysfs trees for tests.
    use std::path::Path;

    /// Writes a core PMU `name` with `type`, `cpus` and `events` (sysfs name, number).
    pub fn write_pmu(root: &Path, name: &str, ty: u32, cpus: &str, events: &[(&str, u64)]) {
        let d = root.join("sys/bus/event_source/devices").join(name);
        std::fs::create_dir_all(d.join("events")).unwrap();
        std::fs::write(d.join("type"), format!("{ty}\n")).unwrap();
        std::fs::write(d.join("cpus"), format!("{cpus}\n")).unwrap();
        for (n, c) in events {
            std::fs::write(d.join("events").join(n), format!("event=0x{c:04x}\n")).unwrap();
        }
    }

    /// QEMU `-cpu neoverse-n1` as seen in the guest (with `-icount`: + inst_retired).
    pub fn emulated_n1(root: &Path, icount: bool) {
        let mut ev = vec![
            ("cpu_cycles", 0x11),
            ("stall_frontend", 0x23),
            ("stall_backend", 0x24),
        ];
        if icount {
            ev.push(("inst_retired", 0x08));
        }
        write_pmu(root, "armv8_pmuv3", 8, "0-1", &ev);
        // Other PMUs beside it are ignored.
        let sw = root.join("sys/bus/event_source/devices/software");
        std::fs::create_dir_all(&sw).unwrap();
        std::fs::write(sw.join("type"), "1\n").unwrap();
    }

    /// The common events a real Neoverse N1 lists (kernel names, PMCEID0/1 bits set).
    pub const REAL_N1: &[(&str, u64)] = &[
        ("sw_incr", 0x00),
        ("l1i_cache_refill", 0x01),
        ("l1i_tlb_refill", 0x02),
        ("l1d_cache_refill", 0x03),
        ("l1d_cache", 0x04),
        ("l1d_tlb_refill", 0x05),
        ("inst_retired", 0x08),
        ("exc_taken", 0x09),
        ("exc_return", 0x0a),
        ("cid_write_retired", 0x0b),
        ("br_mis_pred", 0x10),
        ("cpu_cycles", 0x11),
        ("br_pred", 0x12),
        ("mem_access", 0x13),
        ("l1i_cache", 0x14),
        ("l1d_cache_wb", 0x15),
        ("l2d_cache", 0x16),
        ("l2d_cache_refill", 0x17),
        ("l2d_cache_wb", 0x18),
        ("bus_access", 0x19),
        ("memory_error", 0x1a),
        ("inst_spec", 0x1b),
        ("ttbr_write_retired", 0x1c),
        ("bus_cycles", 0x1d),
        ("l2d_cache_allocate", 0x20),
        ("br_retired", 0x21),
        ("br_mis_pred_retired", 0x22),
        ("stall_frontend", 0x23),
        ("stall_backend", 0x24),
        ("l1d_tlb", 0x25),
        ("l1i_tlb", 0x26),
        ("l3d_cache_allocate", 0x29),
        ("l3d_cache_refill", 0x2a),
        ("l3d_cache", 0x2b),
        ("l2d_tlb_refill", 0x2d),
        ("l2d_tlb", 0x2f),
        ("remote_access", 0x31),
        ("dtlb_walk", 0x34),
        ("itlb_walk", 0x35),
        ("ll_cache_rd", 0x36),
        ("ll_cache_miss_rd", 0x37),
    ];

    /// A real Neoverse N1's core PMU (Ampere Altra: `armv8_pmuv3_0`, type 8 is typical).
    pub fn real_n1(root: &Path) {
        write_pmu(root, "armv8_pmuv3_0", 8, "0-79", REAL_N1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_terms() {
        assert_eq!(parse_event_term("event=0x0011\n"), Some(0x11));
        assert_eq!(parse_event_term("event=0x4004"), Some(0x4004));
        assert_eq!(parse_event_term("umask=0x1,event=0x24"), Some(0x24));
        assert_eq!(parse_event_term("event=17"), Some(17));
        assert_eq!(parse_event_term("config=0x11"), None);
        assert_eq!(parse_event_term("event=0xzz"), None);
    }

    #[test]
    fn emulated_n1_lists_three_events_and_trusts_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        fake::emulated_n1(d.path(), false);
        let s = read(d.path());
        assert_eq!(s.core.len(), 1, "{s:?}");
        let p = s.primary().unwrap();
        assert_eq!(p.name, "armv8_pmuv3");
        assert_eq!(p.pmu_type, Some(8));
        assert_eq!(p.events.len(), 3);
        assert!(!p.common_set_complete());
        assert_eq!(p.advertises(0x11), Advertised::Listed);
        assert_eq!(p.advertises(0x23), Advertised::Listed);
        // Common but not listed: PMCEID says no.
        assert_eq!(p.advertises(0x21), Advertised::NotListed); // BR_RETIRED
        assert_eq!(p.advertises(0x08), Advertised::NotListed); // no -icount
                                                               // IMPLEMENTATION DEFINED on a PMU without the required set: not trusted.
        assert_eq!(p.advertises(0x70), Advertised::NotListed); // LD_SPEC
        assert!(p.why_not(0x21).contains("not advertised by armv8_pmuv3"));
        assert!(p.why_not(0x70).contains("lists only 3 events"));
        assert!(s.heterogeneous().is_none());
        fake::emulated_n1(d.path(), true);
        assert_eq!(
            read(d.path()).primary().unwrap().advertises(0x08),
            Advertised::Listed
        );
    }

    #[test]
    fn real_n1_lists_the_common_set_and_impdef_events_count_on_trust() {
        let d = tempfile::tempdir().unwrap();
        fake::real_n1(d.path());
        std::fs::create_dir_all(
            d.path()
                .join("sys/bus/event_source/devices/armv8_pmuv3_0/caps"),
        )
        .unwrap();
        std::fs::write(
            d.path()
                .join("sys/bus/event_source/devices/armv8_pmuv3_0/caps/slots"),
            "8\n",
        )
        .unwrap();
        let s = read(d.path());
        let p = s.primary().unwrap();
        assert!(p.common_set_complete());
        assert_eq!(p.caps.get("slots").map(String::as_str), Some("8"));
        assert_eq!(p.advertises(0x21), Advertised::Listed);
        assert_eq!(p.advertises(0x70), Advertised::OnTrust); // LD_SPEC
        assert_eq!(p.advertises(0x40), Advertised::OnTrust); // L1D_CACHE_RD
                                                             // A common event the N1 does not implement (0x3A OP_RETIRED is Armv8.4+... not
                                                             // listed here): PMCEID says no, so no trust.
        assert_eq!(p.advertises(0x3a), Advertised::NotListed);
    }

    #[test]
    fn big_little_is_named() {
        let d = tempfile::tempdir().unwrap();
        fake::write_pmu(d.path(), "armv8_cortex_a53", 8, "0-3", fake::REAL_N1);
        fake::write_pmu(d.path(), "armv8_cortex_a72", 9, "4-5", fake::REAL_N1);
        let s = read(d.path());
        assert_eq!(s.core.len(), 2);
        assert_eq!(s.primary().unwrap().name, "armv8_cortex_a53");
        let w = s.heterogeneous().unwrap();
        assert!(w.contains("2 core PMUs"), "{w}");
        assert!(w.contains("CPUs 0-3"), "{w}");
    }

    #[test]
    fn missing_tree_is_empty() {
        assert!(read(Path::new("/nonexistent-numalab-root")).core.is_empty());
    }
}
