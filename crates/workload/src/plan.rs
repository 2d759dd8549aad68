//! Runs of the workload as a plan, the way every probe runs: the configurations a
//! journal already has are skipped (their key is [`RunConfig::key`]), the road network
//! is generated once for the configurations that share it, and each run's
//! `workload.run` record is pushed to the [`Sink`] as soon as it finishes, so a killed
//! plan loses nothing already measured and a rerun continues. `numalab workload run` (one
//! configuration) and `numalab evaluate`'s reference-workload step ([`reference`]) both
//! run through [`run`].

use crate::graph::OwnedGraph;
use crate::placement;
use crate::placement::Mode;
use crate::run::{run_on, state_bytes_estimate, timed_generate, Outcome, Progress, RunConfig};
use crate::WorkloadError;
use numalab_schema::sink::Sink;
use numalab_schema::{interrupt, Machine};
use numalab_topo::bind::Placer;
use numalab_topo::system::SysRoot;

/// What to do with a run that Ctrl-C cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Push its record, marked interrupted (`workload run`: the user asked for that run).
    Keep,
    /// Push nothing: a rerun measures it whole (`evaluate`, whose resumption must not
    /// take a partial run for a finished one).
    Drop,
}

/// What to do when a run's clients and graph copies do not fit in the memory there is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Refuse the run with the memory it needs and what is available (`workload run`:
    /// the user named the thread count).
    Refuse,
    /// Run the most clients that fit, with a note and a warning on the record
    /// (`evaluate`: one client per PU is the aim, not a requirement, and the main job
    /// must not fail for memory that fewer clients would not need).
    Shrink,
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
    /// For people: runs shrunk to fit the memory ([`Fit::Shrink`]).
    pub notes: Vec<String>,
}

/// The most clients of `c` (taken in its placement order) whose graph copies and
/// search state pass the run's own memory check ([`placement::check_memory`]) for a
/// graph of `graph_bytes`: `None` when all of them do, or when not even one does (the
/// run then refuses with the reason).
pub fn fitted(
    c: &RunConfig,
    graph_bytes: u64,
    machine: &Machine,
) -> Result<Option<(RunConfig, String)>, WorkloadError> {
    let slots = c.slots(machine)?;
    let sys = SysRoot::at(&c.sys_root);
    let state = state_bytes_estimate(c.graph.nodes);
    let check = |k: usize| placement::check_memory(c.mode, graph_bytes, state, &slots[..k], &sys);
    let why = match check(slots.len()) {
        Ok(_) => return Ok(None),
        Err(e) => e.to_string(),
    };
    if slots.len() < 2 || check(1).is_err() {
        return Ok(None);
    }
    // More clients need more memory (more state, and in replicated mode more copies):
    // the largest count that fits, by bisection; check(lo) holds, check(hi) fails.
    let (mut lo, mut hi) = (1, slots.len());
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if check(mid).is_ok() {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let mut fit = c.clone();
    fit.threads = lo;
    let note = format!(
        "reference workload ({}): {lo} clients instead of {}, the most whose state fits in memory ({why})",
        c.mode,
        c.threads
    );
    Ok(Some((fit, note)))
}

/// Runs every configuration of `configs` that `sink` does not have yet, in order.
/// `observer` hears each run's progress with its configuration. A run cut short by
/// Ctrl-C is pushed or not as `cut` says, and ends the plan; a run that does not fit in
/// memory is refused or shrunk as `fit` says.
pub fn run(
    configs: &[RunConfig],
    machine: &Machine,
    placer: &dyn Placer,
    cut: Cut,
    fit: Fit,
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
        let shrunk = match fit {
            Fit::Shrink => fitted(c, g.bytes(), machine)?,
            Fit::Refuse => None,
        };
        let (c, note) = match &shrunk {
            Some((s, note)) => (s, Some(note.clone())),
            None => (c, None),
        };
        if note.is_some() && sink.done(&c.key()) {
            // An earlier run measured the shrunk run already.
            ran.already.push(c.key());
            continue;
        }
        let mut outcome = run_on(g, *generation_s, c, machine, placer, &mut |p| {
            observer(c, p)
        })?;
        if let Some(note) = note {
            outcome
                .warnings
                .push(numalab_schema::Warning::new("memory_fit", note.clone()));
            ran.notes.push(note);
        }
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

/// One configuration run as `numalab workload run` runs it: a run cut short by Ctrl-C is
/// kept (marked interrupted, see [`Outcome::cut_short`]) and one that does not fit in
/// memory is refused. An interrupted error when Ctrl-C came before the run started, or
/// the sink already had it (callers check [`Sink::done`] first).
pub fn single(
    config: &RunConfig,
    machine: &Machine,
    placer: &dyn Placer,
    sink: &mut dyn Sink,
    observer: &mut dyn FnMut(Progress),
) -> Result<Outcome, WorkloadError> {
    let configs = std::slice::from_ref(config);
    let mut ran = run(
        configs,
        machine,
        placer,
        Cut::Keep,
        Fit::Refuse,
        sink,
        &mut |_, p| observer(p),
    )?;
    ran.outcomes.pop().ok_or_else(|| {
        WorkloadError::Interrupted(
            "interrupted before the run started; nothing was measured".into(),
        )
    })
}

/// Why a run whose `key` is already in the journal of `dir` (`--out`) is not measured
/// again, and how to measure it again.
pub fn already_measured(key: &str, dir: Option<&std::path::Path>) -> String {
    format!(
        "{key} is already in {}; nothing to do (use another --out folder to measure again)",
        dir.map(|p| p.display().to_string()).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_run_is_not_measured_again() {
        let dir = std::path::Path::new("res");
        assert_eq!(
            already_measured("workload/run/x", Some(dir)),
            "workload/run/x is already in res; nothing to do (use another --out folder to measure again)"
        );
    }

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

    /// `numalab workload run`'s single run: measured and pushed once; its record read
    /// back is the same run; a second call finds it in the sink and measures nothing.
    #[test]
    fn a_single_run_is_pushed_read_back_and_not_run_twice() {
        use numalab_schema::Classify;
        let machine = numalab_topo::live().unwrap();
        let placer = numalab_topo::bind::HwlocPlacer::new().unwrap();
        let config = RunConfig {
            threads: 1,
            duration_s: 0.3,
            warmup_s: 0.1,
            graph: crate::graph::GraphSpec {
                seed: 5,
                nodes: 20_000,
            },
            ..Default::default()
        };
        let mut sink: Vec<numalab_schema::Record> = Vec::new();
        let out = single(&config, &machine, &placer, &mut sink, &mut |_| {}).unwrap();
        assert_eq!(sink.len(), 1);
        assert_eq!(out.key, config.key());
        assert!(out.cut_short().is_none());
        let back = Outcome::previous(&sink, &config.key()).expect("in the sink");
        assert_eq!(back.run, out.run);
        assert!(Outcome::previous(&sink, "workload/other").is_none());
        let again = single(&config, &machine, &placer, &mut sink, &mut |_| {}).unwrap_err();
        assert_eq!(again.class(), numalab_schema::ErrorClass::Interrupted);
        assert_eq!(sink.len(), 1);
        let mut cut = back;
        cut.run.interrupted = true;
        cut.run.measured_s = 0.25;
        let e = cut.cut_short().expect("cut short");
        assert_eq!(e.class(), numalab_schema::ErrorClass::Interrupted);
        assert!(
            e.to_string().starts_with("stopped after 0.2 s of 0.3 s;"),
            "{e}"
        );
    }

    /// A 128-PU machine with 2 GiB available (the emulated 160-CPU server's failure:
    /// one client per PU needed 6.1 GiB): the most clients whose state fits, not a
    /// failed step; all of them when memory allows; none shrunk when not even one fits.
    #[test]
    fn a_run_too_big_for_memory_gets_the_most_clients_that_fit() {
        let machine = numalab_topo::machine(
            &numalab_topo::Input::detect(&numalab_testkit::fixture(
                "topology/128arm-2pa2n8cluster4co.tar.bz2",
            ))
            .unwrap(),
        )
        .unwrap();
        let sys = tempfile::tempdir().unwrap();
        let meminfo = |gib: u64| {
            numalab_testkit::write(
                sys.path(),
                "proc/meminfo",
                &format!(
                    "MemTotal: {} kB\nMemAvailable: {} kB\n",
                    64 << 20,
                    gib << 20
                ),
            )
        };
        let mut c = RunConfig::quick(128);
        c.sys_root = sys.path().to_path_buf();
        let graph_bytes = 100 << 20;
        let state = state_bytes_estimate(c.graph.nodes);
        meminfo(2);
        let (fit, note) = fitted(&c, graph_bytes, &machine).unwrap().expect("shrunk");
        let avail = 2u64 << 30;
        let need = |k: u64| 2 * graph_bytes + k * state;
        let k = fit.threads as u64;
        assert!(need(k) <= avail && need(k + 1) > avail, "{k} clients");
        assert!((1..128).contains(&fit.threads));
        assert!(
            note.contains(&format!("{k} clients instead of 128")),
            "{note}"
        );
        assert_ne!(fit.key(), c.key(), "the shrunk run has its own key");
        meminfo(64);
        assert!(fitted(&c, graph_bytes, &machine).unwrap().is_none());
        // Not even one client fits: the run's own check says why, nothing is shrunk.
        numalab_testkit::write(sys.path(), "proc/meminfo", "MemAvailable: 1000 kB\n");
        assert!(fitted(&c, graph_bytes, &machine).unwrap().is_none());
    }
}
