//! Events and metrics from the installed Linux perf, for a CPU numalab ships no catalog
//! for: `perf list -j` (perf's JSON listing) read into a [`Catalog`] whose sources say
//! "perf <version>", and the comparison of numalab's shipped formulas with perf's of the
//! same name on the same counts.
//!
//! The catalog starts from the kernel's generic events and numalab's methodology (the
//! catalog numalab would use anyway) and adds perf's core-PMU events, encoded through
//! the PMU's sysfs format files (`/sys/bus/event_source/devices/<pmu>/format/*`, under
//! an injectable sysroot), the kernel's sysfs event aliases of that PMU
//! (`.../<pmu>/events/*`), and perf's metrics, parsed with
//! [`crate::expr::parse_perf`]. perf's literals (`#smt_on`, `#num_cpus`, ...) take the
//! machine's values where sysfs gives them ([`MachineFacts`]); `has_event(E)` is whether
//! the listing or sysfs has E; a metric that names another metric gets that metric's
//! formula. A metric that needs what is not known (a literal sysfs does not give,
//! `source_count`, an event on another PMU, an event perf does not encode) is left out,
//! with why ([`PerfCatalog::left_out`]): never computed from a guess. perf's `ScaleUnit`
//! ("100%", "1e-9s") is applied, so values are what perf would print.

use super::*;
use crate::expr::{Input, NotAvailable, PerfInput};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

mod compare;
pub use compare::{compare, compare_probed, probe_counts, FormulaCheck, PerfComparison};

/// The catalog id of a catalog built from the installed perf.
pub const PERF_ID: &str = "perf";

/// How long `perf --version` and `perf list -j` may take.
const PERF_TIMEOUT: Duration = Duration::from_secs(30);

/// One object of `perf list -j`, with the keys perf's JSON printer writes
/// (`tools/perf/builtin-list.c`, `json_print_event` and `json_print_metric`; the option
/// came with perf 6.2). An event: `Unit` (its PMU), `Topic`, `EventName`, `EventAlias`,
/// `ScaleUnit`, `EventType`, `Deprecated`, `BriefDescription`, `PublicDescription`,
/// `Encoding` (`pmu/terms/`). A metric: `MetricGroup` (ONE group: perf prints a metric
/// once per group it is in, and a metric in no group under its own name), `MetricName`,
/// `MetricExpr`, `MetricThreshold` and `ScaleUnit` (not in perf 6.2's printer),
/// `BriefDescription`, `PublicDescription`, and since 2025 `Unit` (the metric's PMU:
/// `default_core` for the core PMU, `cpu_core`/`cpu_atom` on hybrid CPUs). perf 6.2 also
/// wrote `MetricName`/`MetricExpr` on events that carried them. Keys numalab does not
/// use are ignored.
#[derive(Debug, Clone, Default, Deserialize)]
struct Entry {
    #[serde(rename = "Unit")]
    unit: Option<String>,
    #[serde(rename = "EventName")]
    event_name: Option<String>,
    #[serde(rename = "BriefDescription")]
    brief: Option<String>,
    #[serde(rename = "Encoding")]
    encoding: Option<String>,
    #[serde(rename = "MetricName")]
    metric_name: Option<String>,
    #[serde(rename = "MetricExpr")]
    metric_expr: Option<String>,
    #[serde(rename = "MetricGroup")]
    metric_group: Option<String>,
    #[serde(rename = "ScaleUnit")]
    scale_unit: Option<String>,
}

impl Entry {
    /// The PMU it belongs to (perf's `Unit`).
    fn pmu(&self) -> Option<&str> {
        self.unit.as_deref()
    }
}

/// perf's listing, parsed: its version and entries.
#[derive(Debug, Clone)]
pub struct PerfList {
    /// perf's version ("6.8.12").
    pub version: String,
    entries: Vec<Entry>,
}

/// Why the installed perf gave no catalog.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PerfError {
    /// perf could not be run.
    #[error("perf could not be run: {0}")]
    NotRun(String),
    /// This perf has no JSON listing.
    #[error("perf {version} cannot list metrics as JSON (`perf list -j` failed: {why})")]
    NoJson {
        /// perf's version.
        version: String,
        /// What `perf list -j` said.
        why: String,
    },
    /// The listing is not the JSON numalab reads.
    #[error("perf {version}'s `perf list -j` output is not the JSON numalab reads: {why}")]
    BadJson {
        /// perf's version.
        version: String,
        /// What is wrong.
        why: String,
    },
    /// Nothing of the listing can be counted here.
    #[error(
        "perf {version} lists no metric over this CPU's own events that numalab can compute ({left_out} events and metrics left out)"
    )]
    NoMetrics {
        /// perf's version.
        version: String,
        /// How many metrics were left out.
        left_out: usize,
    },
}

impl PerfList {
    /// Reads `perf list -j`'s output (an array of objects with perf's keys; see
    /// `Entry`).
    pub fn from_json(version: &str, text: &str) -> Result<PerfList, PerfError> {
        let entries: Vec<Entry> = serde_json::from_str(text).map_err(|e| PerfError::BadJson {
            version: version.into(),
            why: e.to_string(),
        })?;
        Ok(PerfList {
            version: version.into(),
            entries,
        })
    }

    /// Runs the installed perf (`perf --version`, then `perf list -j`) through `run`,
    /// which takes perf's arguments and gives its standard output or why it failed.
    pub fn installed(
        run: &dyn Fn(&[&str]) -> Result<String, String>,
    ) -> Result<PerfList, PerfError> {
        let version = run(&["--version"]).map_err(PerfError::NotRun)?;
        let version = version
            .trim()
            .strip_prefix("perf version ")
            .unwrap_or(version.trim())
            .to_string();
        let text = run(&["list", "-j"]).map_err(|why| PerfError::NoJson {
            version: version.clone(),
            why,
        })?;
        PerfList::from_json(&version, &text)
    }
}

/// Runs `perf ARGS` without a shell, with a timeout: its standard output, or why not.
pub fn run_perf(args: &[&str]) -> Result<String, String> {
    let mut argv = vec!["perf".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let spec = numalab_proc::Spec {
        argv,
        timeout: Some(PERF_TIMEOUT),
        keep_stdout_bytes: 256 << 20,
        ..Default::default()
    };
    let out = numalab_proc::spawn(&spec)
        .map_err(|e| e.to_string())?
        .wait();
    if !out.success() {
        let last = out
            .stderr_tail
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string();
        return Err(format!("{}; {last}", out.describe()));
    }
    Ok(out.stdout.unwrap_or_default())
}

/// The machine's values of perf's literals, where sysfs gives them (`#smt_on`,
/// `#num_cpus`, `#num_cpus_online`, `#num_packages`, `#num_dies`, `#num_cores`).
/// `#core_wide` and `#system_tsc_freq` are never read here, so metrics needing them are
/// left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MachineFacts {
    /// Literal ("#smt_on") to value.
    pub values: BTreeMap<String, f64>,
}

impl MachineFacts {
    /// Reads the facts from sysfs under `root` ("/" for this machine).
    pub fn from_sysfs(root: &Path) -> MachineFacts {
        let cpu = root.join("sys/devices/system/cpu");
        let read = |p: PathBuf| std::fs::read_to_string(p).ok();
        let mut values = BTreeMap::new();
        if let Some(v) = read(cpu.join("smt/active")).and_then(|t| t.trim().parse::<f64>().ok()) {
            values.insert("#smt_on".into(), v);
        }
        let list_len = |t: String| cpu_list_len(t.trim());
        if let Some(n) = read(cpu.join("possible")).and_then(list_len) {
            values.insert("#num_cpus".into(), n as f64);
        }
        if let Some(online) = read(cpu.join("online")) {
            if let Some(n) = cpu_list_len(online.trim()) {
                values.insert("#num_cpus_online".into(), n as f64);
            }
            // Packages, dies and cores of the online CPUs.
            let mut packages = BTreeSet::new();
            let mut dies = BTreeSet::new();
            let mut cores = BTreeSet::new();
            let mut complete = (true, true);
            for c in cpu_list(online.trim()).unwrap_or_default() {
                let t = cpu.join(format!("cpu{c}/topology"));
                let id = |f: &str| read(t.join(f)).map(|s| s.trim().to_string());
                match (id("physical_package_id"), id("core_id")) {
                    (Some(p), Some(core)) => {
                        match id("die_id") {
                            Some(d) => {
                                dies.insert((p.clone(), d));
                            }
                            None => complete.1 = false,
                        }
                        cores.insert((p.clone(), core));
                        packages.insert(p);
                    }
                    _ => complete.0 = false,
                }
            }
            if complete.0 && !packages.is_empty() {
                values.insert("#num_packages".into(), packages.len() as f64);
                values.insert("#num_cores".into(), cores.len() as f64);
                if complete.1 {
                    values.insert("#num_dies".into(), dies.len() as f64);
                }
            }
        }
        MachineFacts { values }
    }
}

/// The CPUs of a kernel CPU list ("0-3,8"), None when it is not one.
fn cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

fn cpu_list_len(text: &str) -> Option<usize> {
    cpu_list(text).map(|v| v.len())
}

/// perf's `ScaleUnit` ("100%", "1e-9s", "1GHz"): the factor and the unit.
pub fn scale_unit(text: &str) -> Option<(f64, String)> {
    let t = text.trim();
    let end = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == 'e' || c == 'E')
                    && t[i + 1..]
                        .starts_with(|n: char| n.is_ascii_digit() || n == '-' || n == '+'))
                || ((c == '-' || c == '+') && i > 0 && t[..i].ends_with(['e', 'E'])))
        })
        .map_or(t.len(), |(i, _)| i);
    let factor: f64 = t[..end].parse().ok()?;
    Some((factor, t[end..].trim().to_string()))
}

/// Whether a PMU is a core PMU numalab counts on (x86 `cpu`/`cpu_core`, Arm `armv8_*`,
/// `armv9_*`; `default_core`, perf's name for the core PMU in its metric tables). Hybrid Atom cores (`cpu_atom`) are not: numalab counts one core type.
fn is_core_pmu(pmu: &str) -> bool {
    matches!(pmu, "cpu" | "cpu_core" | "default_core")
        || pmu.starts_with("armv8_")
        || pmu.starts_with("armv9_")
}

/// An event's perf encoding (`event=0x3c,umask=0x1`) on `pmu`, through the PMU's sysfs
/// format files under `root`.
fn encode(root: &Path, pmu: &str, terms: &str) -> Result<Encoding, String> {
    let dir = root
        .join("sys/bus/event_source/devices")
        .join(pmu)
        .join("format");
    let mut words = [0u64; 3];
    for term in terms.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (key, value) = term.split_once('=').unwrap_or((term, "1"));
        // perf's own settings, not bits of the event.
        if matches!(key, "period" | "freq" | "name" | "percore" | "metric-id") {
            continue;
        }
        let value = parse_hex(value)
            .filter(|_| value.starts_with("0x"))
            .or_else(|| value.parse().ok())
            .ok_or_else(|| format!("term {term:?} has no number"))?;
        let path = dir.join(key);
        let format = std::fs::read_to_string(&path).map_err(|_| {
            format!(
                "{} does not exist, so term {key} cannot be encoded",
                path.display()
            )
        })?;
        let (word, ranges) = format
            .trim()
            .split_once(':')
            .ok_or_else(|| format!("{} is not `configN:bits`", path.display()))?;
        let w = match word {
            "config" => 0,
            "config1" => 1,
            "config2" => 2,
            other => return Err(format!("{} names {other:?}", path.display())),
        };
        let mut v = value;
        for r in ranges.split(',') {
            let (lo, hi) = r.split_once('-').unwrap_or((r, r));
            let (lo, hi): (u32, u32) = match (lo.trim().parse(), hi.trim().parse()) {
                (Ok(lo), Ok(hi)) if lo <= hi && hi < 64 => (lo, hi),
                _ => return Err(format!("{} has bad bits {r:?}", path.display())),
            };
            let width = hi - lo + 1;
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            words[w] |= (v & mask) << lo;
            v = if width == 64 { 0 } else { v >> width };
        }
        if v != 0 {
            return Err(format!("term {term:?} does not fit {}", path.display()));
        }
    }
    match words {
        [c, 0, 0] => Ok(Encoding::Raw(c)),
        [config, config1, 0] => Ok(Encoding::RawExt { config, config1 }),
        _ => Err("it sets config2, which numalab's encodings have no room for".into()),
    }
}

/// A catalog built from perf's listing, and what was left out of it, with why.
#[derive(Debug, Clone)]
pub struct PerfCatalog {
    /// The catalog (sources end with "perf <version>").
    pub catalog: Catalog,
    /// perf's version.
    pub version: String,
    /// Names of perf's metrics in it.
    pub metrics: Vec<String>,
    /// Events and metrics left out: (name, why).
    pub left_out: Vec<(String, String)>,
}

/// Events by lower-case name or alias to the canonical name.
struct Names {
    events: Vec<EventDef>,
    index: HashMap<String, usize>,
    /// Every event name of the listing, any PMU, lower case (for `has_event`).
    listed: BTreeSet<String>,
}

impl Names {
    fn find(&self, name: &str) -> Option<&EventDef> {
        self.index
            .get(&name.to_ascii_lowercase())
            .map(|&i| &self.events[i])
    }

    /// Adds an event, or its name as an alias of the event of the same encoding.
    fn add(&mut self, name: &str, title: &str, encoding: Encoding) {
        if self.find(name).is_some() {
            return;
        }
        let same = self.events.iter().position(|e| e.encoding == encoding);
        let i = match same {
            Some(i) => {
                self.events[i].aliases.push(name.to_string());
                i
            }
            None => {
                self.events.push(EventDef {
                    name: name.to_string(),
                    title: title.to_string(),
                    encoding,
                    aliases: Vec::new(),
                    unit: None,
                });
                self.events.len() - 1
            }
        };
        self.index.insert(name.to_ascii_lowercase(), i);
    }

    /// Whether the machine has the event (perf's `has_event`): a catalog event, or one
    /// the listing names on any PMU.
    fn exists(&self, name: &str) -> bool {
        let inner = name
            .split_once('@')
            .map_or(name, |(_, r)| r.strip_suffix('@').unwrap_or(r));
        self.resolve(name).is_ok() || self.listed.contains(&inner.to_ascii_lowercase())
    }

    /// A perf formula's event name as a catalog event: `pmu@name@` on a core PMU or
    /// `tool`, else the name.
    fn resolve(&self, name: &str) -> Result<String, String> {
        let inner = match name.split_once('@') {
            Some((pmu, rest)) => {
                let ev = rest.strip_suffix('@').unwrap_or(rest);
                if !(is_core_pmu(pmu) || pmu == "tool") {
                    return Err(format!(
                        "event {name} is on PMU {pmu}, which numalab's core counting does not open"
                    ));
                }
                ev
            }
            None => name,
        };
        self.find(inner).map(|e| e.name.clone()).ok_or_else(|| {
            format!("event {name} is not in perf's listing of a core PMU nor in sysfs")
        })
    }
}

/// Builds the catalog: `base` (the kernel's generic events and numalab's methodology)
/// plus the core-PMU events of `list` and of sysfs under `root`, and perf's metrics with
/// `facts` for perf's literals.
pub fn build_catalog(
    base: Catalog,
    list: &PerfList,
    root: &Path,
    facts: &MachineFacts,
) -> Result<PerfCatalog, PerfError> {
    let mut left_out: Vec<(String, String)> = Vec::new();
    let mut names = Names {
        events: base.events.clone(),
        index: HashMap::new(),
        listed: list
            .entries
            .iter()
            .filter_map(|e| e.event_name.as_deref())
            .map(|n| n.trim().to_ascii_lowercase())
            .collect(),
    };
    for (i, e) in names.events.iter().enumerate() {
        for n in std::iter::once(&e.name).chain(&e.aliases) {
            names.index.insert(n.to_ascii_lowercase(), i);
        }
    }
    // The core PMUs perf lists, and the kernel's sysfs aliases of each.
    let mut pmus: BTreeSet<String> = list
        .entries
        .iter()
        .filter_map(|e| e.pmu())
        .filter(|p| is_core_pmu(p))
        .map(str::to_string)
        .collect();
    if let Ok(dir) = std::fs::read_dir(root.join("sys/bus/event_source/devices")) {
        pmus.extend(
            dir.flatten()
                .map(|d| d.file_name().to_string_lossy().into_owned())
                .filter(|p| is_core_pmu(p)),
        );
    }
    for pmu in &pmus {
        let dir = root
            .join("sys/bus/event_source/devices")
            .join(pmu)
            .join("events");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        for f in files {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.contains('.') && (name.ends_with(".scale") || name.ends_with(".unit")) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            match encode(root, pmu, text.trim()) {
                Ok(enc) => names.add(&name, &format!("{pmu}/{name}/ (sysfs)"), enc),
                Err(why) => left_out.push((format!("{pmu}/{name}/"), why)),
            }
        }
    }
    for e in &list.entries {
        let (Some(name), Some(pmu)) = (e.event_name.as_deref(), e.pmu()) else {
            continue;
        };
        if !is_core_pmu(pmu) {
            continue;
        }
        let Some(enc) = e.encoding.as_deref() else {
            continue;
        };
        let terms = enc
            .strip_prefix(pmu)
            .and_then(|r| r.strip_prefix('/'))
            .map(|r| r.trim_end_matches('/'));
        let Some(terms) = terms else {
            left_out.push((name.into(), format!("encoding {enc:?} is not {pmu}/terms/")));
            continue;
        };
        match encode(root, pmu, terms) {
            Ok(code) => names.add(name.trim(), e.brief.as_deref().unwrap_or(name), code),
            Err(why) => left_out.push((name.into(), why)),
        }
    }
    // perf's metrics (the first of a name; Atom cores' and other PMUs' left out). perf
    // prints a metric once per group it is in, so a name's groups are gathered from
    // every object of that name (a metric in no group comes under its own name).
    let mut exprs: BTreeMap<String, &Entry> = BTreeMap::new();
    let mut metric_groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in &list.entries {
        let (Some(name), Some(_)) = (e.metric_name.as_deref(), e.metric_expr.as_deref()) else {
            continue;
        };
        if let Some(p) = e.pmu().filter(|p| !is_core_pmu(p) && *p != "tool") {
            if !left_out.iter().any(|(n, _)| n == name) {
                left_out.push((name.into(), format!("a metric of PMU {p}")));
            }
            continue;
        }
        let first = exprs.entry(name.to_string()).or_insert(e);
        if first.metric_expr != e.metric_expr {
            continue;
        }
        let listed = metric_groups.entry(name.to_string()).or_default();
        for g in e.metric_group.as_deref().unwrap_or("").split(';') {
            let g = g.trim();
            if !g.is_empty() && g != name && !listed.iter().any(|x| x == g) {
                listed.push(g.to_string());
            }
        }
    }
    let mut vendor: Vec<MetricDef> = Vec::new();
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, e) in &exprs {
        let built = metric_expr(name, &exprs, &names, facts, &mut Vec::new()).and_then(|x| {
            let (factor, unit) = match e.scale_unit.as_deref() {
                Some(s) => scale_unit(s)
                    .ok_or_else(|| format!("ScaleUnit {s:?} is not a number and a unit"))?,
                None => (1.0, String::new()),
            };
            Ok((x, factor, unit))
        });
        let (x, factor, unit) = match built {
            Ok(b) => b,
            Err(why) => {
                left_out.push((name.clone(), why));
                continue;
            }
        };
        let expr = if factor == 1.0 {
            x
        } else {
            Expr::Bin(expr::Op::Mul, Box::new(Expr::Num(factor)), Box::new(x))
        };
        let group_list: Vec<String> = metric_groups.get(name).cloned().unwrap_or_default();
        for g in &group_list {
            groups.entry(g.clone()).or_default().push(name.clone());
        }
        vendor.push(MetricDef {
            name: name.clone(),
            title: e.brief.clone().unwrap_or_default(),
            formula: expr.to_string(),
            expr,
            unit: if unit.is_empty() {
                "value".into()
            } else {
                unit
            },
            group: group_list.first().cloned().unwrap_or_default(),
            origin: MetricOrigin::Vendor,
            notable: None,
            finding: None,
            sample: Vec::new(),
            rank: 9,
            same_as: None,
            scale: 1.0,
        });
    }
    // Only a listing with metrics over the core PMU's own events is worth a catalog (the
    // generic and software events are there without perf).
    let over_core = vendor.iter().any(|m| {
        m.expr.variables().iter().any(|v| {
            names
                .find(v)
                .is_some_and(|e| matches!(e.encoding, Encoding::Raw(_) | Encoding::RawExt { .. }))
        })
    });
    if !over_core {
        return Err(PerfError::NoMetrics {
            version: list.version.clone(),
            left_out: left_out.len(),
        });
    }
    let metric_names: Vec<String> = vendor.iter().map(|m| m.name.clone()).collect();
    let mut all_groups = base.groups.clone();
    for (g, metrics) in groups {
        if all_groups.iter().any(|x| x.name.eq_ignore_ascii_case(&g)) {
            continue;
        }
        all_groups.push(GroupDef {
            title: format!("perf's metric group {g}"),
            name: g,
            label: None,
            vendor: Vec::new(),
            metrics,
            origin: MetricOrigin::Vendor,
        });
    }
    let by = |o: MetricOrigin| -> Vec<MetricDef> {
        base.metrics
            .iter()
            .filter(|m| m.origin == o)
            .cloned()
            .collect()
    };
    let mut sources = base.sources.clone();
    sources.push(format!("perf {}", list.version));
    let catalog = build(Raw {
        id: PERF_ID.into(),
        name: format!(
            "{} with perf {}'s events and metrics",
            base.name, list.version
        ),
        arch: base.arch,
        counters: base.counters,
        fixed: base.fixed.clone(),
        midr: base.midr,
        slots: base.slots,
        events: names.events,
        methodology: by(MetricOrigin::Methodology),
        software: by(MetricOrigin::Software),
        vendor,
        groups: all_groups,
        tree: base.tree.clone(),
        vendor_tree: None,
        sources,
    })
    .map_err(|e| PerfError::BadJson {
        version: list.version.clone(),
        why: e.to_string(),
    })?;
    Ok(PerfCatalog {
        catalog,
        version: list.version.clone(),
        metrics: metric_names,
        left_out,
    })
}

/// A perf metric's formula over catalog events: literals and `has_event` replaced by
/// their values, named metrics by their formulas, events by catalog names; an error
/// says why it cannot be computed here.
fn metric_expr(
    name: &str,
    exprs: &BTreeMap<String, &Entry>,
    names: &Names,
    facts: &MachineFacts,
    stack: &mut Vec<String>,
) -> Result<Expr, String> {
    if stack.iter().any(|s| s == name) {
        return Err(format!(
            "metric {name} names itself (through {})",
            stack.join(" -> ")
        ));
    }
    let text = exprs
        .get(name)
        .and_then(|e| e.metric_expr.as_deref())
        .ok_or_else(|| format!("metric {name} is not in perf's listing"))?;
    let parsed = expr::parse_perf(text).map_err(|e| e.to_string())?;
    let mut subst: HashMap<String, Result<Expr, String>> = HashMap::new();
    stack.push(name.to_string());
    for v in parsed.variables() {
        let r = match PerfInput::of(&v) {
            PerfInput::Literal(l) => facts
                .values
                .get(l)
                .map(|x| Expr::Num(*x))
                .ok_or_else(|| format!("{l} is not known on this machine")),
            PerfInput::HasEvent(e) => Ok(Expr::Num(if names.exists(e) { 1.0 } else { 0.0 })),
            PerfInput::SourceCount(e) => Err(format!(
                "source_count({e}) needs how many counters perf sums into {e}, which numalab does not know"
            )),
            PerfInput::Event(e) => match names.resolve(e) {
                Ok(c) => Ok(Expr::Var(c)),
                Err(why) => match exprs.get(e) {
                    Some(_) => metric_expr(e, exprs, names, facts, stack),
                    None => Err(why),
                },
            },
        };
        subst.insert(v, r);
    }
    stack.pop();
    let folded = parsed
        .substitute(&|v| subst.get(v).and_then(|r| r.as_ref().ok()).cloned())
        .fold_conditions();
    // What remains must be catalog events; anything else is why it cannot be computed.
    for v in folded.ordered_variables() {
        if let Some(Err(why)) = subst.get(&v) {
            return Err(why.clone());
        }
        if names.find(&v).is_none_or(|e| e.name != v) {
            return Err(format!("input {v} has no value here"));
        }
    }
    Ok(folded)
}

static INSTALLED: OnceLock<Result<PerfList, PerfError>> = OnceLock::new();

/// The installed perf's listing, read once per process.
pub fn installed_list() -> Result<PerfList, PerfError> {
    INSTALLED
        .get_or_init(|| PerfList::installed(&run_perf))
        .clone()
}

/// The base catalog a perf catalog of this machine starts from (Arm: the generic
/// events; x86: the generic events for the vendor named in `how`).
fn base_for(m: &CpuMatch) -> Result<Catalog, CatalogError> {
    if cfg!(target_arch = "aarch64") || m.how.contains("MIDR") {
        load_arm_generic()
    } else {
        load_match(&CpuMatch {
            catalog: X86_ID.into(),
            ..m.clone()
        })
    }
}

/// The catalog of a [`CpuMatch`] whose catalog is [`PERF_ID`]: rebuilt from the
/// installed perf and this machine's sysfs.
pub fn load_installed(m: &CpuMatch) -> Result<Catalog, CatalogError> {
    let list = installed_list().map_err(|e| CatalogError::NoCatalog(e.to_string()))?;
    let base = base_for(m)?;
    build_catalog(
        base,
        &list,
        Path::new("/"),
        &MachineFacts::from_sysfs(Path::new("/")),
    )
    .map(|p| p.catalog)
    .map_err(|e| CatalogError::NoCatalog(e.to_string()))
}

/// The catalog perf's `list` gives for the CPU of `m` on the machine under `root`, with
/// `facts` for perf's literals: the one [`prefer_perf`] selects for a CPU numalab ships
/// no catalog for, built for any match (a shipped one too, to [`compare`] with it).
pub fn catalog_for(
    m: &CpuMatch,
    list: &PerfList,
    root: &Path,
    facts: &MachineFacts,
) -> Result<PerfCatalog, PerfError> {
    let base = base_for(m).map_err(|e| PerfError::NotRun(e.to_string()))?;
    build_catalog(base, list, root, facts)
}

/// Catalog selection with perf: a match to a generic catalog (numalab ships none for
/// this CPU) becomes the installed perf's catalog when perf gives metrics for it, said
/// in `how` (and when it does not, `how` says why); every other match is returned as it
/// is.
pub fn prefer_perf(m: CpuMatch) -> CpuMatch {
    prefer_perf_with(m, &installed_list, Path::new("/"))
}

/// [`prefer_perf`] with the listing and sysroot given.
pub fn prefer_perf_with(
    m: CpuMatch,
    list: &dyn Fn() -> Result<PerfList, PerfError>,
    root: &Path,
) -> CpuMatch {
    if m.catalog != X86_ID && m.catalog != ARM_GENERIC_ID {
        return m;
    }
    let built = list().and_then(|l| catalog_for(&m, &l, root, &MachineFacts::from_sysfs(root)));
    match built {
        Ok(p) => CpuMatch {
            catalog: PERF_ID.into(),
            how: format!(
                "{}; events and metrics from perf {} ({} metrics; numalab ships no catalog for this CPU)",
                m.how,
                p.version,
                p.metrics.len()
            ),
            cpu: m.cpu,
        },
        Err(e) => CpuMatch {
            how: format!("{}; perf's metrics not used: {e}", m.how),
            ..m
        },
    }
}
