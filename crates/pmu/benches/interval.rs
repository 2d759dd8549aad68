//! What interval mode costs: the time of one read of every counter (per group and per
//! thread or CPU), and a child's wall time counted without and with `--interval 10ms`
//! and `100ms`, alternating, medians. Figures go to docs/benchmarks.md.
//! Run: `cargo bench -p numalab-pmu --bench interval`.

use numalab_pmu::capability;
use numalab_pmu::catalog::{self, EventRef};
use numalab_pmu::count::{Backend, OpenOptions, PerfBackend, Target};
use numalab_pmu::profile::{self, ProfileConfig, Subject};
use numalab_proc::Spec;
use std::time::{Duration, Instant};

/// The midpoint median of a bench's repeats (`numalab_stats`' rule).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    numalab_stats::median_sorted(&v).expect("at least one repeat")
}

fn main() {
    let cpu = catalog::resolve_model(if std::env::consts::ARCH == "x86_64" {
        "x86-64"
    } else {
        "neoverse-n1"
    })
    .expect("catalog");
    let cat = catalog::load_match(&cpu).expect("catalog loads");
    let cap = capability::probe();
    // The groups a default profile opens (software singles everywhere; hardware groups
    // where a PMU exists).
    let names = cat.select_metrics("first-pass").expect("metrics");
    let plan = numalab_pmu::count::plan_default(&cat, &names, &[], cat.counters);
    let mut groups: Vec<Vec<EventRef>> = Vec::new();
    if cap.hardware_pmu() {
        groups.extend(plan.groups.iter().map(|g| g.events.clone()));
    }
    groups.extend(
        plan.software
            .iter()
            .filter(|e| !matches!(e.encoding, catalog::Encoding::Wall))
            .map(|e| vec![e.clone()]),
    );
    let me = std::process::id() as i32;
    let tids: Vec<i32> = std::fs::read_dir(format!("/proc/{me}/task"))
        .expect("own tasks")
        .filter_map(|d| d.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let opts = OpenOptions {
        include_kernel: false,
        raw_type: None,
    };
    let mut session = PerfBackend.open(&Target::Threads(tids.clone()), &groups, opts);
    let reads = 20_000;
    let t = Instant::now();
    for _ in 0..reads {
        std::hint::black_box(session.read());
    }
    let per_read = t.elapsed().as_secs_f64() / reads as f64;
    println!(
        "one read of {} group(s) on {} thread(s): {:.2} us ({:.3} us per group and thread)",
        groups.len(),
        tids.len(),
        per_read * 1e6,
        per_read * 1e6 / (groups.len() * tids.len()) as f64
    );
    println!(
        "at --interval 10ms numalab spends {:.3}% of one CPU on reads (at 100ms: {:.4}%)",
        100.0 * per_read / 0.010,
        100.0 * per_read / 0.100
    );

    // A child counted plainly and in interval mode, alternating.
    let spec = Spec::new([env!("CARGO_BIN_EXE_numalab-pmu-hotspot"), "60", "1"]);
    let reps = 9;
    let mut walls: [Vec<f64>; 3] = Default::default();
    for _ in 0..reps {
        for (k, iv) in [None, Some(100u64), Some(10)].into_iter().enumerate() {
            let mut cfg = ProfileConfig::new(cpu.clone());
            cfg.interval = iv.map(Duration::from_millis);
            let p = profile::profile_subject(
                &Subject::Command(spec.clone()),
                &cfg,
                &mut PerfBackend,
                &cap,
                &mut |_, _| {},
            )
            .expect("profile");
            walls[k].push(p.profile.runs[0].outcome.wall_ns as f64 / 1e6);
        }
    }
    let base = median(walls[0].clone());
    for (k, label) in ["no interval", "--interval 100ms", "--interval 10ms"]
        .iter()
        .enumerate()
    {
        let m = median(walls[k].clone());
        println!(
            "child wall time, {label}: median {m:.1} ms over {reps} runs ({:+.2}% vs no interval)",
            100.0 * (m / base - 1.0)
        );
    }
}
