//! The "never" arrows of ARCHITECTURE.md, checked on the workspace's manifest through
//! `cargo metadata`.

use std::collections::{BTreeMap, BTreeSet};

/// Normal (not dev or build) dependencies of every workspace crate, by name.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut g = BTreeMap::new();
    for p in v["packages"].as_array().unwrap() {
        let deps = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect();
        g.insert(p["name"].as_str().unwrap().to_string(), deps);
    }
    g
}

#[test]
fn the_never_arrows_hold() {
    let g = graph();
    assert!(g.len() >= 15, "{:?}", g.keys());
    let internal = |deps: &BTreeSet<String>| -> BTreeSet<String> {
        deps.iter()
            .filter(|d| d.starts_with("numalab"))
            .cloned()
            .collect()
    };
    for (name, deps) in &g {
        // Libraries never know the command line.
        if name != "numalab" && name != "numalab-numa-guest" {
            for cli in ["numalab", "clap", "indicatif"] {
                assert!(!deps.contains(cli), "{name} depends on {cli}");
            }
        }
        // The test rig and the test kit are never (normal) dependencies.
        for rig in ["numalab-numa-guest", "numalab-testkit"] {
            assert!(!deps.contains(rig), "{name} depends on {rig}");
        }
    }
    // A model never measures.
    let model = internal(&g["numalab-model"]);
    for m in [
        "numalab-topo",
        "numalab-proc",
        "numalab-clock",
        "numalab-sensors",
        "numalab-mem",
        "numalab-c2c",
        "numalab-pingpong",
        "numalab-pmu",
        "numalab-harness",
        "numalab-workload",
    ] {
        assert!(!model.contains(m), "numalab-model depends on {m}");
    }
    // Floorplan inference and affinity advice are pure too (scheduling, which runs
    // processes, is numalab-schedule).
    let layout = internal(&g["numalab-layout"]);
    for hw in [
        "numalab-topo",
        "numalab-proc",
        "numalab-clock",
        "numalab-harness",
        "numalab-pingpong",
        "numalab-mem",
    ] {
        assert!(!layout.contains(hw), "numalab-layout depends on {hw}");
    }
    // The matrix half of core-to-core latency is pure: analysing a matrix (and the
    // floorplan inference built on it) needs no hwloc, no clock, no measuring crate.
    let c2c = internal(&g["numalab-c2c"]);
    for hw in [
        "numalab-topo",
        "numalab-proc",
        "numalab-clock",
        "numalab-pingpong",
    ] {
        assert!(!c2c.contains(hw), "numalab-c2c depends on {hw}");
    }
    // The foundations depend on nothing of numalab (chart and clock only on schema;
    // records only on schema and stats; sensors only on schema and records, where its
    // record types live).
    for base in ["numalab-schema", "numalab-stats"] {
        assert!(
            internal(&g[base]).is_empty(),
            "{base}: {:?}",
            internal(&g[base])
        );
    }
    for on_schema in ["numalab-chart", "numalab-clock"] {
        let deps = internal(&g[on_schema]);
        assert!(
            deps.iter().all(|d| d == "numalab-schema"),
            "{on_schema}: {deps:?}"
        );
    }
    let sensors = internal(&g["numalab-sensors"]);
    assert!(
        sensors
            .iter()
            .all(|d| d == "numalab-schema" || d == "numalab-records"),
        "numalab-sensors: {sensors:?}"
    );
    let records = internal(&g["numalab-records"]);
    assert!(
        records
            .iter()
            .all(|d| d == "numalab-schema" || d == "numalab-stats"),
        "numalab-records must build without hardware libraries: {records:?}"
    );
    // The report renders records: it depends on the data model, statistics, charts and
    // the records, never on anything that measures or models (so it builds and runs
    // where there is no hwloc and no perf_event).
    let report = internal(&g["numalab-report"]);
    let allowed: BTreeSet<String> = [
        "numalab-schema",
        "numalab-stats",
        "numalab-chart",
        "numalab-records",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert!(
        report.is_subset(&allowed),
        "numalab-report depends on {:?}: the report renders records, it never measures",
        report.difference(&allowed).collect::<Vec<_>>()
    );
    // The records need no hardware library either: not even through an outside crate.
    for d in &g["numalab-records"] {
        assert!(
            !["hwlocality", "perf-event2", "libc"].contains(&d.as_str()),
            "numalab-records depends on {d}"
        );
    }
}
