//! Ctrl-C and SIGTERM in the steps that can run long (c2c structure inference in `c2c`
//! and `layout`, report rendering, the figures of a comparison, snapshot unpacking): each ends with exit 130 and its
//! message, leaving no half-written output or temporary copy behind; and `scale` ends,
//! its command's group gone, when its helper process is killed. No wall-clock assertion:
//! a generous bound only keeps a hung run from hanging the suite.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Starts the binary with `args`, output captured.
pub fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run numalab")
}

/// Whether process `pid` catches signal `sig` (its handler is installed): bit `sig - 1`
/// of `SigCgt` in /proc/PID/status.
fn catches(pid: u32, sig: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (sig - 1)) != 0)
}

/// Waits until `child` has its handler for `sig`, then `settle` more (it is at work),
/// sends `sig`, and collects its output; kills it if it is still running after a
/// generous bound (a hang fails the test instead of the suite).
pub fn signal_when_busy(child: Child, sig: i32, settle: Duration) -> Output {
    signal_when_busy_timed(child, sig, settle).0
}

/// [`signal_when_busy`], with the time from the signal to the end.
pub fn signal_when_busy_timed(mut child: Child, sig: i32, settle: Duration) -> (Output, Duration) {
    let pid = child.id();
    let start = Instant::now();
    while !catches(pid, sig) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "numalab never installed its signal handler"
        );
        assert!(child.try_wait().unwrap().is_none(), "numalab ended early");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(settle);
    assert!(
        child.try_wait().unwrap().is_none(),
        "numalab ended before the signal: make its work bigger"
    );
    // SAFETY: signalling our own child, which has not been waited for.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
    let signalled = Instant::now();
    let deadline = signalled + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("numalab did not stop within 120 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = signalled.elapsed();
    (child.wait_with_output().unwrap(), took)
}

/// A 2,000-CPU matrix in core-to-core-latency's CSV (lower triangle): SMT pairs, 8-core
/// clusters, two sockets, some scatter. About 6 MB; its inference takes far longer than
/// the test waits in a debug build.
fn big_matrix(path: &Path) {
    let n = 2000usize;
    let mut s = String::with_capacity(7 << 20);
    for i in 0..n {
        for j in 0..n {
            if j > 0 {
                s.push(',');
            }
            if j < i {
                let base = if i / 2 == j / 2 {
                    12.0
                } else if i / 8 == j / 8 {
                    40.0
                } else if i / 1000 == j / 1000 {
                    90.0
                } else {
                    180.0
                };
                let v = base * (1.0 + 0.001 * ((i * 31 + j * 17) % 50) as f64);
                s.push_str(&format!("{v:.1}"));
            }
        }
        s.push('\n');
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn c2c_inference_of_a_2000_cpu_matrix_stops_at_ctrl_c_and_sigterm() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("big.csv");
    big_matrix(&csv);
    let csv = csv.display().to_string();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let out = signal_when_busy(
            spawn(&["c2c", "--input", &csv]),
            sig,
            Duration::from_millis(500),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "signal {sig}: {stderr}");
        assert!(
            stderr.contains("interrupted (Ctrl-C, SIGTERM) while inferring the latency structure"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty(), "nothing half-done printed");
    }
}

/// `layout infer` (a mesh with fewer stops than CPUs: the c2c structure sizes the tiles)
/// and `layout affinity` infer the c2c structure of a 2,000-CPU matrix first: Ctrl-C
/// during it is exit 130 with nothing printed (issue 50: both ran on for 14-18 s).
#[test]
fn layout_inference_of_a_2000_cpu_matrix_stops_at_ctrl_c() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("big.csv");
    big_matrix(&csv);
    let csv = csv.display().to_string();
    for args in [
        vec!["layout", "infer", "--input", &csv, "--geometry", "25x40"],
        vec!["layout", "affinity", "--threads", "4", "--input", &csv],
    ] {
        let out = signal_when_busy(spawn(&args), libc::SIGINT, Duration::from_millis(500));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{args:?}: {stderr}");
        assert!(
            stderr.contains("interrupted (Ctrl-C, SIGTERM) while inferring the latency structure"),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: nothing half-done printed");
    }
}

/// A results.jsonl at `dir` holding `records` c2c matrices of 2,000 CPUs (the envelope
/// and record of the dual Xeon fixture, its matrix replaced): about 20 MB each.
fn big_bundle(dir: &Path, records: usize) {
    let fixture = crate::common::fixture_path("bundles", "c2c-dual-xeon-gold-6242/results.jsonl");
    let text = std::fs::read_to_string(fixture).unwrap();
    let mut lines = text.lines();
    let envelope = lines.next().unwrap();
    let mut record: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let n = 2000usize;
    let rows: Vec<Vec<Option<f64>>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    (i != j).then(|| {
                        let base = if i / 2 == j / 2 { 12.0 } else { 90.0 };
                        base + ((i * 31 + j * 17) % 50) as f64 * 0.1
                    })
                })
                .collect()
        })
        .collect();
    let data = &mut record["data"];
    data["cpus"] = serde_json::json!((0..n).collect::<Vec<_>>());
    data["matrix_ns"] = serde_json::json!(rows);
    data["groups"] = serde_json::json!([]);
    data["levels"] = serde_json::json!([]);
    std::fs::create_dir_all(dir).unwrap();
    let mut out = format!("{envelope}\n");
    for r in 0..records {
        record["key"] = serde_json::json!(format!("c2c/matrix/imported-{r}"));
        out.push_str(&serde_json::to_string(&record).unwrap());
        out.push('\n');
    }
    std::fs::write(dir.join("results.jsonl"), out).unwrap();
}

#[test]
fn an_interrupted_report_writes_nothing_at_o() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bundle");
    big_bundle(&bundle, 1);
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let report = out_dir.join("r.html");
    let out = signal_when_busy(
        spawn(&[
            "report",
            &bundle.display().to_string(),
            "-o",
            &report.display().to_string(),
        ]),
        libc::SIGINT,
        // At once: reading the 20 MB bundle alone outlasts the test's polling, so the
        // signal comes while reading or rendering (the checks between sections are
        // tested in numalab-report).
        Duration::ZERO,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    // Said for the step it stopped: reading the bundle (checked between records since
    // the journal index is bounded) or rendering the report.
    let reading = format!(
        "interrupted (Ctrl-C, SIGTERM) while reading {}; nothing was written",
        bundle.display()
    );
    let rendering = "interrupted (Ctrl-C, SIGTERM) while rendering the report; nothing was written";
    assert!(
        stderr.contains(&reading) || stderr.contains(rendering),
        "{stderr}"
    );
    assert!(!stderr.contains("wrote"), "{stderr}");
    // Neither the report nor a temporary file beside it.
    let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// SIGTERM while `compare` works on the figures of a 2,000-CPU matrix (1,999,000 pairs)
/// compared with itself: exit 130 within seconds, nothing at --output (issue 50: the
/// matrix's figures and each figure's bootstrap ran on to their end, 12 s and more).
#[test]
fn a_compare_of_a_2000_cpu_matrix_stops_at_sigterm() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bundle");
    big_bundle(&bundle, 1);
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let html = out_dir.join("c.html");
    let bundle_arg = bundle.display().to_string();
    let child = spawn(&[
        "compare",
        &bundle_arg,
        &bundle_arg,
        "--output",
        &html.display().to_string(),
    ]);
    // Into the reading of the second copy of the 20 MB journal, or the figures (the
    // whole comparison takes about 6 s in a debug build).
    let (out, after_signal) =
        signal_when_busy_timed(child, libc::SIGTERM, Duration::from_millis(1500));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let reading = format!(
        "interrupted (Ctrl-C, SIGTERM) while reading {}; nothing was written",
        bundle.display()
    );
    let comparing =
        "interrupted (Ctrl-C, SIGTERM) while comparing the bundles; nothing was written";
    assert!(
        stderr.contains(comparing) || stderr.contains(&reading),
        "{stderr}"
    );
    // Generous: the checks come every second or less; before, tens of seconds.
    assert!(
        after_signal < Duration::from_secs(10),
        "ended {after_signal:?} after the signal"
    );
    let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Writes a gzip-compressed tar archive of a snapshot folder `snap/` holding `files`
/// empty files (ustar headers written here; gzip by the system's `gzip`).
fn many_file_archive(path: &Path, files: usize) {
    fn header(name: &str, kind: u8) -> [u8; 512] {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        let mode: &[u8] = if kind == b'5' {
            b"0000755\0"
        } else {
            b"0000644\0"
        };
        h[100..108].copy_from_slice(mode);
        h[108..116].copy_from_slice(b"0000000\0");
        h[116..124].copy_from_slice(b"0000000\0");
        h[124..136].copy_from_slice(b"00000000000\0");
        h[136..148].copy_from_slice(b"00000000000\0");
        h[148..156].copy_from_slice(b"        ");
        h[156] = kind;
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        h
    }
    let mut tar = Vec::with_capacity((files + 8) * 512 + 1024);
    let mut dir = String::new();
    for part in ["snap/", "sys/", "devices/", "system/", "cpu/"] {
        dir.push_str(part);
        tar.extend_from_slice(&header(&dir, b'5'));
    }
    for i in 0..files {
        tar.extend_from_slice(&header(&format!("{dir}f{i}"), b'0'));
    }
    tar.extend_from_slice(&[0u8; 1024]);
    let mut gzip = Command::new("gzip")
        .arg("-1")
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(path).unwrap())
        .spawn()
        .expect("gzip");
    std::io::Write::write_all(gzip.stdin.as_mut().unwrap(), &tar).unwrap();
    drop(gzip.stdin.take());
    assert!(gzip.wait().unwrap().success());
}

/// SIGTERM while a snapshot archive is unpacked: exit 130, and its unpacked copy is
/// removed (TMPDIR points at a folder of the test's, so nothing else is looked at).
#[test]
fn an_interrupted_unpack_removes_its_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("snap.tar.gz");
    many_file_archive(&archive, 150_000);
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["topo", "--input", &archive.display().to_string()])
        .env("TMPDIR", &scratch)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = signal_when_busy(child, libc::SIGTERM, Duration::from_millis(1000));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted (Ctrl-C, SIGTERM) while unpacking the snapshot archive; its unpacked copy was removed"),
        "{stderr}"
    );
    let left: Vec<_> = std::fs::read_dir(&scratch).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Whether process `pid` runs (a zombie nobody reaped yet does not).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            .is_some_and(|st| st != "Z")
    })
}

/// The processes of group `pgid` that still run (zombies aside).
fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                let mut f = s.rsplit(')').next().unwrap_or("").split_whitespace();
                let state = f.next();
                let group = f.nth(1).and_then(|g| g.parse::<i32>().ok());
                state.is_some_and(|st| st != "Z") && group == Some(pgid)
            })
        })
        .collect()
}

/// The parent pid of `pid`.
fn parent_of(pid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Issue 50: SIGKILL of `scale`'s helper (the supervisor between numalab and the
/// command) left numalab waiting past --timeout on the pipes of the orphaned command.
/// numalab notices, kills the command's process group, and ends with the run described.
#[test]
fn scale_ends_when_its_helper_is_killed_and_its_command_group_goes_too() {
    let tmp = tempfile::tempdir().unwrap();
    let pidfile = tmp.path().join("cmd.pid");
    // Only the first run hangs (any later one ends at once); its shell and the sleep it
    // starts are the command's process group.
    let script = format!(
        "[ -e {p} ] && exit 0; echo $$ > {p}.tmp; mv {p}.tmp {p}; sleep 300",
        p = pidfile.display()
    );
    let mut child = spawn(&[
        "scale",
        "--threads",
        "1",
        "--repeat",
        "1",
        "--timeout",
        "60",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let start = Instant::now();
    let cmd: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(child.try_wait().unwrap().is_none(), "scale ended early");
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let helper = parent_of(cmd).expect("the command's parent");
    assert_ne!(helper as u32, child.id(), "the command runs under a helper");
    assert_eq!(
        parent_of(helper),
        Some(child.id() as i32),
        "the helper is numalab's child"
    );
    // SAFETY: killing the helper process of the numalab this test started.
    unsafe { libc::kill(helper, libc::SIGKILL) };
    // Well within --timeout (60 s) plus a margin; without the fix it waits for the sleep.
    let bound = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > bound {
            let _ = child.kill();
            // SAFETY: cleaning up the command's group this test started.
            unsafe { libc::kill(-cmd, libc::SIGKILL) };
            panic!("scale still ran 90 s after its helper was killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The group's members may take a moment to be reaped by init after their kill.
    let gone = Instant::now() + Duration::from_secs(10);
    while (running(cmd) || !group_members(cmd).is_empty()) && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors = group_members(cmd);
    if !survivors.is_empty() || running(cmd) {
        // SAFETY: cleaning up the command's group this test started.
        unsafe { libc::kill(-cmd, libc::SIGKILL) };
    }
    assert!(
        survivors.is_empty() && !running(cmd),
        "the command's group {cmd} outlived scale ({survivors:?}): {stderr}"
    );
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("helper process"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
