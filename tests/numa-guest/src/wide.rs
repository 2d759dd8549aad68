//! The wide guest's suite (issue 45): every numalab command once, as a user would run it,
//! on a machine of many CPUs (`--boot wide`: 2 sockets, 2 nodes; `n1-wide`: 4 nodes),
//! each step timed with its peak resident memory, the records it wrote and how much it
//! said on stderr.
//!
//! A step passes when numalab exits 0, or with one of the codes the step allows for a
//! documented reason (4: this machine cannot do it, such as counters in a guest without
//! a PMU; 5: some steps failed and the others produced results), which the table shows
//! with numalab's own sentence. Anything else (1, 2, 3, 6, a panic, running out of
//! memory, the step's time limit) fails it. The last check, `wide.summary`, prints the
//! table and exports it as `wide-steps.json` (docs/benchmarks.md, "numalab at 2 to 160
//! CPUs", is made of these).
//!
//! Peak RSS is numalab's own: the largest `VmHWM` of its `/proc/PID/status`, read as it
//! starts and every 50 ms until it exits (so growth in its last 50 ms can be missed).
//! Not `wait4`'s `ru_maxrss`: the kernel starts a child's figure from the memory of the
//! process that forked it (this harness, which holds every step's output: 38 MiB at 160
//! vCPUs, which every small step then reported as its own). The programs `scale` and
//! `policy` run are measured by numalab itself, in their records.

use crate::checks::{Check, CheckResult, Ctx};
use crate::layout::Layout;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the steps write their bundles in the guest.
pub const DIR: &str = "/tmp/wide";

/// What one step did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepStat {
    /// Step name (`evaluate.quick`).
    pub name: String,
    /// The numalab arguments.
    pub args: Vec<String>,
    /// Exit code (None: killed).
    pub exit: Option<i32>,
    /// For an allowed non-zero exit, numalab's last line on stderr (its reason).
    pub reason: Option<String>,
    /// Wall time, s.
    pub wall_s: f64,
    /// Peak resident memory, MiB (see the module docs).
    pub peak_rss_mib: f64,
    /// Records written (the `--json` bundle's, or the `--out` folder's journal).
    pub records: Option<usize>,
    /// Lines numalab wrote on stderr (warnings, progress).
    pub stderr_lines: usize,
}

/// The whole run, as exported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WideRun {
    /// Boot name.
    pub boot: String,
    /// CPUs of the guest.
    pub cpus: usize,
    /// NUMA nodes.
    pub nodes: usize,
    /// Memory of the guest, MiB.
    pub memory_mib: u64,
    /// The steps in order.
    pub steps: Vec<StepStat>,
}

/// What a measured command did.
#[derive(Debug, Clone)]
pub struct Ran {
    /// Exit code (None: killed by a signal).
    pub code: Option<i32>,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// Wall time, s.
    pub wall_s: f64,
    /// Peak RSS of the program itself (its largest `VmHWM` seen), KiB.
    pub max_rss_kib: u64,
    /// The time limit killed it.
    pub timed_out: bool,
}

/// Runs `exe ARGS` with a time limit (its process group is killed at the limit) and
/// measures its wall time and peak RSS.
pub fn run_measured(exe: &Path, args: &[String], timeout: Duration) -> Result<Ran, String> {
    use std::os::unix::process::CommandExt;
    let t0 = Instant::now();
    let mut child = Command::new(exe)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let pid = child.id() as libc::pid_t;
    // stdout whole; stderr line by line, each line also said on the console as it comes,
    // so that a long step (the quick evaluate takes minutes on 160 vCPUs) shows where
    // it is and a hang shows where it hung.
    let out_t = {
        let mut r = child.stdout.take().expect("piped");
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut r, &mut s);
            s
        })
    };
    let err_t = {
        let r = child.stderr.take().expect("piped");
        std::thread::spawn(move || {
            use std::io::BufRead;
            let mut s = String::new();
            for line in std::io::BufReader::new(r)
                .split(b'\n')
                .map_while(Result::ok)
            {
                let line = String::from_utf8_lossy(&line);
                println!("numa-guest:   | {line}");
                s.push_str(&line);
                s.push('\n');
            }
            s
        })
    };
    // The watchdog kills the group at the limit unless the child has exited (checked and
    // killed under one lock; the child is only reaped after `done` is set, so its pid
    // cannot have been reused when it is killed).
    let done = Arc::new(Mutex::new(false));
    let killed = Arc::new(Mutex::new(false));
    let hwm = Arc::new(std::sync::atomic::AtomicU64::new(
        vm_hwm_kib(pid).unwrap_or(0),
    ));
    let watchdog = {
        let (done, killed, hwm) = (done.clone(), killed.clone(), hwm.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + timeout;
            loop {
                std::thread::sleep(Duration::from_millis(50));
                let d = done.lock().unwrap_or_else(|p| p.into_inner());
                if *d {
                    return;
                }
                // Not reaped yet (`done` is false), so the pid is still the child's.
                if let Some(k) = vm_hwm_kib(pid) {
                    hwm.fetch_max(k, std::sync::atomic::Ordering::Relaxed);
                }
                if Instant::now() >= deadline {
                    // SAFETY: kill(2) on the child's process group, which is not reaped yet.
                    unsafe {
                        libc::kill(-pid, libc::SIGKILL);
                    }
                    *killed.lock().unwrap_or_else(|p| p.into_inner()) = true;
                    return;
                }
            }
        })
    };
    // Wait for the exit without reaping (the watchdog reads /proc/PID until `done`), then
    // reap.
    // SAFETY: waitid and waitpid on our own child with valid out-pointers.
    let status = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        while libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        ) != 0
        {
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break;
            }
        }
        *done.lock().unwrap_or_else(|p| p.into_inner()) = true;
        let mut status = 0;
        if libc::waitpid(pid, &mut status, 0) != pid {
            return Err(format!(
                "waitpid on {}: {}",
                exe.display(),
                std::io::Error::last_os_error()
            ));
        }
        status
    };
    let wall_s = t0.elapsed().as_secs_f64();
    let _ = watchdog.join();
    // The child was reaped by hand: std must not wait for it again.
    std::mem::forget(child);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let timed_out = *killed.lock().unwrap_or_else(|p| p.into_inner());
    Ok(Ran {
        code,
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
        wall_s,
        max_rss_kib: hwm.load(std::sync::atomic::Ordering::Relaxed),
        timed_out,
    })
}

/// A process's peak resident memory since its exec (`VmHWM`), KiB; None once it has
/// exited (a zombie has no memory map) or where /proc is not there.
fn vm_hwm_kib(pid: libc::pid_t) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line["VmHWM:".len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Records in a `--json` bundle on stdout, or in an `--out` folder's journal.
pub fn count_records(stdout: &str, out: Option<&Path>) -> Option<usize> {
    if let Some(dir) = out {
        let text = std::fs::read_to_string(dir.join("results.jsonl")).ok()?;
        return Some(
            text.lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter(|v| v.get("kind").is_some())
                .count(),
        );
    }
    let v: serde_json::Value = serde_json::from_str(stdout).ok()?;
    v.get("records")?.as_array().map(Vec::len)
}

/// One step of the suite.
pub struct Step {
    /// Name (`mem.bandwidth.matrix`).
    pub name: String,
    /// numalab's arguments.
    pub args: Vec<String>,
    /// The folder its `--out` writes (records are counted there).
    pub out: Option<PathBuf>,
    /// Non-zero exit codes allowed, for a documented reason.
    pub allowed: Vec<i32>,
    /// Time limit.
    pub timeout: Duration,
    /// What its stdout must show besides the exit code (the layout QEMU was given).
    pub expect: Option<StdoutCheck>,
}

/// A check of a step's stdout against the layout QEMU was given.
pub type StdoutCheck = fn(&Layout, &str) -> Result<(), String>;

/// `topo --json` must see every CPU and node QEMU was given.
fn topo_sees_the_layout(l: &Layout, stdout: &str) -> Result<(), String> {
    let v: serde_json::Value = serde_json::from_str(stdout).map_err(|e| e.to_string())?;
    let pus = v["summary"]["pus"].as_u64();
    let nodes = v["summary"]["numa_nodes"].as_u64();
    if pus != Some(l.cpu_count() as u64) || nodes != Some(l.nodes.len() as u64) {
        return Err(format!(
            "topo sees {pus:?} PUs and {nodes:?} nodes, QEMU was given {} and {}",
            l.cpu_count(),
            l.nodes.len()
        ));
    }
    Ok(())
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// 1, 2, 4, ... up to `n`, and `n`.
pub fn doubling(n: usize) -> String {
    let mut v = Vec::new();
    let mut t = 1;
    while t < n {
        v.push(t.to_string());
        t *= 2;
    }
    v.push(n.to_string());
    v.join(",")
}

/// The steps, in order, for a guest of this layout: their quick forms (short), or as a
/// user runs them (long, the full evaluate included).
pub fn steps(layout: &Layout, long: bool) -> Vec<Step> {
    let n = layout.cpu_count();
    let dir = |d: &str| format!("{DIR}/{d}");
    // Under TCG a step's time grows with the vCPUs (all of them on the host's few
    // cores): 10 minutes short, an hour long, per 32 vCPUs.
    let per_32 = if long { 3600 } else { 600 };
    let limit = Duration::from_secs(per_32 * n.div_ceil(32).max(1) as u64);
    let step = |name: &str, args: Vec<String>| Step {
        name: name.into(),
        args,
        out: None,
        allowed: Vec::new(),
        timeout: limit,
        expect: None,
    };
    let out = |name: &str, args: Vec<String>, d: &str| Step {
        out: Some(PathBuf::from(dir(d))),
        ..step(name, args)
    };
    // Short: the quick form where a command has one.
    let quick = |mut v: Vec<String>| {
        if !long {
            v.push("--quick".into());
        }
        v
    };
    let mib = if long { "64" } else { "16" };
    let touch = |hold: &str| {
        strings(&[
            "--",
            "numa-guest",
            "touch",
            "--mib",
            mib,
            "--threads",
            "{threads}",
            "--hold-ms",
            hold,
        ])
    };
    let mut scale = strings(&[
        "scale",
        "--threads",
        &doubling(n),
        "--repeat",
        "1",
        "--json",
    ]);
    scale.extend(touch("100"));
    let mut policy = strings(&[
        "policy",
        "--threads",
        &n.to_string(),
        "--repeat",
        "1",
        "--json",
    ]);
    policy.extend(touch("300"));
    let partial = |mut s: Step| {
        s.allowed = vec![5];
        s
    };
    let cannot = |mut s: Step| {
        s.allowed = vec![4];
        s
    };
    let c2c = if long {
        strings(&["c2c", "--json"])
    } else {
        strings(&[
            "c2c",
            "--pairs",
            "sampled",
            "--samples",
            "20",
            "--round-trips",
            "100",
            "--json",
        ])
    };
    let home = if long {
        strings(&["home", "map", "--json"])
    } else {
        strings(&["home", "map", "--bytes", "1MiB", "--repeats", "4", "--json"])
    };
    let mut model = strings(&[
        "model",
        "run",
        "neoverse-v1-64",
        "--experiment",
        "uniform",
        "--json",
    ]);
    if long {
        model.extend(strings(&["--engine", "check"]));
    }
    // The bundle the report renders and the second one compare reads (short: the quick
    // evaluate against itself, the one evaluate that runs).
    let main = if long { "full" } else { "quick" };
    let mut v = vec![
        Step {
            expect: Some(topo_sees_the_layout),
            ..step("topo", strings(&["topo", "--json"]))
        },
        step("doctor", strings(&["doctor", "--json"])),
        // Short: without its bandwidth step (at 32 vCPUs under TCG the quick evaluate
        // took 249 s with it, 88 s without), which `mem.bandwidth.matrix` runs on its
        // own below.
        partial(out(
            "evaluate.quick",
            if long {
                strings(&["evaluate", "--quick", "--out", &dir("quick")])
            } else {
                strings(&[
                    "evaluate",
                    "--quick",
                    "--skip",
                    "bandwidth",
                    "--out",
                    &dir("quick"),
                ])
            },
            "quick",
        )),
    ];
    if long {
        v.push(partial(out(
            "evaluate.full",
            strings(&["evaluate", "--out", &dir("full")]),
            "full",
        )));
    }
    v.extend([
        step("c2c", c2c),
        step(
            "mem.bandwidth.matrix",
            quick(strings(&["mem", "bandwidth", "--matrix", "--json"])),
        ),
        step(
            "mem.latency.matrix",
            quick(strings(&["mem", "latency", "--matrix", "--json"])),
        ),
        step("mem.loaded", quick(strings(&["mem", "loaded", "--json"]))),
        step("mem.migrate", quick(strings(&["mem", "migrate", "--json"]))),
        step("scale", scale),
        step("policy", policy),
    ]);
    // profile --all-cpus opens counters on every CPU (the kernel's cross-CPU calls):
    // under TCG the guest's kernel has hung there, a soft lockup of numalab's thread in
    // the kernel while a vCPU's timer never fired (RCU: "timer wakeup didn't happen"),
    // at 160 vCPUs (stop 54) and once at 32 vCPUs in CI (2026-12-06; the rerun of the
    // same tree took 2.0 s). An emulator stall is no verdict on numalab, so CI's short
    // run leaves it to the long run and to the Arm guest (arm.profile.all-cpus, 4 vCPUs).
    if long {
        v.push(cannot(step(
            "profile.all-cpus",
            strings(&["profile", "--all-cpus", "--duration", "1s", "--json"]),
        )));
    }
    v.extend([
        step("home.map", home),
        step("model.run", model),
        step(
            "report",
            strings(&["report", &dir(main), "--output", &dir("report.html")]),
        ),
        step(
            "compare",
            strings(&[
                "compare",
                &dir("quick"),
                &dir(main),
                "--output",
                &dir("compare.html"),
            ]),
        ),
    ]);
    v
}

/// The last line of a text (numalab's reason for a non-zero exit).
fn last_line(s: &str) -> Option<String> {
    s.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

fn stats() -> &'static Mutex<Vec<StepStat>> {
    static STATS: Mutex<Vec<StepStat>> = Mutex::new(Vec::new());
    &STATS
}

fn run_step(ctx: &Ctx, s: &Step) -> CheckResult {
    std::fs::create_dir_all(DIR).map_err(|e| format!("{DIR}: {e}"))?;
    let ran = run_measured(&ctx.numalab, &s.args, s.timeout)?;
    let cmd = format!("numalab {}", s.args.join(" "));
    let ok = ran.code == Some(0) || ran.code.is_some_and(|c| s.allowed.contains(&c));
    let stat = StepStat {
        name: s.name.clone(),
        args: s.args.clone(),
        exit: ran.code,
        reason: (ran.code != Some(0))
            .then(|| last_line(&ran.stderr))
            .flatten(),
        wall_s: ran.wall_s,
        peak_rss_mib: ran.max_rss_kib as f64 / 1024.0,
        records: count_records(&ran.stdout, s.out.as_deref()),
        stderr_lines: ran.stderr.lines().count(),
    };
    stats()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(stat.clone());
    let seen = format!(
        "{:.1} s, peak RSS {:.0} MiB, {} records, {} stderr lines, exit {}",
        stat.wall_s,
        stat.peak_rss_mib,
        stat.records.map_or("no".into(), |r| r.to_string()),
        stat.stderr_lines,
        stat.exit.map_or("none (killed)".into(), |c| c.to_string())
    );
    if ran.timed_out {
        return Err(format!(
            "`{cmd}` ran over its {} s limit and was killed ({seen})",
            s.timeout.as_secs()
        ));
    }
    if !ok {
        let tail: String = ran
            .stderr
            .lines()
            .rev()
            .take(8)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        return Err(format!("`{cmd}`: {seen}; stderr ends:\n{tail}"));
    }
    if let (Some(f), Some(0)) = (s.expect, ran.code) {
        f(&ctx.layout, &ran.stdout).map_err(|e| format!("`{cmd}`: {e}"))?;
    }
    Ok(match &stat.reason {
        Some(r) => format!("`{cmd}`: {seen}: {r}"),
        None => format!("`{cmd}`: {seen}"),
    })
}

/// The table of the steps (a Markdown table, as docs/benchmarks.md has it).
pub fn table(run: &WideRun) -> String {
    let mut t = format!(
        "{} CPUs, {} nodes, {} MiB ({})\n\n| step | exit | wall s | peak RSS MiB | records | stderr lines |\n|---|---|---|---|---|---|\n",
        run.cpus, run.nodes, run.memory_mib, run.boot
    );
    for s in &run.steps {
        t.push_str(&format!(
            "| {} | {} | {:.1} | {:.0} | {} | {} |\n",
            s.name,
            s.exit.map_or("killed".into(), |c| c.to_string()),
            s.wall_s,
            s.peak_rss_mib,
            s.records.map_or("-".into(), |r| r.to_string()),
            s.stderr_lines
        ));
    }
    t
}

/// The wide suite: the kernel's view of the layout, numalab's, then every step and the
/// summary.
pub fn plan(layout: &Layout, long: bool) -> Vec<Check> {
    let mut v = vec![
        Check::new("guest.sysfs", crate::checks::check_sysfs),
        Check::new("topo.machine", |ctx: &Ctx| {
            crate::checks::compare_machine(&ctx.layout, ctx.machine()?)
        }),
    ];
    for s in steps(layout, long) {
        v.push(Check::new(format!("wide.{}", s.name), move |ctx: &Ctx| {
            run_step(ctx, &s)
        }));
    }
    v.push(Check::new("wide.summary", |ctx: &Ctx| {
        let run = WideRun {
            boot: ctx.boot.name.clone(),
            cpus: ctx.layout.cpu_count(),
            nodes: ctx.layout.nodes.len(),
            memory_mib: ctx.layout.memory_mib(),
            steps: stats().lock().unwrap_or_else(|p| p.into_inner()).clone(),
        };
        let json = serde_json::to_vec_pretty(&run).map_err(|e| e.to_string())?;
        ctx.export("wide-steps.json", json);
        Ok(table(&run))
    }));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout_ms: u64) -> Ran {
        run_measured(
            Path::new("/bin/sh"),
            &strings(&["-c", script]),
            Duration::from_millis(timeout_ms),
        )
        .unwrap()
    }

    #[test]
    fn a_command_is_timed_and_its_memory_and_exit_read() {
        let r = sh("echo out; echo err >&2; sleep 0.2; exit 3", 20_000);
        assert_eq!(r.code, Some(3));
        assert_eq!(r.stdout, "out\n");
        assert_eq!(r.stderr, "err\n");
        assert!(!r.timed_out);
        assert!(r.max_rss_kib > 0, "{}", r.max_rss_kib);
        assert!(r.wall_s > 0.0);
    }

    /// The peak is the program's own, not the harness's: a harness holding 256 MiB that
    /// starts a small shell reports the shell's few MiB (`wait4`'s `ru_maxrss` would say
    /// 256 MiB: the kernel counts the forked copy), and a shell that grows to 32 MiB is
    /// seen at least that large.
    #[test]
    fn the_peak_is_the_programs_own_not_the_harnesss() {
        let held = vec![1u8; 256 << 20];
        std::hint::black_box(&held);
        let small = sh("sleep 0.2", 20_000);
        assert!(
            small.max_rss_kib > 0 && small.max_rss_kib < 64 << 10,
            "{}",
            small.max_rss_kib
        );
        drop(held);
        // The shell itself holds 32 MiB (a variable), then waits.
        let big = sh(
            "x=$(head -c 33554432 /dev/zero | tr '\\0' a); sleep 0.3; echo ${#x}",
            60_000,
        );
        assert_eq!(big.stdout.trim(), "33554432", "{}", big.stderr);
        assert!(big.max_rss_kib >= 32 << 10, "{}", big.max_rss_kib);
    }

    #[test]
    fn the_time_limit_kills_the_whole_group() {
        // The shell's child would keep stdout open for 30 s if only the shell were killed.
        let r = sh("sleep 30 & sleep 30", 300);
        assert!(r.timed_out);
        assert_eq!(r.code, None);
        assert!(r.wall_s < 20.0, "{}", r.wall_s);
    }

    #[test]
    fn records_are_counted_from_the_bundle_or_the_journal() {
        assert_eq!(
            count_records(
                r#"{"envelope":{},"records":[{"kind":"a"},{"kind":"b"}]}"#,
                None
            ),
            Some(2)
        );
        assert_eq!(count_records("not json", None), None);
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("results.jsonl"),
            "{\"tool\":\"numalab\"}\n{\"kind\":\"a\"}\n{\"kind\":\"b\"}\n{\"kind\":\"c\"}\n",
        )
        .unwrap();
        assert_eq!(count_records("", Some(d.path())), Some(3));
    }

    #[test]
    fn every_step_has_a_unique_name_and_scale_reaches_every_cpu() {
        let l = Layout::wide(160, 1, 1536, 20).unwrap();
        let s = steps(&l, true);
        let mut names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), s.len());
        assert_eq!(doubling(160), "1,2,4,8,16,32,64,128,160");
        assert_eq!(doubling(1), "1");
        let scale = s.iter().find(|s| s.name == "scale").unwrap();
        assert!(scale.args.contains(&"1,2,4,8,16,32,64,128,160".to_string()));
        let policy = s.iter().find(|s| s.name == "policy").unwrap();
        assert!(policy.args.windows(2).any(|w| w == ["--threads", "160"]));
        assert!(names.contains(&"evaluate.full"));
        // Limits grow with the vCPUs: an hour (long) or 10 minutes (short) per 32.
        assert_eq!(s[0].timeout, Duration::from_secs(5 * 3600));
        let small = Layout::wide(4, 1, 64, 20).unwrap();
        assert_eq!(steps(&small, false)[0].timeout, Duration::from_secs(600));
        // Short: no full evaluate, the quick forms, the report of the quick bundle.
        let short = steps(&l, false);
        assert!(short.iter().all(|s| s.name != "evaluate.full"));
        // profile --all-cpus: long only (TCG's stalls in cross-CPU calls, see steps).
        assert!(names.contains(&"profile.all-cpus"));
        assert!(short.iter().all(|s| s.name != "profile.all-cpus"));
        let bw = short
            .iter()
            .find(|s| s.name == "mem.bandwidth.matrix")
            .unwrap();
        assert!(bw.args.contains(&"--quick".to_string()));
        let report = short.iter().find(|s| s.name == "report").unwrap();
        assert_eq!(report.args[1], format!("{DIR}/quick"));
    }

    #[test]
    fn topo_must_see_every_cpu_and_node() {
        let l = Layout::wide(4, 1, 64, 20).unwrap();
        let doc =
            |pus: u32, nodes: u32| format!(r#"{{"summary":{{"pus":{pus},"numa_nodes":{nodes}}}}}"#);
        topo_sees_the_layout(&l, &doc(4, 2)).unwrap();
        let e = topo_sees_the_layout(&l, &doc(3, 2)).unwrap_err();
        assert!(e.contains("Some(3) PUs"), "{e}");
        assert!(topo_sees_the_layout(&l, &doc(4, 1)).is_err());
        assert!(topo_sees_the_layout(&l, "no json").is_err());
    }

    #[test]
    fn the_table_has_a_row_per_step() {
        let run = WideRun {
            boot: "wide".into(),
            cpus: 32,
            nodes: 2,
            memory_mib: 3072,
            steps: vec![StepStat {
                name: "topo".into(),
                args: vec!["topo".into()],
                exit: Some(0),
                reason: None,
                wall_s: 0.26,
                peak_rss_mib: 12.4,
                records: Some(1),
                stderr_lines: 0,
            }],
        };
        let t = table(&run);
        assert!(t.starts_with("32 CPUs, 2 nodes, 3072 MiB (wide)"), "{t}");
        assert!(t.contains("| topo | 0 | 0.3 | 12 | 1 | 0 |"), "{t}");
    }
}
