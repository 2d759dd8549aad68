//! `numalab report` and `numalab compare` as a user runs them: on recorded bundles
//! (tests/fixtures/bundles), in every format, with bad input (missing, empty, corrupted,
//! truncated, newer-schema files, bundles with nothing in common), and the JSON output
//! read back by independent structs (the contract other programs rely on).

use crate::common::{self, numalab, p, stderr, stdout};
use serde::Deserialize;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    common::fixture_path("bundles", name)
}

#[test]
fn report_writes_a_page_and_follows_the_extension() {
    let tmp = tempfile::tempdir().unwrap();
    let html = tmp.path().join("r.html");
    let o = numalab(&[
        "report",
        p(&fixture("vm-evaluate")),
        p(&fixture("vm-scale")),
        "-o",
        p(&html),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    for id in [
        "findings",
        "summary",
        "topology",
        "c2c-c2c-matrix-cas-first-cpu-node",
        "workload",
        "pmu",
        "appendix",
    ] {
        assert!(page.contains(&format!("id=\"{id}\"")), "{id}");
    }
    // Markdown by extension, CSV and terminal by flag.
    let md = tmp.path().join("r.md");
    assert!(
        numalab(&["report", p(&fixture("vm-evaluate")), "-o", p(&md)])
            .status
            .success()
    );
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .starts_with("# numalab report: vm"));
    let csv = numalab(&["report", p(&fixture("vm-evaluate")), "--format", "csv"]);
    assert!(
        stdout(&csv).contains("\nstep,what,status,detail,time (s)\n"),
        "{}",
        stdout(&csv)
    );
    let text = numalab(&["report", p(&fixture("vm-evaluate")), "--format", "terminal"]);
    assert!(stdout(&text).contains("Findings\n--------\n"));
}

/// The report's JSON as another program reads it.
#[derive(Deserialize)]
struct ReportJson {
    title: String,
    problems: Vec<String>,
    findings: Vec<FindingJson>,
    tables: Vec<TableJson>,
}

#[derive(Deserialize)]
struct FindingJson {
    id: String,
    severity: String,
    text: String,
    source: String,
    modeled: bool,
}

#[derive(Deserialize)]
struct TableJson {
    id: String,
    columns: Vec<ColumnJson>,
    rows: Vec<Vec<serde_json::Value>>,
}

#[derive(Deserialize)]
struct ColumnJson {
    name: String,
    #[serde(default)]
    unit: Option<String>,
}

#[test]
fn report_json_contract() {
    let o = numalab(&[
        "report",
        p(&fixture("two-node-handmade")),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: ReportJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r.title, "numalab report: handmade-2s");
    assert!(r.problems.is_empty());
    assert!(r.findings.iter().any(|f| f.id == "c2c_domains"
        && f.severity == "notice"
        && f.source == "handmade-2s"
        && !f.modeled));
    assert!(r.findings.iter().all(|f| !f.text.is_empty()));
    let runs = r.tables.iter().find(|t| t.id == "workload-runs").unwrap();
    let col = |name: &str| runs.columns.iter().position(|c| c.name == name).unwrap();
    assert_eq!(
        runs.columns[col("per thread")].unit.as_deref(),
        Some("requests/s")
    );
    // Numbers stay numbers; intervals are objects; missing values say why.
    assert!(runs.rows[0][col("threads")]["value"].is_number());
    assert!(runs.rows[0][col("median slice")]["low"].is_number());
    assert!(runs.rows[0][col("requests/J")]["missing"].is_string());
}

/// The comparison's JSON as another program reads it.
#[derive(Deserialize)]
struct CompareJson {
    schema_version: u32,
    baseline: String,
    bundles: Vec<String>,
    comparisons: Vec<ComparisonJson>,
    summary: Vec<String>,
}

#[derive(Deserialize)]
struct ComparisonJson {
    baseline: String,
    other: String,
    rows: Vec<RowJson>,
}

#[derive(Deserialize)]
struct RowJson {
    id: String,
    group: String,
    unit: String,
    higher_is_better: bool,
    baseline: f64,
    other: f64,
    ratio: f64,
    interval: Option<IntervalJson>,
    verdict: String,
}

#[derive(Deserialize)]
struct IntervalJson {
    low: f64,
    high: f64,
}

#[test]
fn compare_json_contract_and_formats() {
    let ev = fixture("vm-evaluate");
    let o = numalab(&["compare", p(&ev), p(&ev), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let c: CompareJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(c.schema_version, 1);
    assert_eq!(c.bundles.len(), 2);
    assert_eq!(c.baseline, c.comparisons[0].baseline);
    assert_ne!(
        c.comparisons[0].baseline, c.comparisons[0].other,
        "labels are made unique"
    );
    let rows = &c.comparisons[0].rows;
    assert!(!rows.is_empty());
    for r in rows {
        // The same bundle twice: ratio 1, never a verdict beyond the noise.
        assert!(
            (r.ratio - 1.0).abs() < 1e-12 && r.baseline == r.other,
            "{}",
            r.id
        );
        assert!(
            ["within_noise", "unknown"].contains(&r.verdict.as_str()),
            "{}",
            r.verdict
        );
        if let Some(i) = &r.interval {
            assert!(i.low <= 1.0 && i.high >= 1.0);
        }
        assert!(!r.group.is_empty() && !r.unit.is_empty());
        if r.unit == "ns" {
            assert!(!r.higher_is_better);
        }
    }
    assert!(c
        .summary
        .iter()
        .any(|s| s.starts_with("per server: no difference beyond the noise")));
    // Every other format.
    let tmp = tempfile::tempdir().unwrap();
    for (ext, head) in [
        ("html", "<!DOCTYPE html>"),
        ("md", "# numalab comparison"),
        ("csv", "metric,unit,"),
        ("txt", "numalab comparison"),
    ] {
        let f = tmp.path().join(format!("c.{ext}"));
        let o = numalab(&[
            "compare",
            p(&ev),
            p(&fixture("vm-scale")),
            p(&ev),
            "-o",
            p(&f),
        ]);
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            text.contains(head),
            "{ext}: {}",
            &text[..200.min(text.len())]
        );
        // vm-scale shares nothing with vm-evaluate, but the third bundle does.
        assert_eq!(o.status.code(), Some(0), "{ext}: {}", stderr(&o));
    }
    let html = std::fs::read_to_string(tmp.path().join("c.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("id=\"ratios-2\""));
}

#[test]
fn compare_groups_runs_into_sides_and_measures_their_noise() {
    let (r1, r2, ev) = (
        fixture("vm-quick-run-1"),
        fixture("vm-quick-run-2"),
        fixture("vm-evaluate"),
    );
    // Two runs of one machine, one side each: run-to-run noise unknown, said so.
    let o = numalab(&["compare", p(&r1), p(&r2), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["comparisons"][0]["rows"].as_array().unwrap();
    assert!(rows
        .iter()
        .all(|r| r["run_noise"]["kind"] == "assumed" && r["run_noise"]["spread"] == 0.1));
    assert!(rows
        .iter()
        .all(|r| r["verdict"] != "better" && r["verdict"] != "worse"));
    // --run-noise changes the assumption.
    let o = numalab(&[
        "compare",
        p(&r1),
        p(&r2),
        "--run-noise",
        "2",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["comparisons"][0]["rows"][0]["run_noise"]["spread"], 0.02);
    // Comma-joined runs form one side; the noise is measured from them.
    let joined = format!("{},{}", p(&r1), p(&r2));
    let o = numalab(&["compare", &joined, p(&ev), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["bundles"].as_array().unwrap().len(), 2, "{v}");
    // Both sides are hosts named "vm": the side is named by its first run.
    assert_eq!(v["baseline"], "vm (vm-quick-run-1) and 1 more run(s)");
    let row = &v["comparisons"][0]["rows"][0];
    assert_eq!(row["run_noise"]["kind"], "measured", "{row}");
    assert_eq!(row["run_noise"]["runs_baseline"], 2);
    assert_eq!(row["run_noise"]["runs_other"], 1);
    // --by-machine: these are all one machine, so there is nothing to compare.
    let o = numalab(&["compare", "--by-machine", p(&r1), p(&r2)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("runs of one machine"), "{}", stderr(&o));
    // A bad --run-noise is a usage error.
    let o = numalab(&["compare", p(&r1), p(&r2), "--run-noise", "-5"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn compare_with_nothing_in_common_says_so_and_shows_each_bundle() {
    let o = numalab(&[
        "compare",
        p(&fixture("vm-sweep")),
        p(&fixture("model-neoverse-v1")),
        "--format",
        "markdown",
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("the bundles have no figure in common"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("run the same commands on each machine"));
    let md = stdout(&o);
    assert!(
        md.contains("share no comparable figure") && md.contains("triad, 16 cores"),
        "{md}"
    );
}

/// Writes a damaged copy of the vm-evaluate journal.
fn damaged(dir: &Path, name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let text = std::fs::read_to_string(fixture("vm-evaluate").join("results.jsonl")).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, edit(&text)).unwrap();
    path
}

#[test]
fn bad_input_is_named_and_the_rest_is_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let empty = damaged(d, "empty.jsonl", |_| String::new());
    let garbage = damaged(d, "garbage.jsonl", |_| "\u{7f}ELF garbage\n".into());
    let truncated = damaged(d, "truncated.jsonl", |t| t[..t.len() - 200].to_string());
    let corrupt_line = damaged(d, "corrupt.jsonl", |t| {
        let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
        lines[3] = lines[3][..40].to_string() + "###";
        lines.join("\n") + "\n"
    });
    let newer = damaged(d, "newer.jsonl", |t| {
        let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
        lines[0] = lines[0].replacen("\"schema_version\":1", "\"schema_version\":99", 1);
        lines.push(r#"{"line":"record","key":"future/1","kind":"future.thing","origin":"measured","time_utc":"2030-01-01T00:00:00Z","data":{"x":1},"warnings":[]}"#.into());
        lines.push(r#"{"line":"record","key":"future/2","kind":"workload.run","origin":"measured","time_utc":"2030-01-01T00:00:00Z","data":{"renamed":true},"warnings":[]}"#.into());
        lines.join("\n") + "\n"
    });
    let missing = d.join("no-such-folder");
    // Table: input, exit code, what stderr says.
    let cases: Vec<(&Path, i32, &str)> = vec![
        (&missing, 3, "no such file or folder"),
        (&empty, 3, "the file is empty"),
        (&garbage, 3, "not a numalab results file"),
        (&truncated, 0, "the last line is incomplete and was skipped"),
        (&corrupt_line, 0, "line 4 could not be read"),
        (&newer, 0, "newer than this numalab's 1"),
    ];
    for (input, code, says) in &cases {
        let out = d.join("out.html");
        let _ = std::fs::remove_file(&out);
        let o = numalab(&["report", p(input), "-o", p(&out)]);
        assert_eq!(
            o.status.code(),
            Some(*code),
            "{}: {}",
            input.display(),
            stderr(&o)
        );
        assert!(
            stderr(&o).contains(says),
            "{}: {}",
            input.display(),
            stderr(&o)
        );
        assert!(
            stderr(&o).contains(p(input)),
            "names the input: {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("panicked"));
        if *code == 0 {
            let page = std::fs::read_to_string(&out).unwrap();
            assert!(page.contains("id=\"problems\""), "{}", input.display());
            assert!(page.contains("id=\"findings\""));
        }
    }
    let page_of = |input: &Path| {
        let out = d.join("page.html");
        numalab(&["report", p(input), "-o", p(&out)]);
        std::fs::read_to_string(&out).unwrap()
    };
    let newer_page = page_of(&newer);
    assert!(
        newer_page.contains("1 record(s) of kind future.thing, which this numalab does not know")
    );
    // The first that does not decode, named with serde's reason.
    assert!(
        newer_page.contains(
            "1 record(s) of kind workload.run could not be decoded (the first, future/2: missing field"
        ),
        "{}",
        newer_page[newer_page.find("workload.run").unwrap_or(0)..]
            .chars()
            .take(300)
            .collect::<String>()
    );
    assert!(
        newer_page.contains("id=\"workload\""),
        "the readable runs are still shown"
    );
    // One bad bundle among good ones: the page is written, the exit code says partial.
    let out = d.join("partial.html");
    let o = numalab(&[
        "report",
        p(&fixture("vm-evaluate")),
        p(&garbage),
        "-o",
        p(&out),
    ]);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(stderr(&o).contains("the other bundles were rendered"));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("id=\"workload\""));
    // compare needs two readable bundles.
    let o = numalab(&["compare", p(&fixture("vm-evaluate")), p(&garbage)]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("compare needs two readable bundles; 1 of 2 could be read"));
    // compare of a good and a truncated copy still compares.
    let o = numalab(&[
        "compare",
        p(&fixture("vm-evaluate")),
        p(&truncated),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("warning"));
}

#[test]
fn usage_errors() {
    let o = numalab(&["compare", p(&fixture("vm-evaluate"))]);
    assert_eq!(o.status.code(), Some(2));
    let o = numalab(&["report"]);
    assert_eq!(o.status.code(), Some(2));
    let o = numalab(&["report", p(&fixture("vm-evaluate")), "--format", "pdf"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `-o` writes only regular files: a device or a FIFO is written through and stays what
/// it was (`/dev/full` was once renamed over as root, exit 0), a symlink stays a symlink,
/// an existing file keeps its mode and a new one follows the umask (not always 0600).
#[test]
fn report_output_never_replaces_what_is_not_a_regular_file() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let bundle = fixture("vm-evaluate");
    let md = |o: &str| numalab(&["report", p(&bundle), "--format", "markdown", "-o", o]);
    // A full device: an error, and the device node is still a device.
    let o = md("/dev/full");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/dev/full: cannot write"),
        "{}",
        stderr(&o)
    );
    let m = std::fs::symlink_metadata("/dev/full").unwrap();
    assert!(m.file_type().is_char_device());
    assert_eq!(m.permissions().mode() & 0o777, 0o666);
    // /dev/null takes it and stays a device.
    assert_eq!(md("/dev/null").status.code(), Some(0));
    assert!(std::fs::symlink_metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    // A FIFO: its reader gets the page; the FIFO stays one.
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let o = md(p(&fifo));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(reader.join().unwrap().starts_with("# numalab report: vm"));
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    // A symlink to a file: the link stays, the target gets the page.
    let target = tmp.path().join("target.md");
    std::fs::write(&target, "old").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = tmp.path().join("link.md");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_eq!(md(p(&link)).status.code(), Some(0));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&target)
        .unwrap()
        .starts_with("# numalab report: vm"));
    // The existing file kept its mode.
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o644);
    // A new file: 0666 less the umask (027 here), as any program's.
    let new = tmp.path().join("new.md");
    let o = std::process::Command::new("sh")
        .args(["-c", "umask 027; exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_numalab"))
        .args(["report", p(&bundle), "-o", p(&new)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mode = std::fs::metadata(&new).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    // A socket is refused as a usage error and left alone.
    let sock = tmp.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let o = md(p(&sock));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&sock)
        .unwrap()
        .file_type()
        .is_socket());
}
