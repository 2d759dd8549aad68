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

/// Probe crates the report still depends on for their record types (issue 19 moves
/// the records to one home; this list only shrinks).
const PROBES: [&str; 4] = [
    "numalab-c2c",
    "numalab-harness",
    "numalab-mem",
    "numalab-pmu",
];

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
        // The test rig is never a dependency.
        assert!(
            !deps.contains("numalab-numa-guest"),
            "{name} depends on the test rig"
        );
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
        "numalab-pmu",
        "numalab-harness",
        "numalab-workload",
    ] {
        assert!(!model.contains(m), "numalab-model depends on {m}");
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
    // The report never depends on topology or process code directly, and its known
    // dependencies on probe crates only shrink.
    let report = internal(&g["numalab-report"]);
    for hw in ["numalab-topo", "numalab-proc", "numalab-clock"] {
        assert!(!report.contains(hw), "numalab-report depends on {hw}");
    }
    let allowed: BTreeSet<&str> = [
        "numalab-schema",
        "numalab-stats",
        "numalab-chart",
        "numalab-model",
        "numalab-records",
    ]
    .into_iter()
    .chain(PROBES)
    .collect();
    for d in &report {
        assert!(
            allowed.contains(d.as_str()),
            "numalab-report depends on {d}: the report renders records, it never measures"
        );
    }
    let on_probes: BTreeSet<&str> = PROBES
        .iter()
        .copied()
        .filter(|p| report.contains(*p))
        .collect();
    let known: BTreeSet<&str> = PROBES.iter().copied().collect();
    assert_eq!(
        on_probes, known,
        "numalab-report's dependencies on probe crates changed: a new one is not allowed, and one removed must leave PROBES and ARCHITECTURE.md"
    );
}
