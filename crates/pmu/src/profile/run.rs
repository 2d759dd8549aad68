//! The runs of one measured profile: each run opens its planned groups on the subject,
//! counts until the command ends (or the process exits, `--duration`, Ctrl-C), reading
//! at every interval, and assembles its group records and software values.

use super::*;
use crate::count::{PlanGroup, Session};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

/// What every run of a profile shares.
pub(super) struct Setup<'a> {
    /// What is counted.
    pub subject: &'a Subject,
    /// How.
    pub config: &'a ProfileConfig,
    /// What this machine allows.
    pub cap: &'a Capability,
    /// The groups and runs.
    pub plan: &'a Plan,
    /// Whether a hardware PMU counts here.
    pub hardware: bool,
    /// The core PMU's perf type for raw events, when known.
    pub raw_type: Option<u32>,
    /// Per raw event, whether the core PMU advertises it and why not.
    pub standing: &'a BTreeMap<String, (Advertised, String)>,
    /// The attached process's name, read before counting.
    pub comm: Option<String>,
    /// Why hardware events have no value without a PMU.
    pub hw_reason: String,
}

impl Setup<'_> {
    /// Why `e` is not opened (the core PMU does not list it), or `None`.
    fn blocked(&self, e: &EventRef) -> Option<String> {
        self.standing
            .get(&e.name)
            .filter(|(a, _)| *a == Advertised::NotListed)
            .map(|(_, why)| why.clone())
    }
}

/// What the runs counted.
pub(super) struct Counted {
    /// Group records of every run.
    pub groups: Vec<GroupRecord>,
    /// Software values per run.
    pub software_runs: Vec<Vec<EventValue>>,
    /// The runs that ended with an outcome.
    pub runs: Vec<RunRecord>,
    /// The attachment (a running process or every CPU).
    pub attachment: Option<Attachment>,
    /// Interval mode's points, before their metrics.
    pub timeline_raw: Vec<RawPoint>,
    /// Whether kernel mode was counted (false after a denial).
    pub include_kernel: bool,
}

/// The events of one run: its planned groups, the subsets opened and the software
/// singles.
struct RunEvents<'p> {
    /// The run.
    run: usize,
    /// (plan index, group) of the run's groups.
    run_groups: Vec<(usize, &'p PlanGroup)>,
    /// Run group k -> index in `to_open`, for the groups opened.
    opened_hw: Vec<usize>,
    /// How many of `to_open` are hardware groups.
    hw_opened: usize,
    /// Software events counted (not the wall time).
    sw_counted: Vec<&'p EventRef>,
    /// What is opened: hardware groups, then one group per software event.
    to_open: Vec<Vec<EventRef>>,
}

impl<'p> RunEvents<'p> {
    /// What to open in `run`: hardware groups (if a PMU exists), then software singles.
    /// Events the PMU does not advertise are left out (and reported by name).
    fn new(setup: &Setup<'p>, run: usize) -> Self {
        let plan = setup.plan;
        let run_groups: Vec<(usize, &PlanGroup)> = plan
            .groups
            .iter()
            .enumerate()
            .filter(|(_, g)| g.run == run)
            .collect();
        let mut to_open: Vec<Vec<EventRef>> = Vec::new();
        let mut opened_hw: Vec<usize> = Vec::new();
        if setup.hardware {
            for (k, (_, g)) in run_groups.iter().enumerate() {
                let open: Vec<EventRef> = g
                    .events
                    .iter()
                    .filter(|e| setup.blocked(e).is_none())
                    .cloned()
                    .collect();
                if !open.is_empty() {
                    opened_hw.push(k);
                    to_open.push(open);
                }
            }
        }
        let hw_opened = to_open.len();
        let sw_counted: Vec<&EventRef> = plan
            .software
            .iter()
            .filter(|e| e.encoding != catalog::Encoding::Wall)
            .collect();
        to_open.extend(sw_counted.iter().map(|e| vec![(*e).clone()]));
        RunEvents {
            run,
            run_groups,
            opened_hw,
            hw_opened,
            sw_counted,
            to_open,
        }
    }

    /// One interval's records: the difference of two reads, over `span`.
    fn interval(
        &self,
        setup: &Setup,
        now: &Readings,
        before: Option<&Readings>,
        statuses: &[Vec<EventStatus>],
        span: (f64, f64),
    ) -> RawPoint {
        interval_of(
            &self.run_groups,
            &self.opened_hw,
            now,
            before,
            statuses,
            setup.hardware,
            &|e| setup.blocked(e),
            &self.sw_counted,
            self.hw_opened,
            &setup.hw_reason,
            span,
        )
    }

    /// The run's group records and software values from its last reading.
    fn assemble(
        &self,
        setup: &Setup,
        readings: &Readings,
        statuses: &[Vec<EventStatus>],
    ) -> (Vec<GroupRecord>, Vec<EventValue>) {
        assemble(
            &self.run_groups,
            &self.opened_hw,
            readings,
            statuses,
            setup.hardware,
            &|e| setup.blocked(e),
            &self.sw_counted,
            self.hw_opened,
            &setup.hw_reason,
            self.run,
        )
    }
}

/// Counts every run of the plan (stopping early on Ctrl-C or when the subject is
/// gone); `progress(run, runs)` is called before each run.
pub(super) fn count_runs(
    setup: &Setup,
    backend: &mut dyn Backend,
    include_kernel: bool,
    warnings: &mut Vec<Warning>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Counted, ProfileError> {
    let mut counted = Counted {
        groups: Vec::new(),
        software_runs: Vec::new(),
        runs: Vec::new(),
        attachment: None,
        timeline_raw: Vec::new(),
        include_kernel,
    };
    for run in 0..setup.plan.runs {
        if numalab_schema::interrupt::requested() {
            break;
        }
        progress(run, setup.plan.runs);
        if !count_run(setup, backend, run, &mut counted, warnings)? {
            break;
        }
    }
    Ok(counted)
}

/// Counts one run into `counted`; false when no further run should follow.
fn count_run(
    setup: &Setup,
    backend: &mut dyn Backend,
    run: usize,
    counted: &mut Counted,
    warnings: &mut Vec<Warning>,
) -> Result<bool, ProfileError> {
    let ev = RunEvents::new(setup, run);
    let (command, target) = start_subject(setup.subject, setup.config)?;
    let mut session = open_session(
        setup,
        backend,
        &target,
        &ev.to_open,
        &mut counted.include_kernel,
        warnings,
    );
    let statuses = session.statuses();
    // Nothing opened and permission was among the reasons: say what would allow it.
    if !statuses.iter().flatten().any(EventStatus::works)
        && statuses
            .iter()
            .flatten()
            .any(|s| matches!(s, EventStatus::Denied(_)))
    {
        if let Some(r) = command {
            drop(r.wait());
        }
        return Err(ProfileError::Denied(denied_text(setup.subject, setup.cap)));
    }
    let started = Instant::now();
    let waiter = match command {
        Some(r) => Some(release_and_wait(r)?),
        None => None,
    };
    let stop = count_until_stopped(
        setup,
        &mut *session,
        waiter.as_ref(),
        started,
        &ev,
        &statuses,
        &mut counted.timeline_raw,
    )?;
    if !matches!(setup.subject, Subject::Command(_)) {
        counted.attachment = Some(attachment_of(setup, &target, &stop));
    }
    let (mut recs, mut sw_values) = ev.assemble(setup, &stop.readings, &statuses);
    for rec in &mut recs {
        for v in &mut rec.values {
            v.advertised = setup.standing.get(&v.name).map(|(a, _)| *a);
        }
    }
    counted.groups.append(&mut recs);
    if setup
        .plan
        .software
        .iter()
        .any(|e| e.encoding == catalog::Encoding::Wall)
    {
        sw_values.push(match &stop.outcome {
            Some(o) => wall_value(o, run),
            None => wall_of(stop.seconds, run),
        });
    }
    counted.software_runs.push(sw_values);
    Ok(run_ended(setup, run, stop, counted, warnings))
}

/// Starts the command (gated: the counters are open before it runs) and says what to
/// count: the child, the threads of a running process, or every online CPU.
fn start_subject(
    subject: &Subject,
    config: &ProfileConfig,
) -> Result<(Option<numalab_proc::Running>, count::Target), ProfileError> {
    let command = match subject {
        Subject::Command(spec) | Subject::AllCpus(Some(spec)) => {
            let mut child_spec = spec.clone();
            child_spec.gated = true;
            Some(numalab_proc::spawn(&child_spec)?)
        }
        Subject::Pid(_) | Subject::AllCpus(None) => None,
    };
    let target = match (subject, &command) {
        (Subject::Command(_), Some(r)) => count::Target::Child(r.pid()),
        (Subject::Pid(pid), _) => count::Target::Threads(threads_of(*pid)?),
        _ => count::Target::Cpus(online_cpus(&config.sysroot)),
    };
    Ok((command, target))
}

/// Opens the run's groups; when kernel mode is denied, again in user space only (as
/// the methodology says), which then holds for the later runs too.
fn open_session(
    setup: &Setup,
    backend: &mut dyn Backend,
    target: &count::Target,
    to_open: &[Vec<EventRef>],
    include_kernel: &mut bool,
    warnings: &mut Vec<Warning>,
) -> Box<dyn Session> {
    let opts = |include_kernel| OpenOptions {
        include_kernel,
        raw_type: setup.raw_type,
    };
    let session = backend.open(target, to_open, opts(*include_kernel));
    let denied = session
        .statuses()
        .iter()
        .flatten()
        .any(|s| matches!(s, EventStatus::Denied(_)));
    if !(denied && *include_kernel) {
        return session;
    }
    drop(session);
    *include_kernel = false;
    warnings.push(Warning::new(
        "pmu.user_only",
        "kernel-mode counting was denied: counting user space only",
    ));
    backend.open(target, to_open, opts(*include_kernel))
}

/// Lets the gated command run and waits for it on a thread; its outcome arrives on
/// the receiver.
fn release_and_wait(mut r: numalab_proc::Running) -> Result<Receiver<Outcome>, ProfileError> {
    r.release()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(r.wait());
    });
    Ok(rx)
}

/// How a run stopped, and its last reading.
struct Stopped {
    /// The command's outcome, when a command ran.
    outcome: Option<Outcome>,
    /// What stopped counting ("command ended", "ctrl-c", "process exited"...).
    by: &'static str,
    /// The counters at the end.
    readings: Vec<Result<count::GroupReading, String>>,
    /// Seconds counted.
    seconds: f64,
}

/// Counts until the command ends, the process exits, --duration or Ctrl-C, reading
/// at every interval (and once more at the end) into `timeline_raw`.
fn count_until_stopped(
    setup: &Setup,
    session: &mut dyn Session,
    waiter: Option<&Receiver<Outcome>>,
    started: Instant,
    ev: &RunEvents,
    statuses: &[Vec<EventStatus>],
    timeline_raw: &mut Vec<RawPoint>,
) -> Result<Stopped, ProfileError> {
    let config = setup.config;
    let mut last: Option<Vec<Result<count::GroupReading, String>>> = None;
    let mut last_t = 0.0;
    let mut next_tick = config.interval;
    let poll = std::time::Duration::from_millis(20);
    let (outcome, by) = loop {
        let now = started.elapsed();
        let mut wait = poll;
        if let Some(t) = next_tick {
            wait = wait.min(t.saturating_sub(now));
        }
        if let Some(stop) = stop_reason(setup, waiter, wait, started)? {
            break stop;
        }
        if let (Some(iv), Some(t)) = (config.interval, next_tick) {
            if started.elapsed() >= t {
                let readings = session.read();
                let end = started.elapsed().as_secs_f64();
                timeline_raw.push(ev.interval(
                    setup,
                    &readings,
                    last.as_deref(),
                    statuses,
                    (last_t, end),
                ));
                last = Some(readings);
                last_t = end;
                next_tick = Some(t + iv);
            }
        }
    };
    let readings = session.read();
    let seconds = started.elapsed().as_secs_f64();
    if config.interval.is_some() && seconds > last_t {
        timeline_raw.push(ev.interval(
            setup,
            &readings,
            last.as_deref(),
            statuses,
            (last_t, seconds),
        ));
    }
    Ok(Stopped {
        outcome,
        by,
        readings,
        seconds,
    })
}

/// Waits up to `wait` for a reason to stop: the command's outcome, or (without a
/// command) Ctrl-C, the process gone, or --duration reached.
fn stop_reason(
    setup: &Setup,
    waiter: Option<&Receiver<Outcome>>,
    wait: std::time::Duration,
    started: Instant,
) -> Result<Option<(Option<Outcome>, &'static str)>, ProfileError> {
    if let Some(rx) = waiter {
        return match rx.recv_timeout(wait) {
            Ok(o) => {
                let by = if o.interrupted {
                    "ctrl-c"
                } else if o.timed_out {
                    "timeout"
                } else {
                    "command ended"
                };
                Ok(Some((Some(o), by)))
            }
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(ProfileError::Unsupported(
                "the thread waiting for the command died".into(),
            )),
        };
    }
    std::thread::sleep(wait);
    if numalab_schema::interrupt::requested() {
        return Ok(Some((None, "ctrl-c")));
    }
    if let Subject::Pid(pid) = setup.subject {
        if !alive(*pid) {
            return Ok(Some((None, "process exited")));
        }
    }
    if setup
        .config
        .duration
        .is_some_and(|d| started.elapsed() >= d)
    {
        return Ok(Some((None, "duration")));
    }
    Ok(None)
}

/// The attachment of a run that counted a running process or every CPU.
fn attachment_of(setup: &Setup, target: &count::Target, stop: &Stopped) -> Attachment {
    let subject = setup.subject;
    Attachment {
        kind: match subject {
            Subject::Pid(_) => "pid",
            _ => "system-wide",
        }
        .into(),
        pid: match subject {
            Subject::Pid(p) => Some(*p),
            _ => None,
        },
        comm: setup.comm.clone(),
        threads: match target {
            count::Target::Threads(t) => Some(t.len()),
            _ => None,
        },
        cpus: match target {
            count::Target::Cpus(c) => c.clone(),
            _ => Vec::new(),
        },
        stopped_by: stop.by.into(),
        seconds: stop.seconds,
    }
}

/// Records how run `run` ended (warnings for Ctrl-C and a failed command); false when
/// no further run should follow.
fn run_ended(
    setup: &Setup,
    run: usize,
    stop: Stopped,
    counted: &mut Counted,
    warnings: &mut Vec<Warning>,
) -> bool {
    let Some(outcome) = stop.outcome else {
        if stop.by == "ctrl-c" {
            warnings.push(Warning::new(
                "pmu.interrupted",
                format!(
                    "stopped by Ctrl-C after {:.1} s; the counts cover that time",
                    stop.seconds
                ),
            ));
        }
        return false;
    };
    if !outcome.success() {
        warnings.push(Warning::new(
            "pmu.workload_failed",
            format!(
                "run {}: the command {}; the counts describe that run",
                run + 1,
                outcome.describe()
            ),
        ));
    }
    let interrupted = outcome.interrupted;
    counted.runs.push(RunRecord { run, outcome });
    if interrupted {
        warnings.push(Warning::new(
            "pmu.interrupted",
            format!(
                "stopped by Ctrl-C after {} of {} runs",
                counted.runs.len(),
                setup.plan.runs
            ),
        ));
        return false;
    }
    true
}
