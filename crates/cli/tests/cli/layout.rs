//! `numalab layout` and `numalab schedule` end to end: inference of the published Xeon Phi
//! matrix, ground truth, affinity from the inferred layout, a real schedule campaign on
//! this machine, and the errors (arguments, exit code, message).

use crate::common::{self, assert_ok, field_strs, numalab, records, refused};

fn fixture(name: &str) -> String {
    common::fixture("c2c", name)
}

#[test]
fn infers_the_published_xeon_phi_matrix_and_advises_affinity() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("layout");
    let svg = dir.path().join("knl.svg");
    let knl = fixture("intel-xeon-phi-cpu-7210-1.30ghz.csv");
    let out = numalab(&[
        "layout",
        "infer",
        "--input",
        &knl,
        "--preset",
        "knl-7210",
        "--restarts",
        "2",
        "--json",
        "--svg",
        svg.to_str().unwrap(),
        "--heatmap-from",
        "0",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let r = records(&out, "layout.inference");
    assert_eq!(r.len(), 1);
    let r = &r[0];
    let cores = r["cores"].as_array().unwrap();
    assert_eq!(cores.len(), 64);
    let mut stops = std::collections::BTreeMap::new();
    for c in cores {
        let (x, y) = (c["x"].as_u64().unwrap(), c["y"].as_u64().unwrap());
        assert!(x < 6 && y < 7);
        let conf = c["confidence"].as_f64().unwrap();
        assert!((0.5..=1.0).contains(&conf), "{c}");
        stops
            .entry((x, y))
            .or_insert_with(Vec::new)
            .push(c["cpu"].as_u64().unwrap());
    }
    // The c2c structure pairs CPUs 2k and 2k+1 (the 2-core tiles): each pair shares a stop,
    // and no stop holds more than a tile's 2 cores.
    assert_eq!(r["tile_groups"].as_array().unwrap().len(), 32);
    assert_eq!(stops.len(), 32);
    for cpus in stops.values() {
        assert_eq!(cpus.len(), 2);
        assert_eq!(cpus[0] / 2, cpus[1] / 2, "{cpus:?}");
    }
    assert_eq!(r["empty_tiles"].as_array().unwrap().len(), 6);
    let names = field_strs(&r["constants"], "name");
    assert_eq!(names, vec!["base", "same_stop", "per_cycle"]);
    // Tile mates are faster than the mesh: a negative same-stop offset of tens of ns.
    assert!(r["same_stop_ns"].as_f64().unwrap() < -20.0);
    let r2 = r["r_squared"].as_f64().unwrap();
    assert!(r2 > 0.5 && r2 < 1.0, "{r2}");
    assert_eq!(r["observations"], 2016);
    assert_eq!(r["symmetries"][0], "identity");
    let pic = std::fs::read_to_string(&svg).unwrap();
    assert!(pic.starts_with("<svg") && pic.contains("Inferred floorplan"));
    assert_eq!(pic.matches("<title>CPU ").count(), 64);
    assert!(pic.contains("heatmap source"));

    // Affinity from the recorded layout.
    let out = numalab(&[
        "layout",
        "affinity",
        "--threads",
        "8",
        "--layout",
        out_dir.to_str().unwrap(),
        "--json",
    ]);
    let a = records(&out, "layout.affinity");
    let a = &a[0];
    let placement = a["placement"].as_array().unwrap();
    assert_eq!(placement.len(), 8);
    let mut p: Vec<u64> = placement.iter().map(|v| v.as_u64().unwrap()).collect();
    p.sort_unstable();
    p.dedup();
    assert_eq!(p.len(), 8);
    assert!(a["cost_ns"].as_f64().unwrap() <= a["scatter_cost_ns"].as_f64().unwrap());
    assert!(a["predicted_gain"].as_f64().unwrap() >= 1.0);
    assert_eq!(a["source"], "layout");
    // Human output names the CPU list (the report's affinity section).
    let out = numalab(&["layout", "affinity", "--threads", "4", "--input", &knl]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("CPUs: ") && text.contains("predicted gain"),
        "{text}"
    );
}

#[test]
fn groundtruth_is_exact_without_noise() {
    let out = numalab(&[
        "layout",
        "groundtruth",
        "--preset",
        "mesh",
        "--noise-ns",
        "0",
        "--trials",
        "1",
        "--restarts",
        "2",
        "--fit-hop-costs",
        "--json",
    ]);
    let r = records(&out, "layout.groundtruth");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["noise_ns"], 0.0);
    assert_eq!(r[0]["exact_fraction_mean"], 1.0);
    assert_eq!(r[0]["search_optimal_trials"], 1);
    assert_eq!(r[0]["symmetries"].as_array().unwrap().len(), 8);
}

#[test]
fn schedule_campaign_runs_for_real() {
    let dir = tempfile::tempdir().unwrap();
    let hist = dir.path().join("hist");
    let cmd_a = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done";
    let out = numalab(&[
        "scale",
        "--threads",
        "1",
        "--repeat",
        "2",
        "--shell",
        "--out",
        hist.to_str().unwrap(),
        "--json",
        "--",
        cmd_a,
    ]);
    assert_ok(&out);
    let mix = dir.path().join("mix.toml");
    std::fs::write(
        &mix,
        format!(
            "timeout = \"60s\"\n[[task]]\nname = \"a\"\ncommand = \"{cmd_a}\"\ndata = \"2 KiB\"\nthreads = [1]\n\n[[task]]\nname = \"b\"\ncommand = [\"sh\", \"-c\", \"i=0; while [ $i -lt 10000 ]; do i=$((i+1)); done\"]\ndata = \"1 KiB\"\nthreads = [1]\n"
        ),
    )
    .unwrap();
    let sched = dir.path().join("sched");
    let schedule = [
        "schedule",
        "--mix",
        mix.to_str().unwrap(),
        "--history",
        hist.to_str().unwrap(),
        "--cpus",
        "0-1",
        "--run",
        "--repeat",
        "2",
        "--json",
        "--out",
        sched.to_str().unwrap(),
    ];
    let out = numalab(&schedule);
    let plans = records(&out, "schedule.plan");
    assert_eq!(plans.len(), 1);
    let p = &plans[0];
    assert_eq!(p["tasks"][0]["runs"], 2);
    assert_eq!(p["tasks"][0]["model"]["form"], "one-point");
    assert!(p["tasks"][1]["model"].is_null());
    // The same history through the database (`db ingest`, `--history-db`): the same runs
    // and the same fitted model of task a.
    let db = dir.path().join("history.sqlite");
    assert_ok(&numalab(&[
        "db",
        "--db",
        db.to_str().unwrap(),
        "ingest",
        hist.to_str().unwrap(),
    ]));
    let from_db = numalab(&[
        "schedule",
        "--mix",
        mix.to_str().unwrap(),
        "--history-db",
        db.to_str().unwrap(),
        "--cpus",
        "0-1",
        "--json",
    ]);
    let pd = &records(&from_db, "schedule.plan")[0];
    assert_eq!(pd["tasks"][0]["runs"], 2);
    assert_eq!(pd["tasks"][0]["model"], p["tasks"][0]["model"]);
    let names = field_strs(&p["plans"], "schedule");
    assert_eq!(names, vec!["fair", "load", "optimized"]);
    let runs = records(&out, "schedule.run");
    assert_eq!(runs.len(), 6);
    for r in &runs {
        assert_eq!(r["ok"], true, "{r}");
        let m = r["makespan_s"].as_f64().unwrap();
        assert!(m > 0.0 && m < 60.0);
        for t in r["tasks"].as_array().unwrap() {
            assert!(t["wall_s"].as_f64().unwrap() <= m + 1e-3);
        }
    }
    let s = records(&out, "schedule.summary");
    assert_eq!(s.len(), 1);
    for f in s[0]["schedules"].as_array().unwrap() {
        assert_eq!(f["makespans_s"].as_array().unwrap().len(), 2);
        assert!(f["makespan_s"]["estimate"].as_f64().unwrap() > 0.0);
    }
    // Resume: the same command with the same --out runs nothing new.
    let out = numalab(&schedule);
    assert!(records(&out, "schedule.run").is_empty());
    let s = records(&out, "schedule.summary");
    assert_eq!(
        s[0]["schedules"][0]["makespans_s"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // A rerun with a smaller --repeat summarises its own campaign (the runs of rounds
    // 0..repeat), not every run the folder holds: its summary said "repeat 1" over two
    // makespans before the campaign moved into numalab_schedule.
    let mut fewer = schedule.to_vec();
    let at = fewer.iter().position(|w| *w == "--repeat").unwrap() + 1;
    fewer[at] = "1";
    let out = numalab(&fewer);
    assert!(records(&out, "schedule.run").is_empty());
    let s = records(&out, "schedule.summary");
    assert_eq!(s[0]["repeat"], 1);
    for f in s[0]["schedules"].as_array().unwrap() {
        assert_eq!(f["makespans_s"].as_array().unwrap().len(), 1, "{f}");
    }
}

#[test]
fn errors_are_clear_and_come_first() {
    let dir = tempfile::tempdir().unwrap();
    let knl = fixture("intel-xeon-phi-cpu-7210-1.30ghz.csv");
    let small = fixture("intel-core-i7-6700k.csv");
    let too_big = dir.path().join("big.toml");
    std::fs::write(
        &too_big,
        "[[task]]\nname = \"wide\"\ncommand = [\"true\"]\ndata = \"1 KiB\"\nthreads = [4096]\n",
    )
    .unwrap();
    let bad_mix = dir.path().join("bad.toml");
    std::fs::write(
        &bad_mix,
        "[[task]]\nname = \"x\"\ncommand = [\"true\"]\nthreads = [1]\n",
    )
    .unwrap();
    let big = too_big.to_str().unwrap();
    let bad = bad_mix.to_str().unwrap();
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["layout", "infer", "--input", &knl, "--geometry", "3x3"],
            2,
            "room for 9",
        ),
        (
            vec!["layout", "infer", "--input", &small, "--preset", "knl-7210"],
            3,
            "does not match the geometry",
        ),
        (
            vec!["layout", "infer", "--input", &knl, "--geometry", "7by6"],
            2,
            "ROWSxCOLS",
        ),
        (
            vec![
                "layout",
                "infer",
                "--input",
                &knl,
                "--geometry",
                "7x6",
                "--hop-cost",
                "2",
            ],
            2,
            "VERTICAL,HORIZONTAL",
        ),
        (
            vec![
                "layout",
                "infer",
                "--input",
                "/nonexistent.csv",
                "--geometry",
                "7x6",
            ],
            3,
            "/nonexistent.csv",
        ),
        (
            vec![
                "layout",
                "infer",
                "--input",
                &knl,
                "--preset",
                "knl-7210",
                "--disabled",
                "9:9",
            ],
            2,
            "column:row",
        ),
        (
            vec![
                "layout",
                "infer",
                "--input",
                &knl,
                "--preset",
                "knl-7210",
                "--svg",
                "/tmp/x.svg",
                "--heatmap-to",
                "slice:0",
            ],
            2,
            "core x target",
        ),
        (
            vec!["layout", "affinity", "--threads", "100", "--input", &small],
            2,
            "only 8 CPUs",
        ),
        (
            vec![
                "layout",
                "groundtruth",
                "--preset",
                "mesh",
                "--noise-ns",
                "a",
            ],
            2,
            "--noise-ns",
        ),
        (
            vec!["schedule", "--mix", big],
            2,
            "needs at least 4096 threads",
        ),
        (vec!["schedule", "--mix", bad], 3, "no data size"),
    ];
    for (args, code, msg) in cases {
        let out = refused(&args, code, msg);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}
