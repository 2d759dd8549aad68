//! Software clock sampling of a real child on this machine (no PMU needed): the
//! hottest function of a program with a known hot spot is found from its debug info.

use numalab_pmu::catalog;
use numalab_pmu::sample::{self, SampleConfig};
use numalab_proc::Spec;

#[test]
fn cpu_clock_sampling_finds_the_hot_function() {
    let cat = catalog::resolve_model(if std::env::consts::ARCH == "x86_64" {
        "x86-64"
    } else {
        "neoverse-n1"
    })
    .and_then(|m| catalog::load_match(&m))
    .unwrap();
    let event = sample::resolve(&cat, "cpu-clock").unwrap();
    assert_eq!(event.name, "CPU_CLOCK");
    let cfg = SampleConfig {
        event,
        frequency_hz: 2000,
        period: None,
        include_kernel: false,
    };
    // Two threads, so that inherited (per-thread) sampling is exercised too.
    let spec = Spec::new([env!("CARGO_BIN_EXE_numalab-pmu-hotspot"), "150", "2"]);
    let r = sample::sample(&spec, &cfg).unwrap();
    assert!(r.outcome.success(), "{}", r.outcome.describe());
    eprintln!(
        "{} samples, {} lost, {} attributed",
        r.samples, r.lost, r.attributed
    );
    for f in r.functions.iter().take(8) {
        eprintln!(
            "{:6.2}% {:6.2}% {} ({}) {:?}",
            f.self_pct, f.total_pct, f.function, f.object, f.hottest_line
        );
    }
    for l in r.lines.iter().take(5) {
        eprintln!("{:6.2}% {}:{} {}", l.pct, l.file, l.line, l.function);
    }
    assert!(r.samples >= 50, "only {} samples", r.samples);
    let top = &r.functions[0];
    assert!(top.function.ends_with("numalab_hot_loop"), "{top:?}");
    assert!(top.self_pct > 60.0, "{top:?}");
    assert!(top.object.ends_with("numalab-pmu-hotspot"), "{top:?}");
    assert!(
        top.hottest_line.as_deref().unwrap().contains("hotspot.rs:"),
        "{top:?}"
    );
    // The cold function is found too, with fewer samples.
    let cold = r
        .functions
        .iter()
        .find(|f| f.function.ends_with("numalab_cold_loop"))
        .unwrap();
    assert!(cold.self_samples < top.self_samples);
    assert!(r.lines[0].file.ends_with("hotspot.rs"), "{:?}", r.lines[0]);
    assert!(r.lines[0].function.ends_with("numalab_hot_loop"));
    assert!(r.skid.contains("timer"));
}
