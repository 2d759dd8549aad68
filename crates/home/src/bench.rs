//! `numalab home bench --model PRESET`: the mesh study's affinity experiments on a
//! model-generated machine, with memory handed out by the allocator from the inferred map
//! and every latency taken from the truth.
//!
//! - Reduction (study Figure 3a): `threads` threads, each on its own core, each reading
//!   `lines_per_thread` lines handed to it by [`LinePool::take`] within an affinity
//!   strength (a distance in hops between its core and the lines' homes; none: any
//!   line). A line's latency is the truth's flushed read (core -> home -> interface ->
//!   core); a thread's time is its lines' latencies over the core's outstanding misses.
//!   The gain is the drop in mean latency against no affinity; the same sweep with lines
//!   chosen by the true map gives the gain the inferred map should reach.
//! - Stencil (Figure 3b): a 1-D stencil over `threads` threads, each reading its block
//!   and exchanging its edges with threads i-1 and i+1: "scatter" puts thread i on OS
//!   CPU i with any lines; "co-located" walks the floorplan's stops in a snake (row by
//!   row, alternating direction) so neighbours sit on neighbouring tiles, and hands each
//!   thread lines within the smallest distance that has enough of them.
//!
//! What the model cannot give is not made up: outstanding-request cycles and TLB misses
//! need counters and stay empty here.

use crate::alloc::{Homes, LinePool};
use crate::error::HomeError;
use crate::groundtruth::{trial, TrialOptions, TrialOutcome};
use crate::map::Watch;
use crate::probe::{Access, Line};
use crate::truth::TruthMachine;
use numalab_model::model::{DAT, REQ, SNP};
use numalab_records::home::{BenchRecord, StencilPoint, SweepPoint, LINE_UNKNOWN};

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// The model trial that produces the map.
    pub trial: TrialOptions,
    /// Lines each thread reads.
    pub lines_per_thread: usize,
    /// Threads of the reduction.
    pub threads: usize,
    /// Largest affinity strength swept, hops.
    pub max_distance: u32,
    /// Thread counts of the stencil.
    pub stencil_threads: Vec<usize>,
}

/// Threads of the reduction unless `--threads` says otherwise.
pub const DEFAULT_THREADS: usize = 16;
/// Lines each thread reads unless `--lines` says otherwise.
pub const DEFAULT_LINES: usize = 256;
/// The largest affinity strength swept, hops, unless `--max-distance` says otherwise.
pub const DEFAULT_MAX_DISTANCE: u32 = 4;

impl BenchOptions {
    /// Defaults for a preset.
    pub fn new(preset: &str) -> BenchOptions {
        BenchOptions {
            trial: TrialOptions::new(preset),
            lines_per_thread: DEFAULT_LINES,
            threads: DEFAULT_THREADS,
            max_distance: DEFAULT_MAX_DISTANCE,
            stencil_threads: vec![4, 8, 16],
        }
    }
}

/// The bench's pool: every line of the buffer with the home the map gives it (the hash
/// where recovered, the measured lines otherwise), and the truth of each.
struct Pools {
    lines: Vec<Line>,
    inferred: Vec<u8>,
    truth: Vec<u8>,
}

fn pools(out: &TrialOutcome) -> Pools {
    let m = &out.machine;
    let rec = &out.mapped.record;
    let lpp = m.buffer.lines_per_page() as u32;
    match rec.home_hash.as_ref().filter(|h| h.status == "recovered") {
        Some(fit) => {
            let lines: Vec<Line> = (0..m.page_phys.len())
                .flat_map(|page| (0..lpp).map(move |offset| Line { page, offset }))
                .collect();
            let inferred = lines
                .iter()
                .map(|&l| fit.predict(m.pa(l)).unwrap_or(LINE_UNKNOWN))
                .collect();
            let truth = lines.iter().map(|&l| m.home_of(l)).collect();
            Pools {
                lines,
                inferred,
                truth,
            }
        }
        None => Pools {
            lines: out.mapped.lines.clone(),
            inferred: out.mapped.home.clone(),
            truth: out.mapped.lines.iter().map(|&l| m.home_of(l)).collect(),
        },
    }
}

fn true_homes(m: &TruthMachine) -> Homes {
    let g = &m.model.geo;
    let xy = |s| {
        let (_, x, y) = g.coords(s);
        [x, y]
    };
    let cpu_stops: Vec<[u32; 3]> = m
        .layout
        .core_stop
        .iter()
        .enumerate()
        .map(|(c, &s)| {
            let [x, y] = xy(s);
            [c as u32, x, y]
        })
        .collect();
    Homes::new(
        m.home_stops.iter().map(|&s| Some(xy(s))).collect(),
        &cpu_stops,
    )
}

/// Mean flushed-read latency (truth) of `lines` from `cpu`, and the share whose interface
/// is more than half the mesh's diameter away.
fn read_cost(m: &TruthMachine, cpu: u32, lines: &[Line]) -> (f64, f64) {
    let g = &m.model.geo;
    let half = (g.cols + g.rows - 2) / 2;
    let c = m.layout.core_stop[cpu as usize];
    let mut sum = 0.0;
    let mut far = 0usize;
    for &l in lines {
        let (h, i) = (m.home_of(l), m.interface_of(l));
        sum += m.latency_ns(Access::Flushed, cpu, None, h, i);
        if g.hops(c, m.model.mcs[m.interfaces[i as usize]].stop) > half {
            far += 1;
        }
    }
    let n = lines.len().max(1) as f64;
    (sum / n, far as f64 / n)
}

fn c2c_ns(m: &TruthMachine, a: u32, b: u32) -> f64 {
    let model = &m.model;
    let g = &model.geo;
    let (sa, sb) = (
        m.layout.core_stop[a as usize],
        m.layout.core_stop[b as usize],
    );
    // A line written by b, read by a, homed with b (the ideal a neighbour exchange
    // approaches).
    model.ns(f64::from(g.packet_cycles(sa, sb, model.flits[REQ]))
        + f64::from(model.spec.slc.lookup_cycles)
        + f64::from(g.packet_cycles(sb, sb, model.flits[SNP]))
        + f64::from(g.packet_cycles(sb, sa, model.flits[DAT])))
}

/// Runs the trial, then both experiments.
pub fn run(
    opts: &BenchOptions,
    watch: &mut dyn Watch,
) -> Result<(TrialOutcome, BenchRecord), HomeError> {
    if opts.lines_per_thread == 0 || opts.threads == 0 {
        return Err(HomeError::Usage(
            "--lines and --threads must be at least 1".into(),
        ));
    }
    // Every thread's lines must fit the model's buffer: checked before the trial (which
    // takes seconds) and before anything is sized from the count.
    let truth = &opts.trial.truth;
    let buffer_lines = (truth.pages as u64).saturating_mul(truth.page_bytes) / 64;
    let wanted = (opts.lines_per_thread as u64).saturating_mul(opts.threads as u64);
    if wanted > buffer_lines {
        return Err(HomeError::Usage(format!(
            "--lines {} x --threads {}: more lines than the model's buffer holds ({buffer_lines} lines in {} pages); ask for fewer lines or more --pages",
            opts.lines_per_thread, opts.threads, truth.pages
        )));
    }
    let cores = numalab_model::Model::load(&opts.trial.truth.preset, &opts.trial.truth.sets)?
        .cores
        .len();
    if opts.threads > cores {
        return Err(HomeError::Usage(format!(
            "--threads {}: the model has {cores} cores",
            opts.threads
        )));
    }
    let mut t = opts.trial.clone();
    t.floorplan = true;
    let out = trial(&t, watch)?;
    let m = &out.machine;
    let rec = &out.mapped.record;
    let n_cpus = m.model.cores.len();
    if opts.threads > n_cpus {
        return Err(HomeError::Usage(format!(
            "--threads {}: the model has {n_cpus} cores",
            opts.threads
        )));
    }
    let inferred_homes = Homes::from_record(rec)?;
    let truth_homes = true_homes(m);
    let pools = pools(&out);
    let fp = out
        .floorplan
        .as_ref()
        .ok_or_else(|| HomeError::Runtime("the trial inferred no floorplan".into()))?;
    let cpus: Vec<u32> = fp.spread(&(0..n_cpus as u32).collect::<Vec<_>>(), opts.threads);
    let mlp = f64::from(m.model.spec.cores.max_outstanding.max(1));
    let ghz = m.model.spec.cores.clock_ghz;
    let mut notes = Vec::new();
    let sweep_once =
        |homes: &Homes, ids: &[u8], d: Option<u32>| -> Result<(f64, f64, f64), HomeError> {
            let mut pool = LinePool::new(ids.to_vec());
            let mut lat = 0.0;
            let mut far = 0.0;
            let mut slowest: f64 = 0.0;
            for &c in &cpus {
                let idx = pool.take(homes, c, d, opts.lines_per_thread)?;
                let lines: Vec<Line> = idx.iter().map(|&i| pools.lines[i]).collect();
                let (l, f) = read_cost(m, c, &lines);
                lat += l;
                far += f;
                slowest = slowest.max(l * lines.len() as f64 / mlp);
            }
            let k = cpus.len() as f64;
            Ok((lat / k, far / k, slowest * ghz))
        };
    let (base, base_far, base_cycles) = sweep_once(&inferred_homes, &pools.inferred, None)?;
    let (tbase, _, _) = sweep_once(&truth_homes, &pools.truth, None)?;
    let mut sweep = vec![SweepPoint {
        distance_hops: None,
        latency_ns: base,
        cycles: Some(base_cycles),
        outstanding_cycles: None,
        tlb_misses: None,
        distant_interface_share: Some(base_far),
        gain: 0.0,
        gain_true_map: Some(0.0),
    }];
    for d in 0..=opts.max_distance {
        let got = sweep_once(&inferred_homes, &pools.inferred, Some(d));
        let want = sweep_once(&truth_homes, &pools.truth, Some(d));
        match (got, want) {
            (Ok((l, far, cyc)), Ok((tl, _, _))) => sweep.push(SweepPoint {
                distance_hops: Some(d),
                latency_ns: l,
                cycles: Some(cyc),
                outstanding_cycles: None,
                tlb_misses: None,
                distant_interface_share: Some(far),
                gain: 1.0 - l / base,
                gain_true_map: Some(1.0 - tl / tbase),
            }),
            (Err(e), _) | (_, Err(e)) => notes.push(format!(
                "Affinity strength {d} hops: not enough lines ({e})."
            )),
        }
    }
    // Stencil.
    let mut stencil = Vec::new();
    let snake: Vec<u32> = {
        let mut v: Vec<(u32, u32, u32)> = fp
            .cpu_stop
            .iter()
            .map(|(&c, &s)| {
                let (x, y) = fp.grid.xy(s);
                let xs = if y % 2 == 0 {
                    x
                } else {
                    fp.grid.geo.cols - 1 - x
                };
                (y, xs, c)
            })
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, _, c)| c).collect()
    };
    for &tn in &opts.stencil_threads {
        if tn < 2 || tn > n_cpus {
            notes.push(format!(
                "Stencil with {tn} threads skipped: needs 2 to {n_cpus}."
            ));
            continue;
        }
        for (name, order) in [
            ("scatter", (0..tn as u32).collect::<Vec<_>>()),
            ("co-located", snake[..tn].to_vec()),
        ] {
            let mut pool = LinePool::new(pools.inferred.clone());
            let mut step: f64 = 0.0;
            let mut lat = 0.0;
            for (i, &c) in order.iter().enumerate() {
                let idx = if name == "scatter" {
                    pool.take(&inferred_homes, c, None, opts.lines_per_thread)?
                } else {
                    let d = (0..=opts.max_distance.max(8)).find(|&d| {
                        pool.eligible(&inferred_homes, c, Some(d)) >= opts.lines_per_thread
                    });
                    pool.take(&inferred_homes, c, d, opts.lines_per_thread)?
                };
                let lines: Vec<Line> = idx.iter().map(|&k| pools.lines[k]).collect();
                let (l, _) = read_cost(m, c, &lines);
                lat += l;
                let mut t = l * lines.len() as f64 / mlp;
                if i > 0 {
                    t += c2c_ns(m, c, order[i - 1]);
                }
                if i + 1 < order.len() {
                    t += c2c_ns(m, c, order[i + 1]);
                }
                step = step.max(t);
            }
            stencil.push(StencilPoint {
                threads: tn,
                placement: name.to_string(),
                latency_ns: lat / tn as f64,
                step_ns: step,
            });
        }
    }
    notes.push("Modeled: latencies are the truth's zero-load reads; outstanding-request cycles and TLB misses need counters and are not given.".into());
    let record = BenchRecord {
        input_origin: "model".into(),
        machine: opts.trial.truth.preset.clone(),
        lines_per_thread: opts.lines_per_thread,
        sweep,
        stencil,
        notes,
    };
    Ok((out, record))
}
