//! The bandwidth executor: each group's workers pinned and their memory placed, the
//! kernels timed round by round (and the uncore counted beside them where it can be),
//! each result verified, summarised and pushed to the sink as its cell completes.

use super::*;

/// What one worker measured.
struct WorkerTimes {
    /// Per kernel (plan order), per round: (start, end) ns.
    rounds: Vec<Vec<(u64, u64)>>,
    /// Per kernel, elements per array of this worker.
    elements: Vec<usize>,
    /// Per kernel, the result check after the timed rounds (None when interrupted).
    checks: Vec<Option<Result<verify::Checked, String>>>,
    sink: f64,
}

/// The scalar every kernel is run with.
const SCALAR: f64 = 3.0;

/// Tests only: makes the result check of groups whose key prefix is set here see a
/// wrong kernel (one output element changed after the real kernel ran).
#[cfg(test)]
pub(crate) static CORRUPT_FOR_TEST: Mutex<Option<String>> = Mutex::new(None);

#[cfg(test)]
fn corrupt_for_test(prefix: &str, k: Kernel, arr: &mut Arrays<'_>) {
    if CORRUPT_FOR_TEST.lock().unwrap().as_deref() != Some(prefix) {
        return;
    }
    let out = match k.spec().writes.first().map(String::as_str) {
        Some("a") => &mut *arr.a,
        Some("b") => &mut *arr.b,
        Some(_) => &mut *arr.c,
        None => return,
    };
    if let Some(v) = out.last_mut() {
        *v += 1.0;
    }
}

#[cfg(not(test))]
fn corrupt_for_test(_: &str, _: Kernel, _: &mut Arrays<'_>) {}

/// Where the memory controllers' counts come from (the live machine's sysfs, or a
/// recorded tree and replayed counts in tests).
pub trait UncoreSource: Sync {
    /// The PMUs found, or why none can be read.
    fn discovery(&self) -> Result<numalab_uncore::Discovery, String>;
    /// A backend to count them with.
    fn backend(&self) -> Box<dyn numalab_uncore::Backend + Send>;
}

/// This machine's uncore PMUs, counted with perf_event_open.
#[derive(Debug, Default, Clone, Copy)]
pub struct LiveUncore;

impl UncoreSource for LiveUncore {
    fn discovery(&self) -> Result<numalab_uncore::Discovery, String> {
        let root = std::path::Path::new("/");
        numalab_uncore::discover(root, &numalab_uncore::packages_from_sysfs(root))
            .map_err(|e| e.to_string())
    }

    fn backend(&self) -> Box<dyn numalab_uncore::Backend + Send> {
        Box::new(numalab_uncore::PerfBackend)
    }
}

/// The controllers to count for a plan, or why there are none.
fn uncore_setup(source: &dyn UncoreSource) -> Result<numalab_uncore::Discovery, String> {
    let d = source.discovery()?;
    let plan =
        numalab_uncore::plan(&d, &numalab_uncore::What::memory()).map_err(|e| e.to_string())?;
    if plan.groups.is_empty() {
        let names: Vec<&str> = d.devices.iter().map(|x| x.name.as_str()).collect();
        return Err(format!(
            "no memory-controller PMU under {}/bus/event_source/devices (the kernel lists {}): the controllers' bytes cannot be counted here",
            d.root.join("sys").display(),
            if names.is_empty() { "none".to_string() } else { names.join(", ") }
        ));
    }
    Ok(d)
}

/// Runs a plan: each group in turn, records to `sink` as each completes. A group that
/// fails is reported in the outcome and the others go on. The memory controllers are
/// counted where this machine has PMUs for them ([`LiveUncore`]).
pub fn run(plan: &Plan, machine: &Machine, placer: &dyn Placer, sink: &mut dyn Sink) -> Outcome {
    run_with(plan, machine, placer, sink, &LiveUncore)
}

/// [`run`], with the controllers' counts from `uncore`.
pub fn run_with(
    plan: &Plan,
    machine: &Machine,
    placer: &dyn Placer,
    sink: &mut dyn Sink,
    uncore: &dyn UncoreSource,
) -> Outcome {
    let (clock, clock_warnings) = check_clock();
    let controllers = uncore_setup(uncore);
    let backend = Mutex::new(uncore.backend());
    let mut cells = Cells::new(sink, "bandwidth", plan.groups.len() as u64);
    for (gi, group) in plan.groups.iter().enumerate() {
        if cells.stop() {
            break;
        }
        let todo: Vec<Kernel> = plan
            .options
            .kernels
            .iter()
            .copied()
            .filter(|k| !cells.skip(&plan.key(group, *k)))
            .collect();
        cells.progress(gi as u64);
        if todo.is_empty() {
            continue;
        }
        let counting = controllers.as_ref().ok().map(|d| (d, &backend));
        match run_group(plan, group, &todo, machine, placer, &clock, counting) {
            Ok(records) => {
                for (k, rec) in records {
                    let key = plan.key(group, k);
                    let mut rec = match rec {
                        Ok(r) => r,
                        Err(e) => {
                            cells.fail(key, e);
                            continue;
                        }
                    };
                    if let Err(why) = &controllers {
                        rec.uncore_note = Some(why.clone());
                    }
                    let mut warnings = clock_warnings.clone();
                    if let Some(c) = rec.uncore_check.as_ref().filter(|c| c.is_finding()) {
                        warnings.push(Warning::new("uncore.disagrees", c.text.clone()));
                    }
                    warnings.extend(rec.placement.warning());
                    warnings.extend(pages_warning(&rec.pages));
                    let spread = rec.bandwidth_gbps.relative_mad();
                    warnings.extend(cell_quality_warnings(rec.imbalance, spread));
                    let record =
                        Record::new(key.clone(), Origin::Measured, &rec).with_warnings(warnings);
                    cells.deliver(record)
                }
            }
            Err(MemError::Interrupted) => {
                cells.interrupted();
                break;
            }
            Err(e) => cells.fail(group.key_prefix.clone(), e),
        }
    }
    cells.finish()
}

/// The warnings on a cell's figures: its threads out of step (`imbalance`, the slowest
/// thread's time over the fastest's, beyond 1.25x) and its samples spread (`noisy`,
/// `relative_mad` = MAD over median, beyond 0.1). A matrix of many cells gives them once
/// per cell, each with its figure: the terminal folds them ([`numalab_schema::fold`]).
pub fn cell_quality_warnings(imbalance: f64, relative_mad: f64) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if imbalance > 1.25 {
        warnings.push(Warning::new(
            "imbalance",
            format!(
                "the slowest thread took {imbalance:.2}x as long as the fastest: another process may share these CPUs, or threads share a congested resource",
            ),
        ).with_remedy("rerun on an idle machine; check `numalab doctor`"));
    }
    if relative_mad > 0.1 {
        warnings.push(Warning::new(
            "noisy",
            format!(
                "samples spread by {:.0}% (MAD/median): the machine was not quiet",
                relative_mad * 100.0
            ),
        ));
    }
    warnings
}

/// A kernel's record, or why it has none (a failed result check).
type CellResult = (Kernel, Result<BandwidthRecord, MemError>);

/// The controllers to count during the untimed pass, and the backend to count them with.
type Counting<'a> = (
    &'a numalab_uncore::Discovery,
    &'a Mutex<Box<dyn numalab_uncore::Backend + Send>>,
);

/// Each kernel's controller count (or why it failed), from the untimed pass.
type UncorePass = Result<numalab_uncore::UncoreReport, String>;

/// What every worker of a group shares: the plan's options, the kernels and candidate
/// ISAs, and the team's results written once (trial times, choices, controller counts).
struct Team<'a> {
    opts: &'a Options,
    group: &'a Group,
    kernels: &'a [Kernel],
    candidates: &'a [Isa],
    alternations: usize,
    min_sample: f64,
    warm: &'a Mutex<Vec<Vec<Vec<u64>>>>,
    chosen_all: &'a Mutex<Vec<usize>>,
    inner_all: &'a Mutex<Vec<u64>>,
    stop: &'a AtomicBool,
    counting: Option<Counting<'a>>,
    session: &'a Mutex<Option<Result<numalab_uncore::Session, String>>>,
    passes: &'a Mutex<Vec<Option<UncorePass>>>,
}

impl Team<'_> {
    /// One worker's part, pinned on its PU with its memory placed: the warm-up and
    /// variant trial, the timed rounds, the untimed counted pass, the result check.
    fn worker(&self, i: usize, placed: &mut Placed, barrier: &std::sync::Barrier) -> WorkerTimes {
        let Team {
            opts,
            group,
            kernels,
            candidates,
            warm,
            chosen_all,
            inner_all,
            stop,
            counting,
            session,
            passes,
            ..
        } = self;
        let (alternations, min_sample, nk) = (self.alternations, self.min_sample, kernels.len());
        let buf = placed.region.as_mut_typed::<f64>();
        let mut sink = 0.0;
        let elements: Vec<usize> = kernels
            .iter()
            .map(|&k| Arrays::split(buf, k).elements(k))
            .collect();
        // Warm-up and variant trial, discarded: every candidate ISA on every kernel,
        // all threads together; the fastest team pass wins and sizes the inner
        // repetitions.
        for _ in 0..alternations {
            for (ki, &k) in kernels.iter().enumerate() {
                for (ci, &isa) in candidates.iter().enumerate() {
                    barrier.wait();
                    let t0 = numalab_clock::now_ns();
                    let mut arr = Arrays::split(buf, k);
                    sink += kernels::run(k, isa, &mut arr, SCALAR).unwrap_or(0.0);
                    let t1 = numalab_clock::now_ns();
                    let w = &mut warm.lock().unwrap()[ki][ci][i];
                    *w = (*w).min(t1 - t0);
                }
            }
        }
        barrier.wait();
        let (chosen, inner): (Vec<usize>, Vec<u64>) = warm
            .lock()
            .unwrap()
            .iter()
            .map(|per_c| {
                // A team pass lasts as long as its slowest thread.
                let team: Vec<u64> = per_c
                    .iter()
                    .map(|ws| ws.iter().copied().max().unwrap_or(1).max(1))
                    .collect();
                let best = (0..team.len()).min_by_key(|&c| team[c]).unwrap_or(0);
                let longest = team[best] as f64;
                (best, (min_sample / longest).ceil().max(1.0) as u64)
            })
            .unzip();
        let isa_of: Vec<Isa> = chosen.iter().map(|&c| candidates[c]).collect();
        if i == 0 {
            *inner_all.lock().unwrap() = inner.clone();
            *chosen_all.lock().unwrap() = chosen.clone();
        }
        let mut rounds = vec![Vec::with_capacity(opts.reps); nk];
        for _ in 0..opts.reps {
            if i == 0 {
                stop.store(numalab_schema::interrupt::requested(), Ordering::SeqCst);
            }
            barrier.wait();
            if stop.load(Ordering::SeqCst) {
                break;
            }
            for (ki, &k) in kernels.iter().enumerate() {
                barrier.wait();
                let t0 = numalab_clock::now_ns();
                for _ in 0..inner[ki] {
                    let mut arr = Arrays::split(buf, k);
                    sink += kernels::run(k, isa_of[ki], &mut arr, SCALAR).unwrap_or(0.0);
                }
                let t1 = numalab_clock::now_ns();
                rounds[ki].push((t0, t1));
            }
        }
        // The controllers' count: one untimed pass per kernel, counted from before
        // the first thread starts to after the last one ends.
        if let (Some((discovery, backend)), false) = (counting, stop.load(Ordering::SeqCst)) {
            for (ki, &k) in kernels.iter().enumerate() {
                barrier.wait();
                if i == 0 {
                    let mut b = backend.lock().unwrap();
                    *session.lock().unwrap() = Some(
                        numalab_uncore::Session::start(
                            discovery,
                            &numalab_uncore::What::memory(),
                            &mut **b,
                        )
                        .map_err(|e| e.to_string()),
                    );
                }
                barrier.wait();
                for _ in 0..inner[ki] {
                    let mut arr = Arrays::split(buf, k);
                    sink += kernels::run(k, isa_of[ki], &mut arr, SCALAR).unwrap_or(0.0);
                }
                barrier.wait();
                if i == 0 {
                    let done = session
                        .lock()
                        .unwrap()
                        .take()
                        .map(|s| s.and_then(|s| s.stop().map_err(|e| e.to_string())));
                    passes.lock().unwrap()[ki] = done;
                }
            }
        }
        std::hint::black_box(sink);
        // The result check, untimed: known values in, the measured kernel, every
        // element compared with the closed form.
        let checks = kernels
            .iter()
            .enumerate()
            .map(|(ki, &k)| {
                if stop.load(Ordering::SeqCst) {
                    return None;
                }
                let mut arr = Arrays::split(buf, k);
                Some(verify::verify_with(k, &mut arr, SCALAR, |arr| {
                    let r = kernels::run(k, isa_of[ki], arr, SCALAR);
                    corrupt_for_test(&group.key_prefix, k, arr);
                    r
                }))
            })
            .collect();
        WorkerTimes {
            rounds,
            elements,
            checks,
            sink,
        }
    }
}

fn run_group(
    plan: &Plan,
    group: &Group,
    kernels: &[Kernel],
    machine: &Machine,
    placer: &dyn Placer,
    clock: &numalab_clock::ClockCheck,
    counting: Option<Counting<'_>>,
) -> Result<Vec<CellResult>, MemError> {
    let opts = &plan.options;
    let threads = group.pus.len();
    let bytes = per_worker_bytes(opts, threads);
    let nk = kernels.len();
    // The variants tried: the ISA given, or this CPU's vector ISAs (the fastest wins).
    let candidates: Vec<Isa> = if opts.isa_forced {
        vec![opts.isa]
    } else {
        kernels::candidates(opts.isa)
    };
    let nc = candidates.len();
    // Alternations of the trial: one pass (the warm-up) with one candidate; with several,
    // A B A B so that neither always runs first, and each keeps its best pass.
    let alternations = if nc > 1 { TRIAL_ALTERNATIONS } else { 1 };
    // warm[k][c][w] = best trial pass of kernel k with candidate c on worker w, ns.
    let warm: Mutex<Vec<Vec<Vec<u64>>>> = Mutex::new(vec![vec![vec![u64::MAX; threads]; nc]; nk]);
    let chosen_all: Mutex<Vec<usize>> = Mutex::new(vec![0; nk]);
    let stop = AtomicBool::new(false);
    let min_sample = opts.min_sample_ns.max(clock.min_interval_ns());
    let placed_info: Mutex<Vec<Option<(numalab_topo::bind::PagePlacement, PagesObtained)>>> =
        Mutex::new(vec![None; threads]);
    let inner_all: Mutex<Vec<u64>> = Mutex::new(vec![1; nk]);
    let session: Mutex<Option<Result<numalab_uncore::Session, String>>> = Mutex::new(None);
    let passes: Mutex<Vec<Option<UncorePass>>> = Mutex::new(vec![None; nk]);
    let team = Team {
        opts,
        group,
        kernels,
        candidates: &candidates,
        alternations,
        min_sample,
        warm: &warm,
        chosen_all: &chosen_all,
        inner_all: &inner_all,
        stop: &stop,
        counting,
        session: &session,
        passes: &passes,
    };
    let times = pool::run_pinned(
        placer,
        &group.pus,
        |i| {
            let p = pool::place(placer, bytes, opts.pages, &group.policy, 1.0)?;
            placed_info.lock().unwrap()[i] = Some((p.pages.clone(), p.obtained.clone()));
            Ok(p)
        },
        |i, placed: &mut Placed, barrier| team.worker(i, placed, barrier),
    )?;
    if stop.load(Ordering::SeqCst) {
        return Err(MemError::Interrupted);
    }
    let info = placed_info.into_inner().unwrap();
    let per_worker: Vec<_> = info.iter().flatten().map(|(p, _)| p.clone()).collect();
    let obtained: Vec<_> = info.iter().flatten().map(|(_, o)| o.clone()).collect();
    let placement = pool::placement(machine, placer, &group.pus, &group.policy, &per_worker);
    let pages = PagesObtained::merge(&obtained).expect("at least one worker");
    let inner = inner_all.into_inner().unwrap();
    let chosen = chosen_all.into_inner().unwrap();
    let warm = warm.into_inner().unwrap();
    let passes = passes.into_inner().unwrap();
    let mut out = Vec::new();
    for (ki, &k) in kernels.iter().enumerate() {
        let elems: u64 = times.iter().map(|t| t.elements[ki] as u64).sum();
        let per_thread = times[0].elements[ki] as u64;
        let rounds = times[0].rounds[ki].len();
        let mut sample_ns = Vec::with_capacity(rounds);
        let mut slowest_ns = Vec::with_capacity(rounds);
        let mut imbalance = Vec::with_capacity(rounds);
        for r in 0..rounds {
            let start = times.iter().map(|t| t.rounds[ki][r].0).min().unwrap();
            let end = times.iter().map(|t| t.rounds[ki][r].1).max().unwrap();
            sample_ns.push((end - start) as f64);
            let d: Vec<u64> = times
                .iter()
                .map(|t| t.rounds[ki][r].1 - t.rounds[ki][r].0)
                .collect();
            let (lo, hi) = (*d.iter().min().unwrap(), *d.iter().max().unwrap());
            imbalance.push(hi as f64 / lo.max(1) as f64);
            slowest_ns.push(hi.max(1) as f64);
        }
        let isa = candidates[chosen[ki]];
        let variant = variant_choice(
            opts.isa_forced,
            &candidates,
            chosen[ki],
            &warm[ki],
            elems * k.stream_bytes_per_element(),
            alternations,
        );
        let stream = elems * k.stream_bytes_per_element() * inner[ki];
        let actual = elems * k.actual_bytes_per_element() * inner[ki];
        // The untimed pass's bytes as the probe moved them: reads (with the line a
        // plain store reads first) and writes.
        let written = elems * 8 * k.spec().writes.len() as u64 * inner[ki];
        let (uncore, uncore_check, uncore_note) = match passes.get(ki).cloned().flatten() {
            Some(Ok(report)) => {
                let check = report.seconds.and_then(|secs| {
                    numalab_uncore::compare_with_probe(
                        &report,
                        (actual - written) as f64,
                        written as f64,
                        secs,
                    )
                });
                (Some(report), check, None)
            }
            Some(Err(e)) => (
                None,
                None,
                Some(format!("counting the controllers failed: {e}")),
            ),
            None => (None, None, None),
        };
        let gbps =
            |bytes: u64| -> Vec<f64> { sample_ns.iter().map(|ns| bytes as f64 / ns).collect() };
        let slowest_gbps: Vec<f64> = slowest_ns.iter().map(|ns| stream as f64 / ns).collect();
        let (Some(bw), Some(abw), Some(tbw)) = (
            Summary::of(&gbps(stream)),
            Summary::of(&gbps(actual)),
            Summary::of(&slowest_gbps),
        ) else {
            return Err(MemError::Runtime(format!(
                "kernel {k}: no samples were taken"
            )));
        };
        std::hint::black_box(times.iter().map(|t| t.sink).sum::<f64>());
        let mut checked: Option<verify::Checked> = None;
        let mut wrong = None;
        for (t, pu) in times.iter().zip(&group.pus) {
            match &t.checks[ki] {
                Some(Ok(c)) => match &mut checked {
                    Some(all) => all.merge(c),
                    None => checked = Some(c.clone()),
                },
                Some(Err(e)) => {
                    wrong.get_or_insert_with(|| format!("thread on PU {pu}: {e}"));
                }
                None => {}
            }
        }
        if let Some(e) = wrong {
            out.push((
                k,
                Err(MemError::Runtime(format!(
                    "kernel {k} ({}) failed its result check, so no bandwidth is reported: {e}; rerun with another --isa to compare, and report this as a bug",
                    isa.label()
                ))),
            ));
            continue;
        }
        let Some(checked) = checked else {
            return Err(MemError::Interrupted);
        };
        out.push((
            k,
            Ok(BandwidthRecord {
                kernel: k,
                formula: k.spec().formula.clone(),
                isa,
                threads,
                matrix: group.matrix,
                placement: placement.clone(),
                pages: pages.clone(),
                array_bytes: elems * 8,
                working_set_bytes: elems * 8 * k.arrays() as u64,
                elements_per_thread: per_thread,
                stream_bytes_per_sample: stream,
                actual_bytes_per_sample: actual,
                inner_iterations: inner[ki],
                warmup_rounds: alternations * candidates.len(),
                sample_ns,
                slowest_thread_ns: slowest_ns,
                bandwidth_gbps: bw,
                slowest_thread_gbps: tbw,
                actual_bandwidth_gbps: abw,
                imbalance: numalab_stats::median(&imbalance).unwrap_or(1.0),
                timer: Timer {
                    check: clock.clone(),
                    subtracted_ns: 0.0,
                },
                vector_bits: Some(isa.vector_bits()),
                verified: Some(true),
                verification: Some(Verification {
                    method: "closed form: after the timed rounds each thread set its arrays to known values, ran the measured kernel and compared every element with the values the formula must give (inputs unchanged)".into(),
                    repetitions: verify::REPETITIONS,
                    elements_checked: checked.elements,
                    checksum: checked.checksum,
                    expected_checksum: checked.expected_checksum,
                    tolerance: verify::TOLERANCE,
                }),
                uncore,
                uncore_check,
                uncore_note,
                variant: Some(variant),
            }),
        ));
    }
    Ok(out)
}

/// Passes per candidate in a variant trial with several candidates (A B A B: each
/// keeps its best pass).
const TRIAL_ALTERNATIONS: usize = 2;

/// The record of how a kernel's ISA was chosen: `best_pass[c][w]` is candidate c's best
/// trial pass on worker w (ns), `pass_bytes` the STREAM-counted bytes of one team pass.
fn variant_choice(
    forced: bool,
    candidates: &[Isa],
    chosen: usize,
    best_pass: &[Vec<u64>],
    pass_bytes: u64,
    alternations: usize,
) -> VariantChoice {
    let isa = candidates[chosen];
    if forced {
        return VariantChoice {
            how: "given".into(),
            trial: Vec::new(),
            reason: format!("{} as given with --isa", isa.label()),
        };
    }
    let trial: Vec<TrialPoint> = candidates
        .iter()
        .zip(best_pass)
        .map(|(&c, ws)| {
            let team = ws.iter().copied().max().unwrap_or(1).max(1) as f64;
            TrialPoint {
                isa: c,
                vector_bits: c.vector_bits(),
                gbps: pass_bytes as f64 / team,
            }
        })
        .collect();
    let reason = if candidates.len() == 1 {
        format!(
            "{}: the only vector ISA this CPU has for this kernel",
            isa.label()
        )
    } else {
        let others: Vec<String> = trial
            .iter()
            .map(|t| format!("{} {:.2} GB/s", t.isa.label(), t.gbps))
            .collect();
        format!(
            "{} was the fastest in an untimed trial of {} passes each, all threads together, best pass kept ({})",
            isa.label(),
            alternations,
            others.join(", ")
        )
    };
    VariantChoice {
        how: "trial".into(),
        trial,
        reason,
    }
}
