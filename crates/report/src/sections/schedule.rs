//! Task-mix schedules: the run-time model of each task, the three schedules with their
//! predictions (`schedule.plan`), and a campaign's makespans per schedule with outliers
//! discarded, medians with intervals and gains over fair (`schedule.summary`). Single
//! runs (`schedule.run`) are in the raw-data appendix.

use super::{iv, table};
use crate::anchors;
use crate::doc::Section;
use crate::load::Loaded;
use crate::table::Cell;
use numalab_records::schedule::{PlanRecord, SummaryRecord};

/// The schedule sections of a bundle.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let plans = l.records_of::<PlanRecord>();
    let summaries = l.records_of::<SummaryRecord>();
    if plans.is_empty() && summaries.is_empty() {
        return Vec::new();
    }
    let mut s = Section::new(
        &anchors::id(b, "schedule"),
        &format!("Task-mix schedules{of}"),
    );
    for (i, (_, r)) in plans.iter().enumerate() {
        plan(&mut s, b, i, r);
    }
    for (i, (_, r)) in summaries.iter().enumerate() {
        summary(&mut s, b, i, r);
    }
    vec![s]
}

fn secs(v: Option<f64>, why: &str) -> Cell {
    v.map_or(Cell::missing(why), |v| Cell::num(v, 3))
}

fn plan(s: &mut Section, b: usize, i: usize, r: &PlanRecord) {
    s.para(format!(
        "Schedules of {} tasks ({}) on {} ({} cores); predictions: {}.",
        r.tasks.len(),
        r.mix,
        r.resources,
        r.cores,
        r.predictions
    ));
    let mut t = table(
        &anchors::id(b, &format!("schedule-models-{i}")),
        "Run-time model of each task: T(t) = serial + parallel / t + overhead x (t - 1)",
        &[
            ("task", None),
            ("past runs", None),
            ("fit", None),
            ("serial", Some("s")),
            ("parallel", Some("s")),
            ("overhead per thread", Some("s")),
            ("residual", Some("%")),
            ("placement", None),
        ],
    );
    let none = "no history";
    for h in &r.tasks {
        let m = h.model.as_ref();
        t.push(vec![
            Cell::text(&h.task),
            Cell::num(h.runs as f64, 0),
            m.map_or(Cell::missing(none), |m| Cell::text(&m.form)),
            m.map_or(Cell::missing(none), |m| Cell::num(m.serial_s, 3)),
            m.map_or(Cell::missing(none), |m| Cell::num(m.parallel_s, 3)),
            m.map_or(Cell::missing(none), |m| {
                Cell::num(m.overhead_s_per_thread, 4)
            }),
            m.map_or(Cell::missing(none), |m| {
                Cell::num(100.0 * m.residual_rel, 1)
            }),
            m.map_or(Cell::missing(none), |m| Cell::text(&m.placement)),
        ]);
    }
    s.table(t);
    for p in &r.plans {
        let band = p
            .predicted_band_s
            .map_or(String::new(), |b| format!(" ({:.3}-{:.3} s)", b[0], b[1]));
        let mut t = table(
            &anchors::id(b, &format!("schedule-{i}-{}", p.schedule)),
            &format!(
                "{}: predicted makespan {}{band}",
                p.schedule,
                p.predicted_makespan_s
                    .map_or("not predicted".to_string(), |m| format!("{m:.3} s"))
            ),
            &[
                ("task", None),
                ("threads", None),
                ("CPUs", None),
                ("memory", None),
                ("predicted", Some("s")),
            ],
        );
        for a in &p.assignments {
            t.push(vec![
                Cell::text(&a.task),
                Cell::num(a.threads as f64, 0),
                Cell::text(&a.cpulist),
                Cell::text(match (a.mem_node, a.home_distance) {
                    (None, None) => "first touch".to_string(),
                    (Some(n), None) => format!("node {n}"),
                    (None, Some(d)) => format!("homes within {d} hop(s)"),
                    (Some(n), Some(d)) => format!("node {n}, homes within {d} hop(s)"),
                }),
                secs(a.predicted_s, "no history"),
            ]);
        }
        t.notes.extend(p.notes.iter().cloned());
        s.table(t);
    }
    s.list(r.notes.iter().map(|n| format!("note: {n}")).collect());
}

fn summary(s: &mut Section, b: usize, i: usize, r: &SummaryRecord) {
    let mut t = table(
        &anchors::id(b, &format!("schedule-campaign-{i}")),
        &format!("Campaign ({} runs per schedule asked)", r.repeat),
        &[
            ("schedule", None),
            ("runs", None),
            ("outliers", None),
            ("median makespan", Some("s")),
            ("predicted", Some("s")),
            ("gain over fair", None),
            ("failed runs", None),
        ],
    );
    for f in &r.schedules {
        t.push(vec![
            Cell::text(&f.schedule),
            Cell::num(f.makespans_s.len() as f64, 0),
            Cell::num(f.outliers.len() as f64, 0),
            iv(f.makespan_s.as_ref(), 1.0, 3, "no successful run"),
            secs(f.predicted_s, "no prediction"),
            iv(
                f.gain_over_fair.as_ref(),
                1.0,
                2,
                "no successful fair run to compare with",
            ),
            Cell::num(f.failed_runs as f64, 0),
        ]);
    }
    t.notes.push("outliers (modified z-score above 3.5) are left out of the median; gain over fair = median fair makespan / this schedule's, with its 95% bootstrap interval; failed runs are left out".into());
    t.notes.extend(r.notes.iter().cloned());
    s.table(t);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Format;
    use numalab_records::schedule::{Assignment, Plan, ScheduleFigures, TaskHistory};
    use numalab_schema::{Origin, Record};
    use numalab_stats::Interval;

    fn loaded(records: Vec<Record>) -> Loaded {
        crate::load::test_loaded("schedule", Origin::Measured, records)
    }

    #[test]
    fn plans_and_a_campaign_become_tables_with_every_figure() {
        let plan = PlanRecord {
            mix: "mix.toml".into(),
            mix_id: "abc".into(),
            resources: "this machine".into(),
            cores: 4,
            history: vec![],
            tasks: vec![TaskHistory {
                task: "a".into(),
                runs: 0,
                model: None,
            }],
            plans: vec![Plan {
                schedule: "fair".into(),
                assignments: vec![Assignment {
                    task: "a".into(),
                    threads: 2,
                    cpus: vec![0, 1],
                    cpulist: "0-1".into(),
                    mem_node: Some(1),
                    home_distance: None,
                    predicted_s: Some(1.25),
                    predicted_band_s: None,
                }],
                predicted_makespan_s: Some(1.25),
                predicted_band_s: Some([1.0, 1.5]),
                notes: vec!["a plan note".into()],
            }],
            predictions: "history fit".into(),
            notes: vec![],
        };
        let iv = |e, l, h| Interval {
            estimate: e,
            low: l,
            high: h,
            level: 0.95,
            resamples: 2000,
            seed: 1,
            thinned: None,
        };
        let summary = SummaryRecord {
            mix_id: "abc".into(),
            repeat: 3,
            schedules: vec![ScheduleFigures {
                schedule: "fair".into(),
                makespans_s: vec![1.0, 1.1, 9.0],
                outliers: vec![2],
                makespan_s: Some(iv(1.05, 1.0, 1.1)),
                predicted_s: None,
                gain_over_fair: Some(iv(1.0, 0.9, 1.1)),
                failed_runs: 1,
            }],
            notes: vec![],
        };
        let l = loaded(vec![
            Record::new("p", Origin::Measured, &plan),
            Record::new("s", Origin::Measured, &summary),
        ]);
        let secs = sections(0, &l, "");
        assert_eq!(secs.len(), 1);
        let text = secs[0].to_text(Format::Terminal, false);
        assert!(
            text.contains("fair: predicted makespan 1.250 s (1.000-1.500 s)"),
            "{text}"
        );
        let row = |first: &str| {
            text.lines()
                .find(|l| l.split_whitespace().next() == Some(first))
                .unwrap_or_else(|| panic!("no row {first} in {text}"))
                .to_string()
        };
        // The model table says there is no history; the plan row has its node.
        assert!(row("a").contains("n/a"), "{text}");
        assert!(text.contains("node 1") && text.contains("1.250"), "{text}");
        assert!(text.contains("a plan note"), "{text}");
        // The campaign row: 3 runs, 1 outlier, the median interval, 1 failed run.
        let fair: Vec<String> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("fair "))
            .map(str::to_string)
            .collect();
        let campaign = fair.last().unwrap();
        assert!(campaign.contains("1.050 [1.000, 1.100]"), "{campaign}");
        assert!(campaign.contains("1.00 [0.90, 1.10]"), "{campaign}");
        let nums: Vec<&str> = campaign.split_whitespace().collect();
        assert_eq!(&nums[1..3], ["3", "1"], "{campaign}");
        assert_eq!(nums.last(), Some(&"1"), "{campaign}");
        // Nothing without schedule records.
        assert!(sections(0, &loaded(vec![]), "").is_empty());
    }
}
