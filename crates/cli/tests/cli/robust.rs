//! Bad input of every class, as a user or a script gives it: special files and
//! oversized inputs, paths that are not UTF-8, control characters bound for the
//! terminal, report files, and the exit-code table against the commands that produce
//! each code.

use crate::common::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output};

fn run_os(args: &[&OsStr], env: &[(&str, &str)], dir: &Path) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_numalab"));
    c.args(args).env("NO_COLOR", "1").current_dir(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run numalab")
}

fn no_panic(what: &str, o: &Output) {
    let e = stderr(o);
    assert!(!e.contains("panicked"), "{what}: {e}");
    assert!(
        !matches!(o.status.code(), Some(101) | Some(134) | None),
        "{what}: exit {:?}: {e}",
        o.status.code()
    );
}

#[test]
fn the_exit_code_table_is_one_and_the_readme_agrees() {
    let help = stdout(&numalab(&["--help"]));
    let table: Vec<(String, String)> = help
        .lines()
        .skip_while(|l| !l.starts_with("Exit codes:"))
        .skip(1)
        .filter_map(|l| {
            let l = l.trim();
            let (code, meaning) = l.split_once(char::is_whitespace)?;
            Some((code.to_string(), meaning.trim().to_string()))
        })
        .collect();
    assert!(table.len() >= 9, "{help}");
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    for (code, meaning) in &table {
        let row = format!("| {code} | {meaning} |");
        assert!(readme.contains(&row), "README lacks {row}");
    }
}

#[test]
fn every_exit_code_comes_from_a_command_that_produces_it() {
    let dir = tempfile::tempdir().unwrap();
    // 1: every run of a study failed (not "partial").
    refused(
        &["scale", "--threads", "1", "--repeat", "1", "--", "false"],
        1,
        "every run failed (1 of 1)",
    );
    // 2: a bad command line.
    refused(&["topo", "--bogus"], 2, "unexpected argument");
    // 3: a missing input.
    refused(
        &["topo", "--input", "/nonexistent/topo.xml"],
        3,
        "no such file or folder",
    );
    // 4 on a machine without a hardware PMU (this one), 0 with one.
    let o = numalab(&["profile", "--", "true"]);
    no_panic("profile", &o);
    if stderr(&o).contains("not one hardware event could be counted") {
        assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    } else {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    // 5: some runs failed, others measured.
    refused(
        &[
            "scale",
            "--threads",
            "1,2",
            "--repeat",
            "1",
            "--",
            "sh",
            "-c",
            "test {threads} = 1",
        ],
        5,
        "1 of 2 run(s) failed",
    );
    // 6: another process holds the --out folder's journal.
    let out = dir.path().join("busy");
    std::fs::create_dir_all(&out).unwrap();
    let held = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out.join("results.jsonl"))
        .unwrap();
    held.try_lock().unwrap();
    refused(
        &[
            "scale",
            "--threads",
            "1",
            "--repeat",
            "1",
            "--out",
            p(&out),
            "--",
            "true",
        ],
        6,
        "another numalab process is writing this journal",
    );
    // The same lock, the same code: evaluate --fresh does not move a journal another
    // process is writing (it was exit 2 here, 6 for the journal itself).
    std::fs::write(out.join("summary.json"), "{}").unwrap();
    refused(
        &["evaluate", "--quick", "--fresh", "--out", p(&out)],
        6,
        "another numalab process is writing it",
    );
    // And a fleet folder another `fleet run` holds.
    let fleet = dir.path().join("fleet");
    std::fs::create_dir_all(&fleet).unwrap();
    let fleet_lock = std::fs::File::create(fleet.join(".lock")).unwrap();
    fleet_lock.try_lock().unwrap();
    refused(
        &["fleet", "run", "--nodes", "n1", "--fleet", p(&fleet)],
        6,
        "another `numalab fleet run` is writing it",
    );
    drop(fleet_lock);
    drop(held);
    // An --out that is a file is a usage error with the remedy, not "File exists".
    let f = dir.path().join("f");
    std::fs::write(&f, "").unwrap();
    refused(
        &[
            "scale",
            "--threads",
            "1",
            "--repeat",
            "1",
            "--out",
            p(&f),
            "--",
            "true",
        ],
        2,
        "this is a file, not a folder; give --out a folder",
    );
}

#[test]
fn special_files_and_oversized_inputs_are_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(p(&fifo)).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for special in ["/dev/zero", "/dev/urandom", p(&fifo)] {
        let kind = if special == p(&fifo) {
            "a FIFO"
        } else {
            "a device"
        };
        for args in [
            vec!["topo", "--input", special],
            vec!["c2c", "--input", special],
            vec!["profile", "--import", special],
            vec!["schedule", "--mix", special],
            vec!["report", special],
        ] {
            let o = refused(&args, 3, kind);
            assert!(stderr(&o).len() < 2000, "{args:?}: a short message");
        }
    }
    // A file over the limit, with the limit and the way to raise it.
    let csv = fixture("c2c", "amd-epyc-7773x.csv");
    let o = run_os(
        &[OsStr::new("c2c"), OsStr::new("--input"), OsStr::new(&csv)],
        &[("NUMALAB_MAX_INPUT", "1KiB")],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("larger than the 1 KiB allowed for a core-to-core CSV matrix")
            && stderr(&o).contains("NUMALAB_MAX_INPUT="),
        "{}",
        stderr(&o)
    );
    // A decompression bomb: 300 MiB of zeros in a small archive.
    let big = dir.path().join("sys/devices/system/zeros");
    std::fs::create_dir_all(big.parent().unwrap()).unwrap();
    std::fs::File::create(&big)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    let tgz = dir.path().join("bomb.tar.gz");
    let st = Command::new("tar")
        .args(["czf", p(&tgz), "-C", p(dir.path()), "sys"])
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::remove_file(&big).unwrap();
    refused(
        &["topo", "--input", p(&tgz)],
        3,
        "the archive unpacks to more than 256 MiB",
    );
}

#[test]
fn paths_that_are_not_utf8_never_panic_and_are_recorded_losslessly() {
    let dir = tempfile::tempdir().unwrap();
    let bad = OsStr::from_bytes(b"q\xff");
    let s = |x: &'static str| OsStr::new(x);
    let cases: Vec<Vec<&OsStr>> = vec![
        vec![
            s("scale"),
            s("--threads"),
            s("1"),
            s("--repeat"),
            s("1"),
            s("--out"),
            bad,
            s("--"),
            s("true"),
        ],
        vec![s("c2c"), s("--input"), bad],
        vec![s("schedule"), s("--mix"), bad],
        vec![s("profile"), s("--import"), bad],
        vec![s("report"), bad],
        vec![s("topo"), s("--input"), bad],
    ];
    for args in &cases {
        let o = run_os(args, &[], dir.path());
        no_panic(&format!("{args:?}"), &o);
    }
    // The scale run wrote its journal into the folder named by those bytes, and its
    // envelope records the argument escaped, so the bytes can be recovered.
    let journal = std::fs::read_to_string(dir.path().join(bad).join("results.jsonl")).unwrap();
    assert!(
        journal.contains(r#""q\\xff""#),
        "{}",
        &journal[..300.min(journal.len())]
    );
}

#[test]
fn control_characters_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture_path("bundles", "vm-quick-run-1").join("results.jsonl");
    let text = std::fs::read_to_string(src).unwrap();
    // A host name with ESC (clear screen) and BEL, as a hostile or broken host gives it.
    let evil = text.replace(r#""hostname":"vm""#, r#""hostname":"vm\u001b[2J\u0007""#);
    assert_ne!(evil, text);
    let b = dir.path().join("evil");
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(b.join("results.jsonl"), evil).unwrap();
    for format in ["markdown", "terminal", "csv"] {
        let o = numalab(&["report", p(&b), "--format", format]);
        assert_ok(&o);
        assert!(
            !o.stdout.iter().any(|&c| c == 0x1b || c == 0x07),
            "{format}: a control character reached the output"
        );
        if format != "csv" {
            assert!(stdout(&o).contains(r"vm\x1b[2J\x07"), "{format}");
        }
    }
}

#[test]
fn report_files_are_checked_named_and_written_whole() {
    let dir = tempfile::tempdir().unwrap();
    let b = fixture("bundles", "vm-quick-run-1");
    refused(
        &["report", &b, "-o", p(&dir.path().join("r.pdf"))],
        2,
        "numalab writes .html, .md, .csv, .json or .txt",
    );
    refused(
        &["report", &b, "-o", "/nonexistent/dir/r.html"],
        1,
        "the folder /nonexistent/dir does not exist; create it or choose another -o path",
    );
    let r = dir.path().join("r.md");
    std::fs::write(&r, "old").unwrap();
    assert_ok(&numalab(&["report", &b, "-o", p(&r)]));
    let md = std::fs::read_to_string(&r).unwrap();
    assert!(
        md.starts_with("# ") && md.contains("## Findings"),
        "{}",
        &md[..100]
    );
    // Written through a temporary file renamed into place: nothing else is left.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["r.md".to_string()]);
}

#[test]
fn bad_input_is_quoted_in_short_excerpts_and_random_csv_is_not_perf_output() {
    let dir = tempfile::tempdir().unwrap();
    let one_line = dir.path().join("one-line.txt");
    std::fs::write(&one_line, "x".repeat(5_000_000)).unwrap();
    let o = refused(&["profile", "--import", p(&one_line)], 3, "more characters");
    assert!(
        stderr(&o).len() < 1000,
        "{} bytes of error",
        stderr(&o).len()
    );
    // Numbers in every field: a CSV, but not what perf writes.
    let csv = dir.path().join("random.csv");
    let rows: Vec<String> = (0..20)
        .map(|i| format!("{}.5,{}.25,{}.125,0.5,7,8", i, i + 1, i + 2))
        .collect();
    std::fs::write(&csv, rows.join("\n")).unwrap();
    // (the first number is taken for an interval timestamp, as `perf stat -I` writes)
    refused(
        &["profile", "--import", p(&csv)],
        3,
        "line 1: the third field \"0.5\" is not an event name",
    );
}

#[test]
fn model_sizes_are_checked_against_memory_before_allocating() {
    // 128x128 stops: 2.7e8 routes, hundreds of GB; refused with the estimate, the
    // memory available and the largest mesh that fits, instead of aborting.
    let o = refused(
        &[
            "model",
            "run",
            "mesh",
            "--set",
            "noc.rows=128",
            "--set",
            "noc.cols=128",
            "--experiment",
            "uniform",
        ],
        2,
        "routes between stop pairs, more than half of the",
    );
    let e = stderr(&o);
    assert!(
        e.contains("needs about") && e.contains("use a mesh of at most about"),
        "{e}"
    );
}

#[test]
fn report_on_a_terminal_without_o_writes_the_page_into_the_bundle() {
    // `script` gives the command a terminal, as a user typing it has.
    if Command::new("script").arg("--version").output().is_err() {
        panic!("`script` (util-linux) is needed by this test: apt-get install bsdutils");
    }
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("bundle");
    std::fs::create_dir_all(&b).unwrap();
    std::fs::copy(
        fixture_path("bundles", "vm-quick-run-1").join("results.jsonl"),
        b.join("results.jsonl"),
    )
    .unwrap();
    let cmd = format!("{} report {}", env!("CARGO_BIN_EXE_numalab"), p(&b));
    let o = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let text = stdout(&o);
    assert!(o.status.success(), "{text}");
    // Not megabytes of HTML on the terminal: the page is in the bundle, and its path said.
    assert!(text.len() < 1000, "{} bytes on the terminal", text.len());
    assert!(
        text.contains(&format!("wrote {}", p(&b.join("report.html")))),
        "{text}"
    );
    let html = std::fs::read_to_string(b.join("report.html")).unwrap();
    assert!(html.to_ascii_lowercase().starts_with("<!doctype html"));
    // Piped, the page goes to stdout as before.
    let o = numalab(&["report", p(&b)]);
    assert!(stdout(&o)
        .to_ascii_lowercase()
        .starts_with("<!doctype html"));
}

/// Regressions of the edge campaign on 240166b (issue 50): each used to panic (exit
/// 101) or to exit 0 with its output lost.
#[test]
fn a_full_stdout_and_huge_option_values_end_in_documented_codes() {
    let full = |args: &[&str]| {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        Command::new(env!("CARGO_BIN_EXE_numalab"))
            .args(args)
            .env("NO_COLOR", "1")
            .stdout(f)
            .output()
            .unwrap()
    };
    let bundle = fixture_path("bundles", "vm-evaluate");
    let csv = fixture_path("c2c", "amd-epyc-7773x.csv");
    for args in [
        vec!["topo", "--json"],
        vec!["topo"],
        vec!["report", p(&bundle), "--format", "markdown"],
        vec!["compare", p(&bundle), p(&bundle)],
        vec!["c2c", "--input", p(&csv), "--json"],
    ] {
        let o = full(&args);
        no_panic(&format!("{args:?} > /dev/full"), &o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("standard output") && e.contains("the disk is full"),
            "{args:?}: {e}"
        );
        assert!(!e.contains("os error"), "{args:?}: {e}");
    }
    // Timeouts past what a deadline can hold are refused as usage errors.
    for t in ["1e308", "1e300", "inf", "NaN", "-1", "0"] {
        let o = numalab(&["scale", "--threads", "1", "--timeout", t, "--", "true"]);
        no_panic(&format!("scale --timeout {t}"), &o);
        assert_eq!(o.status.code(), Some(2), "--timeout {t}: {}", stderr(&o));
        assert!(stderr(&o).len() < 300, "{}", stderr(&o));
    }
    // A line count no buffer holds: refused before the trial, not a capacity overflow.
    let o = numalab(&[
        "home",
        "bench",
        "--model",
        "mesh",
        "--lines",
        "18446744073709551615",
    ]);
    no_panic("home bench --lines u64::MAX", &o);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("more lines than the model's buffer holds"),
        "{}",
        stderr(&o)
    );
}

/// Option values past what numalab can hold or wait for (issue 50, item 2): each was a
/// panic (exit 101: a deadline overflowed, a buffer's capacity, a multiplication);
/// each is now a usage error naming the flag and its bound.
#[test]
fn option_values_past_their_bounds_are_usage_errors() {
    let max = "18446744073709551615";
    for (args, text) in [
        (
            vec![
                "fleet",
                "node",
                "--node",
                "n1",
                "--timeout",
                "500000000000y",
                "--",
                "topo",
            ],
            "longer than 365 days",
        ),
        (
            vec!["profile", "--timeout", "400days", "--", "true"],
            "longer than 365 days",
        ),
        (
            vec![
                "fleet",
                "run",
                "--fleet",
                "f",
                "--timeout",
                max,
                "--",
                "topo",
            ],
            "is not a duration",
        ),
        (
            vec!["scale", "--repeat", max, "--", "true"],
            "at most 1000000 runs per point",
        ),
        (
            vec!["layout", "groundtruth", "--preset", "mesh", "--trials", max],
            "at most 1000000",
        ),
        (
            vec![
                "layout",
                "groundtruth",
                "--preset",
                "mesh",
                "--restarts",
                max,
            ],
            "at most 1000000",
        ),
        (
            vec!["mem", "latency", "--matrix", "--batches", max],
            "at most 1000000",
        ),
        (
            vec!["mem", "bandwidth", "--size", max],
            "--size: \"18446744073709551615\" is larger than 1 PiB",
        ),
        (
            vec!["mem", "latency", "--max", max],
            "--max: \"18446744073709551615\" is larger than 1 PiB",
        ),
    ] {
        let o = numalab(&args);
        no_panic(&format!("{args:?}"), &o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(text), "{args:?}: {}", stderr(&o));
    }
}

/// A history that does not exist yet is read as an empty one: nothing is created next
/// to the path a read-only command was given (issue 50, item 1).
#[test]
fn reading_a_missing_history_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none.sqlite");
    for cmd in ["runs", "query"] {
        let o = numalab(&["db", "--db", p(&db), cmd]);
        assert_eq!(o.status.code(), Some(0), "{cmd}: {}", stderr(&o));
        assert!(stdout(&o).contains(" match;"), "{cmd}: {}", stdout(&o));
    }
    // As for an empty history file: nothing to compare.
    refused(
        &["db", "--db", p(&db), "regressions"],
        3,
        "the history holds no run",
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Topology inputs hwloc cannot survive, or that would read something else than the
/// snapshot: exit 3 with the reason, quickly, never a crash (exit 139 or 134), a hang,
/// or this machine's files described as the other machine (issue 50, items 3, 5 and 9).
#[test]
fn topology_inputs_hwloc_cannot_survive_end_in_exit_3() {
    // Six unpacked snapshots of 34 MB in small files: on tmpfs where there is one (8 s of
    // file creation each on this VM's disk, a tenth of that in memory).
    let dir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    let topo = |input: &Path| {
        let o = run_os(
            &[OsStr::new("topo"), OsStr::new("--input"), input.as_os_str()],
            &[],
            dir.path(),
        );
        no_panic(&format!("topo --input {}", input.display()), &o);
        o
    };
    // Machine with a PU and a NUMA node of the same cpuset: SIGSEGV inside hwloc 2.9.
    let xml = dir.path().join("crash.xml");
    std::fs::write(
        &xml,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\">\n<object type=\"PU\" os_index=\"0\" cpuset=\"0x1\"/>\n<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x1\"/>\n</object>\n</topology>\n",
    )
    .unwrap();
    let o = topo(&xml);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("hwloc crashed reading it"),
        "{}",
        stderr(&o)
    );
    // c2c --topology loads the same way.
    let csv = fixture_path("c2c", "amd-epyc-7773x.csv");
    let o = run_os(
        &[
            OsStr::new("c2c"),
            OsStr::new("--input"),
            csv.as_os_str(),
            OsStr::new("--topology"),
            xml.as_os_str(),
        ],
        &[],
        dir.path(),
    );
    no_panic("c2c --topology crash.xml", &o);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    // A snapshot unpacked from a fixture, then damaged one way at a time.
    let archive = fixture_path("topology", "128arm-2pa2n8cluster4co.tar.bz2");
    let fresh = |name: &str| -> std::path::PathBuf {
        let d = dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        let st = Command::new("tar")
            .arg("xjf")
            .arg(&archive)
            .arg("-C")
            .arg(&d)
            .status()
            .unwrap();
        assert!(st.success());
        d.join("128arm-2pa2n8cluster4co")
    };
    let ok = fresh("ok");
    assert_eq!(
        topo(&ok).status.code(),
        Some(0),
        "the undamaged snapshot loads"
    );
    // Each damage, on a fresh copy: exit 3 and the words that name it.
    let refused = |name: &str, damage: &dyn Fn(&Path), words: &str| {
        let s = fresh(name);
        damage(&s);
        let o = topo(&s);
        assert_eq!(o.status.code(), Some(3), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(words), "{name}: {}", stderr(&o));
    };
    let online = "sys/devices/system/cpu/online";
    let mkfifo = |p: &Path| assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
    // sys/devices/system/node pointing back at sys: hwloc's assertion (SIGABRT).
    refused(
        "node-loop",
        &|s| {
            let node = s.join("sys/devices/system/node");
            std::fs::remove_dir_all(&node).unwrap();
            std::os::unix::fs::symlink("../../../sys", &node).unwrap();
        },
        "hwloc crashed",
    );
    // A FIFO where a file should be: refused before hwloc blocks on it.
    refused(
        "fifo",
        &|s| {
            std::fs::remove_file(s.join(online)).unwrap();
            mkfifo(&s.join(online));
        },
        "a FIFO",
    );
    // An absolute link reads this machine's file: refused.
    refused(
        "absolute",
        &|s| {
            std::fs::remove_file(s.join(online)).unwrap();
            std::os::unix::fs::symlink("/sys/devices/system/cpu/online", s.join(online)).unwrap();
        },
        "outside the snapshot",
    );
    // cpu0 a link to itself: a loop, refused by name (it once described this host).
    refused(
        "loop",
        &|s| {
            let cpu0 = s.join("sys/devices/system/cpu/cpu0");
            std::fs::remove_dir_all(&cpu0).unwrap();
            std::os::unix::fs::symlink("cpu0", &cpu0).unwrap();
        },
        "loops",
    );
    // An archive holding a FIFO entry: refused while unpacking.
    let s = fresh("fifo-archive");
    std::fs::remove_file(s.join(online)).unwrap();
    mkfifo(&s.join(online));
    let tarball = dir.path().join("fifo.tar.gz");
    let st = Command::new("tar")
        .arg("czf")
        .arg(&tarball)
        .arg("-C")
        .arg(s.parent().unwrap())
        .arg("128arm-2pa2n8cluster4co")
        .status()
        .unwrap();
    assert!(st.success());
    let o = topo(&tarball);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("FIFO"), "{}", stderr(&o));
}

/// Runs numalab and kills it after `secs`: a read that hangs fails the test instead of
/// hanging it.
fn run_within(args: &[&OsStr], secs: u64) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("REDFISH_USERNAME", "admin")
        .env("REDFISH_PASSWORD", "not-a-real-one")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run numalab");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            let o = child.wait_with_output().unwrap();
            panic!("{args:?} still ran after {secs} s: {}", stderr(&o));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// Files named by side options are read as direct inputs are (issue 50, items 6 and 8):
/// a device or a FIFO through `--bmc-ca-file` or `--hostfile`, a missing or binary
/// hostfile, are bad input (exit 3) naming the option and the path, at once; never a
/// hang, an unbounded read, or a usage error.
#[test]
fn side_option_files_that_are_devices_fifos_missing_or_binary_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let binary = dir.path().join("hosts.bin");
    std::fs::write(&binary, [0xffu8, 0xfe, 0, 1]).unwrap();
    let missing = dir.path().join("no-hosts");
    let os = |v: &[&str]| -> Vec<std::ffi::OsString> { v.iter().map(|s| s.into()).collect() };
    for ca in ["/dev/urandom", "/dev/zero", p(&fifo)] {
        let args = os(&["scale", "--bmc", "https://127.0.0.1:9", "--bmc-ca-file", ca]);
        let args: Vec<&OsStr> = args
            .iter()
            .map(|s| s.as_os_str())
            .chain(["--", "true"].map(OsStr::new))
            .collect();
        let o = run_within(&args, 20);
        no_panic(ca, &o);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "--bmc-ca-file {ca}: {e}");
        assert!(e.contains(&format!("--bmc-ca-file {ca}: this is a")), "{e}");
    }
    let fleet = dir.path().join("fleet");
    for (hosts, says) in [
        ("/dev/zero", "this is a device, not a file"),
        (p(&fifo), "this is a FIFO (named pipe), not a file"),
        (p(&missing), "no such file or folder"),
        (p(&binary), "not text: invalid UTF-8"),
    ] {
        let args = os(&[
            "fleet",
            "run",
            "--launcher",
            "mpi",
            "--hostfile",
            hosts,
            "--fleet",
            p(&fleet),
            "--",
            "topo",
        ]);
        let args: Vec<&OsStr> = args.iter().map(|s| s.as_os_str()).collect();
        let o = run_within(&args, 20);
        no_panic(hosts, &o);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "--hostfile {hosts}: {e}");
        assert!(e.contains(&format!("--hostfile {hosts}: {says}")), "{e}");
    }
}

/// Control characters in echoed arguments reach the terminal escaped, never raw
/// (issue 50, item 7): an `--input` path, a preset name, `--set` and `--skip` values.
#[test]
fn control_characters_in_echoed_arguments_are_escaped_in_messages() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "evil\x1b[2J\x07";
    let input = dir.path().join(format!("{evil}.xml"));
    let set = format!("cores.{evil}=1");
    let out = dir.path().join("out");
    for args in [
        vec!["topo", "--input", p(&input)],
        vec!["model", "show", evil],
        vec![
            "model",
            "run",
            "mesh",
            "--experiment",
            "stream-triad",
            "--set",
            &set,
        ],
        vec!["evaluate", "--quick", "--skip", evil, "--out", p(&out)],
    ] {
        let o = numalab(&args);
        no_panic(&format!("{args:?}"), &o);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        let e = stderr(&o);
        assert!(
            !o.stderr.iter().any(|&c| c == 0x1b || c == 0x07),
            "{args:?}: a control character reached stderr: {e:?}"
        );
        assert!(e.contains(r"evil\x1b[2J\x07"), "{args:?}: {e}");
    }
}

/// OS errors are said in words with the path and a remedy, never "os error N"
/// (issue 50, item 7): symbolic link loops as inputs, an output under a file, a full
/// disk under `-o` and `--export-csv`, a file as `--fleet`.
#[test]
fn os_errors_are_said_in_words_with_the_path_and_a_remedy() {
    let dir = tempfile::tempdir().unwrap();
    let lp = dir.path().join("loop");
    std::os::unix::fs::symlink(&lp, &lp).unwrap();
    let notadir = dir.path().join("notadir");
    std::fs::write(&notadir, "x").unwrap();
    let sub = notadir.join("sub");
    let csv = fixture_path("c2c", "amd-epyc-7773x.csv");
    let bundle = fixture_path("bundles", "vm-evaluate");
    let cases: Vec<(Vec<&str>, i32, String)> = vec![
        (
            vec!["topo", "--input", p(&lp)],
            3,
            format!("{}: a symbolic link loop", p(&lp)),
        ),
        (
            vec!["c2c", "--input", p(&lp)],
            3,
            format!("{}: a symbolic link loop", p(&lp)),
        ),
        (
            vec!["layout", "infer", "--input", p(&lp), "--geometry", "2x2"],
            3,
            "a symbolic link loop".into(),
        ),
        (
            vec!["evaluate", "--quick", "--out", p(&sub)],
            1,
            "a part of the path is not a folder".into(),
        ),
        (
            vec!["report", p(&bundle), "-o", "/dev/full"],
            1,
            "/dev/full: cannot write the report (the disk is full".into(),
        ),
        (
            vec!["c2c", "--input", p(&csv), "--export-csv", "/dev/full"],
            1,
            "/dev/full: cannot write".into(),
        ),
        (
            vec![
                "fleet",
                "run",
                "--nodes",
                "n1",
                "--fleet",
                p(&notadir),
                "--",
                "topo",
            ],
            2,
            format!("--fleet {}: this is a file, not a folder", p(&notadir)),
        ),
    ];
    for (args, code, says) in cases {
        let o = numalab(&args);
        no_panic(&format!("{args:?}"), &o);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {e}");
        assert!(e.contains(&says), "{args:?}: {e}");
        assert!(!e.contains("os error"), "{args:?}: {e}");
        // The path once, and no remedy meant for a file that was read.
        let twice = format!("{0}: {0}:", p(&lp));
        assert!(
            !e.contains(&twice) && !e.contains("expected the"),
            "{args:?}: {e}"
        );
    }
}

/// Exit codes agree with the table (issue 50, item 8): a damaged history or a folder
/// as the history is bad input (3); an `--export-xml` into a missing folder is a failed
/// write (1) saying to create the folder; a sampling frequency past the kernel's limit
/// is a usage error (2) giving the range.
#[test]
fn exit_codes_of_histories_exports_and_sample_frequencies_follow_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let bundle = fixture_path("bundles", "vm-evaluate");
    assert_ok(&numalab(&["db", "--db", p(&db), "ingest", p(&bundle)]));
    // Truncated to its first page, as a copy cut short: SQLite finds it malformed.
    let bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 8192, "{}", bytes.len());
    let cut = dir.path().join("cut.sqlite");
    std::fs::write(&cut, &bytes[..4096]).unwrap();
    let garbage = dir.path().join("garbage.sqlite");
    let mut g = bytes[..100].to_vec();
    g.extend(std::iter::repeat_n(0xa5u8, 8192));
    std::fs::write(&garbage, g).unwrap();
    for (bad, says) in [
        (p(&cut), "h"),
        (p(&garbage), "h"),
        (p(dir.path()), "it is a folder, not a file"),
    ] {
        let o = numalab(&["db", "--db", bad, "runs"]);
        no_panic(bad, &o);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "--db {bad}: {e}");
        assert!(e.contains(bad) && e.contains(says), "{e}");
    }
    refused(
        &["topo", "--export-xml", "/nonexistent/x.xml"],
        1,
        "/nonexistent/x.xml: cannot write this machine's topology: the folder /nonexistent does not exist; create it or choose another --export-xml path",
    );
    refused(
        &[
            "profile",
            "--sample",
            "cpu-clock",
            "--sample-freq",
            "4294967295",
            "--",
            "true",
        ],
        2,
        "--sample-freq 4294967295 is outside the allowed range of 1 to",
    );
}

/// Control characters that come from files reach the terminal escaped (issue 50, item
/// 7): a tar member's name in a snapshot archive, an event name in a perf stat file.
#[test]
fn control_characters_from_tar_headers_and_perf_event_names_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = dir.path().join("snap/sys/devices/system/cpu");
    std::fs::create_dir_all(&cpu).unwrap();
    mkfifo(&cpu.join("evil\x1b[2J\x07"));
    let archive = dir.path().join("evil.tar.gz");
    let ok = Command::new("tar")
        .args(["czf", p(&archive), "-C", p(dir.path()), "snap"])
        .status()
        .unwrap()
        .success();
    assert!(ok, "tar");
    let perf = dir.path().join("perf.txt");
    std::fs::write(&perf, "event\x1b[31m\x07,1000\n").unwrap();
    for (args, code) in [
        (vec!["topo", "--input", p(&archive)], 3),
        (vec!["profile", "--import", p(&perf)], 3),
    ] {
        let o = numalab(&args);
        no_panic(&format!("{args:?}"), &o);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {e}");
        assert!(
            !o.stderr.iter().any(|&c| c == 0x1b || c == 0x07),
            "{args:?}: a control character reached stderr: {e:?}"
        );
        assert!(e.contains(r"\x1b["), "{args:?}: {e}");
    }
}
