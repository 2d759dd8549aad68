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
use crate::expr::Cmp;

const INTEL_TREE_TOML: &str = include_str!("../../data/metrics/intel-tma.toml");

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
        core: include_str!("../../data/x86/intel/skx-core.json"),
        metrics: include_str!("../../data/x86/intel/skx-metrics.json"),
        retire: None,
        models: &[0x55],
        steppings: Some((0, 4)),
    },
    IntelFiles {
        id: "intel-clx",
        name: "Intel Xeon Scalable 2nd/3rd gen (Cascade Lake, Cooper Lake)",
        core: include_str!("../../data/x86/intel/clx-core.json"),
        metrics: include_str!("../../data/x86/intel/clx-metrics.json"),
        retire: None,
        models: &[0x55],
        steppings: Some((5, 0xf)),
    },
    IntelFiles {
        id: "intel-icx",
        name: "Intel Xeon Scalable 3rd gen (Ice Lake-SP)",
        core: include_str!("../../data/x86/intel/icx-core.json"),
        metrics: include_str!("../../data/x86/intel/icx-metrics.json"),
        retire: None,
        models: &[0x6a, 0x6c],
        steppings: None,
    },
    IntelFiles {
        id: "intel-spr",
        name: "Intel Xeon Scalable 4th gen (Sapphire Rapids)",
        core: include_str!("../../data/x86/intel/spr-core.json"),
        metrics: include_str!("../../data/x86/intel/spr-metrics.json"),
        retire: None,
        models: &[0x8f],
        steppings: None,
    },
    IntelFiles {
        id: "intel-emr",
        name: "Intel Xeon Scalable 5th gen (Emerald Rapids)",
        core: include_str!("../../data/x86/intel/emr-core.json"),
        metrics: include_str!("../../data/x86/intel/emr-metrics.json"),
        retire: None,
        models: &[0xcf],
        steppings: None,
    },
    IntelFiles {
        id: "intel-gnr",
        name: "Intel Xeon 6 P-core (Granite Rapids)",
        core: include_str!("../../data/x86/intel/gnr-core.json"),
        metrics: include_str!("../../data/x86/intel/gnr-metrics.json"),
        retire: Some(include_str!("../../data/x86/intel/gnr-retire-latency.json")),
        models: &[0xad, 0xae],
        steppings: None,
    },
    IntelFiles {
        id: "intel-srf",
        name: "Intel Xeon 6 E-core (Sierra Forest)",
        core: include_str!("../../data/x86/intel/srf-core.json"),
        metrics: include_str!("../../data/x86/intel/srf-metrics.json"),
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
        text: include_str!("../../data/x86/amd/zen2.toml"),
    },
    AmdFiles {
        id: "amd-zen3",
        text: include_str!("../../data/x86/amd/zen3.toml"),
    },
    AmdFiles {
        id: "amd-zen4",
        text: include_str!("../../data/x86/amd/zen4.toml"),
    },
    AmdFiles {
        id: "amd-zen5",
        text: include_str!("../../data/x86/amd/zen5.toml"),
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
        Some("AuthenticAMD") => {
            for a in AMD {
                let Ok(file) = amd_file(a) else { continue };
                let head = &file.catalog;
                if head.family == f && head.models.iter().any(|r| (r[0]..=r[1]).contains(&m)) {
                    return Ok(a.id);
                }
            }
            Err(none())
        }
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

// ---------------------------------------------------------------------------------
// Intel.

#[derive(Deserialize)]
struct IntelEventsFile {
    #[serde(rename = "Events")]
    events: Vec<IntelEvent>,
}

#[derive(Deserialize, Clone)]
#[serde(rename_all = "PascalCase")]
struct IntelEvent {
    event_name: String,
    event_code: String,
    #[serde(rename = "UMask")]
    umask: String,
    #[serde(default)]
    counter_mask: Option<String>,
    #[serde(default)]
    invert: Option<String>,
    #[serde(default)]
    edge_detect: Option<String>,
    #[serde(default)]
    any_thread: Option<String>,
    #[serde(default, rename = "MSRIndex")]
    msr_index: Option<String>,
    #[serde(default, rename = "MSRValue")]
    msr_value: Option<String>,
    #[serde(default)]
    counter: Option<String>,
    #[serde(default)]
    brief_description: Option<String>,
}

#[derive(Deserialize)]
struct IntelMetricsFile {
    #[serde(rename = "Header")]
    header: IntelHeader,
    #[serde(rename = "Metrics")]
    metrics: Vec<IntelMetric>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct IntelHeader {
    #[serde(default)]
    tma_version: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct IntelMetric {
    metric_name: String,
    #[serde(default)]
    legacy_name: Option<String>,
    level: u32,
    #[serde(default)]
    parent_category: Option<String>,
    #[serde(default)]
    brief_description: String,
    #[serde(default)]
    unit_of_measure: String,
    events: Vec<IntelAlias>,
    #[serde(default)]
    constants: Vec<IntelAlias>,
    formula: String,
    #[serde(default)]
    category: String,
    #[serde(default)]
    threshold: Option<IntelThreshold>,
    #[serde(default)]
    metric_group: String,
    #[serde(default)]
    locate_with: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct IntelAlias {
    name: String,
    alias: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct IntelThreshold {
    #[serde(default)]
    formula: String,
    #[serde(default)]
    threshold_metrics: Vec<IntelThresholdMetric>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct IntelThresholdMetric {
    alias: String,
    value: String,
}

#[derive(Deserialize)]
struct RetireFile {
    #[serde(rename = "Data")]
    data: BTreeMap<String, RetireStats>,
}

#[derive(Deserialize)]
#[serde(rename_all = "UPPERCASE")]
struct RetireStats {
    mean: f64,
}

/// The PERF_METRICS fields (Ice Lake and later): the kernel's `topdown-*` events of the
/// `cpu` PMU (event 0x00, umask 0x80 + field), which must be counted in a group led by
/// `slots` (TOPDOWN.SLOTS, event 0x00 umask 0x04); the kernel reports each as a count of
/// slots.
const PERF_METRICS: &[(&str, u64, &str)] = &[
    ("PERF_METRICS.RETIRING", 0x80, "topdown-retiring"),
    ("PERF_METRICS.BAD_SPECULATION", 0x81, "topdown-bad-spec"),
    ("PERF_METRICS.FRONTEND_BOUND", 0x82, "topdown-fe-bound"),
    ("PERF_METRICS.BACKEND_BOUND", 0x83, "topdown-be-bound"),
    ("PERF_METRICS.HEAVY_OPERATIONS", 0x84, "topdown-heavy-ops"),
    (
        "PERF_METRICS.BRANCH_MISPREDICTS",
        0x85,
        "topdown-br-mispredict",
    ),
    ("PERF_METRICS.FETCH_LATENCY", 0x86, "topdown-fetch-lat"),
    ("PERF_METRICS.MEMORY_BOUND", 0x87, "topdown-mem-bound"),
];

/// The raw config of TOPDOWN.SLOTS (the `slots` event).
pub const SLOTS_CONFIG: u64 = 0x0400;

/// Whether an encoding is one of the kernel's `topdown-*` (PERF_METRICS) events, which
/// must be in a group led by `slots`.
pub fn is_topdown_metric(e: &Encoding) -> bool {
    matches!(e, Encoding::Raw(c) if (0x8000..=0x8700).contains(c) && c & 0xff == 0)
}

fn flag(v: &Option<String>) -> bool {
    v.as_deref().map(str::trim).is_some_and(|s| s == "1")
}

fn intel_encoding(file: &str, e: &IntelEvent) -> Result<Encoding, CatalogError> {
    let bad =
        |what: &str, v: &str| data_err(file, format!("event {}: bad {what} {v:?}", e.event_name));
    let first = e.event_code.split(',').next().unwrap_or("").trim();
    let code = parse_hex(first).ok_or_else(|| bad("EventCode", &e.event_code))?;
    // Offcore events list one code (and on E-cores one umask) per response register;
    // the kernel takes the first and places the event on either register.
    let umask =
        parse_hex(e.umask.split(',').next().unwrap_or("")).ok_or_else(|| bad("UMask", &e.umask))?;
    let cmask = match e.counter_mask.as_deref().map(str::trim) {
        None | Some("") => 0,
        Some(s) => s.parse::<u64>().map_err(|_| bad("CounterMask", s))?,
    };
    let any = flag(&e.any_thread);
    let config = if code == 0 {
        // Fixed-counter events: the kernel's encodings (INST_RETIRED.ANY is 0xc0,
        // CPU_CLK_UNHALTED.THREAD 0x3c, the reference cycles and slots pseudo-events
        // 0x0300 and 0x0400).
        match umask {
            1 => 0xc0,
            2 => 0x3c | u64::from(any) << 21,
            3 => 0x0300,
            4 => SLOTS_CONFIG,
            _ => return Err(bad("fixed-counter UMask", &e.umask)),
        }
    } else {
        x86_config(
            code,
            umask,
            flag(&e.edge_detect),
            any,
            flag(&e.invert),
            cmask,
        )
    };
    let msr = e
        .msr_index
        .as_deref()
        .and_then(|s| parse_hex(s.split(',').next().unwrap_or("")))
        .unwrap_or(0);
    let value = e.msr_value.as_deref().and_then(parse_hex).unwrap_or(0);
    Ok(if msr != 0 && value != 0 {
        Encoding::RawExt {
            config,
            config1: value,
        }
    } else {
        Encoding::Raw(config)
    })
}

/// Applies perf's event modifiers (`c1`, `e1`, `i1`, `u0x80`, `ocr_msr_val=0x...`) to
/// a raw encoding.
fn with_modifiers(enc: Encoding, mods: &[&str]) -> Option<Encoding> {
    let (mut config, mut config1) = match enc {
        Encoding::Raw(c) => (c, None),
        Encoding::RawExt { config, config1 } => (config, Some(config1)),
        _ => return None,
    };
    for m in mods {
        if let Some(v) = m.strip_prefix("ocr_msr_val=") {
            config1 = Some(parse_hex(v)?);
        } else if let Some(v) = m.strip_prefix('u') {
            config = (config & !0xff00) | (parse_hex(v)? & 0xff) << 8;
        } else if let Some(v) = m.strip_prefix('c') {
            config = (config & !(0xff << 24)) | (v.parse::<u64>().ok()? & 0xff) << 24;
        } else if let Some(v) = m.strip_prefix('e') {
            config = (config & !(1 << 18)) | u64::from(v == "1") << 18;
        } else if let Some(v) = m.strip_prefix('i') {
            config = (config & !(1 << 23)) | u64::from(v == "1") << 23;
        } else if !matches!(*m, "perf_metrics" | "percore") {
            return None;
        }
    }
    Some(match config1 {
        Some(config1) => Encoding::RawExt { config, config1 },
        None => Encoding::Raw(config),
    })
}

/// `Frontend_Bound` (TMA) -> `tma_frontend_bound`; `cpi` -> `cpi`.
fn intel_key(m: &IntelMetric) -> String {
    let lower = m.metric_name.to_ascii_lowercase();
    if m.category == "TMA" {
        format!("tma_{lower}")
    } else {
        lower
    }
}

pub(super) fn load_intel(files: &IntelFiles) -> Result<Catalog, CatalogError> {
    let short = files.id.trim_start_matches("intel-");
    let cfile = format!("data/x86/intel/{short}-core.json");
    let mfile = format!("data/x86/intel/{short}-metrics.json");
    let core: IntelEventsFile =
        serde_json::from_str(files.core).map_err(|e| data_err(&cfile, e.to_string()))?;
    let mf: IntelMetricsFile =
        serde_json::from_str(files.metrics).map_err(|e| data_err(&mfile, e.to_string()))?;
    let retire: BTreeMap<String, RetireStats> = match files.retire {
        Some(t) => {
            serde_json::from_str::<RetireFile>(t)
                .map_err(|e| {
                    data_err(
                        format!("data/x86/intel/{short}-retire-latency.json").as_str(),
                        e.to_string(),
                    )
                })?
                .data
        }
        None => BTreeMap::new(),
    };
    let b = base()?;
    let mut events = b.events;
    let mut fixed = b.fixed;
    let mut counters = 0usize;
    // Intel's events by name (as the metric files name them) -> canonical name.
    let mut by_name: HashMap<String, String> = HashMap::new();
    let mut raw_of: HashMap<String, Encoding> = HashMap::new();
    for e in &core.events {
        let encoding = intel_encoding(&cfile, e)?;
        let counter = e.counter.as_deref().unwrap_or("");
        let canonical = add_event(
            &mut events,
            EventDef {
                name: e.event_name.clone(),
                title: e.brief_description.clone().unwrap_or_default(),
                encoding,
                aliases: if encoding == Encoding::Raw(SLOTS_CONFIG) {
                    vec!["slots".into()]
                } else {
                    Vec::new()
                },
                unit: None,
            },
        );
        if counter.starts_with("Fixed counter") {
            if !fixed.contains(&canonical) {
                fixed.push(canonical.clone());
            }
        } else {
            for n in counter
                .split(',')
                .filter_map(|c| c.trim().parse::<usize>().ok())
            {
                counters = counters.max(n + 1);
            }
        }
        by_name.insert(e.event_name.clone(), canonical);
        raw_of.insert(e.event_name.clone(), encoding);
    }
    if counters == 0 {
        return Err(data_err(&cfile, "no event names a programmable counter"));
    }
    let has_slots = events
        .iter()
        .any(|e| e.encoding == Encoding::Raw(SLOTS_CONFIG));

    // Metrics: Intel's formulas over aliases, the aliases replaced by events.
    let legacy: HashMap<String, String> = mf
        .metrics
        .iter()
        .filter_map(|m| m.legacy_name.clone().map(|l| (l, intel_key(m))))
        .collect();
    let mut vendor: Vec<MetricDef> = Vec::new();
    let mut nodes: Vec<VendorNode> = Vec::new();
    let mut vendor_groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut thresholds: Vec<(String, Expr)> = Vec::new();
    for m in &mf.metrics {
        let key = intel_key(m);
        let merr = |msg: String| data_err(&mfile, format!("metric {}: {msg}", m.metric_name));
        let parsed = expr::parse_extended(&m.formula).map_err(|e| merr(e.to_string()))?;
        let mut subst: HashMap<String, Expr> = HashMap::new();
        for ev in &m.events {
            let mut parts = ev.name.split(':');
            let base_name = parts.next().unwrap_or("");
            let mods: Vec<&str> = parts.collect();
            let e = if mods.contains(&"retire_latency") {
                let mean = retire
                    .get(base_name)
                    .ok_or_else(|| merr(format!("no retire latency for {base_name}")))?
                    .mean;
                Expr::Num(mean)
            } else if let Some((_, umask, alias)) =
                PERF_METRICS.iter().find(|(n, _, _)| *n == base_name)
            {
                if !has_slots {
                    return Err(merr(format!("{base_name} on a core without TOPDOWN.SLOTS")));
                }
                let name = add_event(
                    &mut events,
                    EventDef {
                        name: base_name.to_string(),
                        title: format!(
                            "slots attributed to {} (PERF_METRICS; counted in a group led by TOPDOWN.SLOTS)",
                            base_name.trim_start_matches("PERF_METRICS.").to_ascii_lowercase()
                        ),
                        encoding: Encoding::Raw(umask << 8),
                        aliases: vec![alias.to_string()],
                        unit: None,
                    },
                );
                if !fixed.contains(&name) {
                    fixed.push(name.clone());
                }
                Expr::Var(name)
            } else {
                let canonical = by_name
                    .get(base_name)
                    .ok_or_else(|| merr(format!("unknown event {base_name}")))?;
                if mods.is_empty() {
                    Expr::Var(canonical.clone())
                } else {
                    let enc = with_modifiers(raw_of[base_name], &mods)
                        .ok_or_else(|| merr(format!("unknown modifier in {}", ev.name)))?;
                    if enc == raw_of[base_name] {
                        Expr::Var(canonical.clone())
                    } else {
                        let shown: Vec<String> = mods
                            .iter()
                            .filter(|m| !matches!(**m, "perf_metrics" | "percore"))
                            .map(|m| m.replace('=', "_"))
                            .collect();
                        let name = add_event(
                            &mut events,
                            EventDef {
                                name: format!("{base_name}:{}", shown.join(":")),
                                title: format!("{base_name} with {}", shown.join(", ")),
                                encoding: enc,
                                aliases: Vec::new(),
                                unit: None,
                            },
                        );
                        Expr::Var(name)
                    }
                }
            };
            subst.insert(ev.alias.clone(), e);
        }
        for c in &m.constants {
            let e = match c.name.as_str() {
                // Per-thread counting: the SMT-off branch of each formula (module doc).
                "HYPERTHREADING_ON" => Expr::Num(0.0),
                "THREADS_PER_CORE" => Expr::Num(1.0),
                "DURATIONTIMEINMILLISECONDS" => Expr::Bin(
                    expr::Op::Div,
                    Box::new(Expr::Var("DURATION_TIME".into())),
                    Box::new(Expr::Num(1e6)),
                ),
                other => Expr::Num(
                    other
                        .parse::<f64>()
                        .map_err(|_| merr(format!("unknown constant {other}")))?,
                ),
            };
            subst.insert(c.alias.clone(), e);
        }
        let e = parsed
            .substitute(&|v| subst.get(v).cloned())
            .fold_conditions();
        for v in e.variables() {
            if !events.iter().any(|x| x.name == v) {
                return Err(merr(format!(
                    "formula name {v:?} is neither an alias nor an event"
                )));
            }
        }
        let group = if m.category == "TMA" && m.parent_category.is_some() || is_tma_root(m) {
            format!("Topdown_L{}", m.level)
        } else {
            m.metric_group
                .split(';')
                .find(|g| !g.is_empty())
                .unwrap_or("intel")
                .to_string()
        };
        for g in m.metric_group.split(';').filter(|g| !g.is_empty()) {
            vendor_groups
                .entry(g.to_string())
                .or_default()
                .push(key.clone());
        }
        // Threshold: Intel's formula over other metrics.
        if let Some(t) = m
            .threshold
            .as_ref()
            .filter(|t| !t.formula.trim().is_empty())
        {
            let texpr = if t.threshold_metrics.is_empty() {
                // E-core files name the metrics in the formula and compare the percent
                // metrics with fractions (`metric_TMA_Frontend_Bound(%) >0.20`): the
                // names are replaced and such constants scaled to percent.
                let mut text = t.formula.clone();
                let mut names: Vec<(&String, &String)> = legacy.iter().collect();
                names.sort_by_key(|(l, _)| std::cmp::Reverse(l.len()));
                for (l, k) in names {
                    text = text.replace(l.as_str(), k);
                }
                let p = expr::parse_extended(&text).map_err(|e| merr(format!("threshold: {e}")))?;
                scale_fraction_thresholds(&p)
            } else {
                let p = expr::parse_extended(&t.formula)
                    .map_err(|e| merr(format!("threshold: {e}")))?;
                let mut tm: HashMap<String, Expr> = HashMap::new();
                for a in &t.threshold_metrics {
                    let k = legacy.get(&a.value).ok_or_else(|| {
                        merr(format!("threshold names unknown metric {}", a.value))
                    })?;
                    tm.insert(a.alias.clone(), Expr::Var(k.clone()));
                }
                p.substitute(&|v| tm.get(v).cloned())
            };
            thresholds.push((key.clone(), texpr));
        }
        if m.category == "TMA" && (m.parent_category.is_some() || is_tma_root(m)) {
            let sample_events = m
                .locate_with
                .as_deref()
                .and_then(|l| by_name.get(l.split(':').next().unwrap_or("")))
                .cloned()
                .into_iter()
                .collect();
            nodes.push(VendorNode {
                name: key.clone(),
                group: group.clone(),
                next_items: Vec::new(),
                sample_events,
                parent: m
                    .parent_category
                    .as_ref()
                    .map(|p| format!("tma_{}", p.to_ascii_lowercase())),
                level: Some(m.level),
                threshold: None,
                description: Some(m.brief_description.clone()),
            });
        }
        vendor.push(MetricDef {
            name: key,
            title: m.brief_description.clone(),
            formula: e.to_string(),
            expr: e,
            unit: if m.unit_of_measure.is_empty() {
                "value".into()
            } else {
                m.unit_of_measure.clone()
            },
            group,
            origin: MetricOrigin::Vendor,
            notable: None,
            finding: None,
            sample: Vec::new(),
            rank: 9,
            same_as: None,
            scale: 1.0,
        });
    }
    // Thresholds name metrics that exist; nodes get theirs.
    for (key, t) in thresholds {
        for v in t.variables() {
            if !vendor.iter().any(|m| m.name == v) {
                return Err(data_err(
                    &mfile,
                    format!("metric {key}: threshold names unknown metric {v}"),
                ));
            }
        }
        if let Some(n) = nodes.iter_mut().find(|n| n.name == key) {
            n.threshold = Some(t.to_string());
        }
    }
    let tree = parse_toml("data/metrics/intel-tma.toml", INTEL_TREE_TOML)?
        .tree
        .ok_or_else(|| data_err("data/metrics/intel-tma.toml", "no [tree]"))?;
    let tma = mf.header.tma_version.clone().unwrap_or_default();
    finish(
        Raw {
            id: files.id.to_string(),
            name: files.name.to_string(),
            arch: Arch::X86,
            counters,
            fixed,
            midr: None,
            slots: None,
            events,
            methodology: b.methodology,
            software: b.software,
            vendor,
            groups: b.groups,
            tree,
            vendor_tree: None,
            sources: vec![
                format!("{cfile} (Intel perfmon core events, BSD-3-Clause, subset)"),
                format!("{mfile} (Intel perfmon metrics, TMA {tma}, BSD-3-Clause, subset)"),
                "data/metrics/x86.toml (numalab methodology)".into(),
                "data/metrics/intel-tma.toml (numalab decision tree over Intel TMA)".into(),
                "data/linux/software.toml".into(),
            ],
        },
        nodes,
        vendor_groups,
        &mfile,
    )
}

fn is_tma_root(m: &IntelMetric) -> bool {
    m.category == "TMA"
        && m.level == 1
        && m.parent_category.is_none()
        && matches!(
            m.metric_name.as_str(),
            "Frontend_Bound" | "Bad_Speculation" | "Backend_Bound" | "Retiring"
        )
}

/// `m > 0.2` where `m` is a percentage and the constant below 1: `m > 20` (E-core
/// threshold formulas; see [`load_intel`]).
fn scale_fraction_thresholds(e: &Expr) -> Expr {
    match e {
        Expr::Cmp(c, a, b) => match (&**a, &**b) {
            (Expr::Var(v), Expr::Num(k)) if *k < 1.0 => Expr::Cmp(
                *c,
                Box::new(Expr::Var(v.clone())),
                Box::new(Expr::Num(k * 100.0)),
            ),
            _ => e.clone(),
        },
        Expr::And(a, b) => Expr::And(
            Box::new(scale_fraction_thresholds(a)),
            Box::new(scale_fraction_thresholds(b)),
        ),
        Expr::Or(a, b) => Expr::Or(
            Box::new(scale_fraction_thresholds(a)),
            Box::new(scale_fraction_thresholds(b)),
        ),
        other => other.clone(),
    }
}

/// The threshold constant a node's own value is compared with (`tma_x > 20` -> 20).
pub fn own_threshold(node: &str, threshold: &Expr) -> Option<f64> {
    match threshold {
        Expr::Cmp(Cmp::Gt | Cmp::Ge, a, b) => match (&**a, &**b) {
            (Expr::Var(v), Expr::Num(k)) if v == node => Some(*k),
            _ => None,
        },
        Expr::And(a, b) | Expr::Or(a, b) => {
            own_threshold(node, a).or_else(|| own_threshold(node, b))
        }
        _ => None,
    }
}

/// Groups, the vendor tree, then the catalog's checks.
fn finish(
    mut r: Raw,
    mut nodes: Vec<VendorNode>,
    vendor_groups: BTreeMap<String, Vec<String>>,
    file: &str,
) -> Result<Catalog, CatalogError> {
    // Parents before children; every parent exists.
    nodes.sort_by_key(|n| n.level.unwrap_or(0));
    for n in &nodes {
        if let Some(p) = &n.parent {
            if !nodes.iter().any(|x| &x.name == p) {
                return Err(data_err(
                    file,
                    format!("top-down node {} has unknown parent {p}", n.name),
                ));
            }
        }
    }
    let names: Vec<(String, Option<String>)> = nodes
        .iter()
        .map(|n| (n.name.clone(), n.parent.clone()))
        .collect();
    for n in nodes.iter_mut() {
        n.next_items = names
            .iter()
            .filter(|(_, p)| p.as_deref() == Some(n.name.as_str()))
            .map(|(c, _)| c.clone())
            .collect();
    }
    let (roots, rest): (Vec<VendorNode>, Vec<VendorNode>) =
        nodes.into_iter().partition(|n| n.parent.is_none());
    let max_level = rest.iter().filter_map(|n| n.level).max().unwrap_or(1);
    for level in 1..=max_level {
        let g = format!("Topdown_L{level}");
        let members: Vec<String> = r
            .vendor
            .iter()
            .filter(|m| m.group == g)
            .map(|m| m.name.clone())
            .collect();
        if !members.is_empty() && !r.groups.iter().any(|x| x.name.eq_ignore_ascii_case(&g)) {
            r.groups.push(GroupDef {
                name: g,
                title: format!("top-down level {level}"),
                label: None,
                vendor: Vec::new(),
                metrics: members,
                origin: MetricOrigin::Vendor,
            });
        }
    }
    for (g, metrics) in vendor_groups {
        if r.groups.iter().any(|x| x.name.eq_ignore_ascii_case(&g)) {
            continue;
        }
        r.groups.push(GroupDef {
            title: g.clone(),
            name: g,
            label: None,
            vendor: Vec::new(),
            metrics,
            origin: MetricOrigin::Vendor,
        });
    }
    if !roots.is_empty() {
        r.vendor_tree = Some(VendorTree {
            stage_1: vec!["Topdown_L1".into()],
            stage_2: if max_level >= 2 {
                vec!["Topdown_L2".into()]
            } else {
                Vec::new()
            },
            roots,
            nodes: rest,
        });
    }
    let c = build(r)?;
    // Every branch of the tree starts at a root of the hierarchy.
    if let Some(vt) = &c.vendor_tree {
        for b in &c.tree.branches {
            if let Some(root) = &b.vendor_root {
                if !vt.roots.iter().any(|n| &n.name == root) {
                    return Err(data_err(file, format!("tree: unknown vendor root {root}")));
                }
            }
        }
        for n in vt.roots.iter().chain(&vt.nodes) {
            if let Some(t) = &n.threshold {
                expr::parse_extended(t)
                    .map_err(|e| data_err(file, format!("{}: threshold {e}", n.name)))?;
            }
        }
    }
    Ok(c)
}

// ---------------------------------------------------------------------------------
// AMD.

#[derive(Deserialize)]
struct AmdFile {
    catalog: AmdHead,
    #[serde(default)]
    event: Vec<AmdEvent>,
    #[serde(default)]
    metric: Vec<AmdMetric>,
    #[serde(default)]
    group: Vec<TomlGroup>,
    #[serde(default)]
    tree: Option<TreeDef>,
}

#[derive(Deserialize)]
struct AmdHead {
    id: String,
    name: String,
    counters: usize,
    family: u32,
    models: Vec<[u32; 2]>,
    #[serde(default)]
    slots: Option<u32>,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize)]
struct AmdEvent {
    name: String,
    title: String,
    event: String,
    #[serde(default)]
    umask: Option<String>,
    #[serde(default)]
    cmask: Option<u64>,
    #[serde(default)]
    inv: bool,
    #[serde(default)]
    aliases: Vec<String>,
}

#[derive(Deserialize)]
struct AmdMetric {
    #[serde(flatten)]
    base: TomlMetric,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default)]
    level: Option<u32>,
    #[serde(default)]
    threshold: Option<String>,
}

fn amd_file(a: &AmdFiles) -> Result<AmdFile, CatalogError> {
    let file = format!("data/x86/amd/{}.toml", a.id.trim_start_matches("amd-"));
    let f: AmdFile = toml::from_str(a.text).map_err(|e| data_err(&file, e.to_string()))?;
    if f.catalog.id != a.id {
        return Err(data_err(
            &file,
            format!("id {} is not {}", f.catalog.id, a.id),
        ));
    }
    Ok(f)
}

/// The note of an AMD catalog (Zen 2 and Zen 3: why there is no top-down verdict).
pub(super) fn amd_note(id: &str) -> Option<String> {
    let a = AMD.iter().find(|a| a.id == id)?;
    amd_file(a).ok()?.catalog.note
}

pub(super) fn load_amd(a: &AmdFiles) -> Result<Catalog, CatalogError> {
    let file = format!("data/x86/amd/{}.toml", a.id.trim_start_matches("amd-"));
    let f = amd_file(a)?;
    let b = base()?;
    let mut events = b.events;
    for e in f.event {
        let code = parse_hex(&e.event)
            .ok_or_else(|| data_err(&file, format!("event {}: bad code {:?}", e.name, e.event)))?;
        let umask = match &e.umask {
            Some(u) => parse_hex(u)
                .ok_or_else(|| data_err(&file, format!("event {}: bad umask {u:?}", e.name)))?,
            None => 0,
        };
        let encoding = Encoding::Raw(x86_config(
            code,
            umask,
            false,
            false,
            e.inv,
            e.cmask.unwrap_or(0),
        ));
        if events.iter().any(|o| o.encoding == encoding) {
            return Err(data_err(
                &file,
                format!("event {}: code used twice", e.name),
            ));
        }
        events.push(EventDef {
            name: e.name,
            title: e.title,
            encoding,
            aliases: e.aliases,
            unit: None,
        });
    }
    let mut nodes = Vec::new();
    let mut vendor = Vec::new();
    for m in f.metric {
        let expr = expr::parse_extended(&m.base.formula)
            .map_err(|e| data_err(&file, format!("metric {}: {e}", m.base.name)))?;
        if let Some(level) = m.level {
            if let Some(t) = &m.threshold {
                expr::parse_extended(t).map_err(|e| {
                    data_err(&file, format!("metric {}: threshold {e}", m.base.name))
                })?;
            }
            nodes.push(VendorNode {
                name: m.base.name.clone(),
                group: m.base.group.clone(),
                next_items: Vec::new(),
                sample_events: m.base.sample.clone(),
                parent: m.parent.clone(),
                level: Some(level),
                threshold: m.threshold.clone(),
                description: Some(m.base.title.clone()),
            });
        }
        vendor.push(MetricDef {
            name: m.base.name,
            title: m.base.title,
            formula: m.base.formula,
            expr,
            unit: m.base.unit,
            group: m.base.group,
            origin: MetricOrigin::Vendor,
            notable: m.base.notable,
            finding: m.base.finding,
            sample: m.base.sample,
            rank: m.base.rank.unwrap_or(9),
            same_as: None,
            scale: 1.0,
        });
    }
    let mut groups = b.groups;
    groups.extend(groups_from(f.group, &vendor, MetricOrigin::Vendor));
    let has_tree = f.tree.is_some();
    let tree = f.tree.unwrap_or(b.tree);
    let c = finish(
        Raw {
            id: f.catalog.id,
            name: f.catalog.name,
            arch: Arch::X86,
            counters: f.catalog.counters,
            fixed: Vec::new(),
            midr: None,
            slots: f.catalog.slots,
            events,
            methodology: b.methodology,
            software: b.software,
            vendor,
            groups,
            tree,
            vendor_tree: None,
            sources: vec![
                format!("{file} (numalab, from AMD's Processor Programming Reference)"),
                "data/metrics/x86.toml (numalab methodology)".into(),
                "data/linux/software.toml".into(),
            ],
        },
        nodes,
        BTreeMap::new(),
        &file,
    )?;
    if has_tree != c.vendor_tree.is_some() {
        return Err(data_err(
            &file,
            "a [tree] needs top-down metrics (level, parent) and they need a [tree]",
        ));
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spr_with(core: &'static str, metrics: &'static str) -> IntelFiles {
        IntelFiles {
            id: "intel-spr",
            name: "test",
            core,
            metrics,
            retire: None,
            models: &[0x8f],
            steppings: None,
        }
    }

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    #[test]
    fn malformed_files_are_one_clear_error() {
        let spr = &INTEL[3];
        assert_eq!(spr.id, "intel-spr");
        // Truncated JSON.
        let cut = &spr.core[..spr.core.len() / 2];
        let e = load_intel(&spr_with(cut, spr.metrics)).unwrap_err();
        assert!(matches!(e, CatalogError::Data { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("data file data/x86/intel/spr-core.json: "),
            "{e}"
        );
        let e = load_intel(&spr_with(spr.core, "{\"Header\": {}, \"Metrics\": [")).unwrap_err();
        assert!(e.to_string().contains("spr-metrics.json"), "{e}");
        // A metric naming an event the core file lacks.
        let bad = spr
            .metrics
            .replacen("\"INT_MISC.UOP_DROPPING\"", "\"NO_SUCH.EVENT\"", 1);
        let e = load_intel(&spr_with(spr.core, leak(bad))).unwrap_err();
        assert!(e.to_string().contains("unknown event NO_SUCH.EVENT"), "{e}");
        // A formula that does not parse.
        let bad = spr
            .metrics
            .replacen("\"Formula\": \"", "\"Formula\": \"( ", 1);
        let e = load_intel(&spr_with(spr.core, leak(bad))).unwrap_err();
        assert!(e.to_string().contains("metric "), "{e}");
        // A bad event code.
        let bad = spr
            .core
            .replacen("\"EventCode\": \"0x", "\"EventCode\": \"0xZ", 1);
        let e = load_intel(&spr_with(leak(bad), spr.metrics)).unwrap_err();
        assert!(e.to_string().contains("bad EventCode"), "{e}");
        // AMD: a TOML error names the file.
        let e = load_amd(&AmdFiles {
            id: "amd-zen4",
            text: "[catalog]\nid = \"amd-zen4\"\n",
        })
        .unwrap_err();
        assert!(e.to_string().contains("data/x86/amd/zen4.toml"), "{e}");
    }

    #[test]
    fn own_threshold_and_fraction_scaling() {
        let t = expr::parse_extended("( tma_x > 20 ) & ( tma_y > 10 )").unwrap();
        assert_eq!(own_threshold("tma_x", &t), Some(20.0));
        assert_eq!(own_threshold("tma_y", &t), Some(10.0));
        assert_eq!(own_threshold("tma_z", &t), None);
        let t = expr::parse_extended("a >0.15 && b >0.20").unwrap();
        assert_eq!(
            scale_fraction_thresholds(&t).to_string(),
            "((a > 15) & (b > 20))"
        );
    }
}
