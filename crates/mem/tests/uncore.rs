//! The memory controllers' bytes beside the probe's: a bandwidth run on a machine
//! description whose uncore PMUs are a constructed Sapphire Rapids sysfs tree
//! (numalab-uncore's fixture) with replayed controller counts, and on one without any.
//! The probe itself runs for real (fake placer); only the controllers are replayed.

use numalab_mem::bandwidth::{self, BandwidthRecord, UncoreSource};
use numalab_mem::budget::Budgets;
use numalab_mem::kernels::Kernel;
use numalab_schema::{Machine, Record};
use numalab_topo::bind::FakePlacer;
use numalab_uncore::{Backend, Discovery, ReplayBackend};
use std::path::{Path, PathBuf};

fn machine() -> Machine {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/topology/32em64t-2n8c+dax+nvme+mic+dimms.xml");
    numalab_topo::machine(&numalab_topo::Input::detect(&p).unwrap()).unwrap()
}

fn spr_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../uncore/tests/fixtures/spr-2s")
}

/// Socket 0's eight channels: 187.5e6 CAS reads and 62.5e6 CAS writes each in 2 s;
/// socket 1's a tenth of that.
struct Spr;

impl UncoreSource for Spr {
    fn discovery(&self) -> Result<Discovery, String> {
        let root = spr_root();
        numalab_uncore::discover(&root, &numalab_uncore::packages_from_sysfs(&root))
            .map_err(|e| e.to_string())
    }

    fn backend(&self) -> Box<dyn Backend + Send> {
        let mut b = ReplayBackend::new(2.0);
        for i in 0..8 {
            let dev = format!("uncore_imc_{i}");
            b.set_all(&dev, "clockticks", 4_000_000_000);
            b.set(&dev, 0, "cas_count_read", 187_500_000);
            b.set(&dev, 0, "cas_count_write", 62_500_000);
            b.set(&dev, 56, "cas_count_read", 18_750_000);
            b.set(&dev, 56, "cas_count_write", 6_250_000);
        }
        Box::new(b)
    }
}

/// A machine whose kernel lists no uncore PMU (this development VM's set).
struct Bare;

impl UncoreSource for Bare {
    fn discovery(&self) -> Result<Discovery, String> {
        let root = tempfile::tempdir().unwrap().keep();
        for pmu in ["breakpoint", "msr", "software"] {
            let d = root.join("sys/bus/event_source/devices").join(pmu);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("type"), "5\n").unwrap();
        }
        numalab_uncore::discover(&root, &Default::default()).map_err(|e| e.to_string())
    }

    fn backend(&self) -> Box<dyn Backend + Send> {
        Box::new(ReplayBackend::new(1.0))
    }
}

fn run(source: &dyn UncoreSource) -> Vec<(Record, BandwidthRecord)> {
    let m = machine();
    let mut o = bandwidth::Options::defaults(&m);
    o.kernels = vec![
        Kernel::parse("triad").unwrap(),
        Kernel::parse("copy-nt").unwrap(),
    ];
    o.working_set_bytes = 256 << 10;
    o.reps = 2;
    o.min_sample_ns = 100_000.0;
    let cpus = m.node(0).unwrap().cpus[..2].to_vec();
    let plan = bandwidth::plan(
        &m,
        &Budgets::uniform(&m, 64 << 30),
        &cpus,
        &[2],
        &numalab_topo::bind::MemPolicy::FirstTouch,
        o,
    )
    .unwrap();
    let placer = FakePlacer::for_machine(&m);
    let mut recs: Vec<Record> = Vec::new();
    let out = bandwidth::run_with(&plan, &m, &placer, &mut recs, source);
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    recs.into_iter()
        .map(|r| {
            let b: BandwidthRecord = r.decode().unwrap().unwrap();
            (r, b)
        })
        .collect()
}

#[test]
fn controllers_are_counted_beside_each_kernel() {
    let recs = run(&Spr);
    assert_eq!(recs.len(), 2);
    for (r, b) in &recs {
        let u = b.uncore.as_ref().expect("controllers counted");
        assert_eq!(b.uncore_note, None);
        // 8 x 187.5e6 x 64 B in 2 s = 48 GB/s on socket 0, a tenth on socket 1.
        let read: Vec<f64> = u
            .sockets
            .iter()
            .map(|s| s.read_gbps.value.unwrap())
            .collect();
        assert_eq!(read.len(), 2);
        assert!((read[0] - 48.0).abs() < 1e-9, "{read:?}");
        assert!((read[1] - 4.8).abs() < 1e-9, "{read:?}");
        let write: f64 = u.sockets.iter().map(|s| s.write_gbps.value.unwrap()).sum();
        assert!((write - 17.6).abs() < 1e-9, "{write}");
        // The probe's side of the comparison: the untimed pass's bytes over the
        // controllers' interval, reads with the write-allocate line of plain stores.
        let c = b.uncore_check.as_ref().expect("a comparison");
        let writes = b.kernel.spec().writes.len() as f64;
        let written = b.array_bytes as f64 * writes * b.inner_iterations as f64;
        let probe_read = (b.actual_bytes_per_sample as f64 - written) / 2.0 / 1e9;
        let side = |n: &str| c.sides.iter().find(|s| s.side == n).unwrap();
        assert!(
            (side("read").probe_gbps - probe_read).abs() < 1e-12,
            "{c:?}"
        );
        assert!((side("write").probe_gbps - written / 2.0 / 1e9).abs() < 1e-12);
        assert!((side("read").controllers_gbps - 52.8).abs() < 1e-6, "{c:?}");
        // A disagreement beyond 10% is a finding, and a warning on the record.
        assert_eq!(
            c.is_finding(),
            r.warnings.iter().any(|w| w.code == "uncore.disagrees"),
            "{c:?}"
        );
        assert!(
            c.is_finding(),
            "replayed 52.8 GB/s against a 256 KiB probe: {c:?}"
        );
    }
    // copy-nt stores bypass the cache: no write-allocate read.
    let nt = &recs.iter().find(|(_, b)| b.kernel.nt).unwrap().1;
    let c = nt.uncore_check.as_ref().unwrap();
    let read = c.sides.iter().find(|s| s.side == "read").unwrap();
    assert!(
        (read.probe_gbps - nt.array_bytes as f64 * nt.inner_iterations as f64 / 2.0 / 1e9).abs()
            < 1e-12
    );
}

#[test]
fn a_machine_without_controller_pmus_says_so() {
    for (_, b) in run(&Bare) {
        assert!(b.uncore.is_none() && b.uncore_check.is_none());
        let note = b.uncore_note.unwrap();
        assert!(note.contains("no memory-controller PMU"), "{note}");
        assert!(note.contains("breakpoint, msr, software"), "{note}");
    }
}
