//! A stop request (Ctrl-C) ends the window early and keeps what was measured, flagged as
//! partial. Its own binary: the stop flag is process-wide and cannot be cleared.

use numalab_schema::interrupt;
use numalab_topo::bind::HwlocPlacer;
use numalab_workload::graph::GraphSpec;
use numalab_workload::run::{run, RunConfig};

#[test]
fn ctrl_c_keeps_a_partial_result() {
    let machine = numalab_topo::live().unwrap();
    let placer = HwlocPlacer::new().unwrap();
    let config = RunConfig {
        threads: 1,
        duration_s: 30.0,
        warmup_s: 0.1,
        graph: GraphSpec {
            seed: 2,
            nodes: 10_000,
        },
        ..Default::default()
    };
    let mut seen_measuring = false;
    let out = numalab_workload::run::run_observed(&config, &machine, &placer, &mut |p| {
        if let numalab_workload::run::Progress::Measuring { elapsed_s, .. } = p {
            seen_measuring = true;
            if elapsed_s > 0.5 {
                interrupt::request();
            }
        }
    })
    .unwrap();
    assert!(seen_measuring);
    let r = &out.run;
    assert!(r.interrupted);
    assert!(
        r.measured_s > 0.4 && r.measured_s < 29.0,
        "measured {}",
        r.measured_s
    );
    assert!(r.requests > 0);
    assert!(out.warnings.iter().any(|w| w.code == "interrupted"));
    // A new run stops before measuring anything, with a clear error.
    let err = run(&config, &machine, &placer).unwrap_err();
    assert!(err.to_string().contains("nothing was measured"), "{err}");
}
