//! Counting a running process (`--pid`), every CPU (`--all-cpus`) and interval mode:
//! live with software events on this machine, and with replayed hardware counts for
//! the timeline's arithmetic.

use numalab_pmu::capability::{self, Capability, EventStatus};
use numalab_pmu::catalog::{self, CpuMatch};
use numalab_pmu::count::{Replay, ReplayBackend, Target};
use numalab_pmu::metrics::EventState;
use numalab_pmu::profile::{self, ProfileConfig, ProfileError, Subject};
use numalab_proc::Spec;
use std::process::{Child, Command};
use std::time::Duration;

fn hotspot() -> &'static str {
    env!("CARGO_BIN_EXE_numalab-pmu-hotspot")
}

fn this_cpu() -> CpuMatch {
    if std::env::consts::ARCH == "x86_64" {
        catalog::resolve_model("x86-64").unwrap()
    } else {
        catalog::resolve_model("neoverse-n1").unwrap()
    }
}

/// CPU time the kernel has charged to process `pid` so far, in seconds (`/proc/PID/stat`'s
/// utime and stime, in USER_HZ ticks: 100 per second on Linux).
fn charged_s(pid: i32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 of `rest`.
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

/// A busy child with two threads that runs for a few seconds.
fn busy() -> Child {
    Command::new(hotspot()).args(["4000", "2"]).spawn().unwrap()
}

fn stop(mut c: Child) {
    let _ = c.kill();
    let _ = c.wait();
}

fn live(
    subject: &Subject,
    interval_ms: Option<u64>,
    duration_ms: Option<u64>,
) -> Result<profile::Profiled, ProfileError> {
    let mut cfg = ProfileConfig::new(this_cpu());
    cfg.interval = interval_ms.map(Duration::from_millis);
    cfg.duration = duration_ms.map(Duration::from_millis);
    profile::profile_subject(
        subject,
        &cfg,
        &mut numalab_pmu::count::PerfBackend,
        &capability::probe(),
        &mut |_, _| {},
    )
}

#[test]
fn a_running_process_is_counted_until_the_duration_with_a_timeline() {
    let child = busy();
    let pid = child.id() as i32;
    // Let it start its threads.
    std::thread::sleep(Duration::from_millis(100));
    let (t0, cpu0) = (std::time::Instant::now(), charged_s(pid));
    let p = live(&Subject::Pid(pid), Some(50), Some(400));
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), charged_s(pid) - cpu0);
    stop(child);
    let p = p.unwrap();
    let prof = &p.profile;
    let a = prof.attach.as_ref().unwrap();
    assert_eq!((a.kind.as_str(), a.pid), ("pid", Some(pid)));
    assert_eq!(a.stopped_by, "duration");
    assert!(a.threads.unwrap() >= 2, "{a:?}");
    assert!(a.seconds >= 0.4 && a.seconds < 2.0, "{a:?}");
    assert!(prof.runs.is_empty(), "no run of a command");
    // Two busy threads: as many CPUs of task clock over the time counted as the kernel
    // charged the process over a window around it (up to 2 on an idle machine, less
    // when other work shares the CPUs): within a factor of two, with a tick of slack
    // per thread for /proc's resolution.
    let task = prof.event("TASK_CLOCK").unwrap();
    assert_eq!(task.state, EventState::Counted);
    let cpus = prof.metric("cpus_utilized").unwrap().value.unwrap();
    let share = cpu / wall;
    assert!(
        cpus > 0.5 * share - 0.05 && cpus < 2.0 * share + 0.1 && cpus < 2.5,
        "cpus utilized {cpus}, the kernel charged {cpu:.2} s of CPU in {wall:.2} s ({share:.2} CPUs)"
    );
    // The timeline: about 400/50 intervals, contiguous, and its counts add up to the
    // whole (the intervals are differences of cumulative reads).
    assert_eq!(prof.interval_ms, Some(50));
    let t = &prof.timeline;
    assert!(t.len() >= 6 && t.len() <= 12, "{} points", t.len());
    for w in t.windows(2) {
        assert_eq!(w[0].end_s, w[1].start_s);
    }
    assert_eq!(t[0].start_s, 0.0);
    let sum: f64 = t.iter().map(|p| p.counts["TASK_CLOCK"]).sum();
    let whole = task.value.unwrap();
    assert!((sum - whole).abs() <= 1e-6 * whole, "{sum} vs {whole}");
    let wall: f64 = t.iter().map(|p| p.counts["DURATION_TIME"]).sum();
    assert!(
        (wall / 1e9 - a.seconds).abs() < 1e-6,
        "{wall} vs {}",
        a.seconds
    );
    // Each interval's CPUs utilized is its own task clock over its own time.
    for pt in t {
        let want = pt.counts["TASK_CLOCK"] / pt.counts["DURATION_TIME"];
        assert!((pt.metrics["cpus_utilized"] - want).abs() < 1e-9);
    }
}

#[test]
fn counting_a_process_stops_when_it_exits() {
    let child = Command::new("sleep").arg("0.3").spawn().unwrap();
    let pid = child.id() as i32;
    let p = live(&Subject::Pid(pid), None, Some(20_000)).unwrap();
    let mut child = child;
    let _ = child.wait();
    let a = p.profile.attach.unwrap();
    assert_eq!(a.stopped_by, "process exited");
    assert!(a.seconds < 10.0, "{a:?}");
    assert!(p.profile.timeline.is_empty());
}

#[test]
fn system_wide_counting_covers_every_online_cpu_or_says_what_it_needs() {
    let r = live(&Subject::AllCpus(None), None, Some(200));
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    if root || paranoid.is_some_and(|p| p <= 0) {
        let p = r.unwrap();
        let a = p.profile.attach.clone().unwrap();
        assert_eq!(
            (a.kind.as_str(), a.stopped_by.as_str()),
            ("system-wide", "duration")
        );
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
        assert_eq!(Some(a.cpus.clone()), profile::parse_cpu_list(&online));
        // cpu-clock style software counting on every CPU: some time was counted.
        let task = p.profile.event("TASK_CLOCK").unwrap();
        assert_eq!(task.state, EventState::Counted, "{task:?}");
    } else {
        let e = r.unwrap_err();
        assert!(matches!(e, ProfileError::Denied(_)), "{e}");
        assert!(e.to_string().contains("perf_event_paranoid <= 0"), "{e}");
    }
}

fn n1_config() -> ProfileConfig {
    let mut cfg = ProfileConfig::new(catalog::resolve_model("neoverse-n1").unwrap());
    cfg.sysroot = "/nonexistent-numalab-sysroot".into();
    cfg
}

fn pmu_capability() -> Capability {
    Capability {
        paranoid: Some(2),
        privileged: true,
        cycles: EventStatus::Works,
        instructions: EventStatus::Works,
        task_clock: EventStatus::Works,
        page_faults: EventStatus::Works,
        context_switches: EventStatus::Works,
        pmus: vec!["armv8_pmuv3_0".into()],
    }
}

const COUNTS: &[(&str, u64)] = &[
    ("CPU_CYCLES", 1_000_000_000),
    ("INST_RETIRED", 400_000_000),
    ("STALL_FRONTEND", 50_000_000),
    ("STALL_BACKEND", 600_000_000),
    ("TASK_CLOCK", 400_000_000),
    ("CONTEXT_SWITCHES", 8),
    ("CPU_MIGRATIONS", 4),
    ("PAGE_FAULTS", 1200),
];

#[test]
fn interval_points_are_differences_of_multiplexed_reads() {
    // Replayed reads reach the whole count in 4 steps; the cycles group is on counters
    // half the time, so every interval's cycles are scaled from the interval's own
    // running time.
    let mut backend = ReplayBackend::with_counts(COUNTS);
    backend.events.insert(
        "CPU_CYCLES".into(),
        Replay::Count {
            value: 1_000_000_000,
            fraction: 0.5,
        },
    );
    backend.reads_to_full = 4;
    let mut cfg = n1_config();
    cfg.metrics = "ipc,frontend_stall_rate,backend_stall_rate".into();
    cfg.interval = Some(Duration::from_millis(30));
    let p = profile::profile_subject(
        &Subject::Command(Spec::new(["sleep", "0.2"])),
        &cfg,
        &mut backend,
        &pmu_capability(),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(backend.targets.len(), 1);
    assert!(matches!(backend.targets[0], Target::Child(_)));
    let prof = &p.profile;
    let t = &prof.timeline;
    // 0.2 s at 30 ms: about 6 reads before the end, and the last interval after it.
    assert!(t.len() >= 4, "{} points", t.len());
    // The first three reads each add a quarter, the fourth the last quarter, then
    // nothing: intervals after the whole count have no cycles.
    let cyc: Vec<f64> = t
        .iter()
        .map(|p| p.counts.get("CPU_CYCLES").copied().unwrap_or(0.0))
        .collect();
    for (i, c) in cyc.iter().take(4).enumerate() {
        assert!((c - 250_000_000.0).abs() < 1.0, "interval {i}: {c}");
    }
    assert!(cyc[4..].iter().all(|&c| c == 0.0), "{cyc:?}");
    let total: f64 = cyc.iter().sum();
    assert!((total - prof.event("CPU_CYCLES").unwrap().value.unwrap()).abs() < 4.0);
    // Each interval's IPC: a quarter of the instructions over a quarter of the cycles.
    for pt in &t[..4] {
        assert!((pt.metrics["ipc"] - 0.4).abs() < 1e-6, "{pt:?}");
        assert_eq!(pt.running_fraction, Some(0.5));
    }
    // After the whole count, 0 cycles in an interval: IPC is not a number there.
    assert!(t[4..].iter().all(|pt| !pt.metrics.contains_key("ipc")));
}

#[test]
fn bad_combinations_are_refused_before_anything_runs() {
    let mut backend = ReplayBackend::with_counts(COUNTS);
    let cap = pmu_capability();
    let run = |subject: Subject, f: &dyn Fn(&mut ProfileConfig), b: &mut ReplayBackend| {
        let mut cfg = n1_config();
        f(&mut cfg);
        profile::profile_subject(&subject, &cfg, b, &cap, &mut |_, _| {}).unwrap_err()
    };
    let cmd = || Subject::Command(Spec::new(["true"]));
    let me = std::process::id() as i32;
    let e = run(
        cmd(),
        &|c| c.interval = Some(Duration::from_millis(5)),
        &mut backend,
    );
    assert!(e.to_string().contains("below 10 ms"), "{e}");
    let e = run(
        cmd(),
        &|c| {
            c.interval = Some(Duration::from_millis(100));
            c.exact = true;
        },
        &mut backend,
    );
    assert!(e.to_string().contains("--interval needs one run"), "{e}");
    let e = run(Subject::Pid(me), &|c| c.exact = true, &mut backend);
    assert!(e.to_string().contains("cannot be run again"), "{e}");
    let e = run(
        cmd(),
        &|c| c.duration = Some(Duration::from_secs(1)),
        &mut backend,
    );
    assert!(e.to_string().contains("--timeout"), "{e}");
    let e = run(Subject::Pid(i32::MAX), &|_| {}, &mut backend);
    assert!(matches!(e, ProfileError::NoProcess(_)), "{e}");
    assert!(e.to_string().contains("no such process"), "{e}");
    assert_eq!(backend.opened, 0, "nothing was opened");
}

#[test]
fn a_refused_attachment_names_the_permission() {
    let mut backend = ReplayBackend::with_counts(&[]);
    for e in [
        "CPU_CYCLES",
        "INST_RETIRED",
        "TASK_CLOCK",
        "CONTEXT_SWITCHES",
        "CPU_MIGRATIONS",
        "PAGE_FAULTS",
        "STALL_FRONTEND",
        "STALL_BACKEND",
    ] {
        backend.events.insert(e.into(), Replay::Denied);
    }
    let mut cfg = n1_config();
    cfg.duration = Some(Duration::from_millis(50));
    let me = std::process::id() as i32;
    let e = profile::profile_subject(
        &Subject::Pid(me),
        &cfg,
        &mut backend,
        &pmu_capability(),
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(matches!(e, ProfileError::Denied(_)), "{e}");
    assert!(
        e.to_string()
            .contains(&format!("attaching to process {me}")),
        "{e}"
    );
    assert!(matches!(&backend.targets[0], Target::Threads(t) if t.contains(&me)));
    let e = profile::profile_subject(
        &Subject::AllCpus(None),
        &cfg,
        &mut backend,
        &pmu_capability(),
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("system-wide counting (--all-cpus) was refused"),
        "{e}"
    );
    assert!(e.to_string().contains("CAP_PERFMON"), "{e}");
}

#[test]
fn intervals_and_the_whole_run_list_the_rules_they_violate() {
    // More back-end stall cycles than cycles: a share above 100%, which no hardware
    // counts; each interval and the whole run say so, and the value stays as counted.
    let mut backend = ReplayBackend::with_counts(COUNTS);
    backend.events.insert(
        "STALL_BACKEND".into(),
        Replay::Count {
            value: 1_300_000_000,
            fraction: 1.0,
        },
    );
    backend.reads_to_full = 4;
    let mut cfg = n1_config();
    cfg.metrics = "ipc,frontend_stall_rate,backend_stall_rate".into();
    cfg.interval = Some(Duration::from_millis(30));
    let p = profile::profile_subject(
        &Subject::Command(Spec::new(["sleep", "0.2"])),
        &cfg,
        &mut backend,
        &pmu_capability(),
        &mut |_, _| {},
    )
    .unwrap();
    let prof = &p.profile;
    let rule = prof
        .consistency
        .iter()
        .find(|c| c.rule == "ratio-range")
        .expect("ratio rule checked");
    assert!(rule.violated(), "{rule:?}");
    assert_eq!(rule.actual, Some(1.3));
    assert_eq!(prof.metric("backend_stall_rate").unwrap().value, Some(1.3));
    assert!(
        rule.text.contains("backend_stall_rate = 130%"),
        "{}",
        rule.text
    );
    assert!(p.warnings.iter().any(|w| w.code == "pmu.inconsistent"));
    let t = &prof.timeline;
    for pt in &t[..4] {
        assert_eq!(pt.inconsistent, ["ratio-range"], "{pt:?}");
    }
    // After the whole count nothing is counted, so nothing is inconsistent.
    assert!(t[4..].iter().all(|pt| pt.inconsistent.is_empty()));
}
