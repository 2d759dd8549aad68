//! What profiling costs, measured side by side: the same child run plain, under
//! counters (`profile`) and under cpu-clock sampling (`sample`), alternating, with
//! medians; plus the agreement of perf's task clock with wait4's CPU time, and the
//! time to load a catalog. Figures go to docs/benchmarks.md.

use numalab_pmu::catalog;
use numalab_pmu::profile::{self, ProfileConfig};
use numalab_pmu::sample::{self, SampleConfig};
use numalab_proc::Spec;
use std::time::Instant;

/// The midpoint median of a bench's repeats (`numalab_stats`' rule).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    numalab_stats::median_sorted(&v).expect("at least one repeat")
}

fn main() {
    let reps = 15;
    let spec = Spec::new([env!("CARGO_BIN_EXE_numalab-pmu-hotspot"), "60", "1"]);
    let cpu = catalog::resolve_model(if std::env::consts::ARCH == "x86_64" {
        "x86-64"
    } else {
        "neoverse-n1"
    })
    .expect("catalog");
    let cat = catalog::load_match(&cpu).expect("catalog");
    let cfg = ProfileConfig::new(cpu);
    let scfg = SampleConfig {
        event: sample::resolve(&cat, "cpu-clock").expect("cpu-clock"),
        frequency_hz: 999,
        period: None,
        include_kernel: false,
    };
    let (mut plain, mut counted, mut sampled, mut agree, mut hot) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let o = numalab_proc::spawn(&spec).expect("spawn").wait();
        plain.push(o.wall_ns as f64 / 1e6);
        let p = profile::profile(&spec, &cfg).expect("profile").profile;
        let o = &p.runs[0].outcome;
        counted.push(o.wall_ns as f64 / 1e6);
        let task = p.event("TASK_CLOCK").and_then(|e| e.value).unwrap_or(0.0);
        agree.push(task / (o.user_cpu_ns + o.sys_cpu_ns) as f64);
        let r = sample::sample(&spec, &scfg).expect("sample");
        sampled.push(r.outcome.wall_ns as f64 / 1e6);
        hot.push(
            r.functions
                .iter()
                .find(|f| f.function.ends_with("numalab_hot_loop"))
                .map_or(0.0, |f| f.self_pct),
        );
    }
    let base = median(plain.clone());
    println!("workload: numalab-pmu-hotspot 60 1, {reps} runs of each, alternating");
    println!(
        "{:<27}median {base:8.1} ms           min {:.1} ms",
        "plain run",
        plain.iter().cloned().fold(f64::MAX, f64::min)
    );
    let base_min = plain.iter().cloned().fold(f64::MAX, f64::min);
    for (name, v) in [
        ("counted (software events)", &counted),
        ("sampled (cpu-clock 999 Hz)", &sampled),
    ] {
        let m = median(v.clone());
        let lo = v.iter().cloned().fold(f64::MAX, f64::min);
        println!(
            "{name:<27}median {m:8.1} ms ({:+.1}%)  min {lo:.1} ms ({:+.1}%)",
            (m / base - 1.0) * 100.0,
            (lo / base_min - 1.0) * 100.0
        );
    }
    println!("task-clock / wait4 CPU time: median {:.4}", median(agree));
    println!("samples in numalab_hot_loop: median {:.1}%", median(hot));
    let mut loads = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let _ = catalog::load("neoverse-n1").expect("load");
        loads.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "load the Neoverse N1 catalog (vendor JSON + checks): median {:.2} ms",
        median(loads)
    );
}
