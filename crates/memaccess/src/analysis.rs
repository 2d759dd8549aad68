//! The analysis: pure functions of samples, their attribution and their nodes.
//!
//! - Slow loads: loads whose latency (weight) is at or above a threshold: the user's
//!   value (in the latency unit, or in ns converted with a given cycles-per-ns), or by
//!   default the 90th percentile of the sampled loads' latencies (nearest rank: the
//!   value at position ceil(0.9 n) of the sorted latencies). Loads with weight 0
//!   carry no latency and are never slow.
//! - Remote: the PMU's data source says the access was served from another node
//!   ([`DataSrc::remote_node`]).
//! - Histograms: loads' latencies in power-of-two bins, bin k = [2^k, 2^(k+1)) and bin 0
//!   = [0, 2), from the smallest to the largest bin any load falls in, the same bins for
//!   every node.
//! - False sharing: 64-byte lines (per process, by virtual address) that samples which
//!   write them (stores) or load them modified from another cache (HITM, or peer
//!   transfers on Arm) reached from at least two CPUs and at least two different byte
//!   offsets (which means two such samples differ in both), as `perf c2c` lists them.

use crate::attribute::Attribution;
use crate::datasrc::{DataSrc, Level, Op, Tlb};
use crate::node::{NodeAnswer, NodeHow, NodeOf};
use crate::sample::{MemSample, Samples};
use numalab_records::memaccess::{
    FalseSharingLine, LineOffset, MemAccessRecord, MemSource, NodeHistogram, RegionRow, Threshold,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// How the slow-load threshold is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThresholdSpec {
    /// This percentile of the sampled loads' latencies (default 90).
    Percentile(f64),
    /// This latency, in the latency unit.
    Value(f64),
    /// This many ns, converted with cycles per ns (the core clock in GHz).
    Nanoseconds {
        /// ns.
        ns: f64,
        /// Cycles per ns.
        cycles_per_ns: f64,
    },
}

impl Default for ThresholdSpec {
    fn default() -> Self {
        ThresholdSpec::Percentile(90.0)
    }
}

/// Analysis options.
#[derive(Debug, Clone)]
pub struct AnalysisOptions {
    /// The slow-load threshold.
    pub threshold: ThresholdSpec,
    /// The latency unit ("cycles").
    pub latency_unit: String,
    /// Cache line size, bytes (64).
    pub line_bytes: u64,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            threshold: ThresholdSpec::default(),
            latency_unit: "cycles".into(),
            line_bytes: 64,
        }
    }
}

/// Nearest-rank percentile of sorted values.
pub fn nearest_rank(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn median(v: &mut [u64]) -> Option<f64> {
    v.sort_unstable();
    let sorted: Vec<f64> = v.iter().map(|&w| w as f64).collect();
    numalab_stats::median_sorted(&sorted)
}

/// The histogram bin of a latency.
pub fn bin_of(w: u64) -> u32 {
    if w < 2 {
        0
    } else {
        63 - w.leading_zeros()
    }
}

fn bin_low(k: u32) -> f64 {
    if k == 0 {
        0.0
    } else {
        (1u128 << k) as f64
    }
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 * 100.0 / b as f64
    }
}

#[derive(Default)]
struct Acc {
    samples: u64,
    loads: u64,
    stores: u64,
    slow: u64,
    remote: u64,
    slow_remote: u64,
    hitm: u64,
    tlb_miss: u64,
    weights: Vec<u64>,
    levels: BTreeMap<Level, u64>,
}

impl Acc {
    fn add(&mut self, s: &MemSample, slow: bool) {
        self.samples += 1;
        let d = s.data_src;
        match d.op() {
            Op::Load => {
                self.loads += 1;
                self.weights.push(s.weight);
                if d.hitm() {
                    self.hitm += 1;
                }
                if d.tlb() == Tlb::Miss {
                    self.tlb_miss += 1;
                }
            }
            Op::Store => self.stores += 1,
            _ => {}
        }
        if slow {
            self.slow += 1;
        }
        if d.remote_node() {
            self.remote += 1;
            if slow {
                self.slow_remote += 1;
            }
        }
        *self.levels.entry(d.level()).or_default() += 1;
    }

    fn row(mut self, name: String, kind: &str, total: u64, slow_total: u64) -> RegionRow {
        RegionRow {
            name,
            kind: kind.to_string(),
            object: None,
            section: None,
            start: None,
            size_bytes: None,
            samples: self.samples,
            samples_pct: pct(self.samples, total),
            loads: self.loads,
            stores: self.stores,
            slow_loads: self.slow,
            slow_loads_pct: pct(self.slow, slow_total),
            remote: self.remote,
            remote_pct: pct(self.remote, self.samples),
            slow_remote_pct: (self.slow > 0).then(|| pct(self.slow_remote, self.slow)),
            hitm: self.hitm,
            tlb_misses: self.tlb_miss,
            median_latency: median(&mut self.weights),
            levels: self
                .levels
                .into_iter()
                .map(|(l, n)| (l.name().to_string(), n))
                .collect(),
        }
    }
}

/// The threshold chosen, and how.
pub fn choose_threshold(samples: &[MemSample], spec: ThresholdSpec, unit: &str) -> Threshold {
    match spec {
        ThresholdSpec::Value(v) => Threshold {
            value: v,
            unit: unit.into(),
            how: "given".into(),
            percentile: None,
            cycles_per_ns: None,
        },
        ThresholdSpec::Nanoseconds { ns, cycles_per_ns } => Threshold {
            value: ns * cycles_per_ns,
            unit: unit.into(),
            how: "given in ns".into(),
            percentile: None,
            cycles_per_ns: Some(cycles_per_ns),
        },
        ThresholdSpec::Percentile(p) => {
            let mut w: Vec<u64> = samples
                .iter()
                .filter(|s| s.data_src.op() == Op::Load && s.weight > 0)
                .map(|s| s.weight)
                .collect();
            w.sort_unstable();
            Threshold {
                value: nearest_rank(&w, p).unwrap_or(0) as f64,
                unit: unit.into(),
                how: "percentile".into(),
                percentile: Some(p),
                cycles_per_ns: None,
            }
        }
    }
}

/// Whether a sample is a slow load.
pub fn is_slow(s: &MemSample, threshold: f64) -> bool {
    s.data_src.op() == Op::Load && s.weight > 0 && s.weight as f64 >= threshold
}

/// The false-sharing lines of a set of samples.
pub fn false_sharing(
    data: &Samples,
    attribution: &Attribution,
    line_bytes: u64,
) -> Vec<FalseSharingLine> {
    #[derive(Default)]
    struct Off {
        cpus: BTreeSet<u32>,
        stores: u64,
        loads: u64,
        hitm: u64,
        code: HashMap<String, u64>,
    }
    #[derive(Default)]
    struct Line {
        samples: u64,
        stores: u64,
        hitm: u64,
        writer_cpus: BTreeSet<u32>,
        writer_offsets: BTreeSet<u32>,
        offsets: BTreeMap<u32, Off>,
        first: Option<usize>,
    }
    let mask = !(line_bytes - 1);
    let mut lines: HashMap<(u32, u64), Line> = HashMap::new();
    for (i, s) in data.samples.iter().enumerate() {
        let d = s.data_src;
        let key = (s.pid, s.addr & mask);
        let off = (s.addr & (line_bytes - 1)) as u32;
        let l = lines.entry(key).or_default();
        l.samples += 1;
        let store = d.op() == Op::Store;
        let hitm = d.op() == Op::Load && d.hitm();
        let o = l.offsets.entry(off).or_default();
        o.cpus.insert(s.cpu);
        match d.op() {
            Op::Store => o.stores += 1,
            Op::Load => o.loads += 1,
            _ => {}
        }
        if hitm {
            o.hitm += 1;
            l.hitm += 1;
        }
        if store {
            l.stores += 1;
        }
        if store || hitm {
            l.writer_cpus.insert(s.cpu);
            l.writer_offsets.insert(off);
            l.first.get_or_insert(i);
        }
        let code = s
            .code
            .and_then(|c| data.code_names.get(c as usize).cloned())
            .or_else(|| attribution.code.get(i).cloned().flatten())
            .or_else(|| s.ip.map(|ip| format!("0x{ip:x}")));
        if let Some(c) = code {
            *o.code.entry(c).or_default() += 1;
        }
    }
    let mut out: Vec<FalseSharingLine> = lines
        .into_iter()
        .filter(|(_, l)| l.writer_cpus.len() >= 2 && l.writer_offsets.len() >= 2)
        .map(|((pid, line), l)| {
            let region = l
                .first
                .and_then(|i| attribution.places.get(i))
                .map(|p| {
                    p.symbol
                        .map(|k| attribution.symbols[k].name.clone())
                        .or_else(|| p.mapping.map(|k| attribution.mappings[k].name.clone()))
                        .unwrap_or_else(|| "[unmapped]".into())
                })
                .unwrap_or_else(|| "[unmapped]".into());
            FalseSharingLine {
                line: format!("0x{line:x}"),
                pid,
                line_bytes: line_bytes as u32,
                region,
                samples: l.samples,
                stores: l.stores,
                hitm: l.hitm,
                cpus: l.writer_cpus.into_iter().collect(),
                offsets: l
                    .offsets
                    .into_iter()
                    .map(|(offset, o)| {
                        let mut code: Vec<(String, u64)> = o.code.into_iter().collect();
                        code.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                        LineOffset {
                            offset,
                            cpus: o.cpus.into_iter().collect(),
                            stores: o.stores,
                            loads: o.loads,
                            hitm: o.hitm,
                            code: code.into_iter().take(3).map(|(c, _)| c).collect(),
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.hitm
            .cmp(&a.hitm)
            .then(b.stores.cmp(&a.stores))
            .then(a.pid.cmp(&b.pid))
            .then(a.line.cmp(&b.line))
    });
    out.truncate(50);
    out
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A histogram being filled: how known, counts per bin, slow loads, latencies.
type Group = (NodeHow, Vec<u64>, u64, Vec<u64>);

/// The order of region rows: most samples first, then most slow loads, then by name
/// and object.
fn row_order(a: &RegionRow, b: &RegionRow) -> std::cmp::Ordering {
    b.samples
        .cmp(&a.samples)
        .then(b.slow_loads.cmp(&a.slow_loads))
        .then(a.name.cmp(&b.name))
        .then(a.object.cmp(&b.object))
}

/// The rows per mapping (with `[unmapped]`) and per symbol, each in [`row_order`].
fn region_rows(
    samples: &[MemSample],
    attribution: &Attribution,
    slow: &[bool],
    slow_total: u64,
) -> (Vec<RegionRow>, Vec<RegionRow>) {
    let total = samples.len() as u64;
    let mut by_map: HashMap<Option<usize>, Acc> = HashMap::new();
    let mut by_sym: HashMap<usize, Acc> = HashMap::new();
    for (i, s) in samples.iter().enumerate() {
        let p = attribution.places.get(i).copied().unwrap_or_default();
        by_map.entry(p.mapping).or_default().add(s, slow[i]);
        if let Some(k) = p.symbol {
            by_sym.entry(k).or_default().add(s, slow[i]);
        }
    }
    let mut mappings: Vec<RegionRow> = by_map
        .into_iter()
        .map(|(k, acc)| match k {
            Some(k) => {
                let m = &attribution.mappings[k];
                let mut r = acc.row(m.name.clone(), m.kind.name(), total, slow_total);
                r.object = m.pid.map(|p| format!("pid {p}"));
                if let Some((s, l)) = m.range {
                    r.start = Some(format!("0x{s:x}"));
                    r.size_bytes = Some(l);
                }
                r
            }
            None => acc.row("[unmapped]".into(), "unmapped", total, slow_total),
        })
        .collect();
    mappings.sort_by(row_order);
    let mut symbols: Vec<RegionRow> = by_sym
        .into_iter()
        .map(|(k, acc)| {
            let s = &attribution.symbols[k];
            let mut r = acc.row(s.name.clone(), s.kind, total, slow_total);
            r.object = s.object.clone();
            r.section = s.section.clone();
            r.start = s.start.map(|a| format!("0x{a:x}"));
            r.size_bytes = s.size;
            r
        })
        .collect();
    symbols.sort_by(row_order);
    (mappings, symbols)
}

/// The loads' latency histograms per node of their page.
struct Histograms {
    /// Bin edges, shared by every node.
    bin_edges: Vec<f64>,
    /// One per node (known nodes first, then the PMU's remote / local, then unknown).
    node_histograms: Vec<NodeHistogram>,
    /// How the nodes of the loads were known, and for how many.
    node_methods: BTreeMap<NodeHow, u64>,
}

/// Bins the loads' latencies per node of their page (power-of-two bins from the
/// smallest to the largest any load falls in).
fn histograms(samples: &[MemSample], nodes: &[NodeAnswer], slow: &[bool]) -> Histograms {
    let load_idx: Vec<usize> = (0..samples.len())
        .filter(|&i| samples[i].data_src.op() == Op::Load)
        .collect();
    let kmin = load_idx.iter().map(|&i| bin_of(samples[i].weight)).min();
    let kmax = load_idx.iter().map(|&i| bin_of(samples[i].weight)).max();
    let mut h = Histograms {
        bin_edges: Vec::new(),
        node_histograms: Vec::new(),
        node_methods: BTreeMap::new(),
    };
    let (Some(kmin), Some(kmax)) = (kmin, kmax) else {
        return h;
    };
    for k in kmin..=kmax {
        h.bin_edges.push(bin_low(k));
    }
    h.bin_edges.push((1u128 << (kmax + 1)) as f64);
    let nb = (kmax - kmin + 1) as usize;
    let mut groups: BTreeMap<(u8, NodeOf), Group> = BTreeMap::new();
    for &i in &load_idx {
        let a = nodes.get(i).copied().unwrap_or(NodeAnswer {
            node: NodeOf::Unknown,
            how: NodeHow::Unknown,
        });
        *h.node_methods.entry(a.how).or_default() += 1;
        let rank = match a.node {
            NodeOf::Node(_) => 0,
            NodeOf::RemotePerPmu => 1,
            NodeOf::LocalPerPmu => 2,
            NodeOf::Unknown => 3,
        };
        let g = groups
            .entry((rank, a.node))
            .or_insert_with(|| (a.how, vec![0; nb], 0, Vec::new()));
        let w = samples[i].weight;
        g.1[(bin_of(w) - kmin) as usize] += 1;
        if slow[i] {
            g.2 += 1;
        }
        g.3.push(w);
    }
    for ((_, node), (how, counts, slow_n, mut ws)) in groups {
        h.node_histograms.push(NodeHistogram {
            label: node.label(),
            node: match node {
                NodeOf::Node(n) => Some(n),
                _ => None,
            },
            how: how.name().to_string(),
            loads: ws.len() as u64,
            slow_loads: slow_n,
            median_latency: median(&mut ws),
            counts,
        });
    }
    h
}

/// What the findings are made from.
struct FindingInputs<'a> {
    samples: &'a [MemSample],
    mappings: &'a [RegionRow],
    symbols: &'a [RegionRow],
    node_histograms: &'a [NodeHistogram],
    false_sharing: &'a [FalseSharingLine],
    loads: u64,
    thr: f64,
    unit: &'a str,
}

/// The findings: the regions most slow loads hit, the remote share of loads, loads
/// by page node, false sharing, TLB misses.
fn findings(f: &FindingInputs) -> Vec<String> {
    let (samples, unit) = (f.samples, f.unit);
    let mut findings = Vec::new();
    if samples.is_empty() {
        findings.push("No samples: nothing to attribute.".to_string());
    }
    let level_known = samples.iter().filter(|s| s.data_src.has_level()).count() as u64;
    findings.extend(slow_region_findings(f, level_known));
    if f.loads > 0 && level_known > 0 {
        let remote_loads = samples
            .iter()
            .filter(|s| s.data_src.op() == Op::Load && s.data_src.remote_node())
            .count() as u64;
        findings.push(format!(
            "{:.0}% of sampled loads were served from another node (remote memory or cache, per the PMU's data source).",
            pct(remote_loads, f.loads)
        ));
    }
    let known_nodes: Vec<&NodeHistogram> = f
        .node_histograms
        .iter()
        .filter(|h| h.node.is_some())
        .collect();
    if known_nodes.len() >= 2 {
        let parts: Vec<String> = known_nodes
            .iter()
            .map(|h| {
                format!(
                    "{} {} (median {} {unit}, {} loads)",
                    h.label,
                    h.how,
                    h.median_latency.map_or("n/a".into(), fmt_num),
                    h.loads
                )
            })
            .collect();
        findings.push(format!(
            "Loads by the node of their page: {}.",
            parts.join("; ")
        ));
    }
    findings.extend(f.false_sharing.iter().take(3).map(false_sharing_finding));
    let tlb_known = samples
        .iter()
        .filter(|s| s.data_src.op() == Op::Load && s.data_src.tlb() != Tlb::Unknown)
        .count() as u64;
    let tlb_miss = samples
        .iter()
        .filter(|s| s.data_src.op() == Op::Load && s.data_src.tlb() == Tlb::Miss)
        .count() as u64;
    if tlb_known > 0 && pct(tlb_miss, tlb_known) >= 10.0 {
        findings.push(format!(
            "{:.0}% of sampled loads missed the TLB: larger pages (transparent huge pages) may help.",
            pct(tlb_miss, tlb_known)
        ));
    }
    findings
}

/// Up to three regions (symbols when any has slow loads, else mappings) with at least
/// 10% of the slow loads, most first.
fn slow_region_findings(f: &FindingInputs, level_known: u64) -> Vec<String> {
    let rows: &[RegionRow] = if f.symbols.iter().any(|r| r.slow_loads > 0) {
        f.symbols
    } else {
        f.mappings
    };
    let mut top: Vec<&RegionRow> = rows
        .iter()
        .filter(|r| r.slow_loads > 0 && r.slow_loads_pct >= 10.0)
        .collect();
    top.sort_by(|a, b| b.slow_loads.cmp(&a.slow_loads).then(a.name.cmp(&b.name)));
    top.into_iter()
        .take(3)
        .map(|r| {
            let mut s = format!(
                "{:.0}% of slow loads (latency >= {} {}) hit {}",
                r.slow_loads_pct,
                fmt_num(f.thr),
                f.unit,
                r.name
            );
            if level_known > 0 {
                if let Some(sr) = r.slow_remote_pct {
                    s.push_str(&format!(", {sr:.0}% of them remote per the PMU"));
                }
            }
            s.push('.');
            s
        })
        .collect()
}

/// The finding for one falsely shared cache line.
fn false_sharing_finding(l: &FalseSharingLine) -> String {
    let offs: Vec<String> = l
        .offsets
        .iter()
        .filter(|o| o.stores > 0 || o.hitm > 0)
        .map(|o| format!("0x{:x}", o.offset))
        .collect();
    let cpus: Vec<String> = l.cpus.iter().map(|c| c.to_string()).collect();
    format!(
        "Cache line {} ({}, pid {}) is written or HITM-loaded from CPUs {} at offsets {} ({} stores, {} HITM loads): false sharing; keep fields written by different threads on different lines.",
        l.line,
        l.region,
        l.pid,
        cpus.join(", "),
        offs.join(", "),
        l.stores,
        l.hitm
    )
}

/// The notes: how slow was chosen, loads without latency, what remote means, samples
/// left out or unattributed, physical addresses not mapped, the attribution's notes.
fn notes(
    data: &Samples,
    attribution: &Attribution,
    threshold: &Threshold,
    node_methods: &BTreeMap<NodeHow, u64>,
    loads: u64,
) -> Vec<String> {
    let samples = &data.samples;
    let (thr, unit) = (threshold.value, &threshold.unit);
    let mut notes = Vec::new();
    notes.push(match threshold.how.as_str() {
        "percentile" => format!(
            "Slow loads: latency >= {} {unit}, the {}th percentile (nearest rank) of the {} sampled loads with a latency; not a given value.",
            fmt_num(thr),
            threshold.percentile.map_or("90".into(), fmt_num),
            samples.iter().filter(|s| s.data_src.op() == Op::Load && s.weight > 0).count()
        ),
        "given in ns" => format!(
            "Slow loads: latency >= {} {unit}, given as ns and converted at {} cycles per ns.",
            fmt_num(thr),
            threshold.cycles_per_ns.map_or("?".into(), fmt_num)
        ),
        _ => format!("Slow loads: latency >= {} {unit}, as given.", fmt_num(thr)),
    });
    if loads > 0
        && samples
            .iter()
            .all(|s| s.data_src.op() != Op::Load || s.weight == 0)
    {
        notes.push("The loads carry no latency (weight 0): slow loads cannot be told.".into());
    }
    notes.push("Remote means what the PMU's data source says (remote RAM or a cache on another node); it is not the node of the page, which the per-node histograms give when it could be asked.".into());
    if data.non_memory > 0 {
        notes.push(format!(
            "{} samples were no memory operation (no load or store, no address) and are left out.",
            data.non_memory
        ));
    }
    let unmapped = crate::attribute::unmapped(samples, attribution);
    if unmapped > 0 {
        notes.push(if data.mappings.is_empty() {
            format!("{unmapped} samples are unattributed: no mapping records (run perf script with --show-mmap-events, and record with data mappings, as perf mem does).")
        } else {
            format!("{unmapped} samples fall in no mapping seen (kernel addresses, or memory mapped before recording started).")
        });
    }
    if data.samples.iter().any(|s| s.phys_addr.is_some())
        && !node_methods.contains_key(&NodeHow::PhysAddrSysfs)
    {
        notes.push("Physical addresses were sampled but not mapped to nodes (only valid on the machine that recorded them, when you say so).".into());
    }
    notes.extend(attribution.notes.iter().cloned());
    notes
}

/// The samples per event, in the order of [`Samples::events`].
fn event_counts(data: &Samples) -> Vec<(String, u64)> {
    let mut events: Vec<(String, u64)> = data.events.iter().map(|e| (e.clone(), 0)).collect();
    for s in &data.samples {
        if let Some(e) = events.get_mut(s.event as usize) {
            e.1 += 1;
        }
    }
    events
}

/// The whole analysis.
pub fn analyze(
    data: &Samples,
    attribution: &Attribution,
    nodes: &[NodeAnswer],
    opts: &AnalysisOptions,
    source: MemSource,
    facility: String,
) -> MemAccessRecord {
    let samples = &data.samples;
    let total = samples.len() as u64;
    let unit = opts.latency_unit.clone();
    let threshold = choose_threshold(samples, opts.threshold, &unit);
    let thr = threshold.value;
    let slow: Vec<bool> = samples.iter().map(|s| is_slow(s, thr)).collect();
    let slow_total = slow.iter().filter(|&&b| b).count() as u64;
    let loads = samples
        .iter()
        .filter(|s| s.data_src.op() == Op::Load)
        .count() as u64;
    let stores = samples
        .iter()
        .filter(|s| s.data_src.op() == Op::Store)
        .count() as u64;
    let remote = samples.iter().filter(|s| s.data_src.remote_node()).count() as u64;
    let (mappings, symbols) = region_rows(samples, attribution, &slow, slow_total);
    let hist = histograms(samples, nodes, &slow);
    let false_sharing = false_sharing(data, attribution, opts.line_bytes);
    let findings = findings(&FindingInputs {
        samples,
        mappings: &mappings,
        symbols: &symbols,
        node_histograms: &hist.node_histograms,
        false_sharing: &false_sharing,
        loads,
        thr,
        unit: &unit,
    });
    let notes = notes(data, attribution, &threshold, &hist.node_methods, loads);
    let mut source = source;
    if source.events.is_empty() {
        source.events = event_counts(data);
    }
    MemAccessRecord {
        source,
        facility,
        latency_unit: unit,
        samples: total,
        loads,
        stores,
        other: total - loads - stores,
        lost: data.lost,
        threshold,
        slow_loads: slow_total,
        remote,
        mappings,
        symbols,
        bin_edges: hist.bin_edges,
        node_histograms: hist.node_histograms,
        node_methods: hist
            .node_methods
            .into_iter()
            .map(|(h, n)| (h.name().to_string(), n))
            .collect(),
        false_sharing,
        findings,
        notes,
    }
}

/// The facility the events of an import point to.
pub fn facility_of_events(events: &[String]) -> String {
    let e = events.join(" ").to_ascii_lowercase();
    // perf's SPE decoder names the events it synthesizes after what they select.
    let spe_names = [
        "memory",
        "l1d-miss",
        "l1d-access",
        "llc-miss",
        "llc-access",
        "tlb-miss",
        "tlb-access",
        "remote-access",
    ];
    let what = if e.contains("arm_spe")
        || events
            .iter()
            .any(|x| spe_names.contains(&x.to_ascii_lowercase().as_str()))
    {
        "Arm SPE"
    } else if e.contains("ibs_op") {
        "AMD IBS op"
    } else if e.contains("mem-loads") || e.contains("mem-stores") || e.contains("ldlat") {
        "Intel PEBS load latency"
    } else {
        "unknown facility"
    };
    format!("imported ({what}; events {})", events.join(", "))
}

/// A data source as the tables name it (level, and `remote` / `HITM` flags).
pub fn describe(d: DataSrc) -> String {
    let mut s = d.level().name().to_string();
    if d.hitm() {
        s.push_str(", HITM");
    }
    if d.tlb() == Tlb::Miss {
        s.push_str(", TLB miss");
    }
    s
}
