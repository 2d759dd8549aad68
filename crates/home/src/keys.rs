//! The record keys of `numalab home`, one owner for the names its records are found by:
//! a live map and benchmark, an imported hash, a comparison, a conflict analysis, and a modelled trial's map, accuracy and benchmark under
//! its preset, noise and seed.

use crate::groundtruth::{TrialOptions, TrialOutcome};
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
