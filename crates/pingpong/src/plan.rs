//! A whole plan of pairs, measured the way every probe runs: the pairs an earlier run
//! delivered (same journal) are skipped and put back into the matrix, a short pilot on
//! the first pair left estimates the run (when more than one is left), then each pair
//! is measured and its
//! `c2c.pair` record pushed to the [`Sink`] at once, so a killed run loses nothing and
//! a rerun continues.

use crate::{measure_pair, Config, PingPongError, Placer, Variant};
use numalab_c2c::matrix::Plan;
use numalab_records::c2c::{LatencyMatrix, PairRecord};
use numalab_schema::clock::ClockCheck;
use numalab_schema::sink::Sink;
use numalab_schema::{units, Origin, Record, Warning};

/// The record key of a pair.
pub fn pair_key(variant: Variant, home: Option<u32>, first: u32, second: u32) -> String {
    match home {
        Some(n) => format!("c2c/{}/node{n}/{first}-{second}", variant.name()),
        None => format!("c2c/{}/{first}-{second}", variant.name()),
    }
}

/// What the pilot says about the run, before the pairs are measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Pairs to measure in this run.
    pub todo: usize,
    /// Pairs of the plan an earlier run already measured.
    pub already: usize,
    /// Estimated time per pair, ns (setup, warm-up and samples), from a pilot on the
    /// first pair; `None` with a single pair to measure (no pilot runs).
    pub per_pair_ns: Option<f64>,
    /// Estimated time of the run, s (`None` as `per_pair_ns`).
    pub total_s: Option<f64>,
    /// Warnings about the whole run (clock, samples too short for it).
    pub warnings: Vec<Warning>,
}

impl Estimate {
    /// The run's announcement for people: pairs to measure, those an earlier run
    /// measured, the size of the selection (`cpus` CPUs, `full` pairs in a full matrix)
    /// and, when a pilot ran, the estimated time in total and per pair.
    pub fn describe(&self, cpus: usize, full: usize) -> String {
        let estimate = match (self.total_s, self.per_pair_ns) {
            (Some(t), Some(p)) => format!(
                ", about {} ({} per pair)",
                human_seconds(t),
                units::nanos(p)
            ),
            _ => String::new(),
        };
        format!(
            "{} pair{} to measure{} ({cpus} CPUs, {full} pairs in a full matrix){estimate}",
            self.todo,
            if self.todo == 1 { "" } else { "s" },
            if self.already > 0 {
                format!(", {} already in the journal", self.already)
            } else {
                String::new()
            },
        )
    }
}

/// A duration for people: seconds below 90 s, minutes below 90 min, else hours.
fn human_seconds(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// What [`run_plan`] produced.
#[derive(Debug)]
pub struct Measured {
    /// The matrix, with pairs from the earlier run and from this one.
    pub matrix: LatencyMatrix,
    /// Pairs that failed, in words ("3-7: CPU 7 did not answer ...").
    pub failures: Vec<String>,
    /// Warnings about the whole run (clock, short samples).
    pub run_warnings: Vec<Warning>,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
}

/// Why a plan could not run: the pilot failed, or the sink refused a record.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The pilot pair could not be measured.
    #[error(transparent)]
    Pilot(#[from] PingPongError),
    /// The sink could not take a record.
    #[error("cannot write results: {0}")]
    Sink(#[from] numalab_schema::sink::SinkError),
    /// A finished matrix came without its structure: a bug of this crate.
    #[error("the matrix was measured but has no structure; report this as a bug")]
    NoStructure,
}

impl numalab_schema::Classify for PlanError {
    fn class(&self) -> numalab_schema::ErrorClass {
        match self {
            PlanError::Pilot(e) => e.class(),
            PlanError::Sink(_) | PlanError::NoStructure => numalab_schema::ErrorClass::Runtime,
        }
    }
}

/// Measures the pairs of `plan` the sink does not have yet. `on_estimate` hears the
/// pilot's estimate before the long part starts (without figures when a single pair is
/// left: no pilot runs then); progress goes to the sink.
pub fn run_plan(
    placer: &dyn Placer,
    plan: &Plan,
    cfg: &Config,
    clock: &ClockCheck,
    sink: &mut dyn Sink,
    on_estimate: &mut dyn FnMut(&Estimate),
) -> Result<Measured, PlanError> {
    let variant = cfg.variant;
    let key = |first: u32, second: u32| pair_key(variant, cfg.home_node, first, second);
    let mut run_warnings: Vec<Warning> = clock
        .problems()
        .into_iter()
        .map(|p| Warning::new("clock", p))
        .collect();
    // Pairs done by an earlier run into the same journal.
    let mut matrix = LatencyMatrix::new(plan.cpus.clone());
    let mut noisy = Noisy::default();
    let mut todo = Vec::new();
    for p in &plan.pairs {
        let k = key(p.first, p.second);
        if !sink.done(&k) {
            todo.push(*p);
            continue;
        }
        let earlier = sink
            .previous(&k)
            .and_then(|r| r.decode::<PairRecord>())
            .and_then(Result::ok);
        if let Some(pr) = earlier {
            if let (Some(i), Some(j)) = (matrix.index_of(pr.first), matrix.index_of(pr.second)) {
                matrix.set(i, j, pr.latency_ns);
            }
            noisy.note(&pr);
        }
    }
    // Estimate from a short pilot on the first pair to do. With one pair to do, the
    // pilot would cost more than the estimate is worth (two more threads, a page, and
    // a few hundred round trips before a run that may last 80 ms): the pair itself
    // tells whether its samples were long enough.
    let stop = || numalab_schema::interrupt::requested();
    let mut check_samples = false;
    if todo.len() == 1 {
        check_samples = true;
        on_estimate(&Estimate {
            todo: 1,
            already: plan.pairs.len() - 1,
            per_pair_ns: None,
            total_s: None,
            warnings: run_warnings.clone(),
        });
    } else if let Some(p) = todo.first() {
        let pilot_cfg = Config {
            round_trips: cfg.round_trips.min(200),
            samples: 5,
            warmup_samples: 1,
            ..cfg.clone()
        };
        let pilot = measure_pair(placer, p.first, p.second, &pilot_cfg, &stop)?;
        let per_rt = pilot.summary().map(|s| s.median * 2.0).unwrap_or(200.0);
        let per_pair =
            per_rt * f64::from(cfg.round_trips) * f64::from(cfg.samples + cfg.warmup_samples) + 2e5;
        run_warnings.extend(short_samples(per_rt, cfg, clock));
        on_estimate(&Estimate {
            todo: todo.len(),
            already: plan.pairs.len() - todo.len(),
            per_pair_ns: Some(per_pair),
            total_s: Some(per_pair * todo.len() as f64 / 1e9),
            warnings: run_warnings.clone(),
        });
    }
    let mut interrupted = false;
    let mut failures = Vec::new();
    let total = todo.len() as u64;
    for (n, p) in todo.iter().enumerate() {
        if stop() {
            interrupted = true;
            break;
        }
        sink.progress(&format!("pair {}-{}", p.first, p.second), n as u64, total);
        match measure_pair(placer, p.first, p.second, cfg, &stop) {
            Ok(m) => {
                let Some(summary) = m.summary() else { continue };
                if check_samples {
                    run_warnings.extend(short_samples(summary.median * 2.0, cfg, clock));
                }
                let mut warnings = Vec::new();
                if let (Some(want), Some(got)) = (m.home_node_requested, m.home_node) {
                    if want != got {
                        warnings.push(
                            Warning::new(
                                "placement_mismatch",
                                format!(
                                    "the line was bound to node {want} but the kernel put it on node {got}"
                                ),
                            )
                            .with_remedy("check free memory on that node (`numalab doctor`)"),
                        );
                    }
                }
                let pr = PairRecord {
                    first: m.first,
                    second: m.second,
                    variant: variant.name().into(),
                    home_node_requested: m.home_node_requested,
                    home_node: m.home_node,
                    round_trips: m.round_trips,
                    latency_ns: summary.median,
                    summary,
                    samples_ns: m.samples_ns,
                    wall_ns: m.wall_ns,
                };
                if let (Some(i), Some(j)) = (matrix.index_of(pr.first), matrix.index_of(pr.second))
                {
                    matrix.set(i, j, pr.latency_ns);
                }
                noisy.note(&pr);
                sink.push(
                    Record::new(key(pr.first, pr.second), Origin::Measured, &pr)
                        .with_warnings(warnings),
                )?;
            }
            Err(PingPongError::Interrupted) => {
                interrupted = true;
                break;
            }
            Err(e) => failures.push(format!("{}-{}: {e}", p.first, p.second)),
        }
    }
    sink.progress("pairs", total, total);
    run_warnings.extend(noisy.warning(plan.pairs.len()));
    Ok(Measured {
        matrix,
        failures,
        run_warnings,
        interrupted,
    })
}

/// Pairs whose samples were disturbed (p90 over twice the median: the threads were
/// interrupted), said once for the whole run with the worst three, not once per pair
/// (a noisy 160-CPU machine would print hundreds of lines). Each pair's record keeps its
/// p90 and median, so the evidence stays per pair.
#[derive(Debug, Default)]
struct Noisy {
    /// (p90 / median, first, second, p90 ns, median ns).
    pairs: Vec<(f64, u32, u32, f64, f64)>,
}

impl Noisy {
    fn note(&mut self, pr: &PairRecord) {
        let s = &pr.summary;
        if s.median > 0.0 && s.p90 > 2.0 * s.median {
            self.pairs
                .push((s.p90 / s.median, pr.first, pr.second, s.p90, s.median));
        }
    }

    fn warning(mut self, planned: usize) -> Option<Warning> {
        if self.pairs.is_empty() {
            return None;
        }
        self.pairs.sort_by(|a, b| b.0.total_cmp(&a.0));
        let worst: Vec<String> = self
            .pairs
            .iter()
            .take(3)
            .map(|&(_, a, b, p90, med)| {
                format!(
                    "CPU {a}-{b} (p90 {}, median {})",
                    units::nanos(p90),
                    units::nanos(med)
                )
            })
            .collect();
        let n = self.pairs.len();
        Some(
            Warning::new(
                "noisy",
                format!(
                    "{n} of {planned} pair{} had a p90 over twice the median (the threads were interrupted); the worst: {}",
                    if planned == 1 { "" } else { "s" },
                    worst.join(", ")
                ),
            )
            .with_remedy("run on an idle machine; isolate the CPUs"),
        )
    }
}

/// A warning when a sample of `cfg.round_trips` round trips of `per_rt` ns each is too
/// short for the clock to time it to 1%.
fn short_samples(per_rt: f64, cfg: &Config, clock: &ClockCheck) -> Option<Warning> {
    (per_rt * 0.5 * f64::from(cfg.round_trips) < clock.min_interval_ns()).then(|| {
        Warning::new(
            "short_samples",
            format!(
                "one sample lasts about {}, shorter than the {} this clock needs for 1% precision",
                units::nanos(per_rt * f64::from(cfg.round_trips)),
                units::nanos(clock.min_interval_ns())
            ),
        )
        .with_remedy("raise --round-trips")
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use numalab_schema::sink::MemorySink;
    use numalab_topo::bind::FakePlacer;

    #[test]
    fn an_estimate_is_announced_with_its_counts_and_times() {
        let mut e = Estimate {
            todo: 1,
            already: 0,
            per_pair_ns: None,
            total_s: None,
            warnings: Vec::new(),
        };
        assert_eq!(
            e.describe(2, 1),
            "1 pair to measure (2 CPUs, 1 pairs in a full matrix)"
        );
        e.todo = 40;
        e.already = 5;
        e.total_s = Some(600.0);
        e.per_pair_ns = Some(15e9);
        let d = e.describe(10, 45);
        assert!(
            d.starts_with("40 pairs to measure, 5 already in the journal (10 CPUs, 45 pairs in a full matrix), about 10 min ("),
            "{d}"
        );
        assert_eq!(human_seconds(30.0), "30 s");
        assert_eq!(human_seconds(7200.0), "2.0 h");
    }

    fn pair(first: u32, second: u32, median: f64, p90: f64) -> PairRecord {
        let samples = [median; 3];
        let mut summary = numalab_stats::Summary::of(&samples).unwrap();
        summary.median = median;
        summary.p90 = p90;
        PairRecord {
            first,
            second,
            variant: "cas".into(),
            home_node_requested: None,
            home_node: None,
            round_trips: 1000,
            latency_ns: median,
            summary,
            samples_ns: samples.to_vec(),
            wall_ns: 1,
        }
    }

    /// Noisy pairs are one warning for the run, with the count and the worst three by
    /// p90/median, not a line per pair.
    #[test]
    fn noisy_pairs_are_one_warning_with_the_worst_three() {
        let mut n = Noisy::default();
        n.note(&pair(1, 0, 30.0, 45.0)); // not noisy
        n.note(&pair(2, 0, 30.0, 90.0)); // 3x
        n.note(&pair(3, 0, 30.0, 300.0)); // 10x, the worst
        n.note(&pair(4, 0, 30.0, 65.0)); // 2.2x, the fourth: not named
        n.note(&pair(5, 0, 20.0, 100.0)); // 5x
        let w = n.warning(2016).expect("a warning");
        assert_eq!(w.code, "noisy");
        assert!(
            w.message
                .starts_with("4 of 2016 pairs had a p90 over twice"),
            "{}",
            w.message
        );
        let (a, b, c) = (
            w.message.find("CPU 3-0").unwrap(),
            w.message.find("CPU 5-0").unwrap(),
            w.message.find("CPU 2-0").unwrap(),
        );
        assert!(a < b && b < c, "{}", w.message);
        assert!(!w.message.contains("CPU 4-0") && !w.message.contains("CPU 1-0"));
        assert!(Noisy::default().warning(10).is_none());
    }

    fn cfg() -> Config {
        Config {
            variant: Variant::Flag,
            round_trips: 50,
            samples: 3,
            warmup_samples: 1,
            home_node: None,
        }
    }

    /// A two-node, 32-PU machine from its hwloc XML.
    pub(crate) fn two_nodes() -> numalab_schema::Machine {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/topology/32em64t-2n8c+dax+nvme+mic+dimms.xml");
        numalab_topo::machine(&numalab_topo::Input::detect(&path).expect("fixture"))
            .expect("fixture")
    }

    /// Three of its CPUs (the fake placer pins nothing: the threads still ping-pong
    /// for real, wherever the kernel runs them).
    fn plan3() -> Plan {
        Plan::full(&[0, 1, 2])
    }

    #[test]
    fn an_earlier_runs_pairs_are_skipped_and_kept_in_the_matrix() {
        let placer = FakePlacer::for_machine(&two_nodes());
        let clock = numalab_clock::check(10_000);
        let plan = plan3();
        // First run: every pair is measured and pushed.
        let mut first = MemorySink::default();
        let mut estimates = Vec::new();
        let m = run_plan(&placer, &plan, &cfg(), &clock, &mut first, &mut |e| {
            estimates.push(e.clone())
        })
        .unwrap();
        assert!(!m.interrupted);
        assert!(m.failures.is_empty(), "{:?}", m.failures);
        assert_eq!(first.records.len(), 3);
        assert_eq!(m.matrix.measured_pairs(), 3);
        assert_eq!(estimates.len(), 1);
        assert_eq!((estimates[0].todo, estimates[0].already), (3, 0));
        // Three pairs: a pilot ran and the estimate has figures.
        assert!(estimates[0].per_pair_ns.is_some_and(|p| p > 0.0));
        assert!(estimates[0].total_s.is_some());
        let keys: Vec<&str> = first.records.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["c2c/flag/1-0", "c2c/flag/2-0", "c2c/flag/2-1"]);
        // A resumed run that has two of them measures only the third, and its matrix
        // holds all three (the earlier values exactly).
        let mut second = MemorySink {
            previous: first.records[..2].to_vec(),
            ..Default::default()
        };
        let mut estimates = Vec::new();
        let m2 = run_plan(&placer, &plan, &cfg(), &clock, &mut second, &mut |e| {
            estimates.push(e.clone())
        })
        .unwrap();
        assert_eq!(second.records.len(), 1);
        assert_eq!(second.records[0].key, "c2c/flag/2-1");
        assert_eq!((estimates[0].todo, estimates[0].already), (1, 2));
        // One pair left: no pilot, so no figures.
        assert_eq!(
            (estimates[0].per_pair_ns, estimates[0].total_s),
            (None, None)
        );
        assert_eq!(m2.matrix.measured_pairs(), 3);
        assert_eq!(m2.matrix.get(0, 1), m.matrix.get(0, 1));
        assert_eq!(m2.matrix.get(0, 2), m.matrix.get(0, 2));
        // Everything done: no pilot, no estimate, nothing pushed.
        let mut third = MemorySink {
            previous: first.records.clone(),
            ..Default::default()
        };
        let mut estimates = 0;
        let m3 = run_plan(&placer, &plan, &cfg(), &clock, &mut third, &mut |_| {
            estimates += 1
        })
        .unwrap();
        assert_eq!((third.records.len(), estimates), (0, 0));
        assert_eq!(m3.matrix, m.matrix);
    }

    #[test]
    fn a_single_pair_without_pilot_still_says_when_its_samples_are_too_short() {
        let placer = FakePlacer::for_machine(&two_nodes());
        // Clocks chosen so that the verdict does not hang on how fast two busy test
        // threads ping-pong: a clock that steps once a second needs 100 s samples, one
        // that steps every nanosecond needs 100 ns.
        let clock_of = |step: f64| numalab_schema::clock::ClockCheck {
            clock: "CLOCK_MONOTONIC".into(),
            reported_resolution_ns: step,
            observed_step_ns: step,
            read_overhead_ns: 1.0,
            backwards: 0,
            reads: 1000,
        };
        let clock = clock_of(1e9);
        let short = Config {
            round_trips: 1,
            ..cfg()
        };
        let mut sink = MemorySink::default();
        let m = run_plan(
            &placer,
            &Plan::full(&[0, 1]),
            &short,
            &clock,
            &mut sink,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(sink.records.len(), 1);
        assert!(
            m.run_warnings.iter().any(|w| w.code == "short_samples"),
            "{:?}",
            m.run_warnings
        );
        // Long enough samples: no such warning.
        let clock = clock_of(1.0);
        let long = Config {
            round_trips: 1_000,
            ..cfg()
        };
        let mut sink = MemorySink::default();
        let m = run_plan(
            &placer,
            &Plan::full(&[0, 1]),
            &long,
            &clock,
            &mut sink,
            &mut |_| {},
        )
        .unwrap();
        assert!(
            !m.run_warnings.iter().any(|w| w.code == "short_samples"),
            "{:?}",
            m.run_warnings
        );
    }
}
