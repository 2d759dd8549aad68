//! Maps an older numalab stored: read, and checked against the machine they were made
//! on (accepted) and another (refused), through the fingerprint's current recipe.

use numalab_home::ffi::parse_map;
use numalab_home::truth::{TruthMachine, TruthOptions};
use numalab_records::home::{FINGERPRINT_RECIPE, FINGERPRINT_RECIPE_V1};

/// The model map stored as a fuzzing seed, written before the fingerprint had a recipe
/// or a memory basis.
fn stored() -> numalab_records::home::HomeMapRecord {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/seeds/home_map/mesh-4k.json");
    let text = std::fs::read(&path).unwrap();
    parse_map(&text, "mesh-4k.json").unwrap()
}

fn machine(seed: u64) -> TruthMachine {
    let mut opts = TruthOptions::new("mesh");
    opts.seed = seed;
    opts.pages = 16; // the stored map's machine: 16 pages (the default was 16 then)
    TruthMachine::generate(&opts).unwrap()
}

#[test]
fn a_stored_model_map_is_still_its_machines_and_not_anothers() {
    let map = stored();
    assert_eq!(map.fingerprint.recipe, FINGERPRINT_RECIPE_V1);
    let same = machine(1).fingerprint();
    assert_eq!(same.recipe, FINGERPRINT_RECIPE);
    assert!(
        map.fingerprint.differences(&same).is_empty(),
        "{:?}",
        map.fingerprint.differences(&same)
    );
    let other = machine(2).fingerprint();
    assert_eq!(
        map.fingerprint.differences(&other),
        vec!["stepping \"seed 1\" vs \"seed 2\"".to_string()]
    );
}
