//! The tables people read of the history's answers: runs, figures over time and
//! regressions (tables as data; the command line renders them).

use crate::{Point, Regression, RunInfo, Verdict};
use numalab_report::table::{Cell, Column, Table};

/// A number with `digits` decimals, or "-" when there is none.
fn num_or_dash(v: Option<f64>, digits: usize) -> Cell {
    v.map_or(Cell::text("-"), |v| Cell::num(v, digits))
}

/// The stored runs of the history at `db` (its path as shown), one row each: id, time,
/// label, host, machine fingerprint with its description, the run's memory, figures,
/// tags; a note says how to store a bundle when there is none.
pub fn runs_table(db: &str, runs: &[RunInfo]) -> Table {
    let columns = [
        "run", "time", "label", "host", "machine", "memory", "figures", "tags",
    ];
    let mut t = Table::new(
        "runs",
        &format!("Runs in {db}"),
        columns.iter().map(|c| Column::new(c, None)).collect(),
    );
    for r in runs {
        t.push(vec![
            Cell::num(r.run_id as f64, 0),
            Cell::text(&r.time_utc),
            Cell::text(&r.label),
            Cell::text(r.host.clone().unwrap_or_default()),
            Cell::text(format!(
                "{} ({})",
                r.machine.fingerprint, r.machine_description
            )),
            // The run's own: memory is not part of the machine's identity.
            Cell::text(
                r.machine
                    .memory_gib
                    .map_or("unknown".to_string(), |g| format!("{g} GiB")),
            ),
            Cell::num(r.metric_count as f64, 0),
            Cell::text(r.tags.to_string()),
        ]);
    }
    if runs.is_empty() {
        t.notes
            .push("no runs match; `numalab db ingest DIR` stores a bundle".into());
    }
    t
}

/// Figures over time, one row per run and figure: time, run, label, the figure's name
/// (with its setup), median, spread (MAD), unit, samples. Titled by `metric` when one
/// figure was asked for; a note says where to look when nothing matched.
pub fn points_table(metric: Option<&str>, points: &[Point]) -> Table {
    let columns = [
        "time",
        "run",
        "label",
        "figure",
        "median",
        "spread (MAD)",
        "unit",
        "samples",
    ];
    let mut t = Table::new(
        "query",
        &match metric {
            Some(m) => format!("{m} over time"),
            None => "Every figure over time".into(),
        },
        columns.iter().map(|c| Column::new(c, None)).collect(),
    );
    for p in points {
        t.push(vec![
            Cell::text(&p.time_utc),
            Cell::num(p.run_id as f64, 0),
            Cell::text(&p.label),
            Cell::text(match &p.setup {
                Some(s) => format!("{}, {s}", p.name),
                None => p.name.clone(),
            }),
            num_or_dash(p.median, 2),
            num_or_dash(p.mad, 2),
            Cell::text(&p.unit),
            Cell::num(p.samples as f64, 0),
        ]);
    }
    if points.is_empty() {
        t.notes.push(
            "no points match; `numalab db runs` lists the runs, `db query` without --metric every figure"
                .into(),
        );
    }
    t
}

/// A regression row's verdict for people: "WORSE", "better", "within noise", "no
/// verdict (too few samples)", or "not comparable" with the reason when there is one.
pub fn verdict_text(r: &Regression) -> String {
    let verdict = match r.verdict {
        Verdict::Worse => "WORSE",
        Verdict::Better => "better",
        Verdict::WithinNoise => "within noise",
        Verdict::Unknown => "no verdict (too few samples)",
        Verdict::NotComparable => "not comparable",
    };
    match &r.not_comparable {
        Some(why) => format!("not comparable: {why}"),
        None => verdict.to_string(),
    }
}

/// Regressions (or, with `all`, every verdict), one row per machine and figure:
/// baseline and latest values, their ratio with its 95% interval, the verdict, the runs
/// of each side and what changed between them. The notes say what an empty table means
/// and how the verdicts were reached (`run_noise`: the assumed run-to-run spread, %).
pub fn regressions_table(rows: &[Regression], all: bool, run_noise: f64) -> Table {
    let columns = [
        "machine",
        "figure",
        "baseline",
        "latest",
        "unit",
        "latest / baseline",
        "95% interval",
        "verdict",
        "runs",
        "changed between the runs",
    ];
    let mut t = Table::new(
        "regressions",
        if all {
            "Every figure, baseline against latest"
        } else {
            "Figures that got worse beyond their run-to-run noise"
        },
        columns.iter().map(|c| Column::new(c, None)).collect(),
    );
    for r in rows {
        t.push(vec![
            Cell::text(&r.machine),
            Cell::text(&r.name),
            num_or_dash(r.baseline, 2),
            num_or_dash(r.latest, 2),
            Cell::text(&r.unit),
            num_or_dash(r.ratio, 3),
            Cell::text(
                r.interval
                    .map_or("-".into(), |(lo, hi)| format!("{lo:.3}..{hi:.3}")),
            ),
            Cell::text(verdict_text(r)),
            Cell::text(format!("{:?} -> {:?}", r.baseline_runs, r.latest_runs)),
            Cell::text(if r.changed.is_empty() {
                "-".to_string()
            } else {
                r.changed.join("; ")
            }),
        ]);
    }
    if rows.is_empty() {
        t.notes.push(if all {
            "no figure has a baseline and a later run; ingest more bundles".into()
        } else {
            "no figure got worse beyond its run-to-run noise (`--all` shows every verdict)".into()
        });
    }
    t.notes.push(format!(
        "verdicts use compare's statistics: 95% intervals of the ratio, widened by the run-to-run noise (measured from the runs when a side has several, else {run_noise}% assumed); fewer than 3 samples give no verdict"
    ));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Fingerprint;

    fn run(id: i64, memory_gib: Option<u64>) -> RunInfo {
        RunInfo {
            run_id: id,
            content_key: "k".into(),
            label: "node1".into(),
            time_utc: "2026-11-01T00:00:00Z".into(),
            tool_version: "0".into(),
            origin: "measured".into(),
            host: None,
            machine: Fingerprint {
                fingerprint: "00ff00ff00ff00ff".into(),
                vendor: None,
                model_name: None,
                cpu_id: None,
                cores: None,
                pus: None,
                numa_nodes: None,
                memory_gib,
            },
            machine_description: "2 cores".into(),
            topology_hash: "t".into(),
            kernel: None,
            firmware: None,
            memory_bytes: None,
            source_path: None,
            ingested_utc: "2026-11-02T00:00:00Z".into(),
            tags: serde_json::json!({"node": "n17"}),
            metric_count: 12,
        }
    }

    fn point(setup: Option<&str>, median: Option<f64>) -> Point {
        Point {
            run_id: 3,
            time_utc: "2026-11-01T00:00:00Z".into(),
            time_s: 0,
            label: "node1".into(),
            host: None,
            machine: "00ff00ff00ff00ff".into(),
            metric_id: "mem.x".into(),
            group: "memory bandwidth".into(),
            name: "triad".into(),
            unit: "GB/s".into(),
            higher_is_better: true,
            setup: setup.map(str::to_string),
            samples: 5,
            median,
            mad: None,
            min: None,
            max: None,
            bounds: None,
            tags: serde_json::json!({}),
        }
    }

    fn regression(verdict: Verdict, not_comparable: Option<&str>) -> Regression {
        Regression {
            machine: "00ff00ff00ff00ff".into(),
            metric_id: "mem.x".into(),
            group: "memory bandwidth".into(),
            name: "triad".into(),
            unit: "GB/s".into(),
            higher_is_better: true,
            baseline_runs: vec![1],
            latest_runs: vec![4, 5],
            baseline: Some(100.0),
            latest: Some(80.0),
            ratio: Some(0.8),
            interval: Some((0.75, 0.85)),
            verdict,
            noise: None,
            not_comparable: not_comparable.map(str::to_string),
            changed: vec![
                "kernel 6.8 -> 6.19".into(),
                "memory 20 GiB -> 11 GiB".into(),
            ],
        }
    }

    fn texts(t: &Table, row: usize) -> Vec<String> {
        t.rows[row].iter().map(Cell::display).collect()
    }

    #[test]
    fn runs_show_the_machine_its_memory_and_tags() {
        let t = runs_table("h.sqlite", &[run(7, Some(16)), run(8, None)]);
        assert_eq!(t.title, "Runs in h.sqlite");
        assert_eq!(t.columns.len(), 8);
        let row = texts(&t, 0);
        assert_eq!(row[0], "7");
        assert_eq!(row[4], "00ff00ff00ff00ff (2 cores)");
        assert_eq!(row[5], "16 GiB");
        assert_eq!(row[6], "12");
        assert_eq!(row[7], r#"{"node":"n17"}"#);
        assert_eq!(texts(&t, 1)[5], "unknown");
        assert!(t.notes.is_empty());
        assert!(runs_table("h", &[]).notes[0].contains("db ingest"));
    }

    #[test]
    fn points_name_the_setup_and_dash_missing_values() {
        let t = points_table(
            Some("mem.x"),
            &[point(Some("8 threads"), Some(12.345)), point(None, None)],
        );
        assert_eq!(t.title, "mem.x over time");
        assert_eq!(texts(&t, 0)[3], "triad, 8 threads");
        assert_eq!(texts(&t, 0)[4], "12.35");
        assert_eq!(texts(&t, 1)[3], "triad");
        assert_eq!(texts(&t, 1)[4], "-");
        assert_eq!(texts(&t, 1)[5], "-");
        let empty = points_table(None, &[]);
        assert_eq!(empty.title, "Every figure over time");
        assert_eq!(empty.notes.len(), 1);
    }

    #[test]
    fn verdicts_read_as_words_and_name_why_not_comparable() {
        assert_eq!(verdict_text(&regression(Verdict::Worse, None)), "WORSE");
        assert_eq!(
            verdict_text(&regression(Verdict::Unknown, None)),
            "no verdict (too few samples)"
        );
        assert_eq!(
            verdict_text(&regression(Verdict::NotComparable, Some("other sizes"))),
            "not comparable: other sizes"
        );
        assert_eq!(
            verdict_text(&regression(Verdict::NotComparable, None)),
            "not comparable"
        );
    }

    #[test]
    fn regressions_show_ratio_interval_runs_and_changes() {
        let t = regressions_table(&[regression(Verdict::Worse, None)], false, 10.0);
        assert_eq!(
            t.title,
            "Figures that got worse beyond their run-to-run noise"
        );
        let row = texts(&t, 0);
        assert_eq!(row[5], "0.800");
        assert_eq!(row[6], "0.750..0.850");
        assert_eq!(row[7], "WORSE");
        assert_eq!(row[8], "[1] -> [4, 5]");
        assert_eq!(row[9], "kernel 6.8 -> 6.19; memory 20 GiB -> 11 GiB");
        assert_eq!(t.notes.len(), 1);
        assert!(t.notes[0].contains("else 10% assumed"));
        let t = regressions_table(&[], true, 2.5);
        assert_eq!(t.title, "Every figure, baseline against latest");
        assert!(t.notes[0].contains("ingest more bundles"));
        assert!(t.notes[1].contains("else 2.5% assumed"));
    }
}
