//! The statistics of a fleet: nodes grouped by hardware identity, each figure of a
//! group summarised by its median and MAD, and the nodes whose figure is off beyond
//! the group's spread, a relative floor and the node's own repetitions.

use super::input::{FleetInput, FleetNode};
use crate::fingerprint::Fingerprint;
use crate::metrics::Metric;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Version of [`FleetReport`]'s JSON form.
pub const FLEET_REPORT_VERSION: u32 = 1;

/// The factor that makes a MAD a consistent estimate of a normal distribution's
/// standard deviation.
pub const MAD_SCALE: f64 = 1.4826;

/// How outliers are judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// |robust z| above which a node may be an outlier (Iglewicz and Hoaglin: 3.5).
    pub z_threshold: f64,
    /// Relative deviation from the group median a node must exceed (0.05 = 5%):
    /// run-to-run noise on one machine is a few percent.
    pub relative_floor: f64,
    /// The deviation must exceed this many times the node's own robust sample spread
    /// (1.4826 x MAD of its repetitions), when it has two or more.
    pub own_noise_factor: f64,
    /// Fewest nodes of a group, and fewest nodes with a figure, to judge it.
    pub min_nodes: usize,
}

impl Options {
    /// The options from `numalab fleet report`'s flags, the floor in percent; the
    /// defaults for the rest. Refused, in words: a z threshold that is not a positive
    /// number, a floor outside 0-100 %, fewer than 2 nodes (a median and MAD need company).
    pub fn from_flags(z: f64, floor_percent: f64, min_nodes: usize) -> Result<Options, String> {
        if !(z > 0.0 && z.is_finite()) {
            return Err(format!("--z {z}: give a positive number"));
        }
        if !(0.0..100.0).contains(&floor_percent) {
            return Err(format!(
                "--floor {floor_percent}: give a percentage from 0 to 100"
            ));
        }
        if min_nodes < 2 {
            return Err("--min-nodes must be at least 2 (a median and MAD need company)".into());
        }
        Ok(Options {
            z_threshold: z,
            relative_floor: floor_percent / 100.0,
            min_nodes,
            ..Options::default()
        })
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            z_threshold: 3.5,
            relative_floor: 0.05,
            own_noise_factor: 3.0,
            min_nodes: 3,
        }
    }
}

/// Whether a deviation is for the worse or the better, by the figure's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Lower where higher is better (bandwidth), higher where lower is better (latency).
    Worse,
    /// The other way.
    Better,
}

impl Direction {
    /// "worse" or "better".
    pub fn word(self) -> &'static str {
        match self {
            Direction::Worse => "worse",
            Direction::Better => "better",
        }
    }
}

/// A figure as the fleet names it: metric id and setup.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FigureKey {
    /// Metric id ([`Metric::id`]).
    pub id: String,
    /// Setup ([`Metric::setup`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
}

/// A figure's description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureInfo {
    /// Id and setup.
    pub key: FigureKey,
    /// Name with setup, for people.
    pub label: String,
    /// Unit.
    pub unit: String,
    /// Whether higher is better.
    pub higher_is_better: bool,
}

/// One row of the node table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRow {
    /// Node name (its folder).
    pub node: String,
    /// Host name in the bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Group number ([`Group::id`]), when the node has a bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<usize>,
    /// Hardware fingerprint (16 hex digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Kernel release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Firmware (DMI BIOS vendor, version, date).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// Memory in GiB (the bundle's, rounded): shown beside the node because it is part
    /// of the group key but not of the fingerprint's hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gib: Option<u64>,
    /// State from status.json (`done`, `failed`, `timeout`, `launch-failed`, or
    /// `unknown` without one).
    pub state: String,
    /// Exit code from status.json.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Wall time from status.json, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// The node's value of each of [`FleetReport::headline`] (None: not measured).
    pub headline: Vec<Option<f64>>,
    /// Figures in its bundle.
    pub figures: usize,
    /// Figures on which it is an outlier for the worse.
    pub worse: usize,
    /// Figures on which it is an outlier for the better.
    pub better: usize,
    /// Problems reading it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// One node's value of a figure in its group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeValue {
    /// Node name.
    pub node: String,
    /// Median of its samples.
    pub value: f64,
    /// How many samples (repetitions) the value is the median of (the samples
    /// themselves are in the bundle, and in [`Outlier::samples`] for outliers).
    pub n_samples: usize,
    /// Robust z: (value - group median) / (1.4826 x MAD); None when the MAD is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z: Option<f64>,
    /// (value - group median) / |group median|; None when the median is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deviation: Option<f64>,
    /// 1.4826 x MAD of its own samples (None with one sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_spread: Option<f64>,
    /// Outlier, and which way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outlier: Option<Direction>,
    /// Why a node past the group thresholds is not flagged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A figure across the nodes of a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureStats {
    /// The figure.
    pub figure: FigureInfo,
    /// Median of the nodes' values.
    pub median: f64,
    /// Median absolute deviation of the nodes' values from it (raw).
    pub mad: f64,
    /// 1.4826 x MAD: a standard deviation for normal data.
    pub sigma: f64,
    /// The MAD is 0 (half the nodes or more have the same value): outliers judged on
    /// the relative floor alone.
    pub mad_zero: bool,
    /// Every node with the figure, in the group's node order.
    pub nodes: Vec<NodeValue>,
}

/// Nodes with the same hardware identity, memory size and memory configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Number, from 1, largest group first.
    pub id: usize,
    /// The grouping key: fingerprint, memory in GiB and memory configuration.
    pub key: String,
    /// The hardware fingerprint.
    pub fingerprint: Fingerprint,
    /// The memory configuration from SMBIOS (`memconfig.smbios`), when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// Machine and memory in words.
    pub description: String,
    /// Its nodes, in name order.
    pub nodes: Vec<String>,
    /// Most common kernel of its nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_majority: Option<String>,
    /// Most common firmware of its nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware_majority: Option<String>,
    /// Whether it has enough nodes to judge.
    pub judged: bool,
    /// What was done with it ("too few nodes to judge ...", "12 figures judged").
    pub verdict: String,
    /// For a group too small to judge: how it differs from the most similar larger
    /// group ("memory 480 GiB vs 512 GiB in group 1").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub differs_from: Option<String>,
    /// Figures measured on enough of its nodes, in report order.
    pub figures: Vec<FigureStats>,
}

/// A node whose figure is off, with the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// Node name.
    pub node: String,
    /// Its group.
    pub group: usize,
    /// The figure.
    pub figure: FigureInfo,
    /// Worse or better.
    pub direction: Direction,
    /// The node's value (median of its samples).
    pub value: f64,
    /// Its samples.
    pub samples: Vec<f64>,
    /// The group median.
    pub median: f64,
    /// The group MAD (raw).
    pub mad: f64,
    /// 1.4826 x MAD.
    pub sigma: f64,
    /// Robust z (None when the MAD is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z: Option<f64>,
    /// Deviation from the median, percent.
    pub deviation_pct: f64,
    /// The node's own sample spread (1.4826 x MAD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_spread: Option<f64>,
    /// The node's kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The node's firmware.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// The group's most common kernel, when the node's differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_others: Option<String>,
    /// The group's most common firmware, when the node's differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware_others: Option<String>,
    /// The evidence in a sentence.
    pub sentence: String,
}

/// A node whose run did not complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedNode {
    /// Node name.
    pub node: String,
    /// State from status.json (`unknown` without one).
    pub state: String,
    /// Exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Wall time, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// The runner's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The end of its standard error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// Whether it has a bundle anyway (figures of a partial run are judged).
    pub has_bundle: bool,
    /// Problems reading it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// The analysis of a fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetReport {
    /// [`FLEET_REPORT_VERSION`].
    pub version: u32,
    /// The fleet folder.
    pub source: String,
    /// The options used.
    pub options: Options,
    /// The figures shown in the node table (in [`NodeRow::headline`] order).
    pub headline: Vec<FigureInfo>,
    /// Every node.
    pub nodes: Vec<NodeRow>,
    /// Groups, largest first.
    pub groups: Vec<Group>,
    /// Outliers: worse ones first, then by |z| (or deviation) descending.
    pub outliers: Vec<Outlier>,
    /// Nodes that did not complete (state other than `done`, or no usable bundle).
    pub failed: Vec<FailedNode>,
    /// What the reader should know about the method.
    pub notes: Vec<String>,
}

/// Each node's samples of a figure, by node name.
type NodeSamples = Vec<(String, Vec<f64>)>;

/// What one node contributes.
struct Facts<'a> {
    node: &'a FleetNode,
    fingerprint: Option<Fingerprint>,
    memory: Option<String>,
    kernel: Option<String>,
    firmware: Option<String>,
    metrics: &'a [Metric],
}

fn facts(node: &FleetNode) -> Facts<'_> {
    match &node.facts {
        Some(f) => Facts {
            node,
            fingerprint: Some(f.fingerprint.clone()),
            memory: f.memory.clone(),
            kernel: f.kernel.clone(),
            firmware: f.firmware.clone(),
            metrics: &f.metrics,
        },
        None => Facts {
            node,
            fingerprint: None,
            memory: None,
            kernel: None,
            firmware: None,
            metrics: &[],
        },
    }
}

fn median(v: &[f64]) -> f64 {
    numalab_stats::median(v).unwrap_or(f64::NAN)
}

fn mad(v: &[f64], m: f64) -> f64 {
    let d: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    median(&d)
}

/// The most common value (ties: the smallest), when any node has one.
fn majority<'a>(values: impl Iterator<Item = Option<&'a str>>) -> Option<String> {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for v in values.flatten() {
        *count.entry(v).or_default() += 1;
    }
    let best = count.values().copied().max()?;
    count
        .into_iter()
        .find(|(_, c)| *c == best)
        .map(|(v, _)| v.to_string())
}

/// A number with 3 significant digits at least, for sentences.
pub fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".to_string()
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.3e}")
    }
}

/// Judges one figure of a group.
fn judge(figure: FigureInfo, vals: NodeSamples, o: &Options) -> FigureStats {
    let values: Vec<f64> = vals.iter().map(|(_, s)| median(s)).collect();
    let m = median(&values);
    let raw_mad = mad(&values, m);
    let sigma = MAD_SCALE * raw_mad;
    let mad_zero = raw_mad == 0.0;
    let nodes = vals
        .into_iter()
        .zip(values)
        .map(|((node, samples), v)| {
            let dev = v - m;
            let z = (!mad_zero).then(|| dev / sigma);
            let deviation = (m != 0.0).then(|| dev / m.abs());
            let own_spread = (samples.len() >= 2).then(|| {
                let sm = median(&samples);
                MAD_SCALE * mad(&samples, sm)
            });
            let past_z = z.is_none_or(|z| z.abs() > o.z_threshold);
            let past_floor = deviation.is_some_and(|d| d.abs() > o.relative_floor);
            let own_ok = own_spread.is_none_or(|s| dev.abs() > o.own_noise_factor * s);
            let mut note = None;
            let outlier = if past_z && past_floor {
                if own_ok {
                    let better = (dev > 0.0) == figure.higher_is_better;
                    Some(if better {
                        Direction::Better
                    } else {
                        Direction::Worse
                    })
                } else {
                    note = Some(format!(
                        "not flagged: the deviation is within {} times the node's own spread of its repetitions ({})",
                        o.own_noise_factor,
                        fmt_value(own_spread.unwrap_or(0.0))
                    ));
                    None
                }
            } else {
                None
            };
            NodeValue {
                node,
                value: v,
                n_samples: samples.len(),
                z,
                deviation,
                own_spread,
                outlier,
                note,
            }
        })
        .collect();
    FigureStats {
        figure,
        median: m,
        mad: raw_mad,
        sigma,
        mad_zero,
        nodes,
    }
}

/// The evidence sentence of an outlier.
fn sentence(o: &Outlier) -> String {
    let unit = if o.figure.unit.is_empty() {
        String::new()
    } else {
        format!(" {}", o.figure.unit)
    };
    let pct = o.deviation_pct.abs();
    let side = if o.deviation_pct < 0.0 {
        "below"
    } else {
        "above"
    };
    let spread = match o.z {
        Some(z) => format!("MAD {}{unit}, robust z {z:+.1}", fmt_value(o.sigma)),
        None => "MAD 0: judged on the relative floor alone".to_string(),
    };
    let mut s = format!(
        "{}: {} {}{unit}, {pct:.0}% {side} the group median {}{unit} ({spread}; {})",
        o.node,
        o.figure.label,
        fmt_value(o.value),
        fmt_value(o.median),
        o.direction.word()
    );
    let mut beside = Vec::new();
    let what = |name: &str, mine: &Option<String>, others: &Option<String>| match (mine, others) {
        (Some(m), Some(x)) => format!("{name} {m} (most of the group: {x})"),
        (Some(m), None) => format!("{name} {m}"),
        (None, Some(x)) => format!("{name} unknown (most of the group: {x})"),
        (None, None) => format!("{name} unknown"),
    };
    beside.push(what("kernel", &o.kernel, &o.kernel_others));
    beside.push(what("firmware", &o.firmware, &o.firmware_others));
    s.push_str("; ");
    s.push_str(&beside.join(", "));
    s
}

fn group_description(f: &Fingerprint, memory: &Option<String>) -> String {
    match memory {
        Some(m) => format!("{}; memory {m}", f.description()),
        None => format!("{}; memory configuration not recorded", f.description()),
    }
}

/// The fields in which two groups differ, in words.
fn differences(a: &Group, b: &Group) -> Vec<String> {
    let (x, y) = (&a.fingerprint, &b.fingerprint);
    let mut d = Vec::new();
    let mut field = |name: &str, p: String, q: String| {
        if p != q {
            d.push(format!("{name} {p} vs {q}"));
        }
    };
    let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let n = |v: Option<u64>| v.map_or("unknown".to_string(), |v| v.to_string());
    field("CPU vendor", o(&x.vendor), o(&y.vendor));
    field("CPU model", o(&x.model_name), o(&y.model_name));
    field("CPU id", o(&x.cpu_id), o(&y.cpu_id));
    field("cores", n(x.cores), n(y.cores));
    field("PUs", n(x.pus), n(y.pus));
    field("NUMA nodes", n(x.numa_nodes), n(y.numa_nodes));
    field(
        "memory",
        x.memory_gib
            .map_or("unknown".into(), |g| format!("{g} GiB")),
        y.memory_gib
            .map_or("unknown".into(), |g| format!("{g} GiB")),
    );
    field("memory configuration", o(&a.memory), o(&b.memory));
    d
}

/// The headline figures of the node table: memory bandwidth with every thread
/// (triad first), idle local memory latency, median core-to-core latency and the
/// reference workload on every CPU, each the most common figure of its kind.
fn headline(all: &[Facts<'_>]) -> Vec<FigureInfo> {
    let mut count: HashMap<FigureKey, (usize, FigureInfo)> = HashMap::new();
    for f in all {
        for m in f.metrics {
            let key = FigureKey {
                id: m.id.clone(),
                setup: m.setup.clone(),
            };
            count.entry(key.clone()).or_insert_with(|| (0, info(m))).0 += 1;
        }
    }
    let kinds: [&dyn Fn(&str) -> bool; 5] = [
        &|id| id == "mem.bandwidth.triad.all",
        &|id| id.starts_with("mem.bandwidth.") && id.ends_with(".all"),
        &|id| id == "mem.latency.local",
        &|id| id.starts_with("c2c.") && id.ends_with(".median"),
        &|id| id.starts_with("workload.") && id.ends_with(".all_cpus"),
    ];
    let mut out: Vec<FigureInfo> = Vec::new();
    for (i, k) in kinds.iter().enumerate() {
        if i == 1 && out.iter().any(|f| f.key.id.starts_with("mem.bandwidth.")) {
            continue;
        }
        let best = count
            .iter()
            .filter(|(key, _)| k(&key.id))
            .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then_with(|| b.0.cmp(a.0)));
        if let Some((_, (_, fi))) = best {
            out.push(fi.clone());
        }
    }
    out
}

fn info(m: &Metric) -> FigureInfo {
    FigureInfo {
        key: FigureKey {
            id: m.id.clone(),
            setup: m.setup.clone(),
        },
        label: m.label(),
        unit: m.unit.clone(),
        higher_is_better: m.higher_is_better,
    }
}

/// Analyses a fleet: groups, figures, outliers, failed nodes.
pub fn analyse(input: &FleetInput, o: &Options) -> FleetReport {
    let min = o.min_nodes.max(1);
    let all: Vec<Facts<'_>> = input.nodes.iter().map(facts).collect();
    // Groups by fingerprint, memory size and memory configuration.
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, f) in all.iter().enumerate() {
        if let Some(fp) = &f.fingerprint {
            // The memory in GiB is not in the fingerprint's hash (a machine's history
            // keeps it beside), but nodes compared with each other must have as much.
            let key = format!(
                "{} / {} / {}",
                fp.fingerprint,
                fp.memory_gib
                    .map_or("memory size unknown".to_string(), |g| format!("{g} GiB")),
                f.memory.as_deref().unwrap_or("memory not recorded")
            );
            by_key.entry(key).or_default().push(i);
        }
    }
    let mut keyed: Vec<(String, Vec<usize>)> = by_key.into_iter().collect();
    keyed.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut outliers: Vec<Outlier> = Vec::new();
    for (gi, (key, members)) in keyed.iter().enumerate() {
        let id = gi + 1;
        for &i in members {
            group_of.insert(i, id);
        }
        let first = &all[members[0]];
        let fp = first.fingerprint.clone().expect("grouped nodes have one");
        let memory = first.memory.clone();
        let kernel_majority = majority(members.iter().map(|&i| all[i].kernel.as_deref()));
        let firmware_majority = majority(members.iter().map(|&i| all[i].firmware.as_deref()));
        let mut g = Group {
            id,
            key: key.clone(),
            description: group_description(&fp, &memory),
            fingerprint: fp,
            memory,
            nodes: members.iter().map(|&i| all[i].node.name.clone()).collect(),
            kernel_majority,
            firmware_majority,
            judged: members.len() >= min,
            verdict: String::new(),
            differs_from: None,
            figures: Vec::new(),
        };
        if !g.judged {
            g.verdict = format!(
                "too few nodes to judge ({} node{}; at least {min} needed)",
                members.len(),
                if members.len() == 1 { "" } else { "s" }
            );
            groups.push(g);
            continue;
        }
        // Figures in first-seen order (the metrics' report order).
        let mut order: Vec<FigureKey> = Vec::new();
        let mut per: HashMap<FigureKey, (FigureInfo, NodeSamples)> = HashMap::new();
        for &i in members {
            for m in all[i].metrics {
                let k = FigureKey {
                    id: m.id.clone(),
                    setup: m.setup.clone(),
                };
                let e = per.entry(k.clone()).or_insert_with(|| {
                    order.push(k);
                    (info(m), Vec::new())
                });
                e.1.push((all[i].node.name.clone(), m.samples.clone()));
            }
        }
        let mut skipped = 0;
        for k in order {
            let (fi, vals) = per.remove(&k).expect("every key has an entry");
            if vals.len() < min {
                skipped += 1;
                continue;
            }
            let stats = judge(fi, vals, o);
            for nv in &stats.nodes {
                let Some(direction) = nv.outlier else {
                    continue;
                };
                let f = all
                    .iter()
                    .find(|f| f.node.name == nv.node)
                    .expect("the node is in the fleet");
                let differs = |mine: &Option<String>, maj: &Option<String>| {
                    (maj.is_some() && mine != maj)
                        .then(|| maj.clone())
                        .flatten()
                };
                let samples = f
                    .metrics
                    .iter()
                    .find(|m| m.id == stats.figure.key.id && m.setup == stats.figure.key.setup)
                    .map(|m| m.samples.clone())
                    .unwrap_or_default();
                let mut out = Outlier {
                    node: nv.node.clone(),
                    group: id,
                    figure: stats.figure.clone(),
                    direction,
                    value: nv.value,
                    samples,
                    median: stats.median,
                    mad: stats.mad,
                    sigma: stats.sigma,
                    z: nv.z,
                    deviation_pct: nv.deviation.unwrap_or(0.0) * 100.0,
                    own_spread: nv.own_spread,
                    kernel: f.kernel.clone(),
                    firmware: f.firmware.clone(),
                    kernel_others: differs(&f.kernel, &g.kernel_majority),
                    firmware_others: differs(&f.firmware, &g.firmware_majority),
                    sentence: String::new(),
                };
                out.sentence = sentence(&out);
                outliers.push(out);
            }
            g.figures.push(stats);
        }
        g.verdict = format!(
            "{} figure{} judged on {} nodes{}",
            g.figures.len(),
            if g.figures.len() == 1 { "" } else { "s" },
            members.len(),
            if skipped > 0 {
                format!("; {skipped} measured on fewer than {min} nodes not judged")
            } else {
                String::new()
            }
        );
        groups.push(g);
    }
    // Small groups: how they differ from the most similar judged group.
    let judged: Vec<Group> = groups.iter().filter(|g| g.judged).cloned().collect();
    for g in groups.iter_mut().filter(|g| !g.judged) {
        let best = judged
            .iter()
            .map(|j| (differences(g, j), j))
            .min_by_key(|(d, j)| (d.len(), std::cmp::Reverse(j.nodes.len())));
        if let Some((d, j)) = best {
            if !d.is_empty() {
                g.differs_from = Some(format!(
                    "group {} ({} nodes): {}",
                    j.id,
                    j.nodes.len(),
                    d.join(", ")
                ));
            }
        }
    }
    outliers.sort_by(|a, b| {
        let strength = |o: &Outlier| o.z.map_or(f64::INFINITY, f64::abs);
        a.direction
            .cmp(&b.direction)
            .then_with(|| strength(b).total_cmp(&strength(a)))
            .then_with(|| b.deviation_pct.abs().total_cmp(&a.deviation_pct.abs()))
            .then_with(|| a.node.cmp(&b.node))
    });
    let head = headline(&all);
    let nodes: Vec<NodeRow> = all
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let status = f.node.status.as_ref();
            let count = |d: Direction| {
                outliers
                    .iter()
                    .filter(|o| o.node == f.node.name && o.direction == d)
                    .count()
            };
            NodeRow {
                node: f.node.name.clone(),
                host: f.node.facts.as_ref().and_then(|x| x.hostname.clone()),
                group: group_of.get(&i).copied(),
                fingerprint: f.fingerprint.as_ref().map(|x| x.fingerprint.clone()),
                kernel: f.kernel.clone(),
                firmware: f.firmware.clone(),
                memory_gib: f.fingerprint.as_ref().and_then(|x| x.memory_gib),
                state: f.node.state(),
                exit_code: status.and_then(|s| s.exit_code),
                duration_s: status.and_then(|s| s.duration_s),
                headline: head
                    .iter()
                    .map(|h| {
                        f.metrics
                            .iter()
                            .find(|m| m.id == h.key.id && m.setup == h.key.setup)
                            .map(|m| median(&m.samples))
                    })
                    .collect(),
                figures: f.metrics.len(),
                worse: count(Direction::Worse),
                better: count(Direction::Better),
                problems: f.node.problems.clone(),
            }
        })
        .collect();
    let failed: Vec<FailedNode> = input
        .nodes
        .iter()
        .filter(|n| {
            let done = n.status.as_ref().is_some_and(|s| s.is_done());
            !done || n.facts.is_none()
        })
        .map(|n| FailedNode {
            node: n.name.clone(),
            state: n.state(),
            exit_code: n.status.as_ref().and_then(|s| s.exit_code),
            duration_s: n.status.as_ref().and_then(|s| s.duration_s),
            message: n.status.as_ref().and_then(|s| s.message.clone()),
            stderr_tail: n.status.as_ref().and_then(|s| s.stderr_tail.clone()),
            has_bundle: n.facts.is_some(),
            problems: n.problems.clone(),
        })
        .collect();
    let notes = vec![
        format!(
            "Nodes are grouped by hardware fingerprint (CPU vendor, model, id with stepping, cores, PUs, NUMA nodes), by memory in GiB and by memory configuration (SMBIOS channels, types and MT/s, when the bundle has a memconfig.smbios record); no record holds firmware mode settings, so they are not part of the key. Kernel and firmware versions are shown beside each node, not grouped on."
        ),
        format!(
            "A node is an outlier on a figure when its value (the median of its repetitions) is more than {} robust standard deviations (1.4826 x MAD) from the group median, more than {:.0}% from it, and more than {} times its own repetitions' spread; when the MAD is 0 the {:.0}% floor alone decides. Groups and figures need at least {min} nodes.",
            o.z_threshold,
            o.relative_floor * 100.0,
            o.own_noise_factor,
            o.relative_floor * 100.0
        ),
    ];
    FleetReport {
        version: FLEET_REPORT_VERSION,
        source: numalab_schema::text::path_text(&input.root),
        options: *o,
        headline: head,
        nodes,
        groups,
        outliers,
        failed,
        notes,
    }
}
