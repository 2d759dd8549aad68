//! Ctrl-C and SIGTERM in a modelled home map (`home map --model`, `home bench`): its own
//! test binary, the stop flag being process-wide. Issue 50: the floorplan step inferred
//! the truth's c2c structure with the inference that cannot be stopped, and the message
//! promised a resume with "the same --out" that no home step has.

use numalab_home::groundtruth::{trial, TrialOptions};
use numalab_home::watch::Quiet;
use numalab_home::HomeError;
use numalab_schema::{interrupt, Classify, ErrorClass};

#[test]
fn home_groundtruth_stopped_during_the_floorplan_says_nothing_was_recorded() {
    interrupt::request();
    let opts = TrialOptions::new("mesh");
    assert!(opts.floorplan, "the floorplan is inferred by default");
    let e = trial(&opts, &mut Quiet).unwrap_err();
    assert!(matches!(e, HomeError::Interrupted), "{e}");
    assert_eq!(e.class(), ErrorClass::Interrupted);
    let said = e.to_string();
    assert!(!said.contains("--out"), "no home step resumes: {said}");
    assert!(
        said.contains("nothing of this map or bench was recorded"),
        "{said}"
    );
}
