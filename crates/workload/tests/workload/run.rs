//! Short real runs: structure and internal consistency of the `workload.run` record,
//! never wall-clock figures.

use super::fixture_machine;
use numalab_schema::{Classify, ErrorClass, RecordKind};
use numalab_topo::bind::{FakePlacer, HwlocPlacer};
use numalab_workload::graph::GraphSpec;
use numalab_workload::run::{run, LatencySummary, RunConfig, WorkloadRun};
use numalab_workload::{CpuOrder, Mode};

fn small(threads: usize, mode: Mode) -> RunConfig {
    RunConfig {
        threads,
        mode,
        placement: CpuOrder::Scatter,
        duration_s: 1.0,
        warmup_s: 0.2,
        graph: GraphSpec {
            seed: 5,
            nodes: 20_000,
        },
        route_share: 0.7,
        ..Default::default()
    }
}

fn check_latency(l: &LatencySummary) {
    for iv in [&l.p50_ns, &l.p95_ns, &l.p99_ns] {
        assert!(iv.low <= iv.estimate && iv.estimate <= iv.high, "{iv:?}");
        assert!(iv.estimate > 0.0);
    }
    assert!(l.p50_ns.estimate <= l.p95_ns.estimate);
    assert!(l.p95_ns.estimate <= l.p99_ns.estimate);
    assert!(l.p99_ns.estimate <= l.max_ns);
    assert!(l.requests > 0);
}

#[test]
fn a_short_run_on_this_machine() {
    let machine = numalab_topo::live().unwrap();
    let placer = HwlocPlacer::new().unwrap();
    let threads = machine.pus.len().min(2);
    let config = small(threads, Mode::Replicated);
    let out = run(&config, &machine, &placer).unwrap();
    let r = &out.run;
    assert_eq!(out.key, config.key());
    assert_eq!(r.threads, threads);
    assert_eq!(r.pus.len(), threads);
    assert!(!r.interrupted);
    assert!(
        (r.measured_s - 1.0).abs() < 1e-6,
        "measured {}",
        r.measured_s
    );
    assert!(r.requests > 0);
    assert_eq!(r.requests, r.requests_route + r.requests_itinerary);
    assert!(
        r.requests_route > 0 && r.requests_itinerary > 0,
        "{} / {}",
        r.requests_route,
        r.requests_itinerary
    );
    assert!((r.requests_per_s - r.requests as f64 / r.measured_s).abs() < 1e-9);
    assert!((r.requests_per_s_per_thread * threads as f64 - r.requests_per_s).abs() < 1e-9);
    assert_eq!(
        r.clients.iter().map(|c| c.requests).sum::<u64>(),
        r.requests
    );
    let slices: f64 = r.requests_per_s_slices.iter().map(|x| x * r.slice_s).sum();
    assert!((slices - r.requests as f64).abs() < 1e-6);
    assert_eq!(r.requests_per_s_slices.len(), 2);
    check_latency(r.latency.as_ref().unwrap());
    check_latency(r.latency_route.as_ref().unwrap());
    check_latency(r.latency_itinerary.as_ref().unwrap());
    assert!(r.settled_per_request > 0.0);
    // CPU: the clients were busy (a ratio, not a speed).
    assert!(r.cpu_s > 0.0);
    assert!(
        r.cpu_utilization > 0.0 && r.cpu_utilization < 1.5,
        "{}",
        r.cpu_utilization
    );
    for c in &r.clients {
        assert!(
            c.cpu_utilization > 0.0 && c.cpu_utilization <= 1.05,
            "{c:?}"
        );
    }
    // Placement as obtained.
    let pages: u64 = r.pages_per_node.iter().map(|(_, c)| c).sum();
    assert_eq!(pages, r.memory.copies.iter().map(|c| c.pages).sum::<u64>());
    let one_node = machine.numa_nodes.len() <= 1;
    assert_eq!(r.memory.modes_equivalent_here, one_node);
    assert_eq!(
        out.warnings.iter().any(|w| w.code == "single_numa_node"),
        one_node
    );
    // Power: a figure with what it covers, or a reason; never both, never neither.
    assert_eq!(r.power_watts.is_some(), r.power_covers.is_some());
    assert_ne!(
        r.power_watts.is_some(),
        r.power_unavailable_reason.is_some()
    );
    assert_eq!(
        r.requests_per_joule.is_some(),
        r.power_watts.is_some_and(|w| w > 0.0)
    );
    // The graph is the configured one.
    assert_eq!(r.graph.nodes, 20_000);
    assert_eq!(r.graph.fingerprint.len(), 16);
    // The record round-trips.
    let rec = out.record();
    assert_eq!(rec.kind, WorkloadRun::KIND);
    let back: WorkloadRun = rec.decode::<WorkloadRun>().unwrap().unwrap();
    assert_eq!(back.requests, r.requests);
    let line = out.metric_line();
    assert!(
        line.starts_with(&format!("requests_per_s={:.3} ", r.requests_per_s)),
        "{line}"
    );
}

use numalab_testkit::write;

#[test]
fn power_from_sensors_and_a_multi_node_plan() {
    // A fake 8-node machine (plan only) and a fixture sysfs with an Ampere Altra's hwmon
    // power sensors: the power figure is their sum, and says what it covers.
    let m = fixture_machine("64amd64-4p2n4ca2co.xml");
    let placer = FakePlacer::for_machine(&m);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "sys/class/hwmon/hwmon0/name", "smpro\n");
    write(root, "sys/class/hwmon/hwmon0/power1_input", "152000000\n");
    write(root, "sys/class/hwmon/hwmon0/power1_label", "CPU power\n");
    write(root, "sys/class/hwmon/hwmon0/power2_input", "33000000\n");
    write(root, "sys/class/hwmon/hwmon0/power2_label", "IO power\n");
    write(root, "sys/class/hwmon/hwmon0/temp1_input", "68000\n");
    write(
        root,
        "sys/class/hwmon/hwmon0/temp1_label",
        "SoC Temperature\n",
    );
    let mut config = small(2, Mode::Replicated);
    config.sys_root = root.to_path_buf();
    config.duration_s = 0.6;
    let out = run(&config, &m, &placer).unwrap();
    let r = &out.run;
    assert_eq!(r.power_watts, Some(185.0));
    let covers = r.power_covers.as_deref().unwrap();
    assert!(
        covers.contains("CPU power") && covers.contains("IO power"),
        "{covers}"
    );
    assert!((r.requests_per_joule.unwrap() - r.requests_per_s / 185.0).abs() < 1e-9);
    assert_eq!(r.temperatures.len(), 1);
    assert_eq!(r.temperatures[0].max_c, 68.0);
    // Scatter put the two clients on two nodes: two replicas, each read by its node.
    assert_eq!(r.memory.copies.len(), 2);
    assert_ne!(r.pu_nodes[0], r.pu_nodes[1]);
    assert_eq!(r.memory.numa_nodes, 8);
    assert!(!r.memory.modes_equivalent_here);
    // The fixture has no /proc: memory and CPU accounting say they were not checked.
    assert!(out.warnings.iter().any(|w| w.code == "memory_unchecked"));
    assert_eq!(r.worker_cpus_busy, None);
}

#[test]
fn bad_configurations_are_usage_errors() {
    let machine = numalab_topo::live().unwrap();
    let placer = HwlocPlacer::new().unwrap();
    let pus = machine.pus.len();
    let cases: Vec<(RunConfig, &str)> = vec![
        (
            RunConfig {
                threads: 0,
                ..small(1, Mode::Replicated)
            },
            "--threads 0",
        ),
        (
            RunConfig {
                threads: pus + 1,
                ..small(1, Mode::Replicated)
            },
            "PUs",
        ),
        (
            RunConfig {
                route_share: 1.5,
                ..small(1, Mode::Replicated)
            },
            "--mix",
        ),
        (
            RunConfig {
                duration_s: 0.0,
                ..small(1, Mode::Replicated)
            },
            "--duration",
        ),
        (
            RunConfig {
                warmup_s: -1.0,
                ..small(1, Mode::Replicated)
            },
            "--warmup",
        ),
        (
            RunConfig {
                graph: GraphSpec { seed: 1, nodes: 3 },
                ..small(1, Mode::Replicated)
            },
            "--graph-nodes",
        ),
    ];
    for (config, needle) in cases {
        let err = run(&config, &machine, &placer).unwrap_err();
        assert_eq!(err.class(), ErrorClass::Usage, "{err}");
        assert!(err.to_string().contains(needle), "{err} lacks {needle}");
    }
}
