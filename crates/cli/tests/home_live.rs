//! `numalab home map` live on this machine (two vCPUs, no mesh): it must say that no
//! home structure is visible rather than invent one.
//!
//! A test binary of its own: in the shared `cli` binary about 88 other tests load the
//! two vCPUs at the same time, and once (CI of 2026-11-26) a small group of lines read
//! during a burst of that load reproduced well enough overall for the map to report a
//! structure. Groups now have to reproduce one by one (crates/home/tests/load.rs plants
//! such bursts); the claim is still for a machine doing little else, and a structure
//! found once is checked by a second map with another seed.

use std::process::Command;

fn numalab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run numalab")
}

/// One live map of 2 MiB with the given seed (of the line sample and the grouping).
fn map(seed: u64) -> serde_json::Value {
    let seed = seed.to_string();
    let out = numalab(&[
        "home",
        "map",
        "--bytes",
        "2MiB",
        "--repeats",
        "8",
        "--no-interfaces",
        "--seed",
        &seed,
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bundle: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r: Vec<&serde_json::Value> = bundle["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "home.map")
        .map(|r| &r["data"])
        .collect();
    assert_eq!(r.len(), 1);
    r[0].clone()
}

#[test]
fn this_machine_shows_no_home_structure() {
    // A burst of load on the host can still make one map's groups reproduce; a
    // structure this machine really had would be found again with another sample of
    // lines and another grouping, so a structure is only a failure when a second map,
    // with another seed, finds one too.
    let first = map(1);
    let m = if first["structure_visible"] == false {
        first
    } else {
        eprintln!(
            "the first map (seed 1) reported a structure: {}; mapping again with seed 2",
            first["notes"]
        );
        let second = map(2);
        assert_eq!(
            second["structure_visible"], false,
            "both maps found a structure: seed 1: {}; seed 2: {}",
            first["notes"], second["notes"]
        );
        second
    };
    assert_eq!(m["input_origin"], "measured");
    assert_eq!(m["homes"].as_array().unwrap().len(), 1);
    assert!(m["home_hash"].is_null());
    let notes = m["notes"].to_string();
    assert!(notes.contains("No home structure is visible"), "{notes}");
    assert_eq!(m["lines_measured"], 32768);
    // The map says which machine it is valid on.
    assert_eq!(m["fingerprint"]["source"], "live");
    assert!(m["fingerprint"]["cpus"].as_u64().unwrap() >= 1);
}
