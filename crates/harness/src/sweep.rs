//! `numalab sweep`: a tuning knob swept over its values, either at run time (the value
//! is substituted into the command, `{NAME}`) or at compile time (a build command with
//! `{NAME}` runs once before each value's runs). Each value is timed (or its printed
//! metric read), and the result is the speedup over the first value with an interval,
//! and the best value, named only when it is distinguishable from the first.

use crate::plan::{self, Placement};
use crate::run::{
    point_stats, ratio, HarnessError, Point, PointStats, Progress, RunRecord, Sink, Study,
};
use numalab_schema::{cpulist, Machine, Origin, Record};
use std::collections::BTreeMap;

pub use numalab_records::harness::{Param, SweepPlan, SweepPoint, SweepSummary};

/// Refuses (usage) a parameter named twice, before anything is planned.
pub fn check_names(params: &[Param]) -> Result<(), HarnessError> {
    let mut names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err(HarnessError::Usage(
            "--param: the same name is given twice".into(),
        ));
    }
    Ok(())
}

/// Plans a sweep on `m`, checked against the command: every parameter must appear in
/// the command, its environment or the build; thread counts must fit the machine.
pub fn new_plan(
    m: &Machine,
    params: Vec<Param>,
    build: Option<&str>,
    threads: Option<usize>,
    placement: Placement,
    study: &Study,
) -> Result<SweepPlan, HarnessError> {
    if params.is_empty() {
        return Err(HarnessError::Usage(
            "give at least one --param NAME=V1,V2,...".into(),
        ));
    }
    let build = match build {
        Some(b) if study.shell => Some(vec![b.to_string()]),
        Some(b) => Some(shlex::split(b).filter(|w| !w.is_empty()).ok_or_else(|| {
            HarnessError::Usage(format!(
                "--build {b:?}: unbalanced quotes; quote the whole build command once"
            ))
        })?),
        None => None,
    };
    let mut used = numalab_proc::placeholders(&study.command);
    for (_, v) in &study.env {
        used.extend(numalab_proc::placeholders(std::slice::from_ref(v)));
    }
    if let Some(b) = &build {
        used.extend(numalab_proc::placeholders(b));
    }
    for p in &params {
        if !used.contains(&p.name) {
            return Err(HarnessError::Usage(format!(
                "--param {}: {{{}}} appears neither in the command, nor in --env, nor in --build; put {{{}}} where the value goes",
                p.name, p.name, p.name
            )));
        }
    }
    let cpus = match threads {
        Some(t) if placement != Placement::None => plan::place(m, placement, t, None)?.cpus,
        Some(t) => {
            plan::place(m, Placement::None, t, None)?;
            None
        }
        None => None,
    };
    Ok(SweepPlan {
        params,
        build,
        threads,
        placement,
        cpus,
    })
}

fn label(params: &BTreeMap<String, String>) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a sweep.
pub fn sweep(
    m: &Machine,
    plan: &SweepPlan,
    study: &Study,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(&Progress),
) -> Result<SweepSummary, HarnessError> {
    sweep_with(m, plan, study, sink, progress, None)
}

/// Runs a sweep, calling `hook` after each point (e.g. to attach a counter profile
/// of the point's command; see [`crate::run::PointHook`]).
pub fn sweep_with(
    m: &Machine,
    plan: &SweepPlan,
    study: &Study,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(&Progress),
    hook: Option<crate::run::PointHook<'_>>,
) -> Result<SweepSummary, HarnessError> {
    let id = study.id(
        "sweep",
        &serde_json::to_value(plan).expect("plans serialize"),
    );
    let cpus_text = match &plan.cpus {
        Some(c) => cpulist::format(c),
        None => cpulist::format(&m.pu_ids()),
    };
    let node = plan
        .cpus
        .as_ref()
        .and_then(|c| m.pu(c[0]))
        .and_then(|p| p.numa_node)
        .unwrap_or(0);
    let mut pts = Vec::new();
    for combo in plan.combinations() {
        let mut vars: Vec<(&str, String)> = vec![
            ("threads", plan.threads.unwrap_or(m.pus.len()).to_string()),
            ("cpus", cpus_text.clone()),
            ("node", node.to_string()),
        ];
        for (k, v) in &combo {
            vars.push((k.as_str(), v.clone()));
        }
        let (argv, env) = crate::scale::substitute_all(study, &vars)?;
        let build = match &plan.build {
            Some(b) => Some(numalab_proc::substitute(b, &vars).map_err(HarnessError::Usage)?),
            None => None,
        };
        let l = label(&combo);
        pts.push(Point {
            key: l.replace(' ', ","),
            label: l,
            argv,
            env,
            threads: plan.threads,
            placement: plan.threads.map(|_| plan.placement.to_string()),
            cpus: plan.cpus.clone(),
            mem_policy: None,
            params: combo,
            build,
        });
    }
    let (runs, hook_failures) =
        crate::run::run_points_with("sweep", &id, &pts, study, sink, progress, hook)?;
    let mut summary = summarize(&id, plan, study, &runs);
    summary.findings.extend(
        hook_failures
            .into_iter()
            .map(|f| format!("no profile for {f}")),
    );
    sink.push(Record::new(
        format!("sweep/{id}/summary"),
        Origin::Measured,
        &summary,
    ))
    .map_err(HarnessError::Sink)?;
    Ok(summary)
}

/// Summarises a sweep (pure).
pub fn summarize(
    id: &str,
    plan: &SweepPlan,
    study: &Study,
    runs: &[Vec<RunRecord>],
) -> SweepSummary {
    let stats: Vec<PointStats> = runs
        .iter()
        .map(|r| point_stats(r, &study.response_unit))
        .collect();
    let combos = plan.combinations();
    let base = &stats[0];
    let points: Vec<SweepPoint> = combos
        .iter()
        .zip(&stats)
        .zip(runs)
        .map(|((c, s), rs)| SweepPoint {
            params: c.clone(),
            label: label(c),
            speedup: ratio(s, base),
            build_failed: rs.iter().any(|r| r.build.as_ref().is_some_and(|b| !b.ok)),
            stats: s.clone(),
        })
        .collect();
    let failed_runs = stats.iter().map(|s| s.runs - s.ok).sum();
    let fastest = points
        .iter()
        .filter(|p| p.stats.throughput.is_some())
        .max_by(|a, b| {
            let ta = a.stats.throughput.as_ref().map_or(0.0, |t| t.estimate);
            let tb = b.stats.throughput.as_ref().map_or(0.0, |t| t.estimate);
            ta.total_cmp(&tb)
        });
    let mut findings = Vec::new();
    let base_label = points.first().map(|p| p.label.clone()).unwrap_or_default();
    let mut best = None;
    match fastest {
        None => findings.push("no value produced a result".to_string()),
        Some(f) if base.throughput.is_none() => {
            best = Some(f.label.clone());
            findings.push(format!(
                "the baseline {base_label} produced no result; the fastest value is {}",
                f.label
            ));
        }
        Some(f) if f.label == base_label => findings.push(format!(
            "the baseline {base_label} is the fastest value measured"
        )),
        Some(f) => {
            let sp = f.speedup.clone().expect("both have throughput");
            if sp.low > 1.0 {
                best = Some(f.label.clone());
                findings.push(format!(
                    "best: {} at {:.2}x the speed of {base_label} (interval {:.2}-{:.2})",
                    f.label, sp.estimate, sp.low, sp.high
                ));
            } else {
                findings.push(format!(
                    "no value is measurably faster than {base_label}: the fastest, {}, is {:.2}x (interval {:.2}-{:.2}, which includes 1)",
                    f.label, sp.estimate, sp.low, sp.high
                ));
            }
        }
    }
    for p in points.iter().filter(|p| p.build_failed) {
        findings.push(format!("{}: the build failed", p.label));
    }
    SweepSummary {
        study_id: id.to_string(),
        command: study.command.clone(),
        plan: plan.clone(),
        metric: study.metric.text(),
        throughput_unit: study.throughput_unit(),
        repeat: study.repeat,
        fastest: fastest.map(|f| f.label.clone()),
        points,
        best,
        findings,
        failed_runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_named_twice_is_refused() {
        let a: Param = "A=1,2".parse().unwrap();
        let b: Param = "B=x".parse().unwrap();
        assert!(check_names(&[a.clone(), b.clone()]).is_ok());
        let e = check_names(&[a.clone(), b, a]).unwrap_err();
        assert_eq!(e.to_string(), "--param: the same name is given twice");
        assert!(matches!(e, HarnessError::Usage(_)));
    }

    #[test]
    fn params_parse_and_refuse_bad_input() {
        let p: Param = "DIST=0,8,16".parse().unwrap();
        assert_eq!(p.values, vec!["0", "8", "16"]);
        for (text, why) in [
            ("DIST", "NAME=V1,V2"),
            ("1X=1", "must be letters"),
            ("threads=1,2", "set by numalab"),
            ("A=1,,2", "empty"),
            ("A=1,1", "twice"),
        ] {
            let e = text.parse::<Param>().unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn combinations_baseline_first() {
        let m = numalab_topo::synthetic("pack:1 core:2 pu:1").unwrap();
        let study = Study::new(vec!["./a".into(), "{A}".into(), "{B}".into()]);
        let plan = new_plan(
            &m,
            vec!["A=1,2".parse().unwrap(), "B=x,y".parse().unwrap()],
            None,
            None,
            Placement::Compact,
            &study,
        )
        .unwrap();
        let labels: Vec<String> = plan.combinations().iter().map(label).collect();
        assert_eq!(labels, vec!["A=1 B=x", "A=1 B=y", "A=2 B=x", "A=2 B=y"]);
        let e = new_plan(
            &m,
            vec!["C=1".parse().unwrap()],
            None,
            None,
            Placement::Compact,
            &study,
        )
        .unwrap_err();
        assert!(e.to_string().contains("{C} appears neither"), "{e}");
        let ok = new_plan(
            &m,
            vec!["C=1".parse().unwrap()],
            Some("make DIST={C}"),
            Some(2),
            Placement::Compact,
            &study,
        )
        .unwrap();
        assert_eq!(ok.build.unwrap(), vec!["make", "DIST={C}"]);
        assert_eq!(ok.cpus, Some(vec![0, 1]));
        assert!(new_plan(
            &m,
            vec!["C=1".parse().unwrap()],
            Some("make {C}"),
            Some(3),
            Placement::Compact,
            &study
        )
        .is_err());
    }
}
