//! Intel Xeon catalogs from Intel's perfmon files: the core events with their
//! encodings, the metrics (TMA and others) with their formulas, groups, hierarchy and
//! thresholds.

use super::vendor_tree::finish;
use super::*;
use crate::expr::Cmp;

const INTEL_TREE_TOML: &str = include_str!("../../../data/metrics/intel-tma.toml");

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

/// One generation's perfmon files, parsed, with the names errors give them.
struct IntelData {
    /// `data/x86/intel/X-core.json`.
    cfile: String,
    /// `data/x86/intel/X-metrics.json`.
    mfile: String,
    core: IntelEventsFile,
    metrics: IntelMetricsFile,
    /// Mean retire latency per event (Granite Rapids), else empty.
    retire: BTreeMap<String, RetireStats>,
}

/// Parses a generation's core events, metrics and (when it has one) retire-latency
/// files.
fn read_intel(files: &IntelFiles) -> Result<IntelData, CatalogError> {
    let short = files.id.trim_start_matches("intel-");
    let cfile = format!("data/x86/intel/{short}-core.json");
    let mfile = format!("data/x86/intel/{short}-metrics.json");
    let core: IntelEventsFile =
        serde_json::from_str(files.core).map_err(|e| data_err(&cfile, e.to_string()))?;
    let metrics: IntelMetricsFile =
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
    Ok(IntelData {
        cfile,
        mfile,
        core,
        metrics,
        retire,
    })
}

/// The catalog's events while an Intel catalog is loaded: the generic ones, the core
/// file's, and those the metrics add (PERF_METRICS fields, modified events).
struct IntelEvents {
    events: Vec<EventDef>,
    fixed: Vec<String>,
    /// Programmable counters (one more than the highest the file names).
    counters: usize,
    /// Intel's events by name (as the metric files name them) -> canonical name.
    by_name: HashMap<String, String>,
    /// Intel's events by name -> their encoding.
    raw_of: HashMap<String, Encoding>,
    /// Whether TOPDOWN.SLOTS exists (PERF_METRICS needs it).
    has_slots: bool,
}

/// Adds the core file's events to the generic ones: their encodings, the fixed
/// counters they use and the number of programmable counters.
fn core_events(
    cfile: &str,
    core: &IntelEventsFile,
    mut events: Vec<EventDef>,
    mut fixed: Vec<String>,
) -> Result<IntelEvents, CatalogError> {
    let mut counters = 0usize;
    let mut by_name: HashMap<String, String> = HashMap::new();
    let mut raw_of: HashMap<String, Encoding> = HashMap::new();
    for e in &core.events {
        let encoding = intel_encoding(cfile, e)?;
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
        return Err(data_err(cfile, "no event names a programmable counter"));
    }
    let has_slots = events
        .iter()
        .any(|e| e.encoding == Encoding::Raw(SLOTS_CONFIG));
    Ok(IntelEvents {
        events,
        fixed,
        counters,
        by_name,
        raw_of,
        has_slots,
    })
}

/// A metric's error: `metric NAME: msg` in the metrics file.
fn metric_err(mfile: &str, m: &IntelMetric, msg: String) -> CatalogError {
    data_err(mfile, format!("metric {}: {msg}", m.metric_name))
}

/// What one of a metric's events (`NAME`, `NAME:mods`) stands for in its formula: the
/// mean retire latency (`:retire_latency`), a PERF_METRICS field (added as an event
/// counted with slots), the event, or the event with perf's modifiers (added as an
/// event of its own when they change its encoding).
fn event_term(
    ev: &IntelAlias,
    ie: &mut IntelEvents,
    retire: &BTreeMap<String, RetireStats>,
    merr: &dyn Fn(String) -> CatalogError,
) -> Result<Expr, CatalogError> {
    let mut parts = ev.name.split(':');
    let base_name = parts.next().unwrap_or("");
    let mods: Vec<&str> = parts.collect();
    if mods.contains(&"retire_latency") {
        let mean = retire
            .get(base_name)
            .ok_or_else(|| merr(format!("no retire latency for {base_name}")))?
            .mean;
        return Ok(Expr::Num(mean));
    }
    if let Some((_, umask, alias)) = PERF_METRICS.iter().find(|(n, _, _)| *n == base_name) {
        if !ie.has_slots {
            return Err(merr(format!("{base_name} on a core without TOPDOWN.SLOTS")));
        }
        let name = add_event(
            &mut ie.events,
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
        if !ie.fixed.contains(&name) {
            ie.fixed.push(name.clone());
        }
        return Ok(Expr::Var(name));
    }
    let canonical = ie
        .by_name
        .get(base_name)
        .ok_or_else(|| merr(format!("unknown event {base_name}")))?;
    if mods.is_empty() {
        return Ok(Expr::Var(canonical.clone()));
    }
    let enc = with_modifiers(ie.raw_of[base_name], &mods)
        .ok_or_else(|| merr(format!("unknown modifier in {}", ev.name)))?;
    if enc == ie.raw_of[base_name] {
        return Ok(Expr::Var(canonical.clone()));
    }
    let shown: Vec<String> = mods
        .iter()
        .filter(|m| !matches!(**m, "perf_metrics" | "percore"))
        .map(|m| m.replace('=', "_"))
        .collect();
    let name = add_event(
        &mut ie.events,
        EventDef {
            name: format!("{base_name}:{}", shown.join(":")),
            title: format!("{base_name} with {}", shown.join(", ")),
            encoding: enc,
            aliases: Vec::new(),
            unit: None,
        },
    );
    Ok(Expr::Var(name))
}

/// What one of a metric's constants stands for: per-thread counting takes the SMT-off
/// branch of each formula (module doc); the duration is DURATION_TIME in ms.
fn constant_term(
    c: &IntelAlias,
    merr: &dyn Fn(String) -> CatalogError,
) -> Result<Expr, CatalogError> {
    Ok(match c.name.as_str() {
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
    })
}

/// A metric's formula over events: Intel's formula with its aliases replaced by the
/// events and constants they stand for, conditions on constants folded; every name
/// left must be an event.
fn metric_formula(
    m: &IntelMetric,
    ie: &mut IntelEvents,
    retire: &BTreeMap<String, RetireStats>,
    merr: &dyn Fn(String) -> CatalogError,
) -> Result<Expr, CatalogError> {
    let parsed = expr::parse_extended(&m.formula).map_err(|e| merr(e.to_string()))?;
    let mut subst: HashMap<String, Expr> = HashMap::new();
    for ev in &m.events {
        let e = event_term(ev, ie, retire, merr)?;
        subst.insert(ev.alias.clone(), e);
    }
    for c in &m.constants {
        subst.insert(c.alias.clone(), constant_term(c, merr)?);
    }
    let e = parsed
        .substitute(&|v| subst.get(v).cloned())
        .fold_conditions();
    for v in e.variables() {
        if !ie.events.iter().any(|x| x.name == v) {
            return Err(merr(format!(
                "formula name {v:?} is neither an alias nor an event"
            )));
        }
    }
    Ok(e)
}

/// A metric's threshold, Intel's formula over other metrics (by their keys), when it
/// has one.
fn metric_threshold(
    m: &IntelMetric,
    legacy: &HashMap<String, String>,
    merr: &dyn Fn(String) -> CatalogError,
) -> Result<Option<Expr>, CatalogError> {
    let Some(t) = m
        .threshold
        .as_ref()
        .filter(|t| !t.formula.trim().is_empty())
    else {
        return Ok(None);
    };
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
        let p = expr::parse_extended(&t.formula).map_err(|e| merr(format!("threshold: {e}")))?;
        let mut tm: HashMap<String, Expr> = HashMap::new();
        for a in &t.threshold_metrics {
            let k = legacy
                .get(&a.value)
                .ok_or_else(|| merr(format!("threshold names unknown metric {}", a.value)))?;
            tm.insert(a.alias.clone(), Expr::Var(k.clone()));
        }
        p.substitute(&|v| tm.get(v).cloned())
    };
    Ok(Some(texpr))
}

/// A metric's group: `Topdown_L<level>` for the TMA hierarchy, else its first group.
fn metric_group(m: &IntelMetric) -> String {
    if m.category == "TMA" && m.parent_category.is_some() || is_tma_root(m) {
        format!("Topdown_L{}", m.level)
    } else {
        m.metric_group
            .split(';')
            .find(|g| !g.is_empty())
            .unwrap_or("intel")
            .to_string()
    }
}

/// The node of the TMA hierarchy a metric is, if it is one (its threshold comes later).
fn tma_node(
    m: &IntelMetric,
    key: &str,
    group: &str,
    by_name: &HashMap<String, String>,
) -> Option<VendorNode> {
    if !(m.category == "TMA" && (m.parent_category.is_some() || is_tma_root(m))) {
        return None;
    }
    let sample_events = m
        .locate_with
        .as_deref()
        .and_then(|l| by_name.get(l.split(':').next().unwrap_or("")))
        .cloned()
        .into_iter()
        .collect();
    Some(VendorNode {
        name: key.to_string(),
        group: group.to_string(),
        next_items: Vec::new(),
        sample_events,
        parent: m
            .parent_category
            .as_ref()
            .map(|p| format!("tma_{}", p.to_ascii_lowercase())),
        level: Some(m.level),
        threshold: None,
        description: Some(m.brief_description.clone()),
    })
}

/// A vendor metric of the catalog.
fn vendor_metric(m: &IntelMetric, key: String, e: Expr, group: String) -> MetricDef {
    MetricDef {
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
    }
}

/// The metrics of an Intel catalog, its TMA nodes and its metric groups.
struct IntelMetrics {
    vendor: Vec<MetricDef>,
    nodes: Vec<VendorNode>,
    vendor_groups: BTreeMap<String, Vec<String>>,
}

/// Intel's metrics: formulas over aliases, the aliases replaced by events; groups,
/// TMA nodes, and thresholds (which must name metrics that exist) on the nodes.
fn intel_metrics(d: &IntelData, ie: &mut IntelEvents) -> Result<IntelMetrics, CatalogError> {
    let mfile = d.mfile.as_str();
    let legacy: HashMap<String, String> = d
        .metrics
        .metrics
        .iter()
        .filter_map(|m| m.legacy_name.clone().map(|l| (l, intel_key(m))))
        .collect();
    let mut out = IntelMetrics {
        vendor: Vec::new(),
        nodes: Vec::new(),
        vendor_groups: BTreeMap::new(),
    };
    let mut thresholds: Vec<(String, Expr)> = Vec::new();
    for m in &d.metrics.metrics {
        let key = intel_key(m);
        let merr = |msg: String| metric_err(mfile, m, msg);
        let e = metric_formula(m, ie, &d.retire, &merr)?;
        let group = metric_group(m);
        for g in m.metric_group.split(';').filter(|g| !g.is_empty()) {
            out.vendor_groups
                .entry(g.to_string())
                .or_default()
                .push(key.clone());
        }
        if let Some(t) = metric_threshold(m, &legacy, &merr)? {
            thresholds.push((key.clone(), t));
        }
        out.nodes.extend(tma_node(m, &key, &group, &ie.by_name));
        out.vendor.push(vendor_metric(m, key, e, group));
    }
    // Thresholds name metrics that exist; nodes get theirs.
    for (key, t) in thresholds {
        for v in t.variables() {
            if !out.vendor.iter().any(|m| m.name == v) {
                return Err(data_err(
                    mfile,
                    format!("metric {key}: threshold names unknown metric {v}"),
                ));
            }
        }
        if let Some(n) = out.nodes.iter_mut().find(|n| n.name == key) {
            n.threshold = Some(t.to_string());
        }
    }
    Ok(out)
}

/// Loads an Intel catalog: the generic x86 base, the generation's core events and
/// metrics, numalab's decision tree over TMA.
pub(super) fn load_intel(files: &IntelFiles) -> Result<Catalog, CatalogError> {
    let d = read_intel(files)?;
    let b = base()?;
    let mut ie = core_events(&d.cfile, &d.core, b.events, b.fixed)?;
    let m = intel_metrics(&d, &mut ie)?;
    let tree = parse_toml("data/metrics/intel-tma.toml", INTEL_TREE_TOML)?
        .tree
        .ok_or_else(|| data_err("data/metrics/intel-tma.toml", "no [tree]"))?;
    let tma = d.metrics.header.tma_version.clone().unwrap_or_default();
    let (cfile, mfile) = (&d.cfile, &d.mfile);
    finish(
        Raw {
            id: files.id.to_string(),
            name: files.name.to_string(),
            arch: Arch::X86,
            counters: ie.counters,
            fixed: ie.fixed,
            midr: None,
            slots: None,
            events: ie.events,
            methodology: b.methodology,
            software: b.software,
            vendor: m.vendor,
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
        m.nodes,
        m.vendor_groups,
        &d.mfile,
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
pub(super) fn scale_fraction_thresholds(e: &Expr) -> Expr {
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
