//! `numalab home`: the model trial through the binary, refusals, and the optimized
//! schedule's home affinity. The live map on this machine is `tests/home_live.rs`.

use crate::common::*;

#[test]
fn a_model_map_is_scored_against_its_truth() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("home");
    let args = [
        "home",
        "map",
        "--model",
        "knl-7210",
        "--page-size",
        "64KiB",
        "--pages",
        "24",
        "--noise-ns",
        "4",
        "--out",
        p(&out_dir),
    ];
    let out = numalab(&args);
    assert_ok(&out);
    let text = stdout(&out);
    assert!(text.contains("Where each cache line lives"), "{text}");
    assert!(text.contains("homes at their true stop"), "{text}");
    let out = numalab(&["report", p(&out_dir), "--format", "json"]);
    assert_ok(&out);
    let j = journal(&out_dir);
    let acc: Vec<serde_json::Value> = j
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "home.accuracy")
        .map(|v| v["data"].clone())
        .collect();
    assert_eq!(acc.len(), 1, "{j}");
    let a = &acc[0];
    assert_eq!(a["home_places_true"], 38);
    assert_eq!(a["homes_found"], 38, "{a}");
    assert!(a["line_accuracy_hash"].as_f64().unwrap() >= 0.99, "{a}");
    assert_eq!(a["hash_exact"], true, "{a}");
    assert!(j.contains("\"home.map\""));
}

#[test]
fn bad_home_requests_are_refused_with_the_remedy() {
    refused(&["home", "map", "--bytes", "1PiB"], 2, "--bytes");
    refused(&["home", "map", "--bytes", "lots"], 2, "--bytes");
    refused(
        &["home", "map", "--model", "knl-7210", "--noise-ns=-1"],
        2,
        "--noise-ns",
    );
    refused(
        &["home", "map", "--model", "knl-7210", "--page-size", "3KiB"],
        2,
        "--page-size",
    );
    refused(
        &["home", "map", "--model", "no-such-preset"],
        3,
        "no-such-preset",
    );
    refused(
        &["home", "map", "--model", "knl-7210", "--node", "7"],
        2,
        "--node 7",
    );
    refused(&["home", "map", "--repeats", "0"], 2, "--repeats");
    refused(
        &["home", "bench", "--model", "knl-7210", "--threads", "999"],
        2,
        "--threads 999",
    );
    refused(
        &["home", "map", "--floorplan", "/nonexistent/layout"],
        3,
        "/nonexistent/layout",
    );
}

#[test]
fn the_optimized_schedule_enforces_home_affinity_on_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let mix = dir.path().join("mix.toml");
    std::fs::write(
        &mix,
        "[[task]]\nname = \"a\"\ncommand = [\"true\"]\ndata = \"1 GiB\"\nthreads = [4, 8]\nmemory_bound = 0.8\n[[task]]\nname = \"b\"\ncommand = [\"true\"]\ndata = \"2 GiB\"\nthreads = [4, 8]\n",
    )
    .unwrap();
    let out = numalab(&[
        "schedule",
        "--mix",
        p(&mix),
        "--model",
        "knl-7210",
        "--home-distance",
        "2",
    ]);
    assert_ok(&out);
    let text = stdout(&out);
    assert!(text.contains("homes within 2 hop(s)"), "{text}");
    let out = numalab(&[
        "schedule",
        "--mix",
        p(&mix),
        "--model",
        "knl-7210",
        "--no-home-affinity",
    ]);
    assert_ok(&out);
    assert!(!stdout(&out).contains("homes within"));
    // A live map without structure has no affinity to enforce.
    let map = dir.path().join("map");
    let out = numalab(&[
        "home",
        "map",
        "--bytes",
        "2MiB",
        "--repeats",
        "4",
        "--no-interfaces",
        "--out",
        p(&map),
    ]);
    assert_ok(&out);
    refused(
        &["schedule", "--mix", p(&mix), "--home-map", p(&map)],
        3,
        "no homes placed",
    );
    // Nor a live bench: the pool needs a recovered hash.
    refused(&["home", "bench", "--map", p(&map)], 3, "hash");
    refused(&["home", "bench"], 2, "--model");
}
