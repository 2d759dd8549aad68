//! The record keys of `numalab home`, one owner for the names its records are found by:
//! a live map and benchmark, an imported hash, a comparison, a conflict analysis, and a modelled trial's map, accuracy and benchmark under
//! its preset, noise and seed.

use crate::groundtruth::{TrialOptions, TrialOutcome};
use numalab_records::home::{BenchRecord, HomeMapRecord};
use numalab_schema::{Origin, Record};

/// Key of a live map (`numalab home map`).
pub const LIVE_MAP: &str = "home/live/map";
/// Key of a live benchmark (`numalab home bench --map`).
pub const LIVE_BENCH: &str = "home/live/bench";
/// Key of an imported hash (`numalab home map --import`).
pub const IMPORT_HASH: &str = "home/import/hash";
/// Key of a comparison of two maps or hashes (`numalab home compare`).
pub const COMPARE: &str = "home/compare";
/// Key of a conflict analysis (`numalab home conflicts`).
pub const CONFLICTS: &str = "home/conflicts";

/// The prefix of a modelled trial's keys: `home/{preset}/noise-{ns}/seed-{seed}`.
pub fn trial(preset: &str, opts: &TrialOptions) -> String {
    format!(
        "home/{preset}/noise-{}/seed-{}",
        opts.truth.noise_ns, opts.truth.seed
    )
}

/// A modelled trial's records under `prefix` ([`trial`]): its map and the map's
/// accuracy against the truth.
pub fn trial_records(prefix: &str, out: &TrialOutcome) -> [Record; 2] {
    [
        Record::new(format!("{prefix}/map"), Origin::Modeled, &out.mapped.record),
        Record::new(format!("{prefix}/accuracy"), Origin::Modeled, &out.accuracy),
    ]
}

/// A live map's record ([`LIVE_MAP`]): the map with the probe's notes (`probe_notes`,
/// about the buffer and its pages) after its own.
pub fn live_map(mut map: HomeMapRecord, probe_notes: &[String]) -> Record {
    map.notes.extend(probe_notes.iter().cloned());
    Record::new(LIVE_MAP, Origin::Measured, &map)
}

/// A modelled bench's records under `prefix` ([`trial`]): the trial's map and accuracy
/// ([`trial_records`]), then the bench's own.
pub fn bench_records(prefix: &str, out: &TrialOutcome, bench: &BenchRecord) -> Vec<Record> {
    let mut records = trial_records(prefix, out).to_vec();
    records.push(Record::new(
        format!("{prefix}/bench"),
        Origin::Modeled,
        bench,
    ));
    records
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_live::LiveBenchOptions;

    #[test]
    fn a_trial_is_keyed_by_preset_noise_and_seed() {
        let mut t = TrialOptions::new("skylake-sp-18");
        t.truth.noise_ns = 2.5;
        t.truth.seed = 7;
        assert_eq!(
            trial("skylake-sp-18", &t),
            "home/skylake-sp-18/noise-2.5/seed-7"
        );
    }

    #[test]
    fn a_live_map_keeps_the_probe_notes_and_a_bench_follows_its_trial() {
        let mut t = TrialOptions::new("knl-7210");
        t.truth.page_bytes = 64 << 10;
        t.truth.pages = 1;
        let out = crate::groundtruth::trial(&t, &mut crate::map::Quiet).unwrap();
        let own = out.mapped.record.notes.clone();
        let r = live_map(out.mapped.record.clone(), &["probe note".into()]);
        assert_eq!((r.key.as_str(), r.origin), (LIVE_MAP, Origin::Measured));
        let back: HomeMapRecord = r.decode().unwrap().unwrap();
        assert_eq!(back.notes[..own.len()], own[..]);
        assert_eq!(back.notes[own.len()..], ["probe note".to_string()]);
        let bench = BenchRecord {
            input_origin: "model".into(),
            machine: "knl-7210".into(),
            lines_per_thread: 4,
            sweep: vec![],
            stencil: vec![],
            notes: vec![],
        };
        let keys: Vec<String> = bench_records("p", &out, &bench)
            .into_iter()
            .map(|r| r.key)
            .collect();
        assert_eq!(keys, ["p/map", "p/accuracy", "p/bench"]);
    }

    #[test]
    fn the_live_bench_pool_holds_every_threads_lines_within_bounds() {
        let o = |threads, lines_per_thread, rounds| LiveBenchOptions {
            threads,
            lines_per_thread,
            max_distance: 2,
            rounds,
        };
        assert_eq!(o(4, 1000, 3).pool_bytes(16), 64 << 20);
        assert_eq!(o(16, 4096, 3).pool_bytes(16), 128 << 20);
        assert_eq!(o(usize::MAX, 2, 1).pool_bytes(0), 1 << 30);
        assert!(o(1, 1, 1).check().is_ok());
        assert_eq!(
            o(1, 0, 1).check().unwrap_err(),
            "--threads, --lines and --rounds must be at least 1"
        );
    }
}
