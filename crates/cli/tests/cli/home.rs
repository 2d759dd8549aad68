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
    // A live map has no affinity to enforce: without structure it places no home, and
    // the host's hash this VM can show through a huge page (crates/cli/tests/home_live.rs)
    // gives homes but no floorplan to place them on.
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
    // Nor a live bench: the pool needs a recovered hash, and homes located on stops.
    let structure = journal(&map)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["kind"] == "home.map")
        .map(|r| r["data"]["structure_visible"] == true)
        .expect("a home.map record");
    let why = if structure { "no floorplan" } else { "hash" };
    refused(&["home", "bench", "--map", p(&map)], 3, why);
    refused(&["home", "bench"], 2, "--model");
}

/// Per-page maps made from a published hash (Skylake-SP, 24 slices) with 1% of lines
/// misread, as a counter-based mapping tool writes them: imported, recovered, exported in
/// the published form (byte for byte the published base sequence), compared with the
/// published tables, and searched for conflicts.
#[test]
fn per_page_maps_are_imported_exported_compared_and_searched_for_conflicts() {
    use numalab_home::tables::read_table_pair;
    let published = fixture_path("slice-hash", "BaseSequence_SKX_24-slice.tbl");
    let h = read_table_pair(&published).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let maps = dir.path().join("maps");
    std::fs::create_dir(&maps).unwrap();
    let mut x: u64 = 0x9e37_79b9;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut bases = std::collections::BTreeSet::new();
    while bases.len() < 40 {
        bases.insert((next() % (1 << 17)) << 21);
    }
    for b in &bases {
        let ids: Vec<u8> = (0..32768u64)
            .map(|i| {
                let s = h.slice(b + 64 * i).unwrap();
                if next() % 100 == 0 {
                    (s + 1) % 24
                } else {
                    s
                }
            })
            .collect();
        std::fs::write(maps.join(format!("PADDR_0x{b:012x}.map")), ids).unwrap();
    }
    let tables = dir.path().join("tables");
    let res = dir.path().join("res");
    let out = numalab(&[
        "home",
        "map",
        "--import",
        p(&maps),
        "--export-tables",
        p(&tables),
        "--out",
        p(&res),
        "--json",
    ]);
    assert_ok(&out);
    let rec = &records(&out, "home.hash")[0];
    assert_eq!(rec["status"], "recovered", "{rec}");
    assert_eq!(rec["pages"], 40);
    assert_eq!(
        rec["hash"]["base_sequence"].as_array().unwrap().len(),
        512,
        "{}",
        rec["notes"]
    );
    let fitted = rec["agreement_fitted"].as_f64().unwrap();
    assert!((0.985..0.995).contains(&fitted), "1% misread: {fitted}");
    assert_eq!(
        std::fs::read(tables.join("BaseSequence_24-slice.tbl")).unwrap(),
        std::fs::read(&published).unwrap(),
        "the majority over 35 pages undoes the misread lines"
    );
    let masks = std::fs::read_to_string(tables.join("PermSelectMasks_24-slice.tbl")).unwrap();
    assert!(
        masks.starts_with("15 37\n0x2b72c98000 0x16e5930000 0x2dcb260000 "),
        "{masks}"
    );
    // The report of the import folder, and the maps against the published tables.
    let out = numalab(&["report", p(&res), "--format", "markdown"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("a base sequence of 512 lines"));
    let out = numalab(&["home", "compare", p(&maps), p(&published), "--json"]);
    assert_ok(&out);
    let c = &records(&out, "home.compare")[0];
    assert_eq!(c["lines"], 40 * 32768);
    assert!(
        (0.985..0.995).contains(&c["agreement"].as_f64().unwrap()),
        "{c}"
    );
    // The exported pair reads back as the published one.
    let out = numalab(&[
        "home",
        "compare",
        p(&tables.join("BaseSequence_24-slice.tbl")),
        p(&published),
        "--json",
    ]);
    assert_ok(&out);
    assert_eq!(records(&out, "home.compare")[0]["agreement"], 1.0);
    let out = numalab(&[
        "home",
        "conflicts",
        p(&published),
        "--max-pages",
        "4",
        "--runs",
        "4",
        "--json",
    ]);
    assert_ok(&out);
    let k = &records(&out, "home.conflicts")[0];
    assert_eq!(k["slices"], 24);
    assert!(!k["combinations"].as_array().unwrap().is_empty(), "{k}");
    assert!(!k["advice"].as_array().unwrap().is_empty(), "{k}");
    // Refusals: nothing there (exit 3), --import with --model (exit 2), export without a hash.
    refused(
        &["home", "map", "--import", p(&dir.path().join("none"))],
        3,
        "none",
    );
    refused(
        &["home", "map", "--import", p(&maps), "--model", "knl-7210"],
        2,
        "--model",
    );
    std::fs::write(maps.join("PADDR_0x1.map"), [0u8; 10]).unwrap();
    refused(
        &["home", "map", "--import", p(&maps)],
        3,
        "not a multiple of 2 MiB",
    );
}
