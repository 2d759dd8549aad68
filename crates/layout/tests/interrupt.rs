//! Ctrl-C and SIGTERM in `layout groundtruth` (its own test binary: the stop flag is
//! process-wide). Issue 50: a trial inferred the truth's c2c structure with the
//! inference that cannot be stopped, and scored a search whose restarts a stop had cut
//! short as a whole trial.

use numalab_layout::campaign;
use numalab_layout::grid::HopCosts;
use numalab_layout::groundtruth::{trial, TrialOptions};
use numalab_layout::infer::{Kind, Options};
use numalab_layout::LayoutError;
use numalab_model::Model;
use numalab_schema::sink::MemorySink;
use numalab_schema::{interrupt, Classify, ErrorClass};

#[test]
fn layout_groundtruth_stopped_during_a_trial_scores_and_records_nothing() {
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
    // Before the stop, a trial is scored.
    assert!(trial(&model, &opts, 0.0, 1).is_ok());
    interrupt::request();
    let e = trial(&model, &opts, 0.0, 1).unwrap_err();
    assert!(matches!(e, LayoutError::Interrupted), "{e}");
    let mut sink = MemorySink::default();
    let e = campaign::run(&model, &opts, &[0.0], 1, 1, &mut sink).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Interrupted);
    assert!(sink.records.is_empty(), "a stopped level is not recorded");
}
