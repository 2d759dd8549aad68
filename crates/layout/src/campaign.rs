//! The ground-truth campaign of `numalab layout groundtruth`: for each noise level, the
//! trials on a preset (each a generated matrix, inferred and scored), summarised into one
//! record under a key owned here, pushed to a sink as each level completes; levels the
//! sink already has are skipped, so a rerun into the same journal resumes.

use crate::error::LayoutError;
use crate::groundtruth::{self, TrialOptions};
use numalab_model::Model;
use numalab_schema::sink::Sink;
use numalab_schema::{Origin, Record};

/// The key of one noise level's summary: the preset, matrix kind, hop costs, whether
/// disabled tiles are known, the noise, the first seed and the number of trials.
pub fn key(model: &Model, opts: &TrialOptions, noise_ns: f64, seed: u64, trials: usize) -> String {
    format!(
        "layout/groundtruth/{}/{:?}/{:?}/{}/noise{noise_ns}/seed{seed}/trials{trials}",
        model.label, opts.kind, opts.hop_costs, opts.disabled_known
    )
}

/// Runs `trials` trials (seeds `seed`, `seed + 1`, ..., wrapping past `u64::MAX`) at
/// each of `levels` (ns) and pushes each level's summary to `sink`; returns the keys of
/// every level, those already in the sink included. Progress goes to the sink in trials. Ctrl-C between
/// trials is [`LayoutError::Stopped`] with [`INTERRUPTED`], finished levels kept.
pub fn run(
    model: &Model,
    opts: &TrialOptions,
    levels: &[f64],
    trials: usize,
    seed: u64,
    sink: &mut dyn Sink,
) -> Result<Vec<String>, LayoutError> {
    run_levels(model, opts, levels, trials, seed, sink).map_err(said)
}

/// A campaign's error as said: Ctrl-C with [`INTERRUPTED`], any other as it is.
fn said(e: LayoutError) -> LayoutError {
    match e {
        LayoutError::Interrupted => LayoutError::Stopped(INTERRUPTED.into()),
        e => e,
    }
}

/// What a campaign stopped by Ctrl-C says: the levels it finished are kept, and how
/// to go on.
pub const INTERRUPTED: &str =
    "interrupted; finished noise levels are recorded, rerun with the same --out to resume";

/// What a campaign stopped by Ctrl-C says when its records go to a journal
/// (`resumable`: the command had `--out`) or nowhere that lasts.
pub fn stopped(resumable: bool) -> LayoutError {
    LayoutError::Stopped(if resumable {
        INTERRUPTED.into()
    } else {
        NOT_RESUMABLE.into()
    })
}

/// [`INTERRUPTED`] for a run without `--out`: nothing it finished can be resumed from.
pub const NOT_RESUMABLE: &str = "interrupted; without --out no finished noise level is kept \
     for a rerun: run again with --out DIR to resume after a stop";

/// [`run`], stopping with [`LayoutError::Interrupted`] on Ctrl-C.
fn run_levels(
    model: &Model,
    opts: &TrialOptions,
    levels: &[f64],
    trials: usize,
    seed: u64,
    sink: &mut dyn Sink,
) -> Result<Vec<String>, LayoutError> {
    let syms = groundtruth::symmetry_names(model, opts.hop_costs)?;
    let total = (levels.len() * trials) as u64;
    let mut done = 0u64;
    let mut keys = Vec::new();
    for &noise in levels {
        let key = key(model, opts, noise, seed, trials);
        keys.push(key.clone());
        if sink.done(&key) {
            done += trials as u64;
            sink.progress(&format!("noise {noise} ns"), done, total);
            continue;
        }
        let mut results = Vec::new();
        for k in 0..trials {
            if numalab_schema::interrupt::requested() {
                return Err(LayoutError::Interrupted);
            }
            sink.progress(&format!("noise {noise} ns"), done, total);
            results.push(groundtruth::trial(
                model,
                opts,
                noise,
                seed.wrapping_add(k as u64),
            )?);
            done += 1;
        }
        let r = groundtruth::summarise(model, opts, noise, results, syms.clone());
        sink.push(Record::new(key, Origin::Modeled, &r))
            .map_err(|e| LayoutError::Runtime(e.to_string()))?;
    }
    sink.progress("trials", done, total);
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::HopCosts;
    use crate::infer::{Kind, Options};
    use numalab_schema::sink::MemorySink;

    #[test]
    fn a_stopped_campaign_says_its_levels_are_kept() {
        use numalab_schema::{Classify, ErrorClass};
        let e = said(LayoutError::Interrupted);
        assert_eq!(e.class(), ErrorClass::Interrupted);
        assert_eq!(
            e.to_string(),
            "interrupted; finished noise levels are recorded, rerun with the same --out to resume"
        );
        assert_eq!(stopped(true).to_string(), e.to_string());
        let gone = stopped(false);
        assert_eq!(gone.class(), ErrorClass::Interrupted);
        assert!(gone.to_string().contains("without --out"), "{gone}");
        let other = said(LayoutError::Usage("bad".into()));
        assert_eq!(
            (other.class(), other.to_string()),
            (ErrorClass::Usage, "bad".into())
        );
    }

    /// Issue 50's campaign: `--seed 18446744073709551615` overflowed at the second trial
    /// (a panic, exit 101); the seeds wrap.
    #[test]
    fn the_largest_seed_wraps_to_the_next_trials() {
        let model = Model::load("mesh", &[]).unwrap();
        let opts = TrialOptions {
            kind: Kind::CoreToCore,
            hop_costs: HopCosts::Fit,
            disabled_known: false,
            search: Options {
                restarts: 1,
                ..Options::default()
            },
        };
        let mut sink = MemorySink::default();
        let keys = run(&model, &opts, &[0.0], 2, u64::MAX, &mut sink).unwrap();
        assert_eq!(
            keys,
            vec!["layout/groundtruth/mesh/CoreToCore/Fit/false/noise0/seed18446744073709551615/trials2"]
        );
        assert_eq!(sink.records.len(), 1);
    }

    #[test]
    fn each_level_is_one_record_and_a_rerun_skips_the_levels_it_has() {
        let model = Model::load("mesh", &[]).unwrap();
        let opts = TrialOptions {
            kind: Kind::CoreToCore,
            hop_costs: HopCosts::Fit,
            disabled_known: false,
            search: Options {
                restarts: 2,
                ..Options::default()
            },
        };
        let mut sink = MemorySink::default();
        let keys = run(&model, &opts, &[0.0, 1.0], 1, 5, &mut sink).unwrap();
        assert_eq!(
            keys,
            vec![
                "layout/groundtruth/mesh/CoreToCore/Fit/false/noise0/seed5/trials1",
                "layout/groundtruth/mesh/CoreToCore/Fit/false/noise1/seed5/trials1",
            ]
        );
        let pushed: Vec<&str> = sink.records.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(pushed, keys);
        // Resumed with the first level delivered: only the second runs again.
        let mut again = MemorySink {
            previous: vec![sink.records[0].clone()],
            ..MemorySink::default()
        };
        let keys2 = run(&model, &opts, &[0.0, 1.0], 1, 5, &mut again).unwrap();
        assert_eq!(keys2, keys);
        assert_eq!(again.records.len(), 1);
        assert_eq!(again.records[0].key, keys[1]);
    }
}
