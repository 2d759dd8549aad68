//! Runs of the workload as a plan, the way every probe runs: the configurations a
//! journal already has are skipped (their key is [`RunConfig::key`]), the road network
//! is generated once for the configurations that share it, and each run's
//! `workload.run` record is pushed to the [`Sink`] as soon as it finishes, so a killed
//! plan loses nothing already measured and a rerun continues. `numalab workload run` (one
//! configuration) and `numalab evaluate`'s reference-workload step ([`reference`]) both
//! run through [`run`].

use crate::graph::OwnedGraph;
use crate::placement::Mode;
use crate::run::{run_on, timed_generate, Outcome, Progress, RunConfig};
use crate::WorkloadError;
use numalab_schema::sink::Sink;
use numalab_schema::{interrupt, Machine};
use numalab_topo::bind::Placer;

/// What to do with a run that Ctrl-C cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Push its record, marked interrupted (`workload run`: the user asked for that run).
    Keep,
    /// Push nothing: a rerun measures it whole (`evaluate`, whose resumption must not
    /// take a partial run for a finished one).
    Drop,
}

/// The reference set `evaluate` runs on a machine of `pus` PUs: one client, then one
/// per PU (shared graph, first touch); the default (not quick) also runs the interleaved
/// and replicated graphs at full load. Quick runs measure 3 s after 0.5 s of warm-up.
pub fn reference(pus: usize, quick: bool) -> Vec<RunConfig> {
    let pus = pus.max(1);
    let mut configs = Vec::new();
    for threads in [1, pus] {
        let mut c = RunConfig::quick(threads);
        if quick {
            c.duration_s = 3.0;
            c.warmup_s = 0.5;
        }
        if !configs.contains(&c) {
            configs.push(c);
        }
    }
    if !quick {
        for mode in [Mode::SharedInterleaved, Mode::Replicated] {
            let mut c = RunConfig::quick(pus);
            c.mode = mode;
            configs.push(c);
        }
    }
    configs
}

/// What [`run`] did.
#[derive(Debug, Default)]
pub struct Ran {
    /// The runs measured now, in plan order (their records are in the sink).
    pub outcomes: Vec<Outcome>,
    /// Keys of the configurations the sink already had.
    pub already: Vec<String>,
    /// Stopped by Ctrl-C before the plan's end.
    pub interrupted: bool,
}

/// Runs every configuration of `configs` that `sink` does not have yet, in order.
/// `observer` hears each run's progress with its configuration. A run cut short by
/// Ctrl-C is pushed or not as `cut` says, and ends the plan.
pub fn run(
    configs: &[RunConfig],
    machine: &Machine,
    placer: &dyn Placer,
    cut: Cut,
    sink: &mut dyn Sink,
    observer: &mut dyn FnMut(&RunConfig, Progress),
) -> Result<Ran, WorkloadError> {
    let mut ran = Ran::default();
    // Every configuration is checked before the first is run.
    for c in configs {
        c.validate()?;
        c.slots(machine)?;
    }
    let mut graph: Option<(OwnedGraph, f64)> = None;
    for c in configs {
        let key = c.key();
        if sink.done(&key) {
            ran.already.push(key);
            continue;
        }
        if interrupt::requested() {
            ran.interrupted = true;
            break;
        }
        if graph.as_ref().is_none_or(|(g, _)| g.spec != c.graph) {
            // The old graph goes before the new one is made (two may not fit).
            drop(graph.take());
            observer(
                c,
                Progress::Generating {
                    nodes: c.graph.nodes,
                },
            );
            let generated = timed_generate(&c.graph)?;
            if interrupt::requested() {
                return Err(WorkloadError::Interrupted(
                    "stopped while generating the road network; nothing more was measured".into(),
                ));
            }
            graph = Some(generated);
        }
        let (g, generation_s) = graph.as_ref().expect("generated above");
        let outcome = run_on(g, *generation_s, c, machine, placer, &mut |p| {
            observer(c, p)
        })?;
        let cut_short = outcome.run.interrupted;
        if !cut_short || cut == Cut::Keep {
            sink.push(outcome.record())
                .map_err(|e| WorkloadError::Runtime(format!("cannot write results: {e}")))?;
            ran.outcomes.push(outcome);
        }
        if cut_short {
            ran.interrupted = true;
            break;
        }
    }
    Ok(ran)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_set_is_one_client_then_every_pu() {
        let quick = reference(8, true);
        assert_eq!(
            quick.iter().map(|c| c.threads).collect::<Vec<_>>(),
            vec![1, 8]
        );
        assert!(quick
            .iter()
            .all(|c| c.duration_s == 3.0 && c.warmup_s == 0.5));
        // One PU: one run, not the same run twice.
        assert_eq!(reference(1, true).len(), 1);
        let full = reference(8, false);
        assert_eq!(
            full.iter().map(|c| (c.threads, c.mode)).collect::<Vec<_>>(),
            vec![
                (1, Mode::SharedFirstTouch),
                (8, Mode::SharedFirstTouch),
                (8, Mode::SharedInterleaved),
                (8, Mode::Replicated)
            ]
        );
        let keys: std::collections::BTreeSet<String> = full.iter().map(RunConfig::key).collect();
        assert_eq!(keys.len(), full.len(), "every run has its own key");
    }
}
