//! `numalab policy`: the program under first-touch local allocation, interleave over
//! all nodes, bind to one node and preferred, with the same pinning, while its pages
//! per node are sampled from `numa_maps`; then how balanced its memory was, which
//! class of program it is (experiments.md B2: balanced programs gain from local
//! placement; programs whose data was all touched by one main thread put >95% of their
//! pages on one node and gain from interleave) and which policy to use, as a command
//! line to paste.

use crate::plan::{self, Placement, PlanError};
use crate::run::{
    point_stats, ratio, run_points, HarnessError, Point, PointStats, Progress, RunRecord, Sink,
    Study,
};
use crate::scale::substitute_all;
use numalab_schema::units::percent as pct;
use numalab_schema::{cpulist, Machine, Origin, Record};
use std::collections::BTreeMap;

pub use numalab_records::harness::{PolicyKind, PolicyPlan, PolicyResult, PolicySummary};

/// The placements a policy study pins by: `numa-local` is refused (usage), as it would
/// bind memory itself and the policies are what is compared.
pub fn check_placement(placement: Placement) -> Result<(), HarnessError> {
    if placement == Placement::NumaLocal {
        return Err(HarnessError::Usage(
            "--placement numa-local would bind memory itself; use compact, scatter or none (the policies are what is compared)".into(),
        ));
    }
    Ok(())
}

/// Plans a policy study on `m`: `threads` (default: every PU) placed by `placement`;
/// `node` for bind/preferred (default: the node of the first CPU).
pub fn new_plan(
    m: &Machine,
    threads: Option<usize>,
    placement: Placement,
    node: Option<u32>,
    policies: &[PolicyKind],
) -> Result<PolicyPlan, PlanError> {
    let threads = threads.unwrap_or(m.pus.len());
    let placed = plan::place(
        m,
        if placement == Placement::NumaLocal {
            Placement::Compact
        } else {
            placement
        },
        threads,
        None,
    )?;
    let memory_nodes: Vec<u32> = m
        .numa_nodes
        .iter()
        .filter(|n| n.memory_bytes > 0)
        .map(|n| n.os_index)
        .collect();
    let node = match node {
        Some(n) => {
            numalab_topo::select::resolve_nodes(&n.to_string(), m)
                .map_err(|e| PlanError(e.to_string()))?;
            n
        }
        None => placed
            .span
            .nodes
            .first()
            .copied()
            .or_else(|| memory_nodes.first().copied())
            .ok_or_else(|| PlanError("this machine has no NUMA node with memory".into()))?,
    };
    if memory_nodes.is_empty() {
        return Err(PlanError(
            "this machine has no NUMA node with memory".into(),
        ));
    }
    let mut policies = policies.to_vec();
    if policies.is_empty() {
        policies = PolicyKind::ALL.to_vec();
    }
    policies.dedup();
    Ok(PolicyPlan {
        threads,
        placement,
        cpus: placed.cpus.clone(),
        node,
        interleave_nodes: memory_nodes.clone(),
        cpu_nodes: placed.span.nodes.clone(),
        policies,
        memory_nodes,
    })
}

/// A `numactl` command line applying policy `k` with `plan`'s pinning.
pub fn numactl(plan: &PolicyPlan, k: PolicyKind, argv: &[String]) -> String {
    let mut words: Vec<String> = vec!["numactl".into()];
    words.push(match k {
        PolicyKind::Local => "--localalloc".into(),
        PolicyKind::Interleave => {
            if plan.interleave_nodes == plan.memory_nodes {
                "--interleave=all".into()
            } else {
                format!("--interleave={}", cpulist::format(&plan.interleave_nodes))
            }
        }
        PolicyKind::Bind => format!("--membind={}", plan.node),
        PolicyKind::Preferred => format!("--preferred={}", plan.node),
    });
    if let Some(c) = &plan.cpus {
        words.push(format!("--physcpubind={}", cpulist::format(c)));
    }
    words.extend(argv.iter().cloned());
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// A word as a POSIX shell reads it: as is when it holds only safe characters, else
/// quoted.
fn quote(w: &str) -> String {
    let safe = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if safe {
        w.to_string()
    } else {
        shlex::try_quote(w).map_or_else(|_| format!("{w:?}"), |q| q.into_owned())
    }
}

/// Runs each side of a comparison needs before a policy is called faster than local.
pub const MIN_RUNS_FOR_A_CLAIM: usize = 2;

/// Evenness of fractions over `k` nodes: 1 - total variation distance from the even
/// split, scaled so that all pages on one node gives 0.
pub fn evenness(fractions: &BTreeMap<u32, f64>, nodes: &[u32]) -> Option<f64> {
    let k = nodes.len();
    if k < 2 {
        return None;
    }
    let even = 1.0 / k as f64;
    let tv: f64 = nodes
        .iter()
        .map(|n| (fractions.get(n).copied().unwrap_or(0.0) - even).abs())
        .sum::<f64>()
        + fractions
            .iter()
            .filter(|(n, _)| !nodes.contains(n))
            .map(|(_, f)| *f)
            .sum::<f64>();
    let worst = 2.0 * (1.0 - even);
    Some((1.0 - tv / worst).clamp(0.0, 1.0))
}

/// Whether a program whose busiest node holds `top` of its data pages, with threads on
/// `nodes` nodes, is "concentrated": the busiest node holds more than halfway from an
/// even share (`1/nodes`) to all of it. A fixed share (this was "over 95%") called a
/// one-thread program "balanced" as soon as its runtime's own stacks and heap (about
/// 2 MiB, touched wherever the unpinned main thread ran) sat on other nodes beside a
/// 16 MiB buffer: 88% on one of four nodes (seen in the emulated Arm server's CI run).
pub fn concentrated(top: f64, nodes: usize) -> bool {
    if nodes < 2 {
        return false;
    }
    let even = 1.0 / nodes as f64;
    top > even + (1.0 - even) / 2.0
}

/// Runs a policy study.
pub fn policy(
    m: &Machine,
    plan: &PolicyPlan,
    study: &Study,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(&Progress),
) -> Result<PolicySummary, HarnessError> {
    let id = study.id(
        "policy",
        &serde_json::to_value(plan).expect("plans serialize"),
    );
    let cpus_text = match &plan.cpus {
        Some(c) => cpulist::format(c),
        None => cpulist::format(&m.pu_ids()),
    };
    let vars = [
        ("threads", plan.threads.to_string()),
        ("cpus", cpus_text),
        ("node", plan.node.to_string()),
    ];
    let (argv, env) = substitute_all(study, &vars)?;
    let mut sampled = study.clone();
    sampled.sampling.pages = true;
    let pts: Vec<Point> = plan
        .policies
        .iter()
        .map(|&k| Point {
            label: k.name().to_string(),
            key: k.name().to_string(),
            argv: argv.clone(),
            env: env.clone(),
            threads: Some(plan.threads),
            placement: Some(plan.placement.to_string()),
            cpus: plan.cpus.clone(),
            mem_policy: plan.mem_policy(k),
            params: Default::default(),
            build: None,
        })
        .collect();
    let runs = run_points("policy", &id, &pts, &sampled, sink, progress)?;
    let summary = summarize(&id, plan, study, &argv, &runs);
    sink.push(Record::new(
        format!("policy/{id}/summary"),
        Origin::Measured,
        &summary,
    ))
    .map_err(HarnessError::Sink)?;
    Ok(summary)
}

/// Summarises the runs of each policy (pure).
pub fn summarize(
    id: &str,
    plan: &PolicyPlan,
    study: &Study,
    argv: &[String],
    runs: &[Vec<RunRecord>],
) -> PolicySummary {
    let stats: Vec<PointStats> = runs
        .iter()
        .map(|r| point_stats(r, &study.response_unit))
        .collect();
    let local_idx = plan.policies.iter().position(|&k| k == PolicyKind::Local);
    let mut results = Vec::new();
    for ((k, s), rs) in plan.policies.iter().zip(&stats).zip(runs) {
        let pages = rs
            .iter()
            .filter_map(|r| r.samples.pages.as_ref()?.peak.clone())
            .max_by_key(|p| p.data_total());
        let fractions = pages.as_ref().map(|p| p.fractions()).unwrap_or_default();
        let max_node_fraction = fractions.values().copied().reduce(f64::max);
        let spread_nodes = if plan.cpu_nodes.len() >= 2 {
            plan.cpu_nodes.clone()
        } else {
            plan.memory_nodes.clone()
        };
        results.push(PolicyResult {
            policy: *k,
            mem_policy: plan.mem_policy(*k),
            vs_local: local_idx.and_then(|l| ratio(s, &stats[l])),
            evenness: evenness(&fractions, &spread_nodes),
            stats: s.clone(),
            pages,
            fractions,
            max_node_fraction,
        });
    }
    let failed_runs = stats.iter().map(|s| s.runs - s.ok).sum();
    let single_node = plan.memory_nodes.len() < 2;
    let mut findings = Vec::new();
    let local = local_idx.map(|l| &results[l]);
    let (class, classification) = if single_node {
        (
            "single-node",
            format!(
                "this machine has one NUMA node with memory (node {}): every policy puts all pages there, so the comparison is trivial here; run this study on a machine with several nodes",
                plan.memory_nodes.first().copied().unwrap_or(0)
            ),
        )
    } else if let Some((n, f)) = local.and_then(|l| {
        l.fractions
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(n, f)| (*n, *f))
    }) {
        if plan.cpu_nodes.len() < 2 {
            (
                "one-node-threads",
                format!(
                    "the threads run on one node ({}) and first touch keeps {} of the pages on node {n}: local placement is right for this pinning",
                    cpulist::format(&plan.cpu_nodes),
                    pct(f)
                ),
            )
        } else if concentrated(f, plan.cpu_nodes.len()) {
            (
                "concentrated",
                format!(
                    "{} of the data pages are on node {n} although the threads run on nodes {} (an even spread would put {} on each): the data was touched mostly from one node, typically by one main thread, so most threads read remote memory; use interleave",
                    pct(f),
                    cpulist::format(&plan.cpu_nodes),
                    pct(1.0 / plan.cpu_nodes.len() as f64)
                ),
            )
        } else {
            (
                "balanced",
                format!(
                    "the data pages are spread over the nodes the threads run on (at most {} on one node, {} each if even): threads touch their own data, so local (first-touch) placement suits it",
                    pct(f),
                    pct(1.0 / plan.cpu_nodes.len() as f64)
                ),
            )
        }
    } else {
        (
            "unknown",
            "no page counts were read (runs too short for the sampling interval, or no local run); the class is unknown".to_string(),
        )
    };
    // The best measured policy.
    let best = results
        .iter()
        .filter(|r| r.stats.throughput.is_some())
        .max_by(|a, b| {
            let ta = a.stats.throughput.as_ref().map_or(0.0, |t| t.estimate);
            let tb = b.stats.throughput.as_ref().map_or(0.0, |t| t.estimate);
            ta.total_cmp(&tb)
        });
    let (recommended, recommendation) = if single_node {
        (
            Some(PolicyKind::Local),
            "keep the default (local first touch): with one node no policy can do better"
                .to_string(),
        )
    } else {
        match (best, local) {
            (Some(b), Some(l)) if b.policy != PolicyKind::Local => {
                let v = b.vs_local.clone();
                // One run per side gives a bootstrap "interval" of a single point: it
                // says nothing about the noise, so it cannot make a difference real.
                let enough_runs = b.stats.throughput_values.len() >= MIN_RUNS_FOR_A_CLAIM
                    && l.stats.throughput_values.len() >= MIN_RUNS_FOR_A_CLAIM;
                let significant = enough_runs && v.as_ref().is_some_and(|i| i.low > 1.0);
                let too_few = if enough_runs {
                    ""
                } else {
                    " (one run per policy cannot tell a difference from noise: use --repeat 3 or more)"
                };
                if significant {
                    let i = v.expect("checked");
                    (
                        Some(b.policy),
                        format!(
                            "{} is {:.2}x as fast as local first touch (interval {:.2}-{:.2})",
                            b.policy.name(),
                            i.estimate,
                            i.low,
                            i.high
                        ),
                    )
                } else if class == "concentrated" {
                    (
                        Some(PolicyKind::Interleave),
                        if enough_runs {
                            "interleave, by the page placement; the measured difference is within the noise (use a larger --repeat to confirm)".to_string()
                        } else {
                            format!("interleave, by the page placement{too_few}")
                        },
                    )
                } else {
                    (
                        Some(PolicyKind::Local),
                        format!(
                            "keep the default (local first touch): {} is not measurably faster{too_few}",
                            b.policy.name()
                        ),
                    )
                }
            }
            (Some(_), Some(l)) => {
                // Local measured fastest. For a concentrated program interleave stays
                // the advice, by the page placement, unless it was measurably slower:
                // otherwise the advice would follow whichever run the noise favoured.
                let il = results.iter().find(|r| r.policy == PolicyKind::Interleave);
                let enough_runs = l.stats.throughput_values.len() >= MIN_RUNS_FOR_A_CLAIM
                    && il.is_none_or(|r| r.stats.throughput_values.len() >= MIN_RUNS_FOR_A_CLAIM);
                let interleave_slower = enough_runs
                    && il.is_some_and(|r| r.vs_local.as_ref().is_some_and(|i| i.high < 1.0));
                let too_few = if enough_runs {
                    ""
                } else {
                    " (one run per policy cannot tell a difference from noise: use --repeat 3 or more)"
                };
                if class == "concentrated" && il.is_some() && !interleave_slower {
                    (
                        Some(PolicyKind::Interleave),
                        format!("interleave, by the page placement; local measured fastest but not measurably faster{too_few}"),
                    )
                } else {
                    (
                        Some(PolicyKind::Local),
                        format!("local first touch is the fastest policy measured{too_few}"),
                    )
                }
            }
            _ => (None, "no policy produced a result".to_string()),
        }
    };
    let command_line = recommended
        .filter(|_| !single_node)
        .map(|k| numactl(plan, k, argv));
    for r in &results {
        if let Some(f) = r.stats.failures.first() {
            if matches!(r.policy, PolicyKind::Bind | PolicyKind::Preferred)
                && f.contains("placement")
            {
                findings.push(format!(
                    "{}: the kernel refused the policy ({f})",
                    r.policy.name()
                ));
            }
        }
    }
    findings.insert(0, classification.clone());
    findings.push(format!("recommendation: {recommendation}"));
    PolicySummary {
        study_id: id.to_string(),
        command: argv.to_vec(),
        plan: plan.clone(),
        metric: study.metric.text(),
        throughput_unit: study.throughput_unit(),
        repeat: study.repeat,
        results,
        single_node,
        class: class.to_string(),
        classification,
        recommended,
        recommendation,
        command_line,
        findings,
        failed_runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numa_maps::NodeBytes;

    #[test]
    fn numa_local_is_no_placement_for_a_policy_study() {
        for p in [Placement::Compact, Placement::Scatter, Placement::None] {
            assert!(check_placement(p).is_ok(), "{p:?}");
        }
        let e = check_placement(Placement::NumaLocal).unwrap_err();
        assert!(matches!(e, HarnessError::Usage(_)));
        assert!(e
            .to_string()
            .starts_with("--placement numa-local would bind memory itself"));
    }

    #[test]
    fn evenness_from_even_to_all_on_one_node() {
        let nodes = [0, 1];
        let f = |a: f64, b: f64| BTreeMap::from([(0u32, a), (1u32, b)]);
        assert_eq!(evenness(&f(0.5, 0.5), &nodes), Some(1.0));
        assert_eq!(evenness(&f(1.0, 0.0), &nodes), Some(0.0));
        assert!((evenness(&f(0.75, 0.25), &nodes).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(evenness(&f(1.0, 0.0), &[0]), None);
    }

    #[test]
    fn concentrated_means_the_busiest_node_holds_over_halfway_from_even_to_all() {
        // Four nodes: even is 25%, halfway to all is 62.5%.
        assert!(
            concentrated(0.88, 4),
            "a 16 MiB buffer beside 2.2 MiB of runtime"
        );
        assert!(concentrated(0.63, 4));
        assert!(!concentrated(0.62, 4));
        assert!(
            !concentrated(0.34, 4),
            "4 threads' own shares plus the runtime"
        );
        // Two nodes: halfway from 50% to all is 75%.
        assert!(concentrated(0.80, 2));
        assert!(!concentrated(0.70, 2));
        assert!(!concentrated(1.0, 1), "one node: never concentrated");
        assert!(!concentrated(f64::NAN, 4));
    }

    fn run(policy: PolicyKind, rep: usize, throughput: f64) -> RunRecord {
        RunRecord {
            study: "policy".into(),
            study_id: "x".into(),
            point: policy.name().into(),
            repetition: rep,
            argv: vec!["app".into()],
            shell: false,
            threads: Some(8),
            placement: Some("compact".into()),
            cpus: Some("0-7".into()),
            mem_policy: None,
            params: Default::default(),
            ok: true,
            failure: None,
            outcome: None,
            metric: "wall".into(),
            metric_value: Some(1.0 / throughput),
            throughput: Some(throughput),
            response_values: vec![],
            response_count: 0,
            cpus_busy: Some(8.0),
            utilisation: Some(1.0),
            samples: Default::default(),
            build: None,
        }
    }

    #[test]
    fn concentrated_pages_advise_interleave_unless_it_is_measurably_slower() {
        // Found in the multi-node guest: a program touching all its memory from one
        // thread (concentrated) got "interleave" when a noisy single run made bind
        // fastest, and "local" when it made local fastest.
        let m = numalab_topo::synthetic("pack:2 numa:1 core:4 pu:1").unwrap();
        let p = new_plan(&m, Some(8), Placement::Compact, Some(0), &[]).unwrap();
        let study = Study::new(vec!["app".into()]);
        let on_node0 = NodeBytes {
            data: BTreeMap::from([(0, 64 << 20)]),
            all: BTreeMap::from([(0, 64 << 20)]),
        };
        let runs_with = |reps: usize, speeds: [f64; 4], pages: &NodeBytes| -> Vec<Vec<RunRecord>> {
            PolicyKind::ALL
                .iter()
                .zip(speeds)
                .map(|(&k, t)| {
                    (0..reps)
                        .map(|r| {
                            let mut x = run(k, r, t * (1.0 + 0.01 * r as f64));
                            x.samples.pages = Some(crate::sample::PageFigures {
                                samples: 1,
                                largest_bytes: pages.data_total(),
                                peak: Some(pages.clone()),
                                series: vec![],
                                not_available: None,
                            });
                            x
                        })
                        .collect()
                })
                .collect()
        };
        let runs = |reps: usize, speeds: [f64; 4]| runs_with(reps, speeds, &on_node0);
        // The buffer on node 0 and the runtime's 2.2 MiB (stacks, heap) on node 1: 88%
        // on one of two nodes is still concentrated; 70% is not.
        let spread = |a: u64, b: u64| NodeBytes {
            data: BTreeMap::from([(0, a), (1, b)]),
            all: BTreeMap::from([(0, a), (1, b)]),
        };
        let s = summarize(
            "x",
            &p,
            &study,
            &["app".into()],
            &runs_with(1, [1.2, 1.1, 1.0, 1.0], &spread(16 << 20, 2306867)),
        );
        assert_eq!(s.class, "concentrated", "{}", s.classification);
        assert!(s.classification.contains("88%"), "{}", s.classification);
        let s = summarize(
            "x",
            &p,
            &study,
            &["app".into()],
            &runs_with(1, [1.2, 1.1, 1.0, 1.0], &spread(70 << 20, 30 << 20)),
        );
        assert_eq!(s.class, "balanced", "{}", s.classification);
        // Local fastest on one run each: the placement decides.
        let s = summarize(
            "x",
            &p,
            &study,
            &["app".into()],
            &runs(1, [1.2, 1.1, 1.0, 1.0]),
        );
        assert_eq!(s.class, "concentrated");
        assert_eq!(
            s.recommended,
            Some(PolicyKind::Interleave),
            "{}",
            s.recommendation
        );
        assert!(
            s.recommendation.contains("--repeat"),
            "{}",
            s.recommendation
        );
        // Local clearly faster than interleave over several runs: local.
        let s = summarize(
            "x",
            &p,
            &study,
            &["app".into()],
            &runs(3, [1.5, 1.0, 1.0, 1.0]),
        );
        assert_eq!(
            s.recommended,
            Some(PolicyKind::Local),
            "{}",
            s.recommendation
        );
        assert!(
            !s.recommendation.contains("--repeat"),
            "{}",
            s.recommendation
        );
    }

    #[test]
    fn one_run_per_policy_never_makes_a_policy_significantly_faster() {
        // Found in the multi-node guest: with --repeat 1 every bootstrap interval is a
        // single point, and bind at 1.6x local was reported as "1.60x as fast
        // (interval 1.60-1.60)". One run cannot tell a difference from noise.
        let m = numalab_topo::synthetic("pack:2 numa:1 core:4 pu:1").unwrap();
        let p = new_plan(&m, Some(8), Placement::Compact, Some(0), &[]).unwrap();
        let study = Study::new(vec!["app".into()]);
        let speeds = [1.0, 1.1, 1.6, 1.2];
        let runs = |reps: usize| -> Vec<Vec<RunRecord>> {
            PolicyKind::ALL
                .iter()
                .zip(speeds)
                .map(|(&k, t)| {
                    (0..reps)
                        .map(|r| run(k, r, t * (1.0 + 0.01 * r as f64)))
                        .collect()
                })
                .collect()
        };
        let one = summarize("x", &p, &study, &["app".into()], &runs(1));
        assert_ne!(
            one.recommended,
            Some(PolicyKind::Bind),
            "{}",
            one.recommendation
        );
        assert!(
            one.recommendation.contains("--repeat"),
            "{}",
            one.recommendation
        );
        // With enough runs clearly apart, the faster policy is named.
        let three = summarize("x", &p, &study, &["app".into()], &runs(3));
        assert_eq!(
            three.recommended,
            Some(PolicyKind::Bind),
            "{}",
            three.recommendation
        );
        assert!(three.recommendation.contains("as fast as local"));
    }

    #[test]
    fn numactl_lines_for_each_policy() {
        let m = numalab_topo::synthetic("pack:2 numa:1 core:4 pu:1").unwrap();
        let p = new_plan(&m, Some(8), Placement::Compact, Some(1), &[]).unwrap();
        let argv: Vec<String> = vec!["./app".into(), "--name".into(), "a b".into()];
        assert_eq!(
            numactl(&p, PolicyKind::Interleave, &argv),
            "numactl --interleave=all --physcpubind=0-7 ./app --name 'a b'"
        );
        assert_eq!(
            numactl(&p, PolicyKind::Bind, &argv[..1]),
            "numactl --membind=1 --physcpubind=0-7 ./app"
        );
        assert!(numactl(&p, PolicyKind::Local, &argv[..1]).contains("--localalloc"));
        assert!(numactl(&p, PolicyKind::Preferred, &argv[..1]).contains("--preferred=1"));
        assert_eq!(p.cpu_nodes, vec![0, 1]);
        assert!(new_plan(&m, Some(8), Placement::Compact, Some(5), &[]).is_err());
    }
}
