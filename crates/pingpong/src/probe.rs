//! The core-to-core probe's rules, in one place: the options with their defaults, the
//! plan (which pairs, the sampling rule above [`SAMPLE_ABOVE_CPUS`], the warm-up, the
//! record keys) and the run into a [`Sink`] that ends with the `c2c.matrix` record.
//! `numalab c2c` and `numalab evaluate`'s core-to-core step both call [`plan`] and
//! [`run`] and pass options only, so one rule cannot drift between them.

use crate::plan::{run_plan, Estimate, PlanError};
use crate::{Config, Placer, Variant};
use numalab_c2c::matrix::Plan as PairPlan;
use numalab_c2c::record::{matrix_record, MatrixMeta};
use numalab_c2c::structure::Structure;
use numalab_records::c2c::{LatencyMatrix, MatrixRecord};
use numalab_schema::clock::ClockCheck;
use numalab_schema::sink::Sink;
use numalab_schema::{cpulist, ErrorClass, Machine, Origin, Record, Warning};
use serde::{Deserialize, Serialize};

/// Above this many CPUs, [`Pairs::Auto`] samples pairs instead of measuring all of them
/// (64 CPUs are 2,016 pairs, about 10 minutes at the default samples; 160 would be
/// 12,720).
pub const SAMPLE_ABOVE_CPUS: usize = 64;

/// Clock reads of the clock check before a run: enough to find the step of any clock
/// fine enough to time a sample (more only lengthened start-up: 2.4 ms for 121,000
/// reads on the development VM).
pub const CLOCK_READS: u64 = 20_000;

/// Which pairs to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pairs {
    /// Every pair up to [`SAMPLE_ABOVE_CPUS`] CPUs, sampled beyond.
    Auto,
    /// Every pair.
    All,
    /// Every pair inside each cache/cluster group plus a seeded sample across groups.
    Sampled,
}

/// How to measure: what a user may choose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Ping-pong variant.
    pub variant: Variant,
    /// Timed samples per pair (at least 1).
    pub samples: u32,
    /// Round trips per sample (at least 1).
    pub round_trips: u32,
    /// Which pairs.
    pub pairs: Pairs,
    /// Sampled plans: pairs measured between each two groups (at least 1).
    pub across: usize,
    /// NUMA node the line is bound to; `None`: the node of each pair's first CPU.
    pub home_node: Option<u32>,
}

/// The defaults: core-to-core-latency's (CAS, 300 samples of 1,000 round trips), every
/// pair up to 64 CPUs, 4 pairs between each two groups beyond, the line on the first
/// CPU's node. `numalab c2c`'s flags take their defaults from here.
pub const DEFAULTS: Options = Options {
    variant: Variant::Cas,
    samples: 300,
    round_trips: 1000,
    pairs: Pairs::Auto,
    across: 4,
    home_node: None,
};

impl Options {
    /// The defaults ([`DEFAULTS`]).
    pub fn defaults() -> Options {
        DEFAULTS
    }

    /// The quick variant (`evaluate --quick`): 100 samples, one pair between each two
    /// groups when sampled.
    pub fn quick() -> Options {
        Options {
            samples: 100,
            across: 1,
            ..Options::defaults()
        }
    }

    /// Warm-up samples run first and discarded: a thirtieth of the timed ones, 1 to 10
    /// (3 of the quick 100, 10 of the default 300).
    pub fn warmup_samples(&self) -> u32 {
        (self.samples / 30).clamp(1, 10)
    }

    /// The home policy's name in keys and records: `first-cpu-node` or `node:N`.
    pub fn home_policy(&self) -> String {
        match self.home_node {
            Some(n) => format!("node:{n}"),
            None => "first-cpu-node".into(),
        }
    }
}

/// Why a plan cannot be made: a usage error in words, naming what to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PlanUsage(pub String);

impl numalab_schema::Classify for PlanUsage {
    fn class(&self) -> ErrorClass {
        ErrorClass::Usage
    }
}

/// A planned matrix: the pairs, how each is measured, and the keys.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixPlan {
    /// The pairs in order.
    pub pairs: PairPlan,
    /// How each pair is measured.
    pub config: Config,
    /// The matrix record's key (`c2c/matrix/{variant}/{home policy}`); the pairs' keys
    /// are [`crate::pair_key`]'s.
    pub key: String,
    /// The home policy's name (see [`Options::home_policy`]).
    pub home_policy: String,
}

impl MatrixPlan {
    /// Pairs of a full matrix over the same CPUs.
    pub fn full_pairs(&self) -> usize {
        self.pairs.full_pairs()
    }

    /// The pilot's estimate of this plan in words ([`Estimate::describe`] with the
    /// plan's CPUs and full matrix), said before the long part starts.
    pub fn describe(&self, estimate: &Estimate) -> String {
        estimate.describe(self.pairs.cpus.len(), self.full_pairs())
    }

    /// The run's configuration as recorded in the journal's envelope.
    pub fn config_json(&self, clock: &ClockCheck) -> serde_json::Value {
        serde_json::json!({
            "cpus": cpulist::format(&self.pairs.cpus),
            "variant": self.config.variant.name(),
            "samples": self.config.samples,
            "round_trips": self.config.round_trips,
            "warmup_samples": self.config.warmup_samples,
            "home_node": self.config.home_node,
            "selection": self.pairs.selection,
            "clock": clock,
        })
    }
}

/// Plans the matrix of `cpus` on `machine`.
pub fn plan(machine: &Machine, cpus: &[u32], options: &Options) -> Result<MatrixPlan, PlanUsage> {
    let mut distinct = cpus.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 2 {
        return Err(PlanUsage(format!(
            "{} CPU selected: core-to-core latency needs at least 2",
            distinct.len()
        )));
    }
    if let Some(cpu) = distinct.iter().find(|&&c| machine.pu(c).is_none()) {
        return Err(PlanUsage(format!(
            "CPU {cpu} does not exist (CPUs: {}); see `numalab topo`",
            cpulist::format(&machine.pu_ids())
        )));
    }
    if let Some(node) = options.home_node {
        if machine.node(node).is_none() {
            return Err(PlanUsage(format!(
                "--home-node {node}: no such NUMA node here (nodes: {}); see `numalab topo`",
                machine
                    .numa_nodes
                    .iter()
                    .map(|n| n.os_index.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    if options.samples == 0 || options.round_trips == 0 || options.across == 0 {
        return Err(PlanUsage(
            "samples, round trips and pairs across groups must each be at least 1".into(),
        ));
    }
    let sampled = match options.pairs {
        Pairs::All => false,
        Pairs::Sampled => true,
        Pairs::Auto => distinct.len() > SAMPLE_ABOVE_CPUS,
    };
    let pairs = if sampled {
        let (groups, by) = numalab_c2c::matrix::sampling_groups(machine);
        PairPlan::sampled(
            &distinct,
            &groups,
            &by,
            options.across,
            numalab_stats::DEFAULT_SEED,
        )
    } else {
        PairPlan::full(&distinct)
    };
    let home_policy = options.home_policy();
    Ok(MatrixPlan {
        key: format!("c2c/matrix/{}/{home_policy}", options.variant.name()),
        pairs,
        config: Config {
            variant: options.variant,
            round_trips: options.round_trips,
            samples: options.samples,
            warmup_samples: options.warmup_samples(),
            home_node: options.home_node,
        },
        home_policy,
    })
}

/// What [`run`] produced.
#[derive(Debug)]
pub struct Outcome {
    /// The matrix, with the pairs of earlier runs into the same journal.
    pub matrix: LatencyMatrix,
    /// Pairs that failed, in words.
    pub failures: Vec<String>,
    /// Warnings about the whole run (clock, short samples).
    pub run_warnings: Vec<Warning>,
    /// Stopped by Ctrl-C: no matrix record was made (a rerun continues pair by pair).
    pub interrupted: bool,
    /// The matrix record pushed to the sink (`None` when interrupted).
    pub record: Option<MatrixRecord>,
    /// The structure inferred for the record (`None` when interrupted).
    pub structure: Option<Structure>,
}

impl Outcome {
    /// For a run stopped by Ctrl-C: what it measured and, when its journal is kept
    /// (`resumable`), how to continue; `None` for a finished run.
    pub fn interruption(&self, resumable: bool) -> Option<String> {
        self.interrupted.then(|| {
            format!(
                "interrupted: {} pairs measured{}",
                self.matrix.measured_pairs(),
                if resumable {
                    "; rerun with the same --out to continue"
                } else {
                    ""
                }
            )
        })
    }

    /// For a run some of whose pairs failed: how many and why (the others were
    /// measured); `None` when every pair was.
    pub fn failed_pairs(&self) -> Option<String> {
        (!self.failures.is_empty()).then(|| {
            format!(
                "{} pair(s) failed, the others were measured: {}",
                self.failures.len(),
                self.failures.join("; ")
            )
        })
    }

    /// The structure of a finished run's matrix ([`PlanError::NoStructure`] where a
    /// finished run has none, which is a bug); call it after [`Outcome::interruption`].
    pub fn structure(&self) -> Result<&Structure, PlanError> {
        self.structure.as_ref().ok_or(PlanError::NoStructure)
    }
}

/// Measures the plan's pairs the sink does not have yet (each `c2c.pair` pushed as it
/// is measured), then, unless interrupted, pushes the `c2c.matrix` record under the
/// plan's key with its structure and the comparison with `machine`'s hwloc levels.
pub fn run(
    placer: &dyn Placer,
    plan: &MatrixPlan,
    machine: &Machine,
    clock: &ClockCheck,
    sink: &mut dyn Sink,
    on_estimate: &mut dyn FnMut(&Estimate),
) -> Result<Outcome, PlanError> {
    let measured = run_plan(placer, &plan.pairs, &plan.config, clock, sink, on_estimate)?;
    let mut outcome = Outcome {
        matrix: measured.matrix,
        failures: measured.failures,
        run_warnings: measured.run_warnings,
        interrupted: measured.interrupted,
        record: None,
        structure: None,
    };
    if outcome.interrupted {
        return Ok(outcome);
    }
    let mut notes: Vec<String> = outcome
        .failures
        .iter()
        .map(|f| format!("pair {f}"))
        .collect();
    notes.extend(outcome.run_warnings.iter().map(|w| w.message.clone()));
    let meta = MatrixMeta {
        variant: plan.config.variant.name().into(),
        statistic: "median".into(),
        home_node_policy: Some(plan.home_policy.clone()),
        selection: Some(plan.pairs.selection.clone()),
        origin: Origin::Measured,
        key: plan.key.clone(),
        extra_notes: notes,
    };
    // Ctrl-C or SIGTERM during the inference: the pairs are in the journal, the matrix
    // record is not (a rerun with the same --out infers it again).
    let Ok((record, structure, _)) = matrix_record(&outcome.matrix, Some(machine), &meta) else {
        outcome.interrupted = true;
        return Ok(outcome);
    };
    // The run's warnings (clock, short samples, noisy pairs) ride on the matrix record
    // too, so they are said once on the terminal and listed once in the report.
    sink.push(
        Record::new(plan.key.clone(), Origin::Measured, &record)
            .with_warnings(outcome.run_warnings.clone()),
    )?;
    outcome.record = Some(record);
    outcome.structure = Some(structure);
    Ok(outcome)
}

#[cfg(test)]
mod outcome_tests {
    use super::*;

    #[test]
    fn an_outcome_says_how_it_ended() {
        let mut o = Outcome {
            matrix: LatencyMatrix::new(vec![0, 1, 2]),
            failures: Vec::new(),
            run_warnings: Vec::new(),
            interrupted: false,
            record: None,
            structure: None,
        };
        assert_eq!(o.interruption(true), None);
        assert_eq!(o.failed_pairs(), None);
        o.matrix.set(1, 0, 40.0);
        o.interrupted = true;
        assert_eq!(
            o.interruption(true).unwrap(),
            "interrupted: 1 pairs measured; rerun with the same --out to continue"
        );
        assert_eq!(
            o.interruption(false).unwrap(),
            "interrupted: 1 pairs measured"
        );
        let e = o.structure().unwrap_err();
        assert_eq!(
            numalab_schema::Classify::class(&e),
            numalab_schema::ErrorClass::Runtime
        );
        assert_eq!(
            e.to_string(),
            "the matrix was measured but has no structure; report this as a bug"
        );
        o.failures = vec!["0-2: no answer".into(), "1-2: no answer".into()];
        assert_eq!(
            o.failed_pairs().unwrap(),
            "2 pair(s) failed, the others were measured: 0-2: no answer; 1-2: no answer"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Machine {
        let path = numalab_testkit::fixture(&format!("topology/{name}"));
        numalab_topo::machine(&numalab_topo::Input::detect(&path).unwrap()).unwrap()
    }

    #[test]
    fn above_64_cpus_the_default_plan_samples_and_below_it_measures_every_pair() {
        let big = fixture("128arm-2pa2n8cluster4co.tar.bz2");
        let cpus = big.pu_ids();
        let p = plan(&big, &cpus, &Options::defaults()).unwrap();
        assert!(
            p.pairs.pairs.len() < p.full_pairs(),
            "{}",
            p.pairs.pairs.len()
        );
        assert_eq!(p.key, "c2c/matrix/cas/first-cpu-node");
        assert_eq!(p.config.warmup_samples, 10);
        let quick = plan(&big, &cpus, &Options::quick()).unwrap();
        assert!(quick.pairs.pairs.len() < p.pairs.pairs.len());
        assert_eq!(quick.config.samples, 100);
        assert_eq!(quick.config.warmup_samples, 3);
        let small = plan(&big, &cpus[..64], &Options::defaults()).unwrap();
        assert_eq!(small.pairs.pairs.len(), 64 * 63 / 2);
        let all = Options {
            pairs: Pairs::All,
            ..Options::defaults()
        };
        assert_eq!(
            plan(&big, &cpus, &all).unwrap().pairs.pairs.len(),
            128 * 127 / 2
        );
    }

    #[test]
    fn the_plan_describes_an_estimate_with_its_cpus_and_full_matrix() {
        let big = fixture("128arm-2pa2n8cluster4co.tar.bz2");
        let p = plan(&big, &big.pu_ids(), &Options::defaults()).unwrap();
        let e = Estimate {
            todo: 5,
            already: 0,
            per_pair_ns: None,
            total_s: None,
            warnings: Vec::new(),
        };
        let said = p.describe(&e);
        assert!(said.starts_with("5 pairs to measure"), "{said}");
        assert!(
            said.contains("(128 CPUs, 8128 pairs in a full matrix)"),
            "{said}"
        );
    }

    #[test]
    fn the_key_names_the_variant_and_the_home_policy() {
        let big = fixture("128arm-2pa2n8cluster4co.tar.bz2");
        let o = Options {
            variant: Variant::Flag,
            home_node: Some(3),
            ..Options::defaults()
        };
        let p = plan(&big, &[0, 100], &o).unwrap();
        assert_eq!(p.key, "c2c/matrix/flag/node:3");
        assert_eq!(p.config.home_node, Some(3));
        assert_eq!(p.pairs.pairs.len(), 1);
    }

    #[test]
    fn bad_plans_are_refused_in_words() {
        let big = fixture("128arm-2pa2n8cluster4co.tar.bz2");
        let d = Options::defaults();
        assert!(plan(&big, &[5, 5], &d)
            .unwrap_err()
            .0
            .contains("needs at least 2"));
        assert!(plan(&big, &[0, 999], &d)
            .unwrap_err()
            .0
            .contains("CPU 999 does not exist"));
        let o = Options {
            home_node: Some(9),
            ..d.clone()
        };
        assert!(plan(&big, &[0, 1], &o)
            .unwrap_err()
            .0
            .contains("no such NUMA node"));
        let o = Options { across: 0, ..d };
        assert!(plan(&big, &[0, 1], &o).is_err());
    }
}
