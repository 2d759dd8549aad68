//! The shipped files and how they are read: the TOML catalogs, Arm's telemetry and
//! PMU JSON, into the catalog's raw parts.

use super::*;

#[derive(Deserialize)]
pub(super) struct TomlEvent {
    pub(super) name: String,
    pub(super) title: String,
    #[serde(default)]
    pub(super) aliases: Vec<String>,
    #[serde(default)]
    pub(super) unit: Option<String>,
    #[serde(default)]
    pub(super) software: Option<String>,
    #[serde(default)]
    pub(super) hardware: Option<String>,
    #[serde(default)]
    pub(super) cache: Option<[String; 3]>,
}

#[derive(Deserialize)]
pub(super) struct TomlMetric {
    pub(super) name: String,
    pub(super) title: String,
    pub(super) formula: String,
    pub(super) unit: String,
    pub(super) group: String,
    #[serde(default)]
    pub(super) notable: Option<f64>,
    #[serde(default)]
    pub(super) finding: Option<String>,
    #[serde(default)]
    pub(super) sample: Vec<String>,
    #[serde(default)]
    pub(super) rank: Option<u32>,
    #[serde(default)]
    pub(super) same_as: Option<String>,
    #[serde(default)]
    pub(super) scale: Option<f64>,
    /// Arm only: the formula on a core (catalog id) whose files lack an event of
    /// `formula` or define the vendor metric differently; `load_arm` substitutes it.
    #[serde(default)]
    pub(super) formula_for: BTreeMap<String, String>,
}

#[derive(Deserialize)]
pub(super) struct TomlGroup {
    pub(super) name: String,
    pub(super) title: String,
    #[serde(default)]
    pub(super) label: Option<String>,
    #[serde(default)]
    pub(super) vendor: Vec<String>,
}

#[derive(Deserialize, Default)]
pub(super) struct TomlVendorOverride {
    pub(super) counters: Option<usize>,
    pub(super) fixed: Option<Vec<String>>,
}

#[derive(Deserialize)]
pub(super) struct TomlCatalogHead {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) counters: usize,
    #[serde(default)]
    pub(super) fixed: Vec<String>,
}

#[derive(Deserialize)]
pub(super) struct TomlFile {
    #[serde(default)]
    pub(super) catalog: Option<TomlCatalogHead>,
    #[serde(default)]
    pub(super) vendor: BTreeMap<String, TomlVendorOverride>,
    #[serde(default)]
    pub(super) event: Vec<TomlEvent>,
    #[serde(default)]
    pub(super) metric: Vec<TomlMetric>,
    #[serde(default)]
    pub(super) group: Vec<TomlGroup>,
    #[serde(default)]
    pub(super) tree: Option<TreeDef>,
    #[serde(default)]
    pub(super) aliases: BTreeMap<String, String>,
}

#[derive(Deserialize)]
pub(super) struct TelemetryFile {
    pub(super) product_configuration: TelemetryProduct,
    pub(super) events: BTreeMap<String, TelemetryEvent>,
    pub(super) metrics: BTreeMap<String, TelemetryMetric>,
    pub(super) groups: TelemetryGroups,
    #[serde(default)]
    pub(super) methodologies: BTreeMap<String, TelemetryMethodology>,
}

#[derive(Deserialize)]
pub(super) struct TelemetryProduct {
    pub(super) product_name: String,
    pub(super) part_num: String,
    pub(super) implementer: String,
    #[serde(default)]
    pub(super) num_slots: Option<u32>,
}

#[derive(Deserialize)]
pub(super) struct TelemetryEvent {
    pub(super) code: String,
    pub(super) title: String,
}

#[derive(Deserialize)]
pub(super) struct TelemetryMetric {
    pub(super) title: String,
    pub(super) formula: String,
    pub(super) units: String,
    #[serde(default)]
    pub(super) events: Vec<String>,
    #[serde(default)]
    pub(super) sample_events: Vec<String>,
}

#[derive(Deserialize)]
pub(super) struct TelemetryGroups {
    pub(super) metrics: BTreeMap<String, TelemetryMetricGroup>,
}

#[derive(Deserialize)]
pub(super) struct TelemetryMetricGroup {
    pub(super) title: String,
    pub(super) metrics: Vec<String>,
}

#[derive(Deserialize)]
pub(super) struct TelemetryMethodology {
    pub(super) metric_grouping: TelemetryGrouping,
    pub(super) decision_tree: TelemetryTree,
}

#[derive(Deserialize)]
pub(super) struct TelemetryGrouping {
    pub(super) stage_1: Vec<String>,
    pub(super) stage_2: Vec<String>,
}

#[derive(Deserialize)]
pub(super) struct TelemetryTree {
    /// The level-1 nodes (N3 and V3 list their level-2 nodes in `metrics` too).
    #[serde(default)]
    pub(super) root_nodes: Vec<String>,
    pub(super) metrics: Vec<VendorNode>,
}

#[derive(Deserialize)]
pub(super) struct ArmPmuFile {
    pub(super) cpu: String,
    pub(super) cpuid: String,
    /// Absent from the files of newer cores (see `ArmFiles::counters`).
    #[serde(default)]
    pub(super) counters: Option<usize>,
    pub(super) events: Vec<ArmPmuEvent>,
}

#[derive(Deserialize)]
pub(super) struct ArmPmuEvent {
    pub(super) code: u64,
    pub(super) name: String,
}

#[derive(Deserialize)]
pub(super) struct ArmCpusFile {
    pub(super) cpus: Vec<ArmCpu>,
}

#[derive(Deserialize)]
pub(super) struct ArmCpu {
    pub(super) implementer: u32,
    pub(super) name: String,
    pub(super) cpuid: String,
}

pub(super) fn data_err(file: &str, message: impl Into<String>) -> CatalogError {
    CatalogError::Data {
        file: file.to_string(),
        message: message.into(),
    }
}

pub(super) fn parse_hex(s: &str) -> Option<u64> {
    let t = s.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u64::from_str_radix(t, 16).ok()
}

pub(super) fn hardware_config(name: &str) -> Option<u64> {
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

pub(super) fn cache_config(parts: &[String; 3]) -> Option<u64> {
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

pub(super) fn software_encoding(name: &str) -> Option<Encoding> {
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

pub(super) fn toml_events(
    file: &str,
    events: Vec<TomlEvent>,
) -> Result<Vec<EventDef>, CatalogError> {
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

pub(super) fn toml_metrics(
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

pub(super) fn parse_toml(file: &str, text: &str) -> Result<TomlFile, CatalogError> {
    toml::from_str(text).map_err(|e| data_err(file, e.to_string()))
}

pub(super) fn groups_from(
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
    if let Some(c) = x86::load_x86_vendor(id) {
        return c;
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

/// The core's MIDR implementer and part from the telemetry file; the PMU event file's
/// cpuid must be the same core.
fn arm_midr(
    t: &TelemetryFile,
    p: &ArmPmuFile,
    tfile: &str,
    pfile: &str,
) -> Result<(u32, u32), CatalogError> {
    let implementer = parse_hex(&t.product_configuration.implementer)
        .ok_or_else(|| data_err(tfile, "bad implementer"))? as u32;
    let part = parse_hex(&t.product_configuration.part_num)
        .ok_or_else(|| data_err(tfile, "bad part_num"))? as u32;
    // The two vendor files must describe the same core.
    let cpuid = parse_hex(&p.cpuid).ok_or_else(|| data_err(pfile, "bad cpuid"))?;
    if cpuid != ((u64::from(implementer) << 12) | u64::from(part)) {
        return Err(data_err(
            pfile,
            format!(
                "cpuid {} does not match the telemetry file's implementer/part",
                p.cpuid
            ),
        ));
    }
    Ok((implementer, part))
}

/// The telemetry file's events, their codes cross-checked with the PMU event file.
fn arm_events(
    t: &TelemetryFile,
    p: &ArmPmuFile,
    tfile: &str,
    pfile: &str,
) -> Result<Vec<EventDef>, CatalogError> {
    let mut events = Vec::new();
    for (name, e) in &t.events {
        let code = parse_hex(&e.code)
            .ok_or_else(|| data_err(tfile, format!("event {name}: bad code {:?}", e.code)))?;
        events.push(EventDef {
            name: name.clone(),
            title: e.title.clone(),
            encoding: Encoding::Raw(code),
            aliases: Vec::new(),
            unit: None,
        });
    }
    for pe in &p.events {
        if let Some(e) = events.iter().find(|e| e.name == pe.name) {
            if e.encoding != Encoding::Raw(pe.code) {
                return Err(data_err(
                    pfile,
                    format!(
                        "{} has code 0x{:x} here but {:?} in {tfile}",
                        pe.name, pe.code, e.encoding
                    ),
                ));
            }
        }
    }
    Ok(events)
}

/// Adds the methodology's aliases (`alias = "EVENT"`) to the events they name.
fn add_arm_aliases(
    events: &mut [EventDef],
    aliases: &BTreeMap<String, String>,
    id: &str,
) -> Result<(), CatalogError> {
    for (alias, target) in aliases {
        let e = events
            .iter_mut()
            .find(|e| &e.name == target)
            .ok_or_else(|| {
                data_err(
                    "data/metrics/arm.toml",
                    format!("alias {alias} names unknown event {target} ({id})"),
                )
            })?;
        e.aliases.push(alias.clone());
    }
    Ok(())
}

/// The telemetry file's metrics, each with the events it lists matching its formula.
fn arm_vendor_metrics(t: &TelemetryFile, tfile: &str) -> Result<Vec<MetricDef>, CatalogError> {
    let mut vendor = Vec::new();
    for (name, vm) in &t.metrics {
        let expr =
            expr::parse(&vm.formula).map_err(|e| data_err(tfile, format!("metric {name}: {e}")))?;
        // The vendor lists each metric's events; they must match its formula.
        let vars: Vec<String> = expr.variables().into_iter().collect();
        let mut listed = vm.events.clone();
        listed.sort();
        listed.dedup();
        if !vm.events.is_empty() && vars != listed {
            return Err(data_err(
                tfile,
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
    Ok(vendor)
}

/// The telemetry file's top-down methodology: its stages and root nodes.
fn arm_vendor_tree(t: &TelemetryFile) -> Option<VendorTree> {
    t.methodologies.values().next().map(|mt| VendorTree {
        stage_1: mt.metric_grouping.stage_1.clone(),
        stage_2: mt.metric_grouping.stage_2.clone(),
        roots: mt
            .decision_tree
            .metrics
            .iter()
            .filter(|n| {
                let roots = &mt.decision_tree.root_nodes;
                roots.is_empty() || roots.contains(&n.name)
            })
            .cloned()
            .collect(),
        nodes: Vec::new(),
    })
}

/// The core's name, the same in both vendor files and numalab's table.
fn arm_product_name(
    t: &TelemetryFile,
    p: &ArmPmuFile,
    files: &ArmFiles,
    tfile: &str,
    pfile: &str,
) -> Result<String, CatalogError> {
    let name = t.product_configuration.product_name.clone();
    if name != p.cpu || name != files.name {
        return Err(data_err(
            pfile,
            format!(
                "cpu {:?} differs from {:?} in {tfile} or {:?} in numalab's table",
                p.cpu, name, files.name
            ),
        ));
    }
    Ok(name)
}

/// The programmable counters: the PMU event file's, else numalab's table's; both must
/// agree when both say.
fn arm_counters(p: &ArmPmuFile, files: &ArmFiles, pfile: &str) -> Result<usize, CatalogError> {
    match (p.counters, files.counters) {
        (Some(a), Some(b)) if a != b => Err(data_err(
            pfile,
            format!("{a} counters here but {b} in numalab's table"),
        )),
        (Some(n), _) | (None, Some(n)) => Ok(n),
        (None, None) => Err(data_err(pfile, "no number of counters")),
    }
}

/// Loads an Arm catalog from Arm's telemetry and PMU event files, numalab's
/// methodology for Arm and the kernel's software events.
pub(super) fn load_arm(files: &ArmFiles) -> Result<Catalog, CatalogError> {
    let tfile = format!("data/arm/telemetry/{}.json", files.id);
    let pfile = format!("data/arm/pmu/{}.json", files.id);
    let t: TelemetryFile =
        serde_json::from_str(files.telemetry).map_err(|e| data_err(&tfile, e.to_string()))?;
    let p: ArmPmuFile =
        serde_json::from_str(files.pmu).map_err(|e| data_err(&pfile, e.to_string()))?;
    let (implementer, part) = arm_midr(&t, &p, &tfile, &pfile)?;
    let mut events = arm_events(&t, &p, &tfile, &pfile)?;
    let sw = parse_toml("data/linux/software.toml", SOFTWARE_TOML)?;
    let mut m = parse_toml("data/metrics/arm.toml", ARM_METRICS_TOML)?;
    per_core_formulas(&mut m.metric, files.id)?;
    events.extend(toml_events("data/linux/software.toml", sw.event)?);
    add_arm_aliases(&mut events, &m.aliases, files.id)?;
    let methodology = toml_metrics("data/metrics/arm.toml", m.metric, MetricOrigin::Methodology)?;
    let software = toml_metrics(
        "data/linux/software.toml",
        sw.metric,
        MetricOrigin::Software,
    )?;
    let vendor = arm_vendor_metrics(&t, &tfile)?;
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
    let vendor_tree = arm_vendor_tree(&t);
    let tree = m
        .tree
        .ok_or_else(|| data_err("data/metrics/arm.toml", "no [tree]"))?;
    let fixed = vec!["CPU_CYCLES".to_string()];
    let name = arm_product_name(&t, &p, files, &tfile, &pfile)?;
    let counters = arm_counters(&p, files, &pfile)?;
    let mut sources = vec![
        format!("{tfile} (Arm telemetry specification, Apache-2.0)"),
        format!("{pfile} (Arm PMU event file, Apache-2.0)"),
    ];
    if p.counters.is_none() {
        sources.push(format!(
            "{counters} programmable counters: Arm Streamline's pmus.xml (not in {pfile})"
        ));
    }
    sources.push("data/metrics/arm.toml (numalab methodology)".into());
    sources.push("data/linux/software.toml".into());
    build(Raw {
        id: files.id.to_string(),
        name,
        arch: Arch::Arm,
        counters,
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
        sources,
    })
}

/// Gives each methodology metric its formula for the Arm core `id` (`formula_for`), and
/// refuses a `formula_for` that names no shipped Arm core (a typo would otherwise be
/// silently ignored).
pub(super) fn per_core_formulas(metrics: &mut [TomlMetric], id: &str) -> Result<(), CatalogError> {
    for tm in metrics {
        if let Some(core) = tm
            .formula_for
            .keys()
            .find(|k| !ARM.iter().any(|a| a.id == *k))
        {
            return Err(data_err(
                "data/metrics/arm.toml",
                format!("metric {}: formula_for names unknown core {core}", tm.name),
            ));
        }
        if let Some(f) = tm.formula_for.remove(id) {
            tm.formula = f;
        }
    }
    Ok(())
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
