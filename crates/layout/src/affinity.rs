//! Affinity advice (experiments.md C3): which cores K cooperating threads should run on.
//!
//! Why: threads that pass cache lines to each other pay the core-to-core latency on every
//! transfer. "Scatter" (thread i on OS core i, what a runtime does by default) ignores
//! where the cores are; on a mesh, cores with adjacent numbers can be far apart. Given the
//! latency between every two cores, predicted from an inferred floorplan or measured by
//! `numalab c2c` (its group medians filling unmeasured pairs), we choose the K cores and
//! the thread-to-core map that minimise the communication-weighted mean latency:
//! `sum_{i<j} w_ij L(core_i, core_j) / sum w_ij`, with `w` all ones unless a communication
//! matrix is given. That is a quadratic assignment problem; it is solved by a greedy
//! start from every core followed by seeded simulated annealing over swaps and moves to
//! unused cores. The gain reported is the scatter cost over the chosen cost: a prediction
//! of how much faster communication gets, not of the program's speed-up.

use crate::error::LayoutError;
use crate::record::{AffinityRecord, InferenceRecord, InferenceRecordExt};
use numalab_c2c::LatencyMatrix;
use numalab_schema::record::Host;
use numalab_schema::Origin;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};

/// Latency between every two CPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct CostMatrix {
    /// CPU ids, ascending.
    pub cpus: Vec<u32>,
    /// Row-major n x n, ns (0 on the diagonal).
    pub ns: Vec<f64>,
    /// "layout" or "c2c".
    pub source: String,
    /// How unmeasured pairs were filled, etc.
    pub notes: Vec<String>,
}

impl CostMatrix {
    fn n(&self) -> usize {
        self.cpus.len()
    }

    /// Latency between positions i and j.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.ns[i * self.n() + j]
    }

    /// Predicted from an inferred floorplan.
    pub fn from_layout(rec: &InferenceRecord) -> Result<CostMatrix, LayoutError> {
        let model = rec.latency_model()?;
        let mut cores: Vec<(u32, u32)> = rec.cores.iter().map(|c| (c.cpu, c.stop)).collect();
        cores.sort_unstable();
        let n = cores.len();
        let mut ns = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                if i != j {
                    ns[i * n + j] = model.ns(cores[i].1, cores[j].1);
                }
            }
        }
        Ok(CostMatrix {
            cpus: cores.iter().map(|c| c.0).collect(),
            ns,
            source: "layout".into(),
            notes: vec![format!(
                "latencies predicted by the floorplan inferred from {} (residual {:.2} ns rms)",
                rec.input, rec.residual_rms_ns
            )],
        })
    }

    /// From a core-to-core matrix; an unmeasured pair gets the median latency of the
    /// finest c2c group holding both CPUs (else of the pairs across the top level, else of
    /// all pairs). The groups are inferred with [`numalab_c2c::try_infer`]: Ctrl-C or
    /// SIGTERM during it is [`Interrupted`](numalab_c2c::structure::Interrupted).
    pub fn from_c2c(m: &LatencyMatrix) -> Result<CostMatrix, numalab_c2c::structure::Interrupted> {
        let s = numalab_c2c::try_infer(m)?;
        let mut order: Vec<usize> = (0..m.n()).collect();
        order.sort_by_key(|&i| m.cpus()[i]);
        let n = m.n();
        let all = numalab_stats::median(&m.measured_values()).unwrap_or(0.0);
        let mut filled = 0usize;
        let mut ns = vec![0.0; n * n];
        for (a, &i) in order.iter().enumerate() {
            for (b, &j) in order.iter().enumerate() {
                if a == b {
                    continue;
                }
                ns[a * n + b] = match m.get(i, j) {
                    Some(v) if v.is_finite() && v > 0.0 => v,
                    _ => {
                        filled += 1;
                        let (ci, cj) = (m.cpus()[i], m.cpus()[j]);
                        s.levels
                            .iter()
                            .find_map(|l| {
                                l.groups
                                    .iter()
                                    .find(|g| g.cpus.contains(&ci) && g.cpus.contains(&cj))
                                    .and_then(|g| g.intra_ns)
                            })
                            .or_else(|| s.levels.last().and_then(|l| l.inter_ns))
                            .unwrap_or(all)
                    }
                };
            }
        }
        let mut notes = vec![format!(
            "latencies from the core-to-core matrix ({} CPUs, {} levels of groups)",
            n,
            s.levels.len()
        )];
        if filled > 0 {
            notes.push(format!(
                "{} unmeasured pairs took the median latency of their finest common c2c group",
                filled / 2
            ));
        }
        Ok(CostMatrix {
            cpus: order.iter().map(|&i| m.cpus()[i]).collect(),
            ns,
            source: "c2c".into(),
            notes,
        })
    }
}

/// The most threads `layout affinity` places (the communication weights are K x K).
pub const MAX_THREADS: usize = 1 << 16;

/// Communication weights between K threads (symmetric, zero diagonal).
#[derive(Debug, Clone, PartialEq)]
pub struct Comm {
    /// Threads.
    pub k: usize,
    /// Row-major k x k.
    pub w: Vec<f64>,
    /// "uniform" or the file name.
    pub name: String,
}

impl Comm {
    /// Every pair of threads communicates equally.
    pub fn uniform(k: usize) -> Comm {
        let mut w = vec![1.0; k * k];
        for i in 0..k {
            w[i * k + i] = 0.0;
        }
        Comm {
            k,
            w,
            name: "uniform".into(),
        }
    }

    /// Parses K lines of K numbers (commas or spaces); `w[i][j]` is traffic from thread i
    /// to thread j. Both directions are added (`w_ij + w_ji`); a lower triangle is enough.
    pub fn parse(text: &str, name: &str) -> Result<Comm, LayoutError> {
        let rows: Vec<Vec<&str>> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| l.split([',', ' ', '\t']).map(str::trim).collect::<Vec<_>>())
            .collect();
        let k = rows.len();
        if k < 2 {
            return Err(LayoutError::input(
                name,
                "a communication matrix needs at least 2 lines (one per thread) of numbers",
            ));
        }
        let mut w = vec![0.0; k * k];
        for (i, r) in rows.iter().enumerate() {
            let fields: Vec<&str> = r.iter().copied().filter(|f| !f.is_empty()).collect();
            if fields.len() > k {
                return Err(LayoutError::input(
                    name,
                    format!(
                        "line {}: {} numbers for {k} threads (the matrix must be K x K)",
                        i + 1,
                        fields.len()
                    ),
                ));
            }
            for (j, f) in fields.iter().enumerate() {
                let v: f64 = f.parse().map_err(|_| {
                    LayoutError::input(name, format!("line {}: {f:?} is not a number", i + 1))
                })?;
                if !v.is_finite() || v < 0.0 {
                    return Err(LayoutError::input(
                        name,
                        format!("line {}: {v} is not a non-negative weight", i + 1),
                    ));
                }
                if i != j {
                    w[i * k + j] += v;
                    w[j * k + i] += v;
                }
            }
        }
        if w.iter().all(|&v| v == 0.0) {
            return Err(LayoutError::input(
                name,
                "all weights are 0: no thread talks to another",
            ));
        }
        Ok(Comm {
            k,
            w,
            name: name.to_string(),
        })
    }

    /// Reads a communication matrix file ([`Comm::parse`]) that must be for `threads`
    /// threads (`--threads`).
    pub fn read(path: &Path, threads: usize) -> Result<Comm, LayoutError> {
        let text = numalab_schema::input::read_to_string(
            path,
            "a communication matrix",
            numalab_schema::input::C2C_CSV,
        )
        .map_err(|e| LayoutError::input(numalab_schema::text::path_text(&e.path), e.reason))?;
        let name = path.display().to_string();
        let c = Comm::parse(&text, &name)?;
        if c.k != threads {
            return Err(LayoutError::input(
                &name,
                format!(
                    "a {} x {} matrix for --threads {threads}; give one line per thread",
                    c.k, c.k
                ),
            ));
        }
        Ok(c)
    }

    fn total(&self) -> f64 {
        self.w.iter().sum::<f64>() / 2.0
    }
}

impl CostMatrix {
    /// The costs of the core-to-core matrix in a file ([`crate::input::load`]) and the
    /// file's origin; a file without one is an input error.
    pub fn from_input(path: &Path) -> Result<(CostMatrix, String), LayoutError> {
        let loaded = crate::input::load(path)?;
        let m = loaded.c2c.ok_or_else(|| {
            LayoutError::input(
                path.display().to_string(),
                "affinity without a layout needs a core-to-core matrix",
            )
        })?;
        Ok((CostMatrix::from_c2c(&m)?, loaded.origin))
    }
}

/// What `layout affinity` is asked: `threads` threads with the communication matrix in
/// the file `comm` (uniform without), on the floorplan `layout` or, without one, the
/// core-to-core matrix `input`; `seed` seeds the search.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Cooperating threads.
    pub threads: usize,
    /// The communication matrix's file.
    pub comm: Option<PathBuf>,
    /// An inferred floorplan (`layout infer` output).
    pub layout: Option<PathBuf>,
    /// A core-to-core matrix (c2c output or CSV).
    pub input: Option<PathBuf>,
    /// Seed of the search.
    pub seed: u64,
}

/// The advice of a [`Request`], ready to record: the run's configuration, where the
/// latencies come from (origin, host), the record and its key.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The run's configuration (the request as given).
    pub config: serde_json::Value,
    /// The origin of the latencies (that of the floorplan's or matrix's measurements).
    pub origin: Origin,
    /// The envelope's host: `affinity:PATH` of the floorplan or matrix.
    pub host: Host,
    /// The record's key.
    pub key: String,
    /// The `layout.affinity` record.
    pub record: AffinityRecord,
}

impl Request {
    /// Reads the communication matrix and the floorplan (else the matrix), chooses the
    /// cores and builds the record. Neither a floorplan nor a matrix is a usage error.
    pub fn run(&self) -> Result<Outcome, LayoutError> {
        // Checked before the k x k weights are allocated (a count past it overflowed).
        if self.threads > MAX_THREADS {
            return Err(LayoutError::Usage(format!(
                "--threads {}: at most {MAX_THREADS} threads (one per CPU of the data)",
                self.threads
            )));
        }
        let comm = match &self.comm {
            Some(p) => Comm::read(p, self.threads)?,
            None => Comm::uniform(self.threads),
        };
        let (costs, layout, source, origin) = match (&self.layout, &self.input) {
            (Some(l), _) => {
                let r = crate::record::read_inference(l)?;
                let o = crate::input::origin_of(&r.input_origin);
                (CostMatrix::from_layout(&r)?, Some(r), l, o)
            }
            (None, Some(i)) => {
                let (costs, o) = CostMatrix::from_input(i)?;
                (costs, None, i, crate::input::origin_of(&o))
            }
            (None, None) => {
                return Err(LayoutError::Usage(
                    "give --layout (from `layout infer`) or --input (a c2c matrix)".into(),
                ))
            }
        };
        let advice = advise(&costs, &comm, self.seed)?;
        let record = record(&costs, &comm, &advice, layout.as_ref())?;
        Ok(Outcome {
            config: serde_json::json!({"threads": self.threads, "comm": self.comm, "layout": self.layout, "input": self.input, "seed": self.seed}),
            origin,
            host: crate::record::file_host("affinity", source),
            key: crate::record::affinity_key(
                &source.display().to_string(),
                self.threads,
                &comm.name,
            ),
            record,
        })
    }
}

/// Chosen cores.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    /// Position (in `CostMatrix::cpus`) of each thread's CPU.
    pub placement: Vec<usize>,
    /// Weighted mean latency, ns.
    pub cost_ns: f64,
    /// Scatter: thread i on position i.
    pub scatter: Vec<usize>,
    /// Its weighted mean latency, ns.
    pub scatter_cost_ns: f64,
}

/// Weighted mean latency of a placement.
pub fn cost(c: &CostMatrix, comm: &Comm, placement: &[usize]) -> f64 {
    let k = comm.k;
    let mut s = 0.0;
    for i in 0..k {
        for j in 0..i {
            s += comm.w[i * k + j] * c.get(placement[i], placement[j]);
        }
    }
    s / comm.total()
}

/// Chooses cores for `comm.k` threads.
pub fn advise(c: &CostMatrix, comm: &Comm, seed: u64) -> Result<Advice, LayoutError> {
    let n = c.cpus.len();
    let k = comm.k;
    if k < 2 {
        return Err(LayoutError::Usage(
            "--threads must be at least 2 (one thread has no one to talk to)".into(),
        ));
    }
    if k > n {
        return Err(LayoutError::Usage(format!(
            "{k} threads but only {n} CPUs in the {} data; give at most {n} threads",
            c.source
        )));
    }
    // Threads in decreasing total weight; each greedy start puts the heaviest on one CPU.
    let mut order: Vec<usize> = (0..k).collect();
    let wsum = |i: usize| comm.w[i * k..(i + 1) * k].iter().sum::<f64>();
    order.sort_by(|&a, &b| wsum(b).total_cmp(&wsum(a)).then(a.cmp(&b)));
    let mut best: Option<(f64, Vec<usize>)> = None;
    for start in 0..n {
        let mut pl = vec![usize::MAX; k];
        let mut used = vec![false; n];
        pl[order[0]] = start;
        used[start] = true;
        for &t in &order[1..] {
            let mut choice = (f64::INFINITY, 0usize);
            for (p, _) in used.iter().enumerate().filter(|(_, u)| !**u) {
                let s: f64 = pl
                    .iter()
                    .enumerate()
                    .filter(|(_, q)| **q != usize::MAX)
                    .map(|(u, &q)| comm.w[t * k + u] * c.get(p, q))
                    .sum();
                if s < choice.0 {
                    choice = (s, p);
                }
            }
            pl[t] = choice.1;
            used[choice.1] = true;
        }
        let v = cost(c, comm, &pl);
        if best.as_ref().is_none_or(|b| v < b.0) {
            best = Some((v, pl));
        }
    }
    let (mut cur_cost, mut pl) = best.unwrap_or((f64::INFINITY, (0..k).collect()));
    // Annealing over swaps of two threads and moves to unused CPUs.
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let total = comm.total();
    let mut used = vec![usize::MAX; n];
    for (t, &p) in pl.iter().enumerate() {
        used[p] = t;
    }
    let steps = 2000 * k;
    let t0 = cur_cost * 0.05;
    let mut best_pl = pl.clone();
    let mut best_cost = cur_cost;
    let contrib = |pl: &[usize], t: usize, p: usize, skip: usize| -> f64 {
        (0..k)
            .filter(|&u| u != t && u != skip)
            .map(|u| comm.w[t * k + u] * c.get(p, pl[u]))
            .sum::<f64>()
    };
    for step in 0..steps {
        let temp = t0 * (1.0 - step as f64 / steps as f64) + 1e-12;
        let t = rng.random_range(0..k);
        let p = rng.random_range(0..n);
        if p == pl[t] {
            continue;
        }
        let other = used[p];
        let delta = if other == usize::MAX {
            (contrib(&pl, t, p, usize::MAX) - contrib(&pl, t, pl[t], usize::MAX)) / total
        } else {
            let (a, b) = (pl[t], p);
            let before = contrib(&pl, t, a, other) + contrib(&pl, other, b, t);
            let after = contrib(&pl, t, b, other) + contrib(&pl, other, a, t);
            (after - before) / total
        };
        if delta <= 0.0 || rng.random::<f64>() < (-delta / temp).exp() {
            let old = pl[t];
            if other != usize::MAX {
                pl[other] = old;
                used[old] = other;
            } else {
                used[old] = usize::MAX;
            }
            pl[t] = p;
            used[p] = t;
            cur_cost += delta;
            if cur_cost < best_cost - 1e-12 {
                best_cost = cur_cost;
                best_pl = pl.clone();
            }
        }
    }
    let scatter: Vec<usize> = (0..k).collect();
    Ok(Advice {
        cost_ns: cost(c, comm, &best_pl),
        placement: best_pl,
        scatter_cost_ns: cost(c, comm, &scatter),
        scatter,
    })
}

/// The `layout.affinity` record of `advice` on `costs` for `comm`'s threads: the CPUs of
/// the choice and of scatter, their costs and the predicted gain, and, with a floorplan
/// that has targets (`layout`), the target nearest each thread's CPU.
pub fn record(
    costs: &CostMatrix,
    comm: &Comm,
    advice: &Advice,
    layout: Option<&InferenceRecord>,
) -> Result<AffinityRecord, LayoutError> {
    let placement: Vec<u32> = advice.placement.iter().map(|&p| costs.cpus[p]).collect();
    let scatter: Vec<u32> = advice.scatter.iter().map(|&p| costs.cpus[p]).collect();
    let mut sorted = placement.clone();
    sorted.sort_unstable();
    let nearest_targets = match layout {
        Some(r) if !r.targets.is_empty() => nearest_targets(r, &placement)?,
        _ => vec![None; placement.len()],
    };
    let mut notes = costs.notes.clone();
    notes.push("the gain is that of the mean latency between communicating threads, not a prediction of the program's speed-up".into());
    Ok(AffinityRecord {
        threads: comm.k,
        source: costs.source.clone(),
        communication: comm.name.clone(),
        cpulist: numalab_schema::cpulist::format(&sorted),
        placement,
        cost_ns: advice.cost_ns,
        scatter_cost_ns: advice.scatter_cost_ns,
        scatter_placement: scatter,
        predicted_gain: advice.scatter_cost_ns / advice.cost_ns,
        nearest_targets,
        notes,
    })
}

/// For each CPU, the floorplan's target (slice or controller) with the lowest predicted
/// latency from it; `None` for a CPU the floorplan does not place.
fn nearest_targets(r: &InferenceRecord, cpus: &[u32]) -> Result<Vec<Option<String>>, LayoutError> {
    let model = r.latency_model()?;
    Ok(cpus
        .iter()
        .map(|cpu| {
            let c = r.cores.iter().find(|c| c.cpu == *cpu)?;
            r.targets
                .iter()
                .min_by(|x, y| {
                    model
                        .ns(c.stop, x.stop)
                        .total_cmp(&model.ns(c.stop, y.stop))
                })
                .map(|t| t.target.clone())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
        let p =
            std::env::temp_dir().join(format!("numalab-affinity-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_request_without_latencies_is_refused_and_one_with_a_matrix_is_advised() {
        let mut req = Request {
            threads: 2,
            comm: None,
            layout: None,
            input: None,
            seed: 1,
        };
        let e = req.run().unwrap_err();
        assert!(matches!(e, LayoutError::Usage(_)));
        assert_eq!(
            e.to_string(),
            "give --layout (from `layout infer`) or --input (a c2c matrix)"
        );
        let csv = temp_file("req.csv", ",,,\n10,,,\n50,50,,\n50,50,10,\n");
        req.input = Some(csv.clone());
        let out = req.run().unwrap();
        let shown = csv.display().to_string();
        assert_eq!(out.key, format!("layout/affinity/{shown}/2/uniform"));
        assert_eq!(out.host, Host::unknown(format!("affinity:{shown}")));
        assert_eq!(out.config["threads"], 2);
        assert_eq!(out.config["input"], shown.as_str());
        assert!(out.config["layout"].is_null());
        assert_eq!(out.record.threads, 2);
        std::fs::remove_file(csv).unwrap();
    }

    #[test]
    fn the_record_names_cpus_costs_and_the_gain() {
        let mut c = line(8);
        c.cpus = (10..18).collect();
        let comm = Comm::uniform(4);
        let a = advise(&c, &comm, 1).unwrap();
        let r = record(&c, &comm, &a, None).unwrap();
        assert_eq!(r.threads, 4);
        assert_eq!(r.communication, "uniform");
        assert_eq!(r.placement.len(), 4);
        assert!(r.placement.iter().all(|cpu| (10..18).contains(cpu)));
        assert_eq!(r.scatter_placement, vec![10, 11, 12, 13]);
        let mut sorted = r.placement.clone();
        sorted.sort_unstable();
        assert_eq!(r.cpulist, numalab_schema::cpulist::format(&sorted));
        assert_eq!(r.predicted_gain, a.scatter_cost_ns / a.cost_ns);
        assert!(r.predicted_gain > 1.0);
        assert_eq!(r.nearest_targets, vec![None; 4]);
        assert!(r
            .notes
            .last()
            .unwrap()
            .starts_with("the gain is that of the mean latency"));
    }

    #[test]
    fn a_communication_file_must_fit_the_threads() {
        let p = temp_file("comm.txt", "0\n5 0\n1 1 0\n");
        assert_eq!(Comm::read(&p, 3).unwrap().k, 3);
        assert_eq!(
            Comm::read(&p, 4).unwrap_err().to_string(),
            format!(
                "{}: a 3 x 3 matrix for --threads 4; give one line per thread",
                p.display()
            )
        );
        std::fs::remove_file(&p).unwrap();
        let e = Comm::read(&p, 3).unwrap_err();
        assert!(e.to_string().starts_with(&p.display().to_string()), "{e}");
    }

    #[test]
    fn affinity_without_a_layout_needs_a_core_to_core_matrix() {
        let p = temp_file("targets.csv", "cpu,slice:0\n0,10\n1,12\n");
        let e = CostMatrix::from_input(&p).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: affinity without a layout needs a core-to-core matrix",
                p.display()
            )
        );
        std::fs::remove_file(&p).unwrap();
    }

    fn line(n: usize) -> CostMatrix {
        // CPUs numbered so that OS order zig-zags along a line: 0 at position 0, 1 at the
        // far end, 2 next to 0, ...; latency = 10 + distance.
        let pos: Vec<f64> = (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    (i / 2) as f64
                } else {
                    (n - 1 - i / 2) as f64
                }
            })
            .collect();
        let mut ns = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                if i != j {
                    ns[i * n + j] = 10.0 + (pos[i] - pos[j]).abs();
                }
            }
        }
        CostMatrix {
            cpus: (0..n as u32).collect(),
            ns,
            source: "test".into(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn four_threads_go_next_to_each_other() {
        let c = line(8);
        let a = advise(&c, &Comm::uniform(4), 1).unwrap();
        // Best: 4 adjacent positions, mean distance of 4 points in a row = 10/6.
        assert!((a.cost_ns - (10.0 + 10.0 / 6.0)).abs() < 1e-9, "{a:?}");
        // Scatter: CPUs 0-3 at positions 0, 7, 1, 6: distances 7,1,6,6,1,5 -> mean 26/6.
        assert!((a.scatter_cost_ns - (10.0 + 26.0 / 6.0)).abs() < 1e-9);
    }

    #[test]
    fn communication_matrix_pairs_heavy_talkers() {
        let c = line(8);
        // Threads 0-1 and 2-3 talk a lot, the two pairs little.
        let comm = Comm::parse("0\n100 0\n1 1 0\n1 1 100 0\n", "comm.txt").unwrap();
        let a = advise(&c, &comm, 7).unwrap();
        let d = |i: usize, j: usize| c.get(a.placement[i], a.placement[j]);
        assert_eq!(d(0, 1), 11.0);
        assert_eq!(d(2, 3), 11.0);
        assert!(a.cost_ns < a.scatter_cost_ns);
    }

    #[test]
    fn bad_inputs_are_clear() {
        let c = line(4);
        let e = advise(&c, &Comm::uniform(5), 1).unwrap_err().to_string();
        assert!(e.contains("only 4 CPUs"), "{e}");
        let e = Comm::parse("0 1 2\n1 0\n", "w.txt")
            .unwrap_err()
            .to_string();
        assert!(e.contains("w.txt") && e.contains("K x K"), "{e}");
        assert!(Comm::parse("0 x\n1 0\n", "w")
            .unwrap_err()
            .to_string()
            .contains("not a number"));
    }
}
