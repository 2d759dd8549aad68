//! Event catalogs as data: which events a CPU has (name, code), which metrics are
//! derived from them (formula), how metrics are grouped, and the decision tree.
//!
//! The Arm Neoverse cores of the `ARM` table ([`arm_cores_text`]) come from Arm's own
//! machine-readable files (telemetry specifications: events, metrics, groups, topdown
//! methodology; PMU event files: the number of programmable counters where they give it),
//! shipped inside the binary with their Apache-2.0 licence (`data/arm/`). x86-64 uses the kernel's generic hardware and cache events
//! (`data/x86/generic.toml`) plus raw codes. The methodology's own metrics, groups and
//! decision tree are one data file per architecture (`data/metrics/`), and the Linux
//! software events one more (`data/linux/software.toml`). Every file is checked when it
//! is loaded (formulas parse, name only events that exist, names are unique) and a test
//! loads every shipped catalog, so a data error cannot reach a report.
//!
//! This module holds the catalog itself (events, metrics, groups, trees, lookups);
//! `files` the shipped files' formats and their loaders, `checks` the building and
//! checking of a catalog from its parts, `detect` which catalog a CPU gets, [`perf`] a
//! catalog from the installed perf's listing for a CPU numalab ships none for.

use crate::expr::{self, Expr};
use numalab_schema::machine::CpuIdentity;
use numalab_schema::{Classify, ErrorClass};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

// The catalog's part of records (the CPU match, metric origins) lives in numalab-records.
pub use numalab_records::pmu::{CpuMatch, MetricOrigin};

mod checks;
mod detect;
mod files;
pub mod perf;
#[cfg(test)]
mod tests;
mod x86;

use checks::*;
pub use detect::{detect, load_match, midr_from_sysfs, resolve_model};
use files::*;
pub use files::{load, load_arm_generic, load_x86};
pub use x86::{is_topdown_metric, own_threshold, x86_ids, x86_products, SLOTS_CONFIG};

const SOFTWARE_TOML: &str = include_str!("../../data/linux/software.toml");
const X86_EVENTS_TOML: &str = include_str!("../../data/x86/generic.toml");
const ARM_METRICS_TOML: &str = include_str!("../../data/metrics/arm.toml");
const X86_METRICS_TOML: &str = include_str!("../../data/metrics/x86.toml");
const ARM_CPUS_JSON: &str = include_str!("../../data/arm/pmu/cpus.json");

struct ArmFiles {
    id: &'static str,
    /// The core's name, as both of Arm's files spell it (checked when loading).
    name: &'static str,
    telemetry: &'static str,
    pmu: &'static str,
    /// Programmable counters, for a core whose PMU event file does not give the number
    /// (`None` when it does; both given and different is a data error).
    counters: Option<usize>,
}

// Neoverse N3, V2 and V3: ARM-software/data's PMU event files give no counter count; Arm's
// Streamline daemon lists 6 (`pmnc_counters="6"` in ARM-software/gator daemon/pmus.xml,
// commit f0774012f36d, cpuids 0x41d8e, 0x41d4f, 0x41d84), as does libpfm4 for V2 and V3.
const ARM: &[ArmFiles] = &[
    ArmFiles {
        id: "neoverse-n1",
        name: "Neoverse N1",
        telemetry: include_str!("../../data/arm/telemetry/neoverse-n1.json"),
        pmu: include_str!("../../data/arm/pmu/neoverse-n1.json"),
        counters: None,
    },
    ArmFiles {
        id: "neoverse-n2",
        name: "Neoverse N2",
        telemetry: include_str!("../../data/arm/telemetry/neoverse-n2.json"),
        pmu: include_str!("../../data/arm/pmu/neoverse-n2.json"),
        counters: None,
    },
    ArmFiles {
        id: "neoverse-n3",
        name: "Neoverse N3",
        telemetry: include_str!("../../data/arm/telemetry/neoverse-n3.json"),
        pmu: include_str!("../../data/arm/pmu/neoverse-n3.json"),
        counters: Some(6),
    },
    ArmFiles {
        id: "neoverse-v1",
        name: "Neoverse V1",
        telemetry: include_str!("../../data/arm/telemetry/neoverse-v1.json"),
        pmu: include_str!("../../data/arm/pmu/neoverse-v1.json"),
        counters: None,
    },
    ArmFiles {
        id: "neoverse-v2",
        name: "Neoverse V2",
        telemetry: include_str!("../../data/arm/telemetry/neoverse-v2.json"),
        pmu: include_str!("../../data/arm/pmu/neoverse-v2.json"),
        counters: Some(6),
    },
    ArmFiles {
        id: "neoverse-v3",
        name: "Neoverse V3",
        telemetry: include_str!("../../data/arm/telemetry/neoverse-v3.json"),
        pmu: include_str!("../../data/arm/pmu/neoverse-v3.json"),
        counters: Some(6),
    },
];

/// The catalog id of the x86-64 generic catalog.
pub const X86_ID: &str = "x86-64";

/// The catalog id for Arm cores without vendor event files: the kernel's generic events.
pub const ARM_GENERIC_ID: &str = "arm-generic";

/// Ids of every shipped catalog.
pub fn shipped() -> Vec<&'static str> {
    let mut v: Vec<&str> = ARM.iter().map(|a| a.id).collect();
    v.push(X86_ID);
    v.extend(x86_ids());
    v.push(ARM_GENERIC_ID);
    v
}

/// The Arm cores with vendor files, in words: "Neoverse N1, N2, N3, V1, V2 and V3" (from
/// the table, so messages and help cannot go stale).
pub fn arm_cores_text() -> String {
    cores_in_words(&ARM.iter().map(|a| a.name).collect::<Vec<_>>())
}

/// "Neoverse N2, V1 and V2": core names as a list in words, the family said once.
fn cores_in_words(names: &[&str]) -> String {
    let names = names.to_vec();
    let family = names
        .first()
        .and_then(|n| n.split_once(' '))
        .map(|(f, _)| f);
    let (prefix, short): (String, Vec<&str>) = match family {
        Some(f) if names.iter().all(|n| n.starts_with(&format!("{f} "))) => (
            format!("{f} "),
            names.iter().map(|n| &n[f.len() + 1..]).collect(),
        ),
        _ => (String::new(), names),
    };
    match short.split_last() {
        Some((last, rest)) if !rest.is_empty() => {
            format!("{prefix}{} and {last}", rest.join(", "))
        }
        _ => format!("{prefix}{}", short.join("")),
    }
}

/// Products accepted by `--cpu-model` and the catalog each gets (Arm and generic, then
/// x86 vendor models), in the order `resolve_model` looks them up.
pub fn products() -> Vec<(&'static str, &'static str)> {
    PRODUCTS.iter().chain(x86_products()).copied().collect()
}

/// Products whose cores are a shipped catalog (for `--cpu-model`). Sources for the cores
/// added with N3/V2/V3: Graviton3E V1, Graviton4 V2 (The Next Platform, 2023-11-28; WikiChip),
/// Graviton5 V3 (AWS re:Invent 2025, Tom's Hardware), Grace V2 (NVIDIA's Grace documentation
/// cites the Neoverse V2 errata), Axion V2 (Google Cloud, 2024-04-09), Cobalt 100 N2
/// (ServeTheHome), Cobalt 200 V3 (Microsoft, Arm CSS V3). The MIDR names the core, not the
/// product, so these only spare users the lookup.
const PRODUCTS: &[(&str, &str)] = &[
    ("ampere-altra", "neoverse-n1"),
    ("altra", "neoverse-n1"),
    ("altra-max", "neoverse-n1"),
    ("graviton2", "neoverse-n1"),
    ("graviton3", "neoverse-v1"),
    ("graviton3e", "neoverse-v1"),
    ("graviton4", "neoverse-v2"),
    ("graviton5", "neoverse-v3"),
    ("grace", "neoverse-v2"),
    ("axion", "neoverse-v2"),
    ("cobalt-100", "neoverse-n2"),
    ("cobalt-200", "neoverse-v3"),
    ("n1", "neoverse-n1"),
    ("n2", "neoverse-n2"),
    ("n3", "neoverse-n3"),
    ("v1", "neoverse-v1"),
    ("v2", "neoverse-v2"),
    ("v3", "neoverse-v3"),
    ("x86", X86_ID),
    ("x86_64", X86_ID),
    ("intel", X86_ID),
    ("amd", X86_ID),
];

/// Why a catalog, an event or a metric could not be found or loaded.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// A name that is not in the catalog.
    #[error("unknown {what} {name:?} for {catalog}{}", suggestion_text(.suggestions))]
    Unknown {
        /// "event", "metric or metric set", "CPU model".
        what: String,
        /// The name as given.
        name: String,
        /// The catalog searched.
        catalog: String,
        /// Close matches.
        suggestions: Vec<String>,
    },
    /// The CPU is recognised but no event file is shipped for it.
    #[error("{0}")]
    NoCatalog(String),
    /// A shipped data file is inconsistent (a bug in numalab's data).
    #[error("data file {file}: {message}")]
    Data {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
}

fn suggestion_text(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", s.join(", "))
    }
}

impl Classify for CatalogError {
    fn class(&self) -> ErrorClass {
        match self {
            CatalogError::Unknown { .. } => ErrorClass::Usage,
            CatalogError::NoCatalog(_) => ErrorClass::Unsupported,
            CatalogError::Data { .. } => ErrorClass::Runtime,
        }
    }
}

/// The architecture of a catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    /// Arm (AArch64), events by PMUv3 event number.
    Arm,
    /// x86-64, events through the kernel's generic events.
    X86,
    /// Any architecture without a vendor catalog (an Arm core numalab has no event
    /// files for): the kernel's generic hardware and cache events, by the same names as
    /// on x86-64, which the kernel's PMU driver maps to the core's own events.
    Generic,
}

/// How an event is asked of the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type", content = "config")]
pub enum Encoding {
    /// PERF_TYPE_RAW with this config (Arm: the event number; x86: umask << 8 | event).
    Raw(u64),
    /// PERF_TYPE_RAW with an extra register value in `config1` (x86: Intel's offcore
    /// response, load-latency and front-end filters, `MSRValue` in the event files).
    RawExt {
        /// event | umask << 8 | edge << 18 | any << 21 | inv << 23 | cmask << 24.
        config: u64,
        /// The extra register's value.
        config1: u64,
    },
    /// PERF_TYPE_HARDWARE with this config (PERF_COUNT_HW_*).
    Hardware(u64),
    /// PERF_TYPE_HW_CACHE with this config (cache | op << 8 | result << 16).
    Cache(u64),
    /// PERF_TYPE_SOFTWARE with this config (PERF_COUNT_SW_*).
    Software(u64),
    /// Not a counter: the wall time of the run.
    Wall,
}

impl Encoding {
    /// Whether the event is counted by the kernel rather than the PMU (no counter used).
    pub fn is_software(&self) -> bool {
        matches!(self, Encoding::Software(_) | Encoding::Wall)
    }

    /// The event to the kernel: its perf_event_attr type and config words. Raw events
    /// get `raw_type` (the core PMU's dynamic type) or else PERF_TYPE_RAW; the wall time
    /// is not a counter (None).
    pub fn perf(&self, raw_type: Option<u32>) -> Option<numalab_perfopen::Encoding> {
        use numalab_perfopen::attrs::{TYPE_HARDWARE, TYPE_HW_CACHE, TYPE_RAW, TYPE_SOFTWARE};
        use numalab_perfopen::Encoding as Perf;
        Some(match *self {
            Encoding::Raw(c) => Perf::new(raw_type.unwrap_or(TYPE_RAW), c),
            Encoding::RawExt { config, config1 } => {
                Perf::new(raw_type.unwrap_or(TYPE_RAW), config).with_config1(config1)
            }
            Encoding::Hardware(c) => Perf::new(TYPE_HARDWARE, c),
            Encoding::Cache(c) => Perf::new(TYPE_HW_CACHE, c),
            Encoding::Software(c) => Perf::new(TYPE_SOFTWARE, c),
            Encoding::Wall => return None,
        })
    }
}

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventDef {
    /// The name formulas use (the vendor's name on Arm).
    pub name: String,
    /// Short description.
    pub title: String,
    /// How to count it.
    pub encoding: Encoding,
    /// Other names (perf's), matched case-insensitively.
    pub aliases: Vec<String>,
    /// Unit of the value, when not a plain count ("ns").
    pub unit: Option<String>,
}

impl EventDef {
    /// The code as perf writes raw events ("r11"), for raw events.
    pub fn raw_code(&self) -> Option<String> {
        match self.encoding {
            Encoding::Raw(c) => Some(format!("r{c:x}")),
            Encoding::RawExt { config, config1 } => {
                Some(format!("cpu/config={config:#x},config1={config1:#x}/"))
            }
            _ => None,
        }
    }
}

/// One derived metric.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricDef {
    /// Key in reports.
    pub name: String,
    /// What it means.
    pub title: String,
    /// The formula as written.
    pub formula: String,
    /// The parsed formula.
    pub expr: Expr,
    /// Unit: "ratio" (shown as %), "percent", "per cycle", "MPKI", ...
    pub unit: String,
    /// Metric group.
    pub group: String,
    /// Origin.
    pub origin: MetricOrigin,
    /// Rule-of-thumb threshold for a finding.
    pub notable: Option<f64>,
    /// Sentence template for a finding ({value}, {pct}).
    pub finding: Option<String>,
    /// Events worth sampling when notable.
    pub sample: Vec<String>,
    /// Order among notable findings of one verdict label (1 = headline); default 9.
    pub rank: u32,
    /// The vendor metric it equals (times `scale`).
    pub same_as: Option<String>,
    /// Scale to the vendor metric.
    pub scale: f64,
}

impl MetricDef {
    /// The events the formula uses.
    pub fn events(&self) -> Vec<String> {
        self.expr.variables().into_iter().collect()
    }
}

/// A group of metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupDef {
    /// Name (ours: "l1d"; vendor: "L1D_Cache_Effectiveness").
    pub name: String,
    /// Title.
    pub title: String,
    /// Verdict label when a metric is notable ("memory bound").
    pub label: Option<String>,
    /// Vendor groups this one corresponds to.
    pub vendor: Vec<String>,
    /// Metric names.
    pub metrics: Vec<String>,
    /// Where the group comes from.
    pub origin: MetricOrigin,
}

/// One side of the decision tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BranchDef {
    /// "frontend" or "backend".
    pub side: String,
    /// "front end".
    pub words: String,
    /// "front-end bound".
    pub bound: String,
    /// The stall-share metric.
    pub stall: String,
    /// The vendor decision-tree root it corresponds to.
    #[serde(default)]
    pub vendor_root: Option<String>,
    /// Groups to look at, in order.
    pub groups: Vec<String>,
    /// Events worth sampling when this side dominates.
    pub sample: Vec<String>,
    /// What to say when no metric of the groups is notable.
    pub otherwise: String,
    /// A group whose largest values are quoted when nothing is notable.
    #[serde(default)]
    pub info_group: Option<String>,
    /// Factor from the stall metric's unit to a ratio (0.01 for Intel's TMA metrics,
    /// which are percentages); none means the metric is a ratio.
    #[serde(default)]
    pub stall_scale: Option<f64>,
}

/// The decision tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeDef {
    /// The IPC metric.
    pub ipc: String,
    /// Stall share from which a side dominates.
    pub stall_notable: f64,
    /// The sides.
    #[serde(rename = "branch")]
    pub branches: Vec<BranchDef>,
}

/// One root of the vendor's decision tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VendorNode {
    /// Root metric (vendor name).
    pub name: String,
    /// Its group.
    pub group: String,
    /// Groups to look at next.
    pub next_items: Vec<String>,
    /// Events to sample.
    #[serde(default)]
    pub sample_events: Vec<String>,
    /// The node above it in the vendor's hierarchy (x86 top-down: `tma_backend_bound`
    /// above `tma_memory_bound`); none for a root.
    #[serde(default)]
    pub parent: Option<String>,
    /// Its level (1 = the top-down level 1).
    #[serde(default)]
    pub level: Option<u32>,
    /// When the vendor calls it significant: a formula over metric names (extended
    /// grammar, e.g. `(tma_memory_bound > 20) & (tma_backend_bound > 20)`).
    #[serde(default)]
    pub threshold: Option<String>,
    /// The vendor's description.
    #[serde(default)]
    pub description: Option<String>,
}

/// The vendor's topdown methodology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VendorTree {
    /// Stage 1 groups.
    pub stage_1: Vec<String>,
    /// Stage 2 groups.
    pub stage_2: Vec<String>,
    /// Roots.
    pub roots: Vec<VendorNode>,
    /// Every node below the roots, parents before children (x86 top-down hierarchies;
    /// empty for Arm, whose methodology stops at the roots' groups).
    #[serde(default)]
    pub nodes: Vec<VendorNode>,
}

/// Everything known about one CPU's events.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// Id ("neoverse-n1", "x86-64").
    pub id: String,
    /// Name ("Neoverse N1").
    pub name: String,
    /// Architecture.
    pub arch: Arch,
    /// Programmable counters per CPU.
    pub counters: usize,
    /// Events that use a fixed counter (do not take a programmable one).
    pub fixed: Vec<String>,
    /// Arm MIDR implementer and part.
    pub midr: Option<(u32, u32)>,
    /// Pipeline slots (Arm topdown), when the vendor gives them.
    pub slots: Option<u32>,
    /// Events.
    pub events: Vec<EventDef>,
    /// Metrics (methodology first, then software, then the vendor's).
    pub metrics: Vec<MetricDef>,
    /// Groups.
    pub groups: Vec<GroupDef>,
    /// numalab's decision tree.
    pub tree: TreeDef,
    /// The vendor's decision tree, if any.
    pub vendor_tree: Option<VendorTree>,
    /// Where the data comes from (for reports and attribution).
    pub sources: Vec<String>,
    /// Vendor metrics hidden because a methodology metric has the same name.
    pub shadowed: Vec<MetricDef>,
    event_index: HashMap<String, usize>,
    code_index: HashMap<u64, usize>,
    metric_index: HashMap<String, usize>,
}

/// Close matches of `name` among `candidates` (edit distance, case-insensitive), best first.
pub fn suggest(name: &str, candidates: impl IntoIterator<Item = String>) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let limit = (lower.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, String)> = candidates
        .into_iter()
        .filter_map(|c| {
            let cl = c.to_ascii_lowercase();
            let d = strsim::levenshtein(&lower, &cl);
            let contains = lower.len() >= 3 && (cl.contains(&lower) || lower.contains(&cl));
            if d <= limit || contains {
                Some((if contains { d.min(limit) } else { d }, c))
            } else {
                None
            }
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(4).map(|(_, c)| c).collect()
}

/// An event resolved for counting: a catalog event, or a raw code the catalog does not name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRef {
    /// Canonical name (catalog name, or "r1b" for an unnamed raw code).
    pub name: String,
    /// How to count it.
    pub encoding: Encoding,
}

impl Catalog {
    /// An event by name or alias (case-insensitive).
    pub fn event(&self, name: &str) -> Option<&EventDef> {
        self.event_index
            .get(&name.to_ascii_lowercase())
            .map(|&i| &self.events[i])
    }

    /// An event by raw code.
    pub fn event_by_code(&self, code: u64) -> Option<&EventDef> {
        self.code_index.get(&code).map(|&i| &self.events[i])
    }

    /// Resolves a user's event name: a name or alias, a raw code `rXX` (named when the
    /// catalog knows the code), perf's `pmu/name/` form, with `:u`/`:k` modifiers dropped.
    pub fn resolve_event(&self, text: &str) -> Result<EventRef, CatalogError> {
        if let Some(r) = self.lookup_event(text) {
            return Ok(r);
        }
        let name = normalize_event_text(text);
        Err(CatalogError::Unknown {
            what: "event".into(),
            name: text.into(),
            catalog: self.name.clone(),
            suggestions: suggest(
                &name,
                self.events
                    .iter()
                    .flat_map(|e| std::iter::once(e.name.clone()).chain(e.aliases.clone())),
            ),
        })
    }

    /// [`Catalog::resolve_event`] without the error (and without the close matches an
    /// error lists, which are costly to compute): None when `text` is neither a name,
    /// an alias nor a raw code.
    pub fn lookup_event(&self, text: &str) -> Option<EventRef> {
        let name = normalize_event_text(text);
        let named = |e: &EventDef| EventRef {
            name: e.name.clone(),
            encoding: e.encoding,
        };
        if let Some(e) = self.event(&name) {
            return Some(named(e));
        }
        let code = raw_code(&name)?;
        Some(self.event_by_code(code).map_or_else(
            || EventRef {
                name: format!("r{code:x}"),
                encoding: Encoding::Raw(code),
            },
            named,
        ))
    }

    /// A metric by name.
    pub fn metric(&self, name: &str) -> Option<&MetricDef> {
        self.metric_index.get(name).map(|&i| &self.metrics[i])
    }

    /// A group by name (case-insensitive).
    pub fn group(&self, name: &str) -> Option<&GroupDef> {
        self.groups
            .iter()
            .find(|g| g.name.eq_ignore_ascii_case(name))
    }

    /// The metrics of a named set: `first-pass` (the default: the methodology's metrics
    /// and the software metrics), `vendor`, `topdown`, `all`, `none`, a group name, a
    /// metric name, or a comma-separated list of these.
    pub fn select_metrics(&self, set: &str) -> Result<Vec<String>, CatalogError> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |names: Vec<String>| {
            for n in names {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        };
        for part in set.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let by_origin = |o: &[MetricOrigin]| -> Vec<String> {
                self.metrics
                    .iter()
                    .filter(|m| o.contains(&m.origin))
                    .map(|m| m.name.clone())
                    .collect()
            };
            match part.to_ascii_lowercase().as_str() {
                "first-pass" | "default" => {
                    push(by_origin(&[
                        MetricOrigin::Methodology,
                        MetricOrigin::Software,
                    ]));
                    // x86 top-down catalogs: the vendor's hierarchy feeds the verdict.
                    push(self.topdown_nodes(3));
                }
                "vendor" => {
                    let v = by_origin(&[MetricOrigin::Vendor]);
                    if v.is_empty() && self.shadowed.is_empty() {
                        return Err(CatalogError::NoCatalog(format!(
                            "{} has no vendor metric file; use --metrics first-pass",
                            self.name
                        )));
                    }
                    // Shadowed vendor metrics are the methodology metric of the same name.
                    let mut v = v;
                    v.extend(self.shadowed.iter().map(|m| m.name.clone()));
                    push(v)
                }
                "all" => push(self.metrics.iter().map(|m| m.name.clone()).collect()),
                "none" => {}
                "topdown" => {
                    let g = self.group("Topdown_L1").ok_or_else(|| {
                        let with: Vec<&str> = ARM
                            .iter()
                            .filter(|a| load_arm(a).is_ok_and(|c| c.group("Topdown_L1").is_some()))
                            .map(|a| a.name)
                            .collect();
                        CatalogError::NoCatalog(format!(
                            "{} has no topdown level-1 metrics (Arm publishes them for {})",
                            self.name,
                            cores_in_words(&with)
                        ))
                    })?;
                    push(g.metrics.clone())
                }
                _ => {
                    if let Some(m) = self.metric(part) {
                        push(vec![m.name.clone()]);
                    } else if let Some(g) = self.group(part) {
                        push(g.metrics.clone());
                    } else {
                        let candidates = self
                            .metrics
                            .iter()
                            .map(|m| m.name.clone())
                            .chain(self.groups.iter().map(|g| g.name.clone()))
                            .chain(
                                ["first-pass", "vendor", "topdown", "all", "none"]
                                    .iter()
                                    .map(|s| s.to_string()),
                            );
                        return Err(CatalogError::Unknown {
                            what: "metric or metric set".into(),
                            name: part.into(),
                            catalog: self.name.clone(),
                            suggestions: suggest(part, candidates),
                        });
                    }
                }
            }
        }
        Ok(out)
    }

    /// The metrics of the vendor's top-down hierarchy down to `max_level` (x86: Intel
    /// TMA, AMD pipeline utilization), roots first; empty when the catalog has none.
    pub fn topdown_nodes(&self, max_level: u32) -> Vec<String> {
        self.vendor_tree
            .iter()
            .flat_map(|vt| vt.roots.iter().chain(&vt.nodes))
            .filter(|n| n.level.is_some_and(|l| l <= max_level))
            .filter(|n| self.metric(&n.name).is_some())
            .map(|n| n.name.clone())
            .collect()
    }

    /// Whether an event takes a fixed counter (not a programmable one).
    pub fn is_fixed(&self, name: &str) -> bool {
        self.fixed.iter().any(|f| f == name)
    }

    /// The cycles and instructions events ("anchors" of every --exact group).
    pub fn anchors(&self) -> [&str; 2] {
        match self.arch {
            Arch::Arm => ["CPU_CYCLES", "INST_RETIRED"],
            Arch::X86 | Arch::Generic => ["CYCLES", "INSTRUCTIONS"],
        }
    }
}

/// Drops perf decorations: `armv8_pmuv3_0/cpu_cycles/` -> `cpu_cycles`, `cycles:u` ->
/// `cycles`, `cpu/event=0x11/` stays as is (not a name).
pub fn normalize_event_text(text: &str) -> String {
    let mut t = text.trim().to_string();
    if let Some(inner) = t
        .strip_suffix('/')
        .and_then(|s| s.split_once('/'))
        .map(|(_, rest)| rest.to_string())
    {
        if !inner.contains('=') {
            t = inner;
        } else if let Some(code) = inner.strip_prefix("event=") {
            // `armv8_pmuv3/event=0x11/` is the raw code 0x11.
            if let Some(c) = parse_hex(code) {
                t = format!("r{c:x}");
            }
        }
    }
    if let Some((base, modifiers)) = t.rsplit_once(':') {
        if !modifiers.is_empty() && modifiers.chars().all(|c| "ukhHGIpPSDW".contains(c)) {
            t = base.to_string();
        }
    }
    t
}

/// `r11` / `R11` / `r0x11` -> 0x11.
pub fn raw_code(text: &str) -> Option<u64> {
    let rest = text.strip_prefix('r').or_else(|| text.strip_prefix('R'))?;
    if rest.is_empty()
        || !rest
            .trim_start_matches("0x")
            .chars()
            .all(|c| c.is_ascii_hexdigit())
    {
        return None;
    }
    parse_hex(rest)
}
