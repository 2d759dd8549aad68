//! `numalab scale`: the program at a list of thread counts with one placement strategy,
//! then throughput, per-thread throughput, speedup and parallel efficiency with
//! intervals, the knees of the curve mapped to topology boundaries, the peak, and the
//! CPU utilisation actually achieved (a program that keeps half its CPUs idle is a
//! finding, not a scaling curve).

use crate::plan::{self, PlacedPoint, Placement, PlanError};
use crate::run::{
    point_stats, ratio, run_points, scaled, HarnessError, Point, PointStats, Progress, RunRecord,
    Sink, Study,
};
use numalab_schema::units::percent as pct;
use numalab_schema::{Machine, Origin, Record};
use numalab_stats::knee::{drops, saturation, DropOptions};
use numalab_stats::Interval;
use serde::{Deserialize, Serialize};

pub use numalab_records::harness::{KneeFinding, ScalePoint, ScaleSummary};

/// `--threads LIST` (`1,2,4,8`, `1-4,8`) as thread counts, refused (usage) when it is
/// not a CPU list.
pub fn parse_thread_counts(text: &str) -> Result<Vec<usize>, HarnessError> {
    let counts = numalab_schema::cpulist::parse(text).map_err(|e| {
        HarnessError::Usage(format!("--threads {text:?}: {} (e.g. 1,2,4,8)", e.reason))
    })?;
    Ok(counts.into_iter().map(|x| x as usize).collect())
}

/// What to run: a placement and its points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalePlan {
    /// The placement strategy.
    pub placement: Placement,
    /// The node of `numa-local`.
    pub node: Option<u32>,
    /// The points, ascending thread counts.
    pub points: Vec<PlacedPoint>,
}

impl ScalePlan {
    /// Plans `threads` (default: [`plan::default_thread_counts`]) on `m`.
    pub fn new(
        m: &Machine,
        placement: Placement,
        threads: Option<&[usize]>,
        node: Option<u32>,
    ) -> Result<ScalePlan, PlanError> {
        let counts = match threads {
            Some(t) if !t.is_empty() => t.to_vec(),
            _ => plan::default_thread_counts(m, placement, node),
        };
        if counts.is_empty() {
            // No default count fits (numa-local on a node without CPUs, or on no node
            // at all): placing one thread says why, rather than a study of nothing.
            plan::place_all(m, placement, &[1], node)?;
            return Err(PlanError(format!(
                "no thread count fits --placement {} on this machine; give --threads",
                placement.name()
            )));
        }
        Ok(ScalePlan {
            placement,
            node,
            points: plan::place_all(m, placement, &counts, node)?,
        })
    }
}

/// A command and its environment after substitution.
pub type Substituted = (Vec<String>, Vec<(String, String)>);

/// Substitutes `{threads}`, `{cpus}` and `{node}` (and `extra`) in the command and the
/// environment values of a study.
pub fn substitute_all(study: &Study, vars: &[(&str, String)]) -> Result<Substituted, HarnessError> {
    let argv = numalab_proc::substitute(&study.command, vars).map_err(HarnessError::Usage)?;
    let mut env = Vec::new();
    for (k, v) in &study.env {
        let val = numalab_proc::substitute(std::slice::from_ref(v), vars)
            .map_err(|e| HarnessError::Usage(format!("--env {k}: {e}")))?;
        env.push((k.clone(), val.into_iter().next().unwrap_or_default()));
    }
    Ok((argv, env))
}

/// The placeholder values of a placed point.
pub fn point_vars(m: &Machine, p: &PlacedPoint) -> Vec<(&'static str, String)> {
    let cpus = match &p.cpus {
        Some(c) => numalab_schema::cpulist::format(c),
        None => numalab_schema::cpulist::format(&m.pu_ids()),
    };
    vec![
        ("threads", p.threads.to_string()),
        ("cpus", cpus),
        (
            "node",
            p.node
                .map(|n| n.to_string())
                .unwrap_or_else(|| p.span.nodes.first().copied().unwrap_or(0).to_string()),
        ),
    ]
}

/// Builds the study's points (placeholders substituted).
pub fn points(m: &Machine, plan: &ScalePlan, study: &Study) -> Result<Vec<Point>, HarnessError> {
    plan.points
        .iter()
        .map(|p| {
            let (argv, env) = substitute_all(study, &point_vars(m, p))?;
            Ok(Point {
                label: format!(
                    "{} thread{}",
                    p.threads,
                    if p.threads == 1 { "" } else { "s" }
                ),
                key: format!("{}/t{}", plan.placement, p.threads),
                argv,
                env,
                threads: Some(p.threads),
                placement: Some(plan.placement.to_string()),
                cpus: p.cpus.clone(),
                mem_policy: p.mem_policy.clone(),
                params: Default::default(),
                build: None,
            })
        })
        .collect()
}

/// Runs a scaling study: every run is pushed to `sink` as it ends, then the summary.
pub fn scale(
    m: &Machine,
    plan: &ScalePlan,
    study: &Study,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(&Progress),
) -> Result<ScaleSummary, HarnessError> {
    let id = study.id(
        "scale",
        &serde_json::to_value(plan).expect("plans serialize"),
    );
    let pts = points(m, plan, study)?;
    let runs = run_points("scale", &id, &pts, study, sink, progress)?;
    let summary = summarize(&id, plan, study, &runs);
    sink.push(Record::new(
        format!("scale/{id}/summary"),
        Origin::Measured,
        &summary,
    ))
    .map_err(HarnessError::Sink)?;
    Ok(summary)
}

/// Summarises the runs of each point (pure: tested on made-up runs).
pub fn summarize(
    id: &str,
    plan: &ScalePlan,
    study: &Study,
    runs: &[Vec<RunRecord>],
) -> ScaleSummary {
    let stats: Vec<PointStats> = runs
        .iter()
        .map(|r| point_stats(r, &study.response_unit))
        .collect();
    let base = stats.iter().position(|s| s.throughput.is_some());
    let base_threads = base.map(|b| plan.points[b].threads);
    let mut points = Vec::new();
    for (p, s) in plan.points.iter().zip(&stats) {
        let per_thread = s
            .throughput
            .as_ref()
            .map(|t| scaled(t, 1.0 / p.threads as f64));
        let speedup = base.and_then(|b| ratio(s, &stats[b]));
        let efficiency = match (&speedup, base_threads) {
            (Some(sp), Some(bt)) => Some(scaled(sp, bt as f64 / p.threads as f64)),
            _ => None,
        };
        points.push(ScalePoint {
            threads: p.threads,
            cpus: p.cpus_text(),
            mem_policy: p.mem_policy.clone(),
            boundaries: p.boundaries.clone(),
            span: p.span.clone(),
            stats: s.clone(),
            per_thread,
            speedup,
            efficiency,
        });
    }
    let failed_runs = stats.iter().map(|s| s.runs - s.ok).sum();
    let mut findings = Vec::new();
    let mut knees = Vec::new();

    // Points with a throughput, for curve analysis.
    let ok: Vec<usize> = (0..points.len())
        .filter(|&i| points[i].per_thread.is_some())
        .collect();
    let xs: Vec<f64> = ok.iter().map(|&i| points[i].threads as f64).collect();
    let pt: Vec<f64> = ok
        .iter()
        .map(|&i| points[i].per_thread.as_ref().expect("filtered").estimate)
        .collect();
    let iv: Vec<(f64, f64)> = ok
        .iter()
        .map(|&i| {
            let p = points[i].per_thread.as_ref().expect("filtered");
            (p.low, p.high)
        })
        .collect();
    for k in drops(&xs, &pt, Some(&iv), DropOptions::default()) {
        let (b, a) = (ok[k.index_before], ok[k.index_after]);
        let boundary = (b..a).find_map(|i| plan::transition(&plan.points[i], &plan.points[i + 1]));
        let sentence = format!(
            "per-thread throughput drops {} past {} thread{} (at {} threads){}",
            pct(-k.relative_change),
            plan.points[b].threads,
            if plan.points[b].threads == 1 { "" } else { "s" },
            plan.points[a].threads,
            boundary
                .as_ref()
                .map(|w| format!(", {w}"))
                .unwrap_or_default()
        );
        knees.push(KneeFinding {
            threads_before: plan.points[b].threads,
            threads_after: plan.points[a].threads,
            relative_change: k.relative_change,
            boundary,
            sentence: sentence.clone(),
        });
        findings.push(sentence);
    }

    // Peak of total throughput.
    let thr: Vec<(usize, &Interval)> = ok
        .iter()
        .map(|&i| (i, points[i].stats.throughput.as_ref().expect("ok")))
        .collect();
    let mut peak_found = false;
    if let Some(&(pi, peak)) = thr
        .iter()
        .max_by(|a, b| a.1.estimate.total_cmp(&b.1.estimate))
    {
        if let Some(&(li, last)) = thr.last() {
            if li != pi && last.high < peak.low {
                peak_found = true;
                findings.push(format!(
                    "throughput peaks at {} threads; at {} threads it is {:.2}x of the peak: more threads make the program slower",
                    points[pi].threads,
                    points[li].threads,
                    last.estimate / peak.estimate
                ));
            }
        }
    }
    // Saturation of the speedup.
    if !peak_found && knees.is_empty() {
        let sp: Vec<f64> = ok
            .iter()
            .map(|&i| points[i].speedup.as_ref().map_or(f64::NAN, |s| s.estimate))
            .collect();
        if let (Some(k), Some(&last)) = (saturation(&xs, &sp, 0.1), ok.last()) {
            let eff = points[last].efficiency.as_ref().map_or(1.0, |e| e.estimate);
            if eff < 0.8 {
                findings.push(format!(
                    "speedup levels off past about {} threads: {:.1}x there, {:.1}x at {} threads (parallel efficiency {})",
                    xs[k], sp[k], sp[sp.len() - 1], points[last].threads, pct(eff)
                ));
            }
        }
    }
    // Efficiency at the largest count.
    if let Some(&last) = ok.last() {
        if let (Some(sp), Some(eff), Some(bt)) = (
            &points[last].speedup,
            &points[last].efficiency,
            base_threads,
        ) {
            if points[last].threads > bt {
                findings.push(format!(
                    "at {} threads: speedup {:.2}x over {} thread{} (interval {:.2}-{:.2}), parallel efficiency {}",
                    points[last].threads,
                    sp.estimate,
                    bt,
                    if bt == 1 { "" } else { "s" },
                    sp.low,
                    sp.high,
                    pct(eff.estimate)
                ));
            }
        }
    }
    // Under-subscription.
    let under: Vec<(usize, f64)> = points
        .iter()
        .filter(|p| p.threads >= 2)
        .filter_map(|p| {
            let u = p.stats.utilisation?;
            (u < 0.75).then_some((p.threads, p.stats.cpus_busy.unwrap_or(0.0)))
        })
        .collect();
    if let Some(&(t, busy)) = under.last() {
        findings.push(format!(
            "the program kept {busy:.1} of its {t} CPUs busy at {t} threads ({}): it does not use the CPUs it is given (serial phases, locks, waiting on I/O, or it ignores the thread count), or other processes compete for these CPUs",
            pct(busy / t as f64)
        ));
    }
    if let Some(one) = points.iter().find(|p| p.threads == 1) {
        if let Some(u) = one.stats.utilisation.filter(|u| *u < 0.75) {
            findings.push(format!(
                "even at 1 thread the program kept only {u:.2} CPU busy: it sleeps or waits on I/O, or other processes use these CPUs (check with `top`); utilisation at higher counts is limited by the same cause"
            ));
        }
    }
    if plan.placement == Placement::None {
        if let Some(p) = points.iter().find(|p| {
            p.stats
                .cpus_busy
                .is_some_and(|b| b > p.threads as f64 * 1.5 + 0.5)
        }) {
            findings.push(format!(
                "at {} threads the program kept {:.1} CPUs busy: it uses more threads than it was told (does it read {{threads}}?)",
                p.threads,
                p.stats.cpus_busy.unwrap_or(0.0)
            ));
        }
    }
    if failed_runs > 0 {
        let reasons: Vec<String> = stats
            .iter()
            .flat_map(|s| s.failures.iter().cloned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        findings.push(format!(
            "{failed_runs} run(s) failed: {}",
            reasons.join("; ")
        ));
    }
    let noisy: Vec<usize> = points
        .iter()
        .filter(|p| {
            p.stats
                .throughput
                .as_ref()
                .is_some_and(|t| t.estimate > 0.0 && (t.high - t.low) / t.estimate > 0.2)
        })
        .map(|p| p.threads)
        .collect();
    if !noisy.is_empty() {
        findings.push(format!(
            "noisy: the throughput interval is wider than 20% of the median at {} threads; use a larger --repeat or a quieter machine",
            noisy
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    ScaleSummary {
        study_id: id.to_string(),
        command: study.command.clone(),
        placement: plan.placement,
        metric: study.metric.text(),
        throughput_unit: study.throughput_unit(),
        repeat: study.repeat,
        base_threads,
        points,
        knees,
        under_subscribed: under,
        findings,
        failed_runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RunSamples;

    #[test]
    fn thread_counts_are_a_cpu_list() {
        assert_eq!(parse_thread_counts("1-3,8").unwrap(), vec![1, 2, 3, 8]);
        let e = parse_thread_counts("four").unwrap_err();
        assert_eq!(
            numalab_schema::Classify::class(&e),
            numalab_schema::ErrorClass::Usage
        );
        let m = e.to_string();
        assert!(
            m.starts_with("--threads \"four\": ") && m.ends_with(" (e.g. 1,2,4,8)"),
            "{m}"
        );
    }

    #[test]
    fn numa_local_on_a_node_without_cpus_is_refused_not_a_study_of_nothing() {
        // Found in the multi-node guest: `numalab scale --placement numa-local --node 4`
        // on its memory-only node planned no thread count at all and exited 0 having
        // run nothing (the guest suite proves the memory-only case). Without --threads
        // it must be refused like with them; a node that does not exist took the same
        // path.
        let m = numalab_topo::synthetic("pack:2 numa:1 core:2 pu:1").unwrap();
        let with = ScalePlan::new(&m, Placement::NumaLocal, Some(&[1]), Some(7)).unwrap_err();
        let without = ScalePlan::new(&m, Placement::NumaLocal, None, Some(7)).unwrap_err();
        assert_eq!(with.to_string(), without.to_string());
        assert!(
            without.to_string().contains("NUMA node 7 does not exist"),
            "{without}"
        );
        let p = ScalePlan::new(&m, Placement::NumaLocal, None, Some(1)).unwrap();
        assert_eq!(
            p.points.iter().map(|p| p.threads).collect::<Vec<_>>(),
            vec![1, 2]
        );
    }

    /// A successful run with a printed throughput and the CPU time it used.
    pub(crate) fn run(threads: usize, rep: usize, throughput: f64, busy: f64) -> RunRecord {
        RunRecord {
            study: "scale".into(),
            study_id: "x".into(),
            point: format!("{threads} threads"),
            repetition: rep,
            argv: vec!["app".into()],
            shell: false,
            threads: Some(threads),
            placement: Some("compact".into()),
            cpus: None,
            mem_policy: None,
            params: Default::default(),
            ok: true,
            failure: None,
            outcome: None,
            metric: "regex:rps=(.*)".into(),
            metric_value: Some(throughput),
            throughput: Some(throughput),
            response_values: vec![],
            response_count: 0,
            cpus_busy: Some(busy),
            utilisation: Some(busy / threads as f64),
            samples: RunSamples::default(),
            build: None,
        }
    }

    fn study() -> Study {
        let mut s = Study::new(vec!["app".into(), "{threads}".into()]);
        s.metric = crate::Metric::parse("regex:rps=(.*)").unwrap();
        s
    }

    #[test]
    fn a_cliff_at_the_second_package_is_found_and_explained() {
        let m = numalab_topo::synthetic("pack:2 numa:1 core:80 pu:1").unwrap();
        let plan = ScalePlan::new(&m, Placement::Compact, None, None).unwrap();
        let runs: Vec<Vec<RunRecord>> = plan
            .points
            .iter()
            .map(|p| {
                let t = p.threads as f64;
                let per = if p.threads <= 80 { 100.0 } else { 62.0 };
                (0..3)
                    .map(|r| run(p.threads, r, t * per * (1.0 + 0.001 * r as f64), t))
                    .collect()
            })
            .collect();
        let s = summarize("id", &plan, &study(), &runs);
        assert_eq!(s.base_threads, Some(1));
        assert_eq!(s.knees.len(), 1, "{:?}", s.findings);
        let k = &s.knees[0];
        assert_eq!((k.threads_before, k.threads_after), (80, 128));
        assert!(
            k.sentence
                .starts_with("per-thread throughput drops 38% past 80 threads")
                && k.sentence.contains("start running on package 1"),
            "{}",
            k.sentence
        );
        let p80 = s.points.iter().find(|p| p.threads == 80).unwrap();
        let sp = p80.speedup.as_ref().unwrap();
        assert!((sp.estimate - 80.0).abs() < 0.2, "{sp:?}");
        assert!((p80.efficiency.as_ref().unwrap().estimate - 1.0).abs() < 0.01);
        assert!(s.under_subscribed.is_empty());
    }

    #[test]
    fn a_program_that_idles_its_cpus_is_reported() {
        let m = numalab_topo::synthetic("pack:1 core:8 pu:1").unwrap();
        let plan = ScalePlan::new(&m, Placement::Compact, Some(&[1, 8]), None).unwrap();
        let runs = vec![
            (0..3).map(|r| run(1, r, 100.0, 1.0)).collect(),
            (0..3).map(|r| run(8, r, 110.0, 0.5)).collect(),
        ];
        let s = summarize("id", &plan, &study(), &runs);
        use crate::outcome::{RunCount, Runs};
        assert_eq!(s.run_count(), RunCount { failed: 0, all: 6 });
        assert_eq!(s.under_subscribed, vec![(8, 0.5)]);
        assert!(
            s.findings
                .iter()
                .any(|f| f.contains("kept 0.5 of its 8 CPUs busy")),
            "{:?}",
            s.findings
        );
    }

    #[test]
    fn slower_with_more_threads_is_a_peak_finding() {
        let m = numalab_topo::synthetic("pack:1 core:16 pu:1").unwrap();
        let plan = ScalePlan::new(&m, Placement::Compact, Some(&[1, 2, 4, 8, 16]), None).unwrap();
        let thr = [100.0, 190.0, 300.0, 150.0, 30.0];
        let runs: Vec<Vec<RunRecord>> = plan
            .points
            .iter()
            .zip(thr)
            .map(|(p, t)| {
                (0..3)
                    .map(|r| run(p.threads, r, t + r as f64, p.threads as f64))
                    .collect()
            })
            .collect();
        let s = summarize("id", &plan, &study(), &runs);
        assert!(
            s.findings
                .iter()
                .any(|f| f.starts_with("throughput peaks at 4 threads")),
            "{:?}",
            s.findings
        );
    }
}
