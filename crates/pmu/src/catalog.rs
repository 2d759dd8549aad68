//! Event catalogs as data: which events a CPU has (name, code), which metrics are
//! derived from them (formula), how metrics are grouped, and the decision tree.
//!
//! Arm Neoverse N1, N2 and V1 come from Arm's own machine-readable files (telemetry
//! specifications: events, metrics, groups, topdown methodology; PMU event files: the
//! number of programmable counters), shipped inside the binary with their Apache-2.0
//! licence (`data/arm/`). x86-64 uses the kernel's generic hardware and cache events
//! (`data/x86/generic.toml`) plus raw codes. The methodology's own metrics, groups and
//! decision tree are one data file per architecture (`data/metrics/`), and the Linux
//! software events one more (`data/linux/software.toml`). Every file is checked when it
//! is loaded (formulas parse, name only events that exist, names are unique) and a test
//! loads every shipped catalog, so a data error cannot reach a report.

use crate::expr::{self, Expr};
use numalab_schema::machine::CpuIdentity;
use numalab_schema::{Classify, ErrorClass};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

// The catalog's part of records (the CPU match, metric origins) lives in numalab-records.
pub use numalab_records::pmu::{CpuMatch, MetricOrigin};

const SOFTWARE_TOML: &str = include_str!("../data/linux/software.toml");
const X86_EVENTS_TOML: &str = include_str!("../data/x86/generic.toml");
const ARM_METRICS_TOML: &str = include_str!("../data/metrics/arm.toml");
const X86_METRICS_TOML: &str = include_str!("../data/metrics/x86.toml");
const ARM_CPUS_JSON: &str = include_str!("../data/arm/pmu/cpus.json");

struct ArmFiles {
    id: &'static str,
    telemetry: &'static str,
    pmu: &'static str,
}

const ARM: &[ArmFiles] = &[
    ArmFiles {
        id: "neoverse-n1",
        telemetry: include_str!("../data/arm/telemetry/neoverse-n1.json"),
        pmu: include_str!("../data/arm/pmu/neoverse-n1.json"),
    },
    ArmFiles {
        id: "neoverse-n2",
        telemetry: include_str!("../data/arm/telemetry/neoverse-n2.json"),
        pmu: include_str!("../data/arm/pmu/neoverse-n2.json"),
    },
    ArmFiles {
        id: "neoverse-v1",
        telemetry: include_str!("../data/arm/telemetry/neoverse-v1.json"),
        pmu: include_str!("../data/arm/pmu/neoverse-v1.json"),
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
    v.push(ARM_GENERIC_ID);
    v
}

/// Products whose cores are a shipped catalog (for `--cpu-model`).
const PRODUCTS: &[(&str, &str)] = &[
    ("ampere-altra", "neoverse-n1"),
    ("altra", "neoverse-n1"),
    ("altra-max", "neoverse-n1"),
    ("graviton2", "neoverse-n1"),
    ("graviton3", "neoverse-v1"),
    ("n1", "neoverse-n1"),
    ("n2", "neoverse-n2"),
    ("v1", "neoverse-v1"),
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

// ---- file formats ----

#[derive(Deserialize)]
struct TomlEvent {
    name: String,
    title: String,
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    unit: Option<String>,
    #[serde(default)]
    software: Option<String>,
    #[serde(default)]
    hardware: Option<String>,
    #[serde(default)]
    cache: Option<[String; 3]>,
}

#[derive(Deserialize)]
struct TomlMetric {
    name: String,
    title: String,
    formula: String,
    unit: String,
    group: String,
    #[serde(default)]
    notable: Option<f64>,
    #[serde(default)]
    finding: Option<String>,
    #[serde(default)]
    sample: Vec<String>,
    #[serde(default)]
    rank: Option<u32>,
    #[serde(default)]
    same_as: Option<String>,
    #[serde(default)]
    scale: Option<f64>,
}

#[derive(Deserialize)]
struct TomlGroup {
    name: String,
    title: String,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    vendor: Vec<String>,
}

#[derive(Deserialize, Default)]
struct TomlVendorOverride {
    counters: Option<usize>,
    fixed: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct TomlCatalogHead {
    id: String,
    name: String,
    counters: usize,
    #[serde(default)]
    fixed: Vec<String>,
}

#[derive(Deserialize)]
struct TomlFile {
    #[serde(default)]
    catalog: Option<TomlCatalogHead>,
    #[serde(default)]
    vendor: BTreeMap<String, TomlVendorOverride>,
    #[serde(default)]
    event: Vec<TomlEvent>,
    #[serde(default)]
    metric: Vec<TomlMetric>,
    #[serde(default)]
    group: Vec<TomlGroup>,
    #[serde(default)]
    tree: Option<TreeDef>,
    #[serde(default)]
    aliases: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct TelemetryFile {
    product_configuration: TelemetryProduct,
    events: BTreeMap<String, TelemetryEvent>,
    metrics: BTreeMap<String, TelemetryMetric>,
    groups: TelemetryGroups,
    #[serde(default)]
    methodologies: BTreeMap<String, TelemetryMethodology>,
}

#[derive(Deserialize)]
struct TelemetryProduct {
    product_name: String,
    part_num: String,
    implementer: String,
    #[serde(default)]
    num_slots: Option<u32>,
}

#[derive(Deserialize)]
struct TelemetryEvent {
    code: String,
    title: String,
}

#[derive(Deserialize)]
struct TelemetryMetric {
    title: String,
    formula: String,
    units: String,
    #[serde(default)]
    events: Vec<String>,
    #[serde(default)]
    sample_events: Vec<String>,
}

#[derive(Deserialize)]
struct TelemetryGroups {
    metrics: BTreeMap<String, TelemetryMetricGroup>,
}

#[derive(Deserialize)]
struct TelemetryMetricGroup {
    title: String,
    metrics: Vec<String>,
}

#[derive(Deserialize)]
struct TelemetryMethodology {
    metric_grouping: TelemetryGrouping,
    decision_tree: TelemetryTree,
}

#[derive(Deserialize)]
struct TelemetryGrouping {
    stage_1: Vec<String>,
    stage_2: Vec<String>,
}

#[derive(Deserialize)]
struct TelemetryTree {
    metrics: Vec<VendorNode>,
}

#[derive(Deserialize)]
struct ArmPmuFile {
    cpu: String,
    cpuid: String,
    counters: usize,
    events: Vec<ArmPmuEvent>,
}

#[derive(Deserialize)]
struct ArmPmuEvent {
    code: u64,
    name: String,
}

#[derive(Deserialize)]
struct ArmCpusFile {
    cpus: Vec<ArmCpu>,
}

#[derive(Deserialize)]
struct ArmCpu {
    implementer: u32,
    name: String,
    cpuid: String,
}

fn data_err(file: &str, message: impl Into<String>) -> CatalogError {
    CatalogError::Data {
        file: file.to_string(),
        message: message.into(),
    }
}

fn parse_hex(s: &str) -> Option<u64> {
    let t = s.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u64::from_str_radix(t, 16).ok()
}

fn hardware_config(name: &str) -> Option<u64> {
    // The kernel's PERF_COUNT_HW_* numbers (include/uapi/linux/perf_event.h).
    Some(match name {
        "cpu-cycles" => 0,
        "instructions" => 1,
        "cache-references" => 2,
        "cache-misses" => 3,
        "branch-instructions" => 4,
        "branch-misses" => 5,
        "bus-cycles" => 6,
        "stalled-cycles-frontend" => 7,
        "stalled-cycles-backend" => 8,
        "ref-cycles" => 9,
        _ => return None,
    })
}

fn cache_config(parts: &[String; 3]) -> Option<u64> {
    // PERF_COUNT_HW_CACHE_{ID}, _OP_*, _RESULT_*.
    let id = match parts[0].as_str() {
        "l1d" => 0,
        "l1i" => 1,
        "ll" => 2,
        "dtlb" => 3,
        "itlb" => 4,
        "bpu" => 5,
        "node" => 6,
        _ => return None,
    };
    let op = match parts[1].as_str() {
        "read" => 0,
        "write" => 1,
        "prefetch" => 2,
        _ => return None,
    };
    let result = match parts[2].as_str() {
        "access" => 0,
        "miss" => 1,
        _ => return None,
    };
    Some(id | (op << 8) | (result << 16))
}

fn software_encoding(name: &str) -> Option<Encoding> {
    // PERF_COUNT_SW_* numbers.
    Some(match name {
        "cpu-clock" => Encoding::Software(0),
        "task-clock" => Encoding::Software(1),
        "page-faults" => Encoding::Software(2),
        "context-switches" => Encoding::Software(3),
        "cpu-migrations" => Encoding::Software(4),
        "minor-faults" => Encoding::Software(5),
        "major-faults" => Encoding::Software(6),
        "duration-time" => Encoding::Wall,
        _ => return None,
    })
}

fn toml_events(file: &str, events: Vec<TomlEvent>) -> Result<Vec<EventDef>, CatalogError> {
    events
        .into_iter()
        .map(|e| {
            let encoding = if let Some(s) = &e.software {
                software_encoding(s).ok_or_else(|| {
                    data_err(file, format!("{}: unknown software event {s:?}", e.name))
                })?
            } else if let Some(h) = &e.hardware {
                Encoding::Hardware(hardware_config(h).ok_or_else(|| {
                    data_err(file, format!("{}: unknown hardware event {h:?}", e.name))
                })?)
            } else if let Some(c) = &e.cache {
                Encoding::Cache(cache_config(c).ok_or_else(|| {
                    data_err(file, format!("{}: unknown cache event {c:?}", e.name))
                })?)
            } else {
                return Err(data_err(file, format!("{}: no encoding", e.name)));
            };
            Ok(EventDef {
                name: e.name,
                title: e.title,
                encoding,
                aliases: e.aliases,
                unit: e.unit,
            })
        })
        .collect()
}

fn toml_metrics(
    file: &str,
    metrics: Vec<TomlMetric>,
    origin: MetricOrigin,
) -> Result<Vec<MetricDef>, CatalogError> {
    metrics
        .into_iter()
        .map(|m| {
            let expr = expr::parse(&m.formula)
                .map_err(|e| data_err(file, format!("metric {}: {e}", m.name)))?;
            Ok(MetricDef {
                name: m.name,
                title: m.title,
                formula: m.formula,
                expr,
                unit: m.unit,
                group: m.group,
                origin,
                notable: m.notable,
                finding: m.finding,
                sample: m.sample,
                rank: m.rank.unwrap_or(9),
                same_as: m.same_as,
                scale: m.scale.unwrap_or(1.0),
            })
        })
        .collect()
}

fn parse_toml(file: &str, text: &str) -> Result<TomlFile, CatalogError> {
    toml::from_str(text).map_err(|e| data_err(file, e.to_string()))
}

fn groups_from(
    toml_groups: Vec<TomlGroup>,
    metrics: &[MetricDef],
    origin: MetricOrigin,
) -> Vec<GroupDef> {
    toml_groups
        .into_iter()
        .map(|g| GroupDef {
            metrics: metrics
                .iter()
                .filter(|m| m.group == g.name)
                .map(|m| m.name.clone())
                .collect(),
            name: g.name,
            title: g.title,
            label: g.label,
            vendor: g.vendor,
            origin,
        })
        .collect()
}

/// Loads a shipped catalog by id.
pub fn load(id: &str) -> Result<Catalog, CatalogError> {
    if id == X86_ID {
        return load_x86(None);
    }
    if id == ARM_GENERIC_ID {
        return load_arm_generic();
    }
    let files = ARM
        .iter()
        .find(|a| a.id == id)
        .ok_or_else(|| CatalogError::Unknown {
            what: "CPU model".into(),
            name: id.into(),
            catalog: "the shipped catalogs".into(),
            suggestions: suggest(id, shipped().iter().map(|s| s.to_string())),
        })?;
    load_arm(files)
}

fn load_arm(files: &ArmFiles) -> Result<Catalog, CatalogError> {
    let tfile = format!("data/arm/telemetry/{}.json", files.id);
    let pfile = format!("data/arm/pmu/{}.json", files.id);
    let t: TelemetryFile =
        serde_json::from_str(files.telemetry).map_err(|e| data_err(&tfile, e.to_string()))?;
    let p: ArmPmuFile =
        serde_json::from_str(files.pmu).map_err(|e| data_err(&pfile, e.to_string()))?;
    let implementer = parse_hex(&t.product_configuration.implementer)
        .ok_or_else(|| data_err(&tfile, "bad implementer"))? as u32;
    let part = parse_hex(&t.product_configuration.part_num)
        .ok_or_else(|| data_err(&tfile, "bad part_num"))? as u32;
    // The two vendor files must describe the same core.
    let cpuid = parse_hex(&p.cpuid).ok_or_else(|| data_err(&pfile, "bad cpuid"))?;
    if cpuid != ((u64::from(implementer) << 12) | u64::from(part)) {
        return Err(data_err(
            &pfile,
            format!(
                "cpuid {} does not match the telemetry file's implementer/part",
                p.cpuid
            ),
        ));
    }
    let mut events = Vec::new();
    for (name, e) in &t.events {
        let code = parse_hex(&e.code)
            .ok_or_else(|| data_err(&tfile, format!("event {name}: bad code {:?}", e.code)))?;
        events.push(EventDef {
            name: name.clone(),
            title: e.title.clone(),
            encoding: Encoding::Raw(code),
            aliases: Vec::new(),
            unit: None,
        });
    }
    // Cross-check codes with the PMU event file.
    for pe in &p.events {
        if let Some(e) = events.iter().find(|e| e.name == pe.name) {
            if e.encoding != Encoding::Raw(pe.code) {
                return Err(data_err(
                    &pfile,
                    format!(
                        "{} has code 0x{:x} here but {:?} in {tfile}",
                        pe.name, pe.code, e.encoding
                    ),
                ));
            }
        }
    }
    let sw = parse_toml("data/linux/software.toml", SOFTWARE_TOML)?;
    let m = parse_toml("data/metrics/arm.toml", ARM_METRICS_TOML)?;
    events.extend(toml_events("data/linux/software.toml", sw.event)?);
    for (alias, target) in &m.aliases {
        let e = events
            .iter_mut()
            .find(|e| &e.name == target)
            .ok_or_else(|| {
                data_err(
                    "data/metrics/arm.toml",
                    format!("alias {alias} names unknown event {target} ({})", files.id),
                )
            })?;
        e.aliases.push(alias.clone());
    }

    let methodology = toml_metrics("data/metrics/arm.toml", m.metric, MetricOrigin::Methodology)?;
    let software = toml_metrics(
        "data/linux/software.toml",
        sw.metric,
        MetricOrigin::Software,
    )?;
    let mut vendor = Vec::new();
    for (name, vm) in &t.metrics {
        let expr = expr::parse(&vm.formula)
            .map_err(|e| data_err(&tfile, format!("metric {name}: {e}")))?;
        // The vendor lists each metric's events; they must match its formula.
        let vars: Vec<String> = expr.variables().into_iter().collect();
        let mut listed = vm.events.clone();
        listed.sort();
        listed.dedup();
        if !vm.events.is_empty() && vars != listed {
            return Err(data_err(
                &tfile,
                format!("metric {name}: events {listed:?} differ from its formula's {vars:?}"),
            ));
        }
        let group = t
            .groups
            .metrics
            .iter()
            .find(|(_, g)| g.metrics.contains(name))
            .map(|(g, _)| g.clone())
            .unwrap_or_default();
        vendor.push(MetricDef {
            name: name.clone(),
            title: vm.title.clone(),
            formula: vm.formula.clone(),
            expr,
            unit: vm.units.clone(),
            group,
            origin: MetricOrigin::Vendor,
            notable: None,
            finding: None,
            sample: vm.sample_events.clone(),
            rank: 9,
            same_as: None,
            scale: 1.0,
        });
    }
    let mut groups = groups_from(m.group, &methodology, MetricOrigin::Methodology);
    groups.extend(groups_from(sw.group, &software, MetricOrigin::Software));
    for (name, g) in &t.groups.metrics {
        groups.push(GroupDef {
            name: name.clone(),
            title: g.title.clone(),
            label: None,
            vendor: Vec::new(),
            metrics: g.metrics.clone(),
            origin: MetricOrigin::Vendor,
        });
    }
    let vendor_tree = t.methodologies.values().next().map(|mt| VendorTree {
        stage_1: mt.metric_grouping.stage_1.clone(),
        stage_2: mt.metric_grouping.stage_2.clone(),
        roots: mt.decision_tree.metrics.clone(),
    });
    let tree = m
        .tree
        .ok_or_else(|| data_err("data/metrics/arm.toml", "no [tree]"))?;
    let fixed = vec!["CPU_CYCLES".to_string()];
    let name = t.product_configuration.product_name.clone();
    if name != p.cpu {
        return Err(data_err(
            &pfile,
            format!("cpu {:?} differs from {:?} in {tfile}", p.cpu, name),
        ));
    }
    build(Raw {
        id: files.id.to_string(),
        name,
        arch: Arch::Arm,
        counters: p.counters,
        fixed,
        midr: Some((implementer, part)),
        slots: t.product_configuration.num_slots,
        events,
        methodology,
        software,
        vendor,
        groups,
        tree,
        vendor_tree,
        sources: vec![
            format!("{tfile} (Arm telemetry specification, Apache-2.0)"),
            format!("{pfile} (Arm PMU event file, Apache-2.0)"),
            "data/metrics/arm.toml (numalab methodology)".into(),
            "data/linux/software.toml".into(),
        ],
    })
}

/// Loads the x86-64 catalog, adjusted for a vendor ("GenuineIntel", "AuthenticAMD").
/// The catalog of an Arm core numalab has no event files for: the kernel's generic
/// hardware and cache events (the arm64 PMU driver maps cycles, instructions, branches,
/// stalls and L1/LLC/TLB accesses to the core's architected events) with numalab's
/// metrics and no vendor metric. Six programmable counters (Neoverse N1/V1 and most
/// Armv8 cores; the architecture allows up to 31: --counters overrides it) and the
/// dedicated cycle counter (PMCCNTR_EL0).
pub fn load_arm_generic() -> Result<Catalog, CatalogError> {
    let mut c = load_x86(None)?;
    c.id = ARM_GENERIC_ID.into();
    c.name = "Arm (kernel generic events; no vendor metrics)".into();
    c.arch = Arch::Generic;
    c.counters = 6;
    c.fixed = vec!["CYCLES".into()];
    Ok(c)
}

pub fn load_x86(vendor: Option<&str>) -> Result<Catalog, CatalogError> {
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
    let mut counters = head.counters;
    let mut fixed = head.fixed;
    let mut name = head.name;
    if let Some(v) = vendor {
        if let Some(o) = x.vendor.get(v) {
            if let Some(c) = o.counters {
                counters = c;
            }
            if let Some(fx) = &o.fixed {
                fixed = fx.clone();
            }
        }
        name = format!("{name}, {v}");
    }
    let tree = m
        .tree
        .ok_or_else(|| data_err("data/metrics/x86.toml", "no [tree]"))?;
    build(Raw {
        id: head.id,
        name,
        arch: Arch::X86,
        counters,
        fixed,
        midr: None,
        slots: None,
        events,
        methodology,
        software,
        vendor: Vec::new(),
        groups,
        tree,
        vendor_tree: None,
        sources: vec![
            format!("{f} (Linux generic hardware and cache events)"),
            "data/metrics/x86.toml (numalab methodology)".into(),
            "data/linux/software.toml".into(),
        ],
    })
}

struct Raw {
    id: String,
    name: String,
    arch: Arch,
    counters: usize,
    fixed: Vec<String>,
    midr: Option<(u32, u32)>,
    slots: Option<u32>,
    events: Vec<EventDef>,
    methodology: Vec<MetricDef>,
    software: Vec<MetricDef>,
    vendor: Vec<MetricDef>,
    groups: Vec<GroupDef>,
    tree: TreeDef,
    vendor_tree: Option<VendorTree>,
    sources: Vec<String>,
}

/// Builds the indexes and checks everything the data files promise.
fn build(r: Raw) -> Result<Catalog, CatalogError> {
    let file = format!("catalog {}", r.id);
    let mut event_index = HashMap::new();
    let mut code_index = HashMap::new();
    for (i, e) in r.events.iter().enumerate() {
        for key in std::iter::once(&e.name).chain(e.aliases.iter()) {
            if let Some(j) = event_index.insert(key.to_ascii_lowercase(), i) {
                if j != i {
                    return Err(data_err(
                        &file,
                        format!(
                            "event name {key:?} is used by both {} and {}",
                            r.events[j].name, e.name
                        ),
                    ));
                }
            }
        }
        if let Encoding::Raw(c) = e.encoding {
            if let Some(j) = code_index.insert(c, i) {
                return Err(data_err(
                    &file,
                    format!(
                        "code 0x{c:x} is used by both {} and {}",
                        r.events[j].name, e.name
                    ),
                ));
            }
        }
    }
    let mut metrics: Vec<MetricDef> = Vec::new();
    let mut shadowed = Vec::new();
    let mut metric_index = HashMap::new();
    for m in r.methodology.into_iter().chain(r.software).chain(r.vendor) {
        if metric_index.contains_key(&m.name) {
            if m.origin == MetricOrigin::Vendor {
                // A methodology metric of the same name wins; a test checks they agree.
                shadowed.push(m);
                continue;
            }
            return Err(data_err(
                &file,
                format!("metric {} is defined twice", m.name),
            ));
        }
        // Formulas name events by their canonical names only.
        for v in m.expr.variables() {
            if !r.events.iter().any(|e| e.name == v) {
                return Err(data_err(
                    &file,
                    format!("metric {} uses unknown event {v}", m.name),
                ));
            }
        }
        for s in &m.sample {
            if !r.events.iter().any(|e| &e.name == s) {
                return Err(data_err(
                    &file,
                    format!("metric {} samples unknown event {s}", m.name),
                ));
            }
        }
        if m.notable.is_some() != m.finding.is_some() {
            return Err(data_err(
                &file,
                format!("metric {}: `notable` and `finding` go together", m.name),
            ));
        }
        metric_index.insert(m.name.clone(), metrics.len());
        metrics.push(m);
    }
    let mut seen_groups = HashMap::new();
    for g in &r.groups {
        if seen_groups
            .insert(g.name.to_ascii_lowercase(), ())
            .is_some()
        {
            return Err(data_err(
                &file,
                format!("group {} is defined twice", g.name),
            ));
        }
        for m in &g.metrics {
            if !metric_index.contains_key(m) && !shadowed.iter().any(|s: &MetricDef| &s.name == m) {
                return Err(data_err(
                    &file,
                    format!("group {} lists unknown metric {m}", g.name),
                ));
            }
        }
    }
    for m in &metrics {
        if m.origin != MetricOrigin::Vendor && !r.groups.iter().any(|g| g.name == m.group) {
            return Err(data_err(
                &file,
                format!("metric {} is in unknown group {}", m.name, m.group),
            ));
        }
    }
    if !metric_index.contains_key(&r.tree.ipc) {
        return Err(data_err(
            &file,
            format!("tree: unknown metric {}", r.tree.ipc),
        ));
    }
    for b in &r.tree.branches {
        if !metric_index.contains_key(&b.stall) {
            return Err(data_err(&file, format!("tree: unknown metric {}", b.stall)));
        }
        for g in b.groups.iter().chain(b.info_group.iter()) {
            if !r.groups.iter().any(|x| &x.name == g) {
                return Err(data_err(&file, format!("tree: unknown group {g}")));
            }
        }
        for s in &b.sample {
            if !r.events.iter().any(|e| &e.name == s) {
                return Err(data_err(&file, format!("tree: unknown event {s}")));
            }
        }
    }
    for f in &r.fixed {
        if !r.events.iter().any(|e| &e.name == f) {
            return Err(data_err(&file, format!("fixed: unknown event {f}")));
        }
    }
    if r.counters == 0 {
        return Err(data_err(&file, "zero programmable counters"));
    }
    Ok(Catalog {
        id: r.id,
        name: r.name,
        arch: r.arch,
        counters: r.counters,
        fixed: r.fixed,
        midr: r.midr,
        slots: r.slots,
        events: r.events,
        metrics,
        groups: r.groups,
        tree: r.tree,
        vendor_tree: r.vendor_tree,
        sources: r.sources,
        shadowed,
        event_index,
        code_index,
        metric_index,
    })
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
        let name = normalize_event_text(text);
        if let Some(e) = self.event(&name) {
            return Ok(EventRef {
                name: e.name.clone(),
                encoding: e.encoding,
            });
        }
        if let Some(code) = raw_code(&name) {
            if let Some(e) = self.event_by_code(code) {
                return Ok(EventRef {
                    name: e.name.clone(),
                    encoding: e.encoding,
                });
            }
            return Ok(EventRef {
                name: format!("r{code:x}"),
                encoding: Encoding::Raw(code),
            });
        }
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
                "first-pass" | "default" => push(by_origin(&[
                    MetricOrigin::Methodology,
                    MetricOrigin::Software,
                ])),
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
                        CatalogError::NoCatalog(format!(
                            "{} has no topdown level-1 metrics (Arm publishes them for Neoverse N2 and V1)",
                            self.name
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

/// The MIDR_EL1 of CPU 0 from sysfs under `root` ("/" for this machine).
pub fn midr_from_sysfs(root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(
        root.join("sys/devices/system/cpu/cpu0/regs/identification/midr_el1"),
    )
    .ok()?;
    parse_hex(&text)
}

fn arm_cpu_name(implementer: u32, part: u32) -> Option<String> {
    let cpus: ArmCpusFile = serde_json::from_str(ARM_CPUS_JSON).ok()?;
    let id = (u64::from(implementer) << 12) | u64::from(part);
    cpus.cpus
        .into_iter()
        .find(|c| parse_hex(&c.cpuid) == Some(id) && c.implementer == implementer)
        .map(|c| c.name)
}

/// Matches a CPU to a shipped catalog: Arm by MIDR implementer and part, x86 by vendor.
/// `midr` (from sysfs) is used when the identity has no MIDR fields.
pub fn detect(cpu: &CpuIdentity, midr: Option<u64>) -> Result<CpuMatch, CatalogError> {
    let arm = match (cpu.implementer, cpu.part) {
        (Some(i), Some(p)) => Some((i, p, cpu.midr())),
        _ => midr.map(|m| {
            (
                ((m >> 24) & 0xff) as u32,
                ((m >> 4) & 0xfff) as u32,
                Some(m),
            )
        }),
    };
    if let Some((implementer, part, midr)) = arm {
        let how = match midr {
            Some(m) => format!("MIDR 0x{m:08x}"),
            None => format!("MIDR implementer 0x{implementer:02x} part 0x{part:03x}"),
        };
        for files in ARM {
            let c = load_arm(files)?;
            if c.midr == Some((implementer, part)) {
                return Ok(CpuMatch {
                    catalog: c.id,
                    cpu: c.name,
                    how,
                });
            }
        }
        // No vendor files for this core: the kernel's generic events, said so.
        let name = arm_cpu_name(implementer, part).unwrap_or_else(|| {
            format!("Arm core (implementer 0x{implementer:02x}, part 0x{part:03x})")
        });
        return Ok(CpuMatch {
            catalog: ARM_GENERIC_ID.into(),
            cpu: name,
            how: format!(
                "{how}; no vendor metrics for this core (numalab ships event files for Neoverse N1, N2 and V1): the kernel's generic events only; --cpu-model borrows the closest catalog, --events takes raw codes (r11 = CPU_CYCLES, r8 = INST_RETIRED on every Arm core)"
            ),
        });
    }
    let arch = cpu.architecture.as_deref().unwrap_or("");
    let vendor = cpu.vendor.as_deref();
    if arch == "x86_64"
        || matches!(
            vendor,
            Some("GenuineIntel") | Some("AuthenticAMD") | Some("HygonGenuine")
        )
    {
        let mut how = vendor
            .map(|v| format!("vendor {v}"))
            .unwrap_or_else(|| "architecture x86_64".into());
        if let (Some(f), Some(m)) = (cpu.family, cpu.model) {
            how.push_str(&format!(" family {f} model {m}"));
        }
        let c = load_x86(vendor)?;
        return Ok(CpuMatch {
            catalog: c.id,
            cpu: cpu.model_name.clone().unwrap_or(c.name),
            how,
        });
    }
    Err(CatalogError::NoCatalog(format!(
        "cannot tell which event catalog fits this CPU (architecture {:?}, vendor {:?}); use --cpu-model ({})",
        cpu.architecture,
        cpu.vendor,
        shipped().join(", ")
    )))
}

/// Resolves `--cpu-model NAME`: a catalog id, a CPU name ("Neoverse N1"), a short name
/// ("n1"), a product ("ampere-altra", "graviton2"), or a MIDR value ("0x413fd0c1").
pub fn resolve_model(name: &str) -> Result<CpuMatch, CatalogError> {
    let norm = |s: &str| s.trim().to_ascii_lowercase().replace([' ', '_'], "-");
    let n = norm(name);
    let how = format!("--cpu-model {name}");
    if let Some(m) = parse_hex(&n).filter(|_| n.starts_with("0x")) {
        let id = CpuIdentity {
            implementer: Some(((m >> 24) & 0xff) as u32),
            part: Some(((m >> 4) & 0xfff) as u32),
            ..Default::default()
        };
        let mut found = detect(&id, None)?;
        found.how = how;
        return Ok(found);
    }
    let id = if shipped().contains(&n.as_str()) {
        n.clone()
    } else if let Some((_, id)) = PRODUCTS.iter().find(|(p, _)| *p == n) {
        id.to_string()
    } else {
        // A name like "Neoverse N1" normalises to the id.
        let arm_match = ARM.iter().find(|a| a.id == n).map(|a| a.id.to_string());
        match arm_match {
            Some(id) => id,
            None => {
                if let Ok(cpus) = serde_json::from_str::<ArmCpusFile>(ARM_CPUS_JSON) {
                    if let Some(c) = cpus.cpus.iter().find(|c| norm(&c.name) == n) {
                        return Err(CatalogError::NoCatalog(format!(
                            "{} is a known Arm core (cpuid {}), but numalab ships event files for Neoverse N1, N2 and V1 only",
                            c.name, c.cpuid
                        )));
                    }
                }
                return Err(CatalogError::Unknown {
                    what: "CPU model".into(),
                    name: name.into(),
                    catalog: "the shipped catalogs".into(),
                    suggestions: suggest(
                        &n,
                        shipped()
                            .iter()
                            .map(|s| s.to_string())
                            .chain(PRODUCTS.iter().map(|(p, _)| p.to_string())),
                    ),
                });
            }
        }
    };
    let vendor = match n.as_str() {
        "amd" => Some("AuthenticAMD"),
        "intel" => Some("GenuineIntel"),
        _ => None,
    };
    let c = if id == X86_ID {
        load_x86(vendor)?
    } else {
        load(&id)?
    };
    Ok(CpuMatch {
        catalog: c.id,
        cpu: c.name,
        how,
    })
}

/// Loads the catalog a [`CpuMatch`] names (x86 adjusted for the vendor named in `how`).
pub fn load_match(m: &CpuMatch) -> Result<Catalog, CatalogError> {
    if m.catalog == X86_ID {
        let vendor = ["GenuineIntel", "AuthenticAMD", "HygonGenuine"]
            .into_iter()
            .find(|v| m.how.contains(v) || m.cpu.contains(v));
        let vendor = vendor.or(if m.how.ends_with(" amd") {
            Some("AuthenticAMD")
        } else if m.how.ends_with(" intel") {
            Some("GenuineIntel")
        } else {
            None
        });
        load_x86(vendor)
    } else {
        load(&m.catalog)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_catalog_loads_and_is_consistent() {
        for id in shipped() {
            let c = load(id).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(c.counters >= 1, "{id}");
            assert!(!c.events.is_empty() && !c.metrics.is_empty(), "{id}");
            // Every metric formula names only events that exist (checked in `build`,
            // asserted again here so the test fails loudly if that check is removed).
            for m in &c.metrics {
                for v in m.events() {
                    assert!(c.event(&v).is_some(), "{id}: {} uses {v}", m.name);
                }
            }
            // Names unique.
            let mut names: Vec<&str> = c.metrics.iter().map(|m| m.name.as_str()).collect();
            names.sort();
            let n = names.len();
            names.dedup();
            assert_eq!(n, names.len(), "{id}: duplicate metric names");
            let mut ev: Vec<String> = c.events.iter().map(|e| e.name.to_lowercase()).collect();
            ev.sort();
            let n = ev.len();
            ev.dedup();
            assert_eq!(n, ev.len(), "{id}: duplicate event names");
            // The methodology's first-pass set is complete on every catalog.
            for key in [
                "ipc",
                "frontend_stall_rate",
                "backend_stall_rate",
                "branch_mpki",
                "branch_misprediction_rate",
                "itlb_mpki",
                "dtlb_mpki",
                "l1d_mpki",
                "l1d_miss_rate",
                "ll_read_mpki",
                "ll_read_miss_rate",
            ] {
                assert!(c.metric(key).is_some(), "{id}: {key} missing");
            }
        }
    }

    /// Our methodology metrics that say they equal a vendor metric do, on every Arm
    /// catalog, for arbitrary counts; and a vendor metric hidden by one of ours has the
    /// same formula.
    #[test]
    fn methodology_agrees_with_vendor_metrics() {
        for id in ["neoverse-n1", "neoverse-n2", "neoverse-v1"] {
            let c = load(id).unwrap();
            let value = |name: &str| {
                // Distinct, deterministic, non-zero counts per event.
                let h = name.bytes().fold(1469598103u64, |a, b| {
                    a.wrapping_mul(1099511628211) ^ b as u64
                });
                expr::Input::Value((h % 1_000_000 + 1000) as f64)
            };
            let mut checked = 0;
            for m in c.metrics.iter().filter(|m| m.same_as.is_some()) {
                let target = m.same_as.as_deref().unwrap();
                let v = c
                    .metric(target)
                    .filter(|t| t.origin == MetricOrigin::Vendor)
                    .or_else(|| c.shadowed.iter().find(|s| s.name == target))
                    .unwrap_or_else(|| panic!("{id}: {} same_as unknown {target}", m.name));
                let ours = m.expr.eval(&value).unwrap() * m.scale;
                let theirs = v.expr.eval(&value).unwrap();
                assert!(
                    (ours - theirs).abs() <= 1e-9 * theirs.abs().max(1.0),
                    "{id}: {} = {ours} but vendor {target} = {theirs}",
                    m.name
                );
                checked += 1;
            }
            assert!(checked >= 20, "{id}: only {checked} checked");
            for s in &c.shadowed {
                let ours = c.metric(&s.name).unwrap();
                assert_eq!(ours.same_as.as_deref(), Some(s.name.as_str()), "{id}");
                assert_eq!(ours.scale, 1.0, "{id}");
            }
        }
    }

    /// Our tree's sides look at the groups the vendor's N1 decision tree names.
    #[test]
    fn tree_follows_the_vendor_decision_tree() {
        let c = load("neoverse-n1").unwrap();
        let vt = c.vendor_tree.as_ref().unwrap();
        for b in &c.tree.branches {
            let root = b.vendor_root.as_deref().unwrap();
            let node = vt.roots.iter().find(|r| r.name == root).unwrap();
            let mut mapped: Vec<String> = b
                .groups
                .iter()
                .flat_map(|g| c.group(g).unwrap().vendor.clone())
                .collect();
            mapped.sort();
            let mut vendor = node.next_items.clone();
            vendor.sort();
            assert_eq!(mapped, vendor, "side {}", b.side);
            assert_eq!(b.sample, node.sample_events, "side {}", b.side);
        }
    }

    #[test]
    fn n1_counts_and_codes() {
        let c = load("neoverse-n1").unwrap();
        assert_eq!(c.counters, 6);
        assert_eq!(c.midr, Some((0x41, 0xd0c)));
        // The cheat sheet's r4c is L1D_TLB_REFILL_RD; the architecture's 0x05 is L1D_TLB_REFILL.
        assert_eq!(
            c.event("L1D_TLB_REFILL").unwrap().encoding,
            Encoding::Raw(0x05)
        );
        assert_eq!(c.event_by_code(0x4c).unwrap().name, "L1D_TLB_REFILL_RD");
        // The methodology's first-pass table.
        for (name, code) in [
            ("CPU_CYCLES", 0x11),
            ("STALL_FRONTEND", 0x23),
            ("STALL_BACKEND", 0x24),
            ("INST_RETIRED", 0x08),
            ("INST_SPEC", 0x1b),
            ("BR_MIS_PRED_RETIRED", 0x22),
            ("LL_CACHE_MISS_RD", 0x37),
            ("REMOTE_ACCESS", 0x31),
        ] {
            assert_eq!(
                c.event(name).unwrap().encoding,
                Encoding::Raw(code),
                "{name}"
            );
        }
        // The methodology's table says CRYPTO_SPEC 0x76; Arm's files (and the Arm ARM) say
        // 0x77, and 0x76 is PC_WRITE_SPEC. The vendor file decides.
        assert_eq!(
            c.event("CRYPTO_SPEC").unwrap().encoding,
            Encoding::Raw(0x77)
        );
        assert_eq!(c.event_by_code(0x76).unwrap().name, "PC_WRITE_SPEC");
        assert_eq!(c.resolve_event("r11").unwrap().name, "CPU_CYCLES");
        assert_eq!(
            c.resolve_event("armv8_pmuv3_0/cpu_cycles/").unwrap().name,
            "CPU_CYCLES"
        );
        assert_eq!(
            c.resolve_event("armv8_pmuv3_0/event=0x8/").unwrap().name,
            "INST_RETIRED"
        );
        assert_eq!(
            c.resolve_event("instructions:u").unwrap().name,
            "INST_RETIRED"
        );
        assert_eq!(c.resolve_event("task-clock").unwrap().name, "TASK_CLOCK");
        let unnamed = c.resolve_event("r3ff").unwrap();
        assert_eq!(
            (unnamed.name.as_str(), unnamed.encoding),
            ("r3ff", Encoding::Raw(0x3ff))
        );
    }

    #[test]
    fn unknown_names_list_close_matches() {
        let c = load("neoverse-n1").unwrap();
        let e = c.resolve_event("CPU_CYCLE").unwrap_err().to_string();
        assert!(e.contains("did you mean CPU_CYCLES"), "{e}");
        let e = c.select_metrics("ipc,l1d_mkpi").unwrap_err().to_string();
        assert!(e.contains("l1d_mpki"), "{e}");
        let e = resolve_model("neoverse-n3x").unwrap_err().to_string();
        assert!(e.contains("neoverse-n"), "{e}");
        let e = resolve_model("Neoverse V2").unwrap_err().to_string();
        assert!(e.contains("known Arm core"), "{e}");
    }

    #[test]
    fn metric_sets() {
        let c = load("neoverse-n2").unwrap();
        let first = c.select_metrics("first-pass").unwrap();
        assert!(first.contains(&"ipc".to_string()) && first.contains(&"cpus_utilized".to_string()));
        assert!(!first.contains(&"frontend_bound".to_string()));
        assert_eq!(
            c.select_metrics("topdown").unwrap(),
            [
                "frontend_bound",
                "backend_bound",
                "retiring",
                "bad_speculation"
            ]
        );
        assert_eq!(
            c.select_metrics("l1d").unwrap(),
            ["l1d_mpki", "l1d_miss_rate"]
        );
        assert!(c
            .select_metrics("vendor")
            .unwrap()
            .contains(&"ipc".to_string()));
        assert!(c.select_metrics("none").unwrap().is_empty());
        let x = load(X86_ID).unwrap();
        assert!(x.select_metrics("topdown").is_err());
        assert!(x.select_metrics("vendor").is_err());
    }

    #[test]
    fn cpu_detection() {
        // Ampere Altra: MIDR 0x413fd0c1.
        let altra = CpuIdentity {
            architecture: Some("aarch64".into()),
            implementer: Some(0x41),
            part: Some(0xd0c),
            variant: Some(3),
            revision: Some(1),
            ..Default::default()
        };
        let m = detect(&altra, None).unwrap();
        assert_eq!(m.catalog, "neoverse-n1");
        assert_eq!(m.how, "MIDR 0x413fd0c1");
        // From sysfs alone.
        let m = detect(&CpuIdentity::default(), Some(0x410fd400)).unwrap();
        assert_eq!(m.catalog, "neoverse-v1");
        // Grace (Neoverse V2) is named, not silently mapped to another core's files:
        // the kernel's generic events, said so.
        let m = detect(&CpuIdentity::default(), Some(0x410fd4f0)).unwrap();
        assert_eq!(m.catalog, ARM_GENERIC_ID);
        assert!(m.cpu.contains("Neoverse V2"), "{m:?}");
        assert!(m.how.contains("no vendor metrics for this core"), "{m:?}");
        let c = load_match(&m).unwrap();
        assert_eq!(c.arch, Arch::Generic);
        assert_eq!(c.anchors(), ["CYCLES", "INSTRUCTIONS"]);
        assert!(c.event("STALLED_CYCLES_FRONTEND").is_some());
        // QEMU's `max` CPU (implementer 0x00) too.
        let m = detect(&CpuIdentity::default(), Some(0x000f0510)).unwrap();
        assert_eq!(m.catalog, ARM_GENERIC_ID);
        assert!(m.cpu.contains("implementer 0x00"), "{m:?}");
        let amd = CpuIdentity {
            architecture: Some("x86_64".into()),
            vendor: Some("AuthenticAMD".into()),
            family: Some(25),
            model: Some(1),
            ..Default::default()
        };
        let m = detect(&amd, None).unwrap();
        assert_eq!(m.catalog, X86_ID);
        assert_eq!(load_match(&m).unwrap().counters, 6);
        assert_eq!(resolve_model("Neoverse N1").unwrap().catalog, "neoverse-n1");
        assert_eq!(
            resolve_model("ampere-altra").unwrap().catalog,
            "neoverse-n1"
        );
        assert_eq!(resolve_model("0x413fd0c1").unwrap().catalog, "neoverse-n1");
        assert_eq!(
            load_match(&resolve_model("intel").unwrap())
                .unwrap()
                .counters,
            4
        );
    }

    #[test]
    fn sysfs_midr() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir
            .path()
            .join("sys/devices/system/cpu/cpu0/regs/identification");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("midr_el1"), "0x00000000413fd0c1\n").unwrap();
        assert_eq!(midr_from_sysfs(dir.path()), Some(0x413fd0c1));
        assert_eq!(midr_from_sysfs(Path::new("/nonexistent")), None);
    }
}
