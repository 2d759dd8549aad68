//! The figures a calibration fits, read from measured bundles: aggregates that need no
//! map from the machine's CPUs to the model's cores, only from CPUs to NUMA nodes.
//!
//! - `mem.latency`: idle latency per (CPU node, memory node) at the largest working set,
//!   which must be at least twice the last-level cache (64 MiB when the cache is not
//!   known); records on huge pages are preferred (base pages add page walks the model
//!   does not have); several records of a pair give their median.
//! - `c2c.matrix`: the mean of the cells of each node pair, without pairs of hardware
//!   threads of one core (the CPU-to-node and CPU-to-core maps come from the bundle's
//!   machine description).
//! - `mem.bandwidth`: per node, the highest bandwidth (bytes actually moved) of a kernel
//!   whose threads and pages were on that node.

use crate::error::ModelError;
use numalab_records::c2c::MatrixRecord;
use numalab_records::mem::{BandwidthRecord, LatencyRecord, Load, Placement};
use numalab_schema::record::Bundle;
use std::collections::BTreeMap;

/// Kind of a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FigureKind {
    /// Idle memory latency, ns.
    MemLatency,
    /// Core-to-core latency, ns.
    C2c,
    /// Peak bandwidth of a node on its own memory, GB/s.
    Bandwidth,
}

impl FigureKind {
    /// Its name in records.
    pub fn name(self) -> &'static str {
        match self {
            FigureKind::MemLatency => "mem.latency",
            FigureKind::C2c => "c2c",
            FigureKind::Bandwidth => "mem.bandwidth",
        }
    }

    /// Unit of its values.
    pub fn unit(self) -> &'static str {
        match self {
            FigureKind::Bandwidth => "GB/s",
            _ => "ns",
        }
    }
}

/// One measured figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// What it is.
    pub kind: FigureKind,
    /// Node of the CPUs (c2c: the lower node of the pair).
    pub cpu_node: u32,
    /// Node of the memory (c2c: the other node).
    pub mem_node: u32,
    /// Value, ns or GB/s.
    pub value: f64,
    /// Bandwidth: threads that ran.
    pub threads: usize,
    /// Bandwidth: lines read and written per element of the kernel.
    pub reads_writes: (usize, usize),
    /// Records it comes from.
    pub sources: Vec<String>,
}

/// What the bundles hold for a calibration.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// The figures.
    pub figures: Vec<Observed>,
    /// NUMA nodes of the measured machine.
    pub nodes: u32,
    /// Whether `nodes` comes from a machine description (else from the records).
    pub nodes_known: bool,
    /// CPUs (hardware threads) per node, where the machine description is known.
    pub cpus_per_node: Vec<usize>,
    /// Records skipped and why; how the input was read.
    pub notes: Vec<String>,
}

/// Idle latency candidates of a node pair: (huge pages, ns, source).
type Candidates = BTreeMap<(u32, u32), Vec<(bool, f64, String)>>;

fn input(what: &str, msg: impl Into<String>) -> ModelError {
    ModelError::Measurements {
        what: what.to_string(),
        msg: msg.into(),
    }
}

/// The single element of a list, if it has exactly one.
/// The (CPU node, memory node) cell a record measured: its matrix cell, else its
/// placement when one CPU node read one memory node (at least 99% of the pages there).
fn node_cell(matrix: Option<(u32, u32)>, p: &Placement) -> Option<(u32, u32)> {
    matrix.or_else(|| {
        (p.fraction_expected >= 0.99)
            .then(|| Some((single(&p.cpu_nodes)?, single(&p.expected_nodes)?)))
            .flatten()
    })
}

fn single(v: &[u32]) -> Option<u32> {
    match v {
        [x] => Some(*x),
        _ => None,
    }
}

/// Reads the figures of `bundles` (name as the user gave it, bundle).
pub fn read(bundles: &[(String, Bundle)]) -> Result<Measured, ModelError> {
    let mut m = Measured::default();
    let mut hash: Option<(String, String)> = None;
    let mut lat: Candidates = BTreeMap::new();
    let mut c2c: BTreeMap<(u32, u32), (Vec<f64>, Vec<String>)> = BTreeMap::new();
    let mut bw: BTreeMap<u32, Observed> = BTreeMap::new();
    let mut max_node = None::<u32>;
    for (name, b) in bundles {
        let host = &b.envelope.host;
        match &hash {
            Some((h, first)) if *h != host.topology_hash => {
                return Err(input(
                    name,
                    format!("measured on another machine than {first} (topology {} against {h}); calibrate to bundles of one machine", host.topology_hash),
                ))
            }
            None => hash = Some((host.topology_hash.clone(), name.clone())),
            _ => {}
        }
        let topo = host.topology.as_ref();
        if let Some(t) = topo {
            m.nodes = t.numa_nodes.len() as u32;
            m.nodes_known = true;
            m.cpus_per_node = t.numa_nodes.iter().map(|n| n.cpus.len()).collect();
        }
        for (r, rec) in b.records_of::<LatencyRecord>() {
            let src = format!("{name}: {}", r.key);
            let kind = rec.kind();
            if kind.load != Load::Idle {
                continue;
            }
            let cell = node_cell(rec.matrix.map(|c| (c.cpu_node, c.mem_node)), &rec.placement);
            let Some((c, mem)) = cell else {
                m.notes.push(format!(
                    "{src}: skipped, its CPUs or pages are not on one node each"
                ));
                continue;
            };
            let Some(last) = rec.points.last() else {
                continue;
            };
            let floor = kind.llc_bytes.map_or(64 << 20, |l| 2 * l);
            if last.working_set_bytes < floor {
                m.notes.push(format!(
                    "{src}: skipped, its largest working set ({} bytes) is below {} bytes (2x the last-level cache, or 64 MiB): a cache figure, not memory",
                    last.working_set_bytes, floor
                ));
                continue;
            }
            let ns = last.latency_ns.median;
            if !(ns.is_finite() && ns > 0.0) {
                continue;
            }
            max_node = max_node.max(Some(c.max(mem)));
            lat.entry((c, mem))
                .or_default()
                .push((kind.huge(), ns, src));
        }
        for (r, rec) in b.records_of::<MatrixRecord>() {
            let src = format!("{name}: {}", r.key);
            let Some(t) = topo else {
                m.notes.push(format!("{src}: skipped, the bundle has no machine description to put its CPUs on nodes"));
                continue;
            };
            let place = |cpu: u32| -> Option<(u32, Option<usize>)> {
                let pu = t.pus.iter().find(|p| p.os_index == cpu)?;
                Some((pu.numa_node?, pu.core))
            };
            let mut used = 0usize;
            for (i, row) in rec.matrix_ns.rows().enumerate() {
                for (j, v) in row.enumerate().take(i) {
                    let Some(v) = v else { continue };
                    let (Some(a), Some(b)) = (
                        rec.cpus.get(i).and_then(|&c| place(c)),
                        rec.cpus.get(j).and_then(|&c| place(c)),
                    ) else {
                        continue;
                    };
                    if (a.1.is_some() && a.1 == b.1) || !v.is_finite() || v <= 0.0 {
                        continue; // two hardware threads of one core
                    }
                    let key = (a.0.min(b.0), a.0.max(b.0));
                    max_node = max_node.max(Some(key.1));
                    let e = c2c.entry(key).or_default();
                    e.0.push(v);
                    if !e.1.contains(&src) {
                        e.1.push(src.clone());
                    }
                    used += 1;
                }
            }
            if used == 0 {
                m.notes.push(format!(
                    "{src}: skipped, no cell between CPUs of different cores on known nodes"
                ));
            }
        }
        for (r, rec) in b.records_of::<BandwidthRecord>() {
            let src = format!("{name}: {}", r.key);
            if rec.verified == Some(false) {
                continue;
            }
            let cell = node_cell(rec.matrix.map(|c| (c.cpu_node, c.mem_node)), &rec.placement);
            let Some((c, mem)) = cell else { continue };
            if c != mem {
                continue; // remote bandwidth: the socket link or the mesh, not the controllers
            }
            let spec = rec.kernel.spec();
            let o = Observed {
                kind: FigureKind::Bandwidth,
                cpu_node: c,
                mem_node: c,
                value: rec.actual_bandwidth_gbps.median,
                threads: rec.threads,
                // A plain store reads the line first (write-allocate); the bytes are the
                // bytes actually moved, so the model moves the same lines.
                reads_writes: (
                    spec.reads.len() + usize::from(!rec.kernel.nt) * spec.writes.len(),
                    spec.writes.len(),
                ),
                sources: vec![src],
            };
            if !o.value.is_finite() || o.value <= 0.0 || rec.threads == 0 {
                continue;
            }
            max_node = max_node.max(Some(c));
            if bw.get(&c).is_none_or(|b| b.value < o.value) {
                bw.insert(c, o);
            }
        }
    }
    if !m.nodes_known {
        m.nodes = max_node.map_or(0, |n| n + 1);
        m.notes.push(format!(
            "the bundles have no machine description: the measured machine is taken to have {} NUMA nodes (the highest node the records name, plus one)",
            m.nodes
        ));
    }
    for ((c, mem), mut v) in lat {
        let huge = v.iter().any(|x| x.0);
        v.retain(|x| x.0 == huge);
        let mut vals: Vec<f64> = v.iter().map(|x| x.1).collect();
        vals.sort_by(f64::total_cmp);
        let median = numalab_stats::median_sorted(&vals).expect("a latency cell has a sample");
        m.figures.push(Observed {
            kind: FigureKind::MemLatency,
            cpu_node: c,
            mem_node: mem,
            value: median,
            threads: 1,
            reads_writes: (1, 0),
            sources: v.into_iter().map(|x| x.2).collect(),
        });
    }
    for ((a, b), (vals, sources)) in c2c {
        m.figures.push(Observed {
            kind: FigureKind::C2c,
            cpu_node: a,
            mem_node: b,
            value: vals.iter().sum::<f64>() / vals.len() as f64,
            threads: 2,
            reads_writes: (0, 0),
            sources,
        });
    }
    m.figures.extend(bw.into_values());
    Ok(m)
}
