//! Schedule construction on synthetic histories, checked by hand, and a real run of a small
//! mix on this machine.

use numalab_harness::RunRecord;
use numalab_layout::affinity::CostMatrix;
use numalab_schedule::history::{self, Observation};
use numalab_schedule::mix::Mix;
use numalab_schedule::plan::{self, HomeAffinity, Predictor, Resources};
use numalab_schedule::run;
use numalab_schema::record::{Envelope, Host, Tool};
use numalab_schema::{Bundle, Origin, Record};
use std::collections::BTreeMap;

const MIX: &str = r#"
[[task]]
name = "A"
command = ["a", "{threads}"]
data = "6 GiB"
threads = [1, 2, 4, 8]

[[task]]
name = "B"
command = ["b", "--threads={threads}"]
data = "1 GiB"
threads = [1, 2, 4, 8]

[[task]]
name = "C"
command = ["c"]
data = "1 GiB"
threads = [1, 2]
"#;

/// Exact Amdahl histories: A = 4 + 4/t (scales badly), B = 24/t (perfectly parallel,
/// heavy), C = 1 + 2/t; three runs per thread count.
fn histories() -> Vec<Vec<Observation>> {
    let law: [(f64, f64, &[usize]); 3] = [
        (4.0, 4.0, &[1, 2, 4, 8]),
        (0.0, 24.0, &[1, 2, 4, 8]),
        (1.0, 2.0, &[1, 2]),
    ];
    law.iter()
        .map(|&(s, p, ts)| {
            ts.iter()
                .flat_map(|&t| {
                    (0..3).map(move |_| Observation {
                        threads: t,
                        placement: "compact".into(),
                        seconds: s + p / t as f64,
                    })
                })
                .collect()
        })
        .collect()
}

fn line_resources(distance: bool) -> Resources {
    // 8 CPUs on a line, numbered in a zig-zag: CPU 0 at position 0, 1 at 7, 2 at 1, 3 at 6,
    // 4 at 2, 5 at 5, 6 at 3, 7 at 4. CPUs 0-3 on node 0, 4-7 on node 1.
    let pos = |c: usize| if c.is_multiple_of(2) { c / 2 } else { 7 - c / 2 } as f64;
    let mut ns = vec![0.0; 64];
    for i in 0..8 {
        for j in 0..8 {
            ns[i * 8 + j] = (pos(i) - pos(j)).abs();
        }
    }
    Resources {
        cpus: (0..8).collect(),
        node_of: (0..8).map(|c| (c, c / 4)).collect(),
        compact: (0..8).collect(),
        distance: distance.then(|| CostMatrix {
            cpus: (0..8).collect(),
            ns,
            source: "test".into(),
            notes: Vec::new(),
        }),
        source: "test line".into(),
        home: None,
    }
}

#[test]
fn fair_load_and_optimized_by_hand() {
    let mix = Mix::parse(MIX, "mix.toml").unwrap();
    let models: Vec<_> = histories().iter().map(|o| history::fit(o)).collect();
    for m in &models {
        let m = m.as_ref().unwrap();
        assert_eq!(m.form, "amdahl");
        assert!(m.residual_rel < 1e-9);
    }
    let res = line_resources(true);
    let plans = plan::build(&mix, &res, &Predictor { models: &models }).unwrap();
    let threads =
        |k: usize| -> Vec<usize> { plans[k].assignments.iter().map(|a| a.threads).collect() };
    let cpus = |k: usize, i: usize| plans[k].assignments[i].cpus.clone();

    // fair: shares of 8 cores by data (6:1:1 GiB): A 6 -> largest allowed <= 6 is 4;
    // B 1 -> 1; C 1 -> 1. Predicted: A(4) = 4 + 4/4 = 5, B(1) = 24, C(1) = 1 + 2 = 3;
    // makespan 24 s. OS blocks in mix order: A 0-3, B 4, C 5.
    assert_eq!(plans[0].schedule, "fair");
    assert_eq!(threads(0), vec![4, 1, 1]);
    assert!((plans[0].predicted_makespan_s.unwrap() - 24.0).abs() < 1e-9);
    assert_eq!(cpus(0, 0), vec![0, 1, 2, 3]);
    assert_eq!(cpus(0, 1), vec![4]);
    assert_eq!(cpus(0, 2), vec![5]);
    assert_eq!(plans[0].assignments[0].mem_node, None);

    // load: candidate makespans 2, 3, 4.5, 5, 6, 8, 12, 24. At 5 A needs 4 (5 <= 5), B 8
    // (24/4 = 6 > 5), C 1: 13 > 8 cores. At 6: A 2 (4 + 2 = 6), B 4 (6), C 1 (3): 7 <= 8.
    // So 6 s, with 1 spare core: A (6 s, next 4 needs 2 more) and B (6 s, next 8 needs 4)
    // cannot take it, C can (2 threads: 2 s < 3 s). Threads 2, 4, 2; makespan 6 s: 4x
    // better than fair. OS blocks: A 0-1, B 2-5, C 6-7.
    assert_eq!(plans[1].schedule, "load");
    assert_eq!(threads(1), vec![2, 4, 2]);
    assert!((plans[1].predicted_makespan_s.unwrap() - 6.0).abs() < 1e-9);
    assert_eq!(cpus(1, 0), vec![0, 1]);
    assert_eq!(cpus(1, 1), vec![2, 3, 4, 5]);
    assert_eq!(cpus(1, 2), vec![6, 7]);

    // optimized: load's threads, placed largest first on the line. B (4) first: any 4
    // adjacent positions sum to 10 hops between pairs; the first seed (CPU 0, position 0)
    // reaches it: positions 0-3 = CPUs 0, 2, 4, 6. A (2) next: the first free seed, CPU 1
    // (position 7), and its neighbour CPU 3 (position 6). C gets CPUs 5 and 7 (positions 5,
    // 4). Memory: B's CPUs are 2 on node 0 and 2 on node 1 (tie: node 0), A's on node 0,
    // C's on node 1.
    assert_eq!(plans[2].schedule, "optimized");
    assert_eq!(threads(2), vec![2, 4, 2]);
    assert_eq!(cpus(2, 1), vec![0, 2, 4, 6]);
    assert_eq!(cpus(2, 0), vec![1, 3]);
    assert_eq!(cpus(2, 2), vec![5, 7]);
    let nodes: Vec<Option<u32>> = plans[2].assignments.iter().map(|a| a.mem_node).collect();
    assert_eq!(nodes, vec![Some(0), Some(0), Some(1)]);

    // Without a floorplan: compact order, largest first: B 0-3, A 4-5, C 6-7.
    let plans = plan::build(&mix, &line_resources(false), &Predictor { models: &models }).unwrap();
    assert_eq!(plans[2].assignments[1].cpus, vec![0, 1, 2, 3]);
    assert_eq!(plans[2].assignments[0].cpus, vec![4, 5]);
    assert_eq!(plans[2].assignments[2].cpus, vec![6, 7]);
    assert!(plans[2].notes.iter().any(|n| n.contains("compact order")));
}

#[test]
fn a_mix_that_cannot_fit_is_refused_before_anything_runs() {
    let mix = Mix::parse(MIX, "mix.toml").unwrap();
    let models: Vec<_> = histories().iter().map(|o| history::fit(o)).collect();
    let mut res = line_resources(false);
    res.cpus = vec![0, 1];
    res.compact = vec![0, 1];
    let e = plan::build(&mix, &res, &Predictor { models: &models })
        .unwrap_err()
        .to_string();
    assert!(e.contains("need 3 cores but only 2"), "{e}");
    let big = Mix::parse(
        "[[task]]\nname='x'\ncommand='y'\ndata='1 KiB'\nthreads=[4, 8]\n",
        "big.toml",
    )
    .unwrap();
    let e = plan::build(&big, &res, &Predictor { models: &[None] })
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("task \"x\" needs at least 4 threads but only 2 cores"),
        "{e}"
    );
}

#[test]
fn without_history_data_size_stands_in_and_nothing_is_predicted() {
    let mix = Mix::parse(MIX, "mix.toml").unwrap();
    let plans = plan::build(
        &mix,
        &line_resources(false),
        &Predictor {
            models: &[None, None, None],
        },
    )
    .unwrap();
    // Proxy time = data / threads: A 6/t, B 1/t, C 1/t. Makespan candidates: at 1.0,
    // A needs 8 (6/8 = 0.75; 6/4 = 1.5 > 1): 8 + 1 + 1 > 8. At 1.5: A 4, B 1, C 1 = 6; the
    // spare 2 go to A? (A next is 8: needs 4) no; B -> 2 (0.5 < 1), C -> 2 (0.5 < 1).
    let threads: Vec<usize> = plans[1].assignments.iter().map(|a| a.threads).collect();
    assert_eq!(threads, vec![4, 2, 2]);
    assert!(plans.iter().all(|p| p.predicted_makespan_s.is_none()));
    assert!(plans[1].notes.iter().any(|n| n.contains("proxy")));
}

fn run_record(argv: &[&str], threads: usize, placement: &str, wall_s: f64, ok: bool) -> Record {
    let outcome = serde_json::json!({
        "argv": argv, "exit_code": 0, "signal": null, "signal_name": null, "timed_out": false,
        "interrupted": false, "wall_ns": (wall_s * 1e9) as u64, "user_cpu_ns": 0, "sys_cpu_ns": 0,
        "max_rss_bytes": 0, "stdout_tail": "", "stderr_tail": "", "leftovers_killed": false
    });
    let r = RunRecord {
        study: "scale".into(),
        study_id: "x".into(),
        point: format!("{threads} threads"),
        repetition: 0,
        argv: argv.iter().map(|s| s.to_string()).collect(),
        shell: false,
        threads: Some(threads),
        placement: Some(placement.into()),
        cpus: None,
        mem_policy: None,
        params: BTreeMap::new(),
        ok,
        failure: None,
        outcome: Some(serde_json::from_value(outcome).unwrap()),
        metric: "wall".into(),
        metric_value: Some(wall_s),
        throughput: None,
        response_values: Vec::new(),
        response_count: 0,
        cpus_busy: None,
        utilisation: None,
        samples: Default::default(),
        build: None,
    };
    Record::new(
        format!("k/{threads}/{wall_s}/{placement}"),
        Origin::Measured,
        &r,
    )
}

#[test]
fn history_is_matched_by_command_template() {
    let mix = Mix::parse(MIX, "mix.toml").unwrap();
    let records = vec![
        run_record(&["a", "1"], 1, "compact", 8.0, true),
        run_record(&["a", "2"], 2, "compact", 6.0, true),
        run_record(&["a", "2"], 2, "scatter", 7.5, true),
        run_record(&["a", "4"], 4, "compact", 5.0, false), // failed: ignored
        run_record(&["b", "--threads=4"], 4, "compact", 6.0, true),
        run_record(&["b", "4"], 4, "compact", 1.0, true), // not B's command
        run_record(&["a", "1", "extra"], 1, "compact", 1.0, true), // not A's either
    ];
    let bundle = Bundle {
        schema_version: numalab_schema::record::SCHEMA_VERSION,
        envelope: Envelope {
            schema_version: numalab_schema::record::SCHEMA_VERSION,
            tool: Tool::this("test"),
            created_utc: "2026-01-01T00:00:00Z".into(),
            command: Vec::new(),
            config: serde_json::Value::Null,
            origin: Origin::Measured,
            host: Host::unknown("test"),
        },
        records,
    };
    let obs = history::gather(&mix, &[bundle]);
    assert_eq!(obs[0].len(), 3);
    assert_eq!(obs[1].len(), 1);
    assert!(obs[2].is_empty());
    let a = history::fit(&obs[0]).unwrap();
    // compact is the most frequent placement: A = 4 + 4/t exactly at 1 and 2 threads.
    assert_eq!(a.placement, "compact");
    assert!(
        (a.serial_s - 4.0).abs() < 1e-9 && (a.parallel_s - 4.0).abs() < 1e-9,
        "{a:?}"
    );
    // scatter at 2 threads: 7.5 / 6 = 1.25.
    assert!((a.placement_factors["scatter"] - 1.25).abs() < 1e-12);
    let b = history::fit(&obs[1]).unwrap();
    assert_eq!(b.form, "one-point");
    assert!((b.predict(8) - 3.0).abs() < 1e-12);
}

#[test]
fn model_evaluation_keeps_placement_insensitive_tasks_and_reference_placements() {
    let model = numalab_model::Model::load("knl-7210", &[]).unwrap();
    let res = run::model_resources(&model);
    let mut text = MIX.replace("threads = [1, 2]", "threads = [1, 2]\nmemory_bound = 1.0");
    text = text.replace(
        "data = \"6 GiB\"",
        "data = \"6 GiB\"\ncommunication_bound = 0.5",
    );
    let mix = Mix::parse(&text, "m.toml").unwrap();
    let models: Vec<_> = histories().iter().map(|o| history::fit(o)).collect();
    let mut plans = plan::build(&mix, &res, &Predictor { models: &models }).unwrap();
    let before = plans.clone();
    let f = run::evaluate_on_model(&mix, &mut plans, &model, &res);
    // B is neither memory- nor communication-bound: unchanged everywhere.
    for k in 0..3 {
        assert_eq!(f[k][1], 1.0);
        assert_eq!(
            plans[k].assignments[1].predicted_s,
            before[k].assignments[1].predicted_s
        );
    }
    // Fair places A on OS cores 0..t-1 with first touch: exactly the reference, factor 1.
    assert!((f[0][0] - 1.0).abs() < 1e-12, "{:?}", f[0]);
    // Optimized places A compactly: its cores are no farther apart than the OS block.
    assert!(f[2][0] <= f[1][0] + 1e-12, "{f:?}");
    assert!(plans[2]
        .assignments
        .iter()
        .all(|a| a.home_distance.is_none()));
}

#[test]
fn home_affinity_lowers_the_memory_bound_tasks_time_on_the_model() {
    let model = numalab_model::Model::load("knl-7210", &[]).unwrap();
    let text = MIX.replace("threads = [1, 2]", "threads = [1, 2]\nmemory_bound = 1.0");
    let mix = Mix::parse(&text, "m.toml").unwrap();
    let models: Vec<_> = histories().iter().map(|o| history::fit(o)).collect();
    let plain = run::model_resources(&model);
    let mut homed = plain.clone();
    homed.home = Some(HomeAffinity {
        distance: 1,
        source: "the model's address map".into(),
        map_path: None,
    });
    let mut p0 = plan::build(&mix, &plain, &Predictor { models: &models }).unwrap();
    let mut p1 = plan::build(&mix, &homed, &Predictor { models: &models }).unwrap();
    assert!(p1[2].assignments.iter().all(|a| a.home_distance == Some(1)));
    assert!(p1[2].notes.iter().any(|n| n.contains("home affinity")));
    assert!(p1[0].assignments.iter().all(|a| a.home_distance.is_none()));
    let f0 = run::evaluate_on_model(&mix, &mut p0, &model, &plain);
    let f1 = run::evaluate_on_model(&mix, &mut p1, &model, &homed);
    // Same cores; the memory-bound tasks read only nearby homes: faster, and strictly
    // so for at least one.
    for k in 0..f0[2].len() {
        assert_eq!(p0[2].assignments[k].cpus, p1[2].assignments[k].cpus);
        assert!(f1[2][k] <= f0[2][k] + 1e-12, "{f0:?} {f1:?}");
    }
    assert!(
        (0..f0[2].len()).any(|k| f1[2][k] < f0[2][k] - 0.01),
        "{f0:?} {f1:?}"
    );
    // Fair and load do not change.
    assert_eq!(f0[0], f1[0]);
    assert_eq!(f0[1], f1[1]);
}

#[test]
fn a_small_mix_runs_for_real_on_this_machine() {
    let machine = numalab_topo::live().unwrap();
    let cpus = machine.pu_ids();
    let mix = Mix::parse(
        r#"
timeout = "60s"
[[task]]
name = "loop-a"
command = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"
data = "2 KiB"
threads = [1]
[[task]]
name = "loop-b"
command = "i=0; while [ $i -lt 10000 ]; do i=$((i+1)); done; echo {threads} {cpus} map=$NUMALAB_HOME_MAP d=$NUMALAB_HOME_DISTANCE {home_distance}"
data = "1 KiB"
threads = [1]
"#,
        "real.toml",
    )
    .unwrap();
    let res = Resources {
        cpus: cpus[..2.min(cpus.len())].to_vec(),
        node_of: machine
            .pus
            .iter()
            .filter_map(|p| p.numa_node.map(|n| (p.os_index, n)))
            .collect(),
        compact: cpus[..2.min(cpus.len())].to_vec(),
        distance: None,
        source: "this machine".into(),
        home: Some(HomeAffinity {
            distance: 2,
            source: "a test map".into(),
            map_path: Some("/nonexistent/home-map.json".into()),
        }),
    };
    if res.cpus.len() < 2 {
        eprintln!("one PU: the two tasks cannot run at once here; nothing to check");
        return;
    }
    let plans = plan::build(
        &mix,
        &res,
        &Predictor {
            models: &[None, None],
        },
    )
    .unwrap();
    for p in &plans {
        run::check_commands(&mix, p, res.home.as_ref()).unwrap();
        let r = run::run_plan(&mix, p, res.home.as_ref()).unwrap();
        assert!(r.ok, "{r:?}");
        assert_eq!(r.tasks.len(), 2);
        let ends: Vec<f64> = r.tasks.iter().map(|t| t.end_s).collect();
        assert!((r.makespan_s - ends.iter().copied().fold(0.0, f64::max)).abs() < 1e-12);
        for t in &r.tasks {
            assert!(t.wall_s > 0.0 && t.wall_s <= r.makespan_s + 1e-3, "{t:?}");
            assert_eq!(t.threads, 1);
            assert_eq!(t.exit_code, Some(0));
        }
        // Each task got its own CPU, and the optimized one its memory node.
        assert_ne!(r.tasks[0].cpulist, r.tasks[1].cpulist);
        // Only the optimized schedule hands the task the home map and distance.
        let out = &r.tasks[1].stdout_tail;
        if p.schedule == "optimized" {
            assert!(
                out.contains("map=/nonexistent/home-map.json d=2 2"),
                "{out:?}"
            );
        } else {
            assert!(out.contains("map= d="), "{out:?}");
        }
        if p.schedule == "optimized" {
            assert!(
                r.tasks.iter().all(|t| t.mem_policy.starts_with("bind:")),
                "{r:?}"
            );
        } else {
            assert!(r.tasks.iter().all(|t| t.mem_policy == "first-touch"));
        }
    }
}
