//! The bad-input campaign as a regression suite: every case of
//! `crates/cli/tests/campaign/cases.txt` (one line each: a name, the expected exit code,
//! the arguments, options) run against the built binary, a few at a time, each in a
//! folder of its own and under a time limit. One run lists every case that differs.
//! `NUMALAB_CAMPAIGN=long` adds the cases marked `long` (heavy inputs); the format of the
//! file and how to add a case are in docs/testing.md.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One line of the cases file.
#[derive(Debug, Clone)]
struct Case {
    line: usize,
    name: String,
    exit: i32,
    args: Vec<Vec<u8>>,
    env: Vec<(String, Vec<u8>)>,
    stderr: Vec<String>,
    stdout: Option<String>,
    signal: Option<(i32, f64)>,
    lock: Option<String>,
    timeout: u64,
    known: Option<String>,
    long: bool,
}

/// The exit codes of the table (README, man page, `--help`) that a run may end in on
/// purpose; every one must be the expected code of some case.
const DOCUMENTED: [i32; 9] = [0, 1, 2, 3, 4, 5, 6, 130, 141];
/// The codes of the table that say numalab crashed: never expected, always a failure.
const CRASHES: [i32; 2] = [101, 134];

/// The codes of the one exit-code table ([`ErrorClass::table`](numalab_schema::ErrorClass)).
fn table_codes() -> BTreeSet<i32> {
    numalab_schema::ErrorClass::table()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

/// `\xHH` a byte, `\s` a space, `\\` a backslash; everything else as written.
fn unescape(word: &str) -> Vec<u8> {
    let b = word.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            match b[i + 1] {
                b'x' if i + 3 < b.len() => {
                    let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
                    out.push(u8::from_str_radix(hex, 16).expect("\\xHH"));
                    i += 4;
                    continue;
                }
                b's' => out.push(b' '),
                b'\\' => out.push(b'\\'),
                c => panic!("unknown escape \\{}", c as char),
            }
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn parse(text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(" | ").map(str::trim).collect();
        assert!(fields.len() >= 3, "line {}: name | exit | args", n + 1);
        let mut c = Case {
            line: n + 1,
            name: fields[0].to_string(),
            exit: fields[1].parse().expect("exit code"),
            args: fields[2].split_whitespace().map(unescape).collect(),
            env: Vec::new(),
            stderr: Vec::new(),
            stdout: None,
            signal: None,
            lock: None,
            timeout: 60,
            known: None,
            long: false,
        };
        for opt in &fields[3..] {
            let (k, v) = opt.split_once('=').unwrap_or((opt, ""));
            match k {
                "env" => {
                    let (ek, ev) = v.split_once('=').expect("env=K=V");
                    c.env.push((ek.to_string(), unescape(ev)));
                }
                "stderr" => c.stderr.push(v.to_string()),
                "stdout" => c.stdout = Some(v.to_string()),
                "signal" => {
                    let (sig, at) = v.split_once('@').expect("signal=TERM@SECONDS");
                    let sig = match sig {
                        "TERM" => libc::SIGTERM,
                        "INT" => libc::SIGINT,
                        s => panic!("line {}: signal {s}", n + 1),
                    };
                    c.signal = Some((sig, at.parse().expect("seconds")));
                }
                "lock" => c.lock = Some(v.to_string()),
                "timeout" => c.timeout = v.parse().expect("seconds"),
                "known" => c.known = Some(v.to_string()),
                "long" => c.long = true,
                _ => panic!("line {}: unknown option {k}", n + 1),
            }
        }
        cases.push(c);
    }
    cases
}

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// The journal of a bundle cut in the middle of a line.
fn truncated_journal() -> Vec<u8> {
    let j = std::fs::read(fixtures_root().join("bundles/vm-quick-run-1/results.jsonl")).unwrap();
    j[..j.len() / 2].to_vec()
}

/// The inputs a case names as `{name}` (besides `{fx:DIR/FILE}`, a repository fixture).
const PLACEHOLDERS: &[&str] = &[
    "w",
    "dir",
    "empty",
    "text",
    "bin",
    "loop",
    "fifo",
    "fifodir",
    "linkout",
    "cpuloop",
    "zero",
    "notdir",
    "missing",
    "trunc",
    "trunc.jsonl",
    "sqlite",
    "crash.xml",
    "huge.csv",
    "nan.csv",
    "inf.csv",
    "neg.csv",
    "ctl.csv",
    "mix.toml",
    "big.csv",
];

/// Makes the input `{name}` stands for in `dir` (on first use) and returns its path.
fn placeholder(name: &str, dir: &Path) -> PathBuf {
    if let Some(rest) = name.strip_prefix("fx:") {
        return fixtures_root().join(rest);
    }
    let path = dir.join(name);
    if path.symlink_metadata().is_ok() {
        return path;
    }
    let mkfifo = |p: &Path| {
        let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
        assert!(ok, "mkfifo {}", p.display());
    };
    let write = |bytes: &[u8]| std::fs::write(&path, bytes).unwrap();
    match name {
        "w" => std::fs::create_dir_all(&path).unwrap(),
        "dir" => std::fs::create_dir(&path).unwrap(),
        "empty" => write(b""),
        "text" => write(b"hello\n"),
        "bin" => write(&(0..=255u8).cycle().take(4096).collect::<Vec<_>>()),
        "loop" => std::os::unix::fs::symlink(&path, &path).unwrap(),
        "fifo" => mkfifo(&path),
        // A snapshot folder that holds a FIFO where a sysfs file should be.
        "fifodir" => {
            std::fs::create_dir_all(path.join("sys/devices/system/cpu")).unwrap();
            mkfifo(&path.join("sys/devices/system/cpu/online"));
        }
        // Snapshots whose node folder links out of the snapshot, or whose cpu0 is a loop.
        "linkout" => {
            std::fs::create_dir_all(path.join("sys/devices/system")).unwrap();
            std::os::unix::fs::symlink("../../../sys", path.join("sys/devices/system/node"))
                .unwrap();
        }
        "cpuloop" => {
            let cpu = path.join("sys/devices/system/cpu");
            std::fs::create_dir_all(&cpu).unwrap();
            std::os::unix::fs::symlink("cpu0", cpu.join("cpu0")).unwrap();
        }
        // A link to /dev/zero, so that a side file made next to it lands in the case's folder.
        "zero" => std::os::unix::fs::symlink("/dev/zero", &path).unwrap(),
        "notdir" => {
            placeholder("text", dir);
            return dir.join("text/sub");
        }
        "missing" => return dir.join("missing/file"),
        "trunc" => {
            std::fs::create_dir(&path).unwrap();
            std::fs::write(path.join("results.jsonl"), truncated_journal()).unwrap();
        }
        "trunc.jsonl" => write(&truncated_journal()),
        "sqlite" => {
            let mut b = b"SQLite format 3\0".to_vec();
            b.extend_from_slice(&[0x10, 0, 1, 1, 0, 0x40, 0x20, 0x20]);
            b.resize(200, 0);
            write(&b);
        }
        "crash.xml" => write(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\">\n<object type=\"PU\" os_index=\"0\" cpuset=\"0x1\"/>\n<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x1\"/>\n</object>\n</topology>\n"),
        "huge.csv" => write(b"0,1e308\n1e308,0\n"),
        "nan.csv" => write(b"0,NaN\nNaN,0\n"),
        "inf.csv" => write(b"0,inf\ninf,0\n"),
        "neg.csv" => write(b"0,-1\n-1,0\n"),
        "ctl.csv" => write(b"0,\x1b[2J\x07\n1,0\n"),
        "mix.toml" => write(b"[[task]]\nname = \"a\"\ncommand = [\"true\"]\ndata = \"1 KiB\"\nthreads = [1]\n"),
        "big.csv" => {
            // 2000 x 2000 latencies: the size issue 50 names (the inference of c2c and layout).
            let n = 2000;
            let mut s = String::with_capacity(n * n * 4);
            for i in 0..n {
                let row: Vec<String> = (0..n)
                    .map(|j| if i == j { "0".into() } else { format!("{}", 50 + (i / 64 != j / 64) as u32 * 80 + ((i * 7 + j * 13) % 5) as u32) })
                    .collect();
                s.push_str(&row.join(","));
                s.push('\n');
            }
            write(s.as_bytes());
        }
        other => panic!("unknown placeholder {{{other}}}"),
    }
    path
}

/// `{name}` in a word replaced by the path of that input.
fn expand(word: &[u8], dir: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    let mut rest = word;
    while let Some(open) = rest.iter().position(|&b| b == b'{') {
        let Some(len) = rest[open..].iter().position(|&b| b == b'}') else {
            break;
        };
        out.extend_from_slice(&rest[..open]);
        let name = std::str::from_utf8(&rest[open + 1..open + len]).unwrap_or("");
        if name.starts_with("fx:") || PLACEHOLDERS.contains(&name) {
            out.extend_from_slice(placeholder(name, dir).as_os_str().as_bytes());
        } else {
            // numalab's own parameters (`{threads}`) stay as written.
            out.extend_from_slice(&rest[open..=open + len]);
        }
        rest = &rest[open + len + 1..];
    }
    out.extend_from_slice(rest);
    out
}

/// Every path under `dir` except the writable folder `w`.
fn listing(dir: &Path) -> BTreeSet<PathBuf> {
    let mut all = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p == dir.join("w") {
                continue;
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p.clone());
            }
            all.insert(p);
        }
    }
    all
}

/// Sends `sig` to the process group `pgid` (the case's binary leads its own group).
fn signal_group(pgid: i32, sig: i32) {
    // SAFETY: kill(2) with a negative pid signals a process group; it touches no memory
    // of ours, and a group that is gone only makes it fail with ESRCH.
    unsafe { libc::kill(-pgid, sig) };
}

/// Runs one case in `dir`; returns what differed from the expectation.
fn run_case(c: &Case, dir: &Path) -> Vec<String> {
    use std::os::unix::ffi::OsStrExt;
    let os = |b: &[u8]| std::ffi::OsStr::from_bytes(b).to_os_string();
    let w = placeholder("w", dir);
    let args: Vec<_> = c.args.iter().map(|a| os(&expand(a, dir))).collect();
    let env: Vec<_> = c
        .env
        .iter()
        .map(|(k, v)| (k, os(&expand(v, dir))))
        .collect();
    let _lock = c.lock.as_ref().map(|l| {
        let path = PathBuf::from(os(&expand(l.as_bytes(), dir)));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let f = File::options()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        f.try_lock().unwrap();
        f
    });
    let before = listing(dir);
    let err_path = dir.with_extension("stderr");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_numalab"));
    cmd.args(&args)
        .current_dir(&w)
        .env("NO_COLOR", "1")
        .env("HOME", &w)
        .env("XDG_DATA_HOME", w.join("share"))
        .envs(env)
        .stdin(Stdio::null())
        .stderr(File::create(&err_path).unwrap())
        .process_group(0);
    match c.stdout.as_deref() {
        None => cmd.stdout(File::create(dir.with_extension("stdout")).unwrap()),
        Some("full") => cmd.stdout(File::options().write(true).open("/dev/full").unwrap()),
        // A pipe whose read end is closed before the start: every write gets EPIPE/SIGPIPE.
        Some("closed") => cmd.stdout(std::io::pipe().unwrap().1),
        Some(s) => panic!("{}: stdout={s}", c.name),
    };
    let start = Instant::now();
    let mut child = cmd.spawn().expect("run numalab");
    let pgid = child.id() as i32;
    let mut signalled = false;
    let mut problems = Vec::new();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        let t = start.elapsed().as_secs_f64();
        if let Some((sig, at)) = c.signal {
            if !signalled && t >= at {
                signal_group(pgid, sig);
                signalled = true;
            }
        }
        if t > c.timeout as f64 {
            signal_group(pgid, libc::SIGKILL);
            let _ = child.wait();
            problems.push(format!("still running after {} s: killed", c.timeout));
            return problems;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Children it left behind in its group end with it.
    signal_group(pgid, libc::SIGKILL);
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    let err = std::fs::read(&err_path).unwrap_or_default();
    let text = String::from_utf8_lossy(&err);
    let excerpt: String = text
        .chars()
        .take(400)
        .collect::<String>()
        .escape_debug()
        .to_string();
    if code != c.exit {
        problems.push(format!("exit {code}, expected {}: {excerpt}", c.exit));
    }
    if CRASHES.contains(&code) || code == 139 {
        problems.push(format!("crashed (exit {code})"));
    }
    if let Some(b) = err
        .iter()
        .find(|&&b| b < 0x20 && b != b'\n' && b != b'\t' || b == 0x7f)
    {
        problems.push(format!(
            "raw control character 0x{b:02x} on stderr: {excerpt}"
        ));
    }
    for bad in ["os error", "panicked"] {
        if text.contains(bad) {
            problems.push(format!("stderr says \"{bad}\": {excerpt}"));
        }
    }
    for want in &c.stderr {
        let want = String::from_utf8_lossy(&expand(want.as_bytes(), dir)).into_owned();
        if !text.contains(want.as_str()) {
            problems.push(format!("stderr lacks \"{want}\": {excerpt}"));
        }
    }
    let after = listing(dir);
    for new in after.difference(&before) {
        problems.push(format!("created {} beside its inputs", new.display()));
    }
    problems
}

#[test]
fn every_case_of_the_campaign_ends_as_recorded() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/campaign/cases.txt");
    let cases = parse(&std::fs::read_to_string(&file).unwrap());
    let long = std::env::var("NUMALAB_CAMPAIGN").is_ok_and(|v| v == "long");
    // The suite keeps its size and covers every documented exit code.
    assert!(cases.len() >= 150, "{} cases", cases.len());
    let names: BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), cases.len(), "case names are unique");
    let expected: BTreeSet<i32> = cases
        .iter()
        .filter(|c| !c.long && c.known.is_none())
        .map(|c| c.exit)
        .collect();
    let table: BTreeSet<i32> = DOCUMENTED.iter().chain(&CRASHES).copied().collect();
    assert_eq!(table, table_codes(), "the table changed: update DOCUMENTED");
    let documented: BTreeSet<i32> = DOCUMENTED.into_iter().collect();
    assert!(
        documented.is_subset(&expected),
        "documented exit codes no case expects: {:?}",
        documented.difference(&expected).collect::<Vec<_>>()
    );
    assert!(
        expected.is_subset(&documented),
        "cases expect undocumented codes: {:?}",
        expected.difference(&documented).collect::<Vec<_>>()
    );

    let todo: Vec<Case> = cases.into_iter().filter(|c| long || !c.long).collect();
    let root = tempfile::tempdir().unwrap();
    let queue = Arc::new(Mutex::new(todo));
    let results = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (queue, results) = (queue.clone(), results.clone());
            let root = root.path().to_path_buf();
            std::thread::spawn(move || loop {
                let Some(c) = queue.lock().unwrap().pop() else {
                    break;
                };
                let dir = root.join(format!("case-{}", c.line));
                std::fs::create_dir(&dir).unwrap();
                let problems = run_case(&c, &dir);
                results.lock().unwrap().push((c, problems));
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut results = std::mem::take(&mut *results.lock().unwrap());
    results.sort_by_key(|(c, _)| c.line);
    let mut failures = Vec::new();
    for (c, problems) in &results {
        match (&c.known, problems.is_empty()) {
            (Some(k), false) => eprintln!("known defect, not counted: {} ({k})", c.name),
            (Some(k), true) => eprintln!("{}: passes now; drop its known note ({k})", c.name),
            (None, false) => failures.push(format!(
                "{} (cases.txt line {}): {}",
                c.name,
                c.line,
                problems.join("; ")
            )),
            (None, true) => {}
        }
    }
    eprintln!("{} cases run", results.len());
    assert!(
        failures.is_empty(),
        "{} case(s) differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
