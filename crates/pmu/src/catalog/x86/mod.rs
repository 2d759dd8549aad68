//! x86 vendor catalogs: Intel Xeon from Intel's perfmon files (events, TMA metrics and
//! their hierarchy and thresholds), AMD Zen from numalab's own files written from AMD's
//! Processor Programming References; which one a CPU gets by CPUID family and model.
//!
//! Both start from the x86-64 generic catalog (the kernel's generic events and
//! numalab's first-pass metrics) and add the model's own events, metrics and the
//! vendor's top-down hierarchy ([`VendorTree::nodes`]).
//!
//! Intel's formulas are evaluated as Intel writes them, with two decisions made when
//! the files are loaded: `#SMT_on` (HYPERTHREADING_ON) is 0, because numalab counts the
//! threads of one process, not whole cores, so the per-thread branch of each formula
//! applies (the core-wide `_ANY` branch would add the sibling hyperthread's work); and
//! `EVENT:retire_latency` (Granite Rapids) is the mean Intel publishes for the event
//! (its retire-latency file), as perf uses when the latency is not sampled.

use super::*;

mod amd;
mod intel;
mod vendor_tree;

pub(super) use amd::amd_note;
use amd::{detect_amd, load_amd};
use intel::load_intel;
pub use intel::{is_topdown_metric, own_threshold, SLOTS_CONFIG};
/// One Intel generation: its perfmon files and the CPUID models it covers.
pub(super) struct IntelFiles {
    pub(super) id: &'static str,
    pub(super) name: &'static str,
    core: &'static str,
    metrics: &'static str,
    retire: Option<&'static str>,
    /// CPUID family 6 models.
    models: &'static [u32],
    /// Steppings covered (model 0x55 is Skylake-SP up to stepping 4, Cascade Lake and
    /// Cooper Lake from 5; Intel's mapfile.csv).
    steppings: Option<(u32, u32)>,
}

pub(super) const INTEL: &[IntelFiles] = &[
    IntelFiles {
        id: "intel-skx",
        name: "Intel Xeon Scalable 1st gen (Skylake-SP)",
        core: include_str!("../../../data/x86/intel/skx-core.json"),
        metrics: include_str!("../../../data/x86/intel/skx-metrics.json"),
        retire: None,
        models: &[0x55],
        steppings: Some((0, 4)),
    },
    IntelFiles {
        id: "intel-clx",
        name: "Intel Xeon Scalable 2nd/3rd gen (Cascade Lake, Cooper Lake)",
        core: include_str!("../../../data/x86/intel/clx-core.json"),
        metrics: include_str!("../../../data/x86/intel/clx-metrics.json"),
        retire: None,
        models: &[0x55],
        steppings: Some((5, 0xf)),
    },
    IntelFiles {
        id: "intel-icx",
        name: "Intel Xeon Scalable 3rd gen (Ice Lake-SP)",
        core: include_str!("../../../data/x86/intel/icx-core.json"),
        metrics: include_str!("../../../data/x86/intel/icx-metrics.json"),
        retire: None,
        models: &[0x6a, 0x6c],
        steppings: None,
    },
    IntelFiles {
        id: "intel-spr",
        name: "Intel Xeon Scalable 4th gen (Sapphire Rapids)",
        core: include_str!("../../../data/x86/intel/spr-core.json"),
        metrics: include_str!("../../../data/x86/intel/spr-metrics.json"),
        retire: None,
        models: &[0x8f],
        steppings: None,
    },
    IntelFiles {
        id: "intel-emr",
        name: "Intel Xeon Scalable 5th gen (Emerald Rapids)",
        core: include_str!("../../../data/x86/intel/emr-core.json"),
        metrics: include_str!("../../../data/x86/intel/emr-metrics.json"),
        retire: None,
        models: &[0xcf],
        steppings: None,
    },
    IntelFiles {
        id: "intel-gnr",
        name: "Intel Xeon 6 P-core (Granite Rapids)",
        core: include_str!("../../../data/x86/intel/gnr-core.json"),
        metrics: include_str!("../../../data/x86/intel/gnr-metrics.json"),
        retire: Some(include_str!(
            "../../../data/x86/intel/gnr-retire-latency.json"
        )),
        models: &[0xad, 0xae],
        steppings: None,
    },
    IntelFiles {
        id: "intel-srf",
        name: "Intel Xeon 6 E-core (Sierra Forest)",
        core: include_str!("../../../data/x86/intel/srf-core.json"),
        metrics: include_str!("../../../data/x86/intel/srf-metrics.json"),
        retire: None,
        models: &[0xaf],
        steppings: None,
    },
];

/// One AMD generation: numalab's data file.
pub(super) struct AmdFiles {
    pub(super) id: &'static str,
    text: &'static str,
}

pub(super) const AMD: &[AmdFiles] = &[
    AmdFiles {
        id: "amd-zen2",
        text: include_str!("../../../data/x86/amd/zen2.toml"),
    },
    AmdFiles {
        id: "amd-zen3",
        text: include_str!("../../../data/x86/amd/zen3.toml"),
    },
    AmdFiles {
        id: "amd-zen4",
        text: include_str!("../../../data/x86/amd/zen4.toml"),
    },
    AmdFiles {
        id: "amd-zen5",
        text: include_str!("../../../data/x86/amd/zen5.toml"),
    },
];

/// Product and short names accepted by `--cpu-model` for the x86 catalogs.
pub(super) const X86_PRODUCTS: &[(&str, &str)] = &[
    ("skx", "intel-skx"),
    ("skylake-sp", "intel-skx"),
    ("skylake-x", "intel-skx"),
    ("clx", "intel-clx"),
    ("cascade-lake", "intel-clx"),
    ("cascadelake", "intel-clx"),
    ("cooper-lake", "intel-clx"),
    ("icx", "intel-icx"),
    ("ice-lake-sp", "intel-icx"),
    ("icelake-x", "intel-icx"),
    ("spr", "intel-spr"),
    ("sapphire-rapids", "intel-spr"),
    ("sapphirerapids", "intel-spr"),
    ("emr", "intel-emr"),
    ("emerald-rapids", "intel-emr"),
    ("emeraldrapids", "intel-emr"),
    ("gnr", "intel-gnr"),
    ("granite-rapids", "intel-gnr"),
    ("graniterapids", "intel-gnr"),
    ("srf", "intel-srf"),
    ("sierra-forest", "intel-srf"),
    ("sierraforest", "intel-srf"),
    ("zen2", "amd-zen2"),
    ("rome", "amd-zen2"),
    ("zen3", "amd-zen3"),
    ("milan", "amd-zen3"),
    ("zen4", "amd-zen4"),
    ("genoa", "amd-zen4"),
    ("bergamo", "amd-zen4"),
    ("siena", "amd-zen4"),
    ("zen5", "amd-zen5"),
    ("turin", "amd-zen5"),
];

/// Ids of the x86 vendor catalogs.
pub fn x86_ids() -> Vec<&'static str> {
    INTEL
        .iter()
        .map(|i| i.id)
        .chain(AMD.iter().map(|a| a.id))
        .collect()
}

/// The `--cpu-model` names of the x86 vendor catalogs (product or short name, catalog).
pub fn x86_products() -> &'static [(&'static str, &'static str)] {
    X86_PRODUCTS
}

// ---------------------------------------------------------------------------------
// Detection.

/// The x86 vendor catalog for a CPUID vendor, family, model and stepping: `Ok(id)`, or
/// `Err(why not)` (the sentence for the CPU match when the model has no catalog).
pub(super) fn detect_x86(
    vendor: Option<&str>,
    family: Option<u32>,
    model: Option<u32>,
    stepping: Option<u32>,
) -> Result<&'static str, String> {
    let (Some(f), Some(m)) = (family, model) else {
        return Err("no CPUID family/model known: no vendor metrics".into());
    };
    let none = || format!("no vendor metrics for family {f} model {m} (0x{f:x}/0x{m:02x})");
    match vendor {
        Some("GenuineIntel") if f == 6 => {
            let mut hits = INTEL.iter().filter(|i| i.models.contains(&m));
            let all: Vec<&IntelFiles> = hits.by_ref().collect();
            match (all.as_slice(), stepping) {
                ([], _) => Err(none()),
                ([one], _) => Ok(one.id),
                (several, Some(s)) => several
                    .iter()
                    .find(|i| i.steppings.is_some_and(|(lo, hi)| (lo..=hi).contains(&s)))
                    .map(|i| i.id)
                    .ok_or_else(none),
                // Model 0x55 without a stepping: Skylake-SP's files (the TMA tree of
                // Cascade Lake is the same).
                (several, None) => Ok(several[0].id),
            }
        }
        Some("AuthenticAMD") => detect_amd(f, m).ok_or_else(none),
        _ => Err(none()),
    }
}

/// Loads an x86 vendor catalog by id; None when `id` is not one.
pub(super) fn load_x86_vendor(id: &str) -> Option<Result<Catalog, CatalogError>> {
    if let Some(i) = INTEL.iter().find(|i| i.id == id) {
        return Some(load_intel(i));
    }
    AMD.iter().find(|a| a.id == id).map(load_amd)
}

// ---------------------------------------------------------------------------------
// The generic part every x86 catalog starts from.

struct Base {
    events: Vec<EventDef>,
    methodology: Vec<MetricDef>,
    software: Vec<MetricDef>,
    groups: Vec<GroupDef>,
    tree: TreeDef,
    fixed: Vec<String>,
}

fn base() -> Result<Base, CatalogError> {
    let f = "data/x86/generic.toml";
    let x = parse_toml(f, X86_EVENTS_TOML)?;
    let head = x.catalog.ok_or_else(|| data_err(f, "no [catalog]"))?;
    let sw = parse_toml("data/linux/software.toml", SOFTWARE_TOML)?;
    let m = parse_toml("data/metrics/x86.toml", X86_METRICS_TOML)?;
    let mut events = toml_events(f, x.event)?;
    events.extend(toml_events("data/linux/software.toml", sw.event)?);
    let methodology = toml_metrics("data/metrics/x86.toml", m.metric, MetricOrigin::Methodology)?;
    let software = toml_metrics(
        "data/linux/software.toml",
        sw.metric,
        MetricOrigin::Software,
    )?;
    let mut groups = groups_from(m.group, &methodology, MetricOrigin::Methodology);
    groups.extend(groups_from(sw.group, &software, MetricOrigin::Software));
    let tree = m
        .tree
        .ok_or_else(|| data_err("data/metrics/x86.toml", "no [tree]"))?;
    Ok(Base {
        events,
        methodology,
        software,
        groups,
        tree,
        fixed: head.fixed,
    })
}

/// Adds `e` unless an event with the same encoding exists; either way returns the
/// canonical name (an existing event's, with `e`'s name added as an alias).
fn add_event(events: &mut Vec<EventDef>, e: EventDef) -> String {
    if let Some(old) = events.iter_mut().find(|o| o.encoding == e.encoding) {
        let lower = e.name.to_ascii_lowercase();
        if old.name.to_ascii_lowercase() != lower
            && !old.aliases.iter().any(|a| a.to_ascii_lowercase() == lower)
        {
            old.aliases.push(e.name);
        }
        return old.name.clone();
    }
    let name = e.name.clone();
    events.push(e);
    name
}

/// The kernel's x86 raw config: event | umask << 8 | edge << 18 | any << 21 |
/// inv << 23 | cmask << 24 (AMD: event bits 8-11 go to config bits 32-35).
fn x86_config(event: u64, umask: u64, edge: bool, any: bool, inv: bool, cmask: u64) -> u64 {
    (event & 0xff)
        | ((event >> 8) & 0xf) << 32
        | (umask & 0xff) << 8
        | u64::from(edge) << 18
        | u64::from(any) << 21
        | u64::from(inv) << 23
        | (cmask & 0xff) << 24
}

#[cfg(test)]
mod tests;
