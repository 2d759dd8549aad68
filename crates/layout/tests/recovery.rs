//! Recovery of model-generated placements (ground truth from `numalab-model`), the
//! constraints (disabled tiles, tile groups) and the errors raised before any search.
//! The accuracy-versus-noise curve is printed by the benchmark, not asserted here.

use numalab_c2c::LatencyMatrix;
use numalab_layout::groundtruth::{self, preset_grid, TrialOptions};
use numalab_layout::infer::{infer, Problem};
use numalab_layout::record::{self, InferenceRecord, InferenceRecordExt};
use numalab_layout::{Grid, HopCosts, Kind, Measured, Options};
use numalab_model::spec::Routing;
use numalab_model::Model;

fn search(restarts: usize) -> Options {
    Options {
        seed: 1,
        restarts,
        sweeps: 300,
        threads: 2,
    }
}

fn opts(kind: Kind, hop_costs: HopCosts, disabled_known: bool) -> TrialOptions {
    TrialOptions {
        kind,
        hop_costs,
        disabled_known,
        search: search(4),
    }
}

#[test]
fn knl_zero_noise_is_exact_modulo_symmetry_with_tile_pairs_from_c2c() {
    let m = Model::load("knl-7210", &[]).unwrap();
    for seed in [1, 2] {
        let t = groundtruth::trial(
            &m,
            &opts(Kind::CoreToCore, HopCosts::Fixed, false),
            0.0,
            seed,
        )
        .unwrap();
        // The c2c structure finds the 32 two-core tiles of the generated matrix.
        assert_eq!(t.tile_groups_found, 32, "{t:?}");
        assert_eq!(t.tile_groups_correct, 32, "{t:?}");
        assert_eq!(t.accuracy.exact_fraction, 1.0, "{t:?}");
        assert_eq!(t.accuracy.mean_displacement_hops, 0.0);
        assert!(t.residual_rms_ns < 1e-6, "{t:?}");
    }
}

#[test]
fn full_mesh_zero_noise_with_fitted_hop_costs() {
    // 8 x 8, one core per stop, equal costs: eight symmetries, and the fit must find both
    // hop costs (1 cycle = 0.5 ns each way at 2 GHz, 4 link traversals per hop and round trip).
    let m = Model::load("mesh", &[]).unwrap();
    let t = groundtruth::trial(&m, &opts(Kind::CoreToCore, HopCosts::Fit, false), 0.0, 3).unwrap();
    assert_eq!(t.accuracy.exact_fraction, 1.0, "{t:?}");
}

#[test]
fn core_to_target_places_cores_and_targets() {
    let m = Model::load("mesh", &["noc.cols=5".into(), "noc.rows=4".into()]).unwrap();
    let t = groundtruth::trial(
        &m,
        &opts(Kind::CoreToTarget, HopCosts::Fixed, false),
        0.0,
        5,
    )
    .unwrap();
    assert_eq!(t.accuracy.exact_fraction, 1.0, "{t:?}");
    assert_eq!(t.accuracy.target_exact_fraction, Some(1.0), "{t:?}");
}

#[test]
fn known_disabled_tiles_stay_empty() {
    let m = Model::load("knl-7210", &[]).unwrap();
    let base = preset_grid(&m, HopCosts::Fixed).unwrap();
    let truth = groundtruth::generate(&m, &base, Kind::CoreToCore, 0.5, 11).unwrap();
    assert_eq!(truth.disabled.len(), 6);
    let mut grid = base.clone();
    grid.disable(&truth.disabled);
    let tiles: Vec<Vec<u32>> = truth.tiles.clone();
    let p = Problem::new(&grid, &truth.measured, &tiles).unwrap();
    let inf = infer(&p, &search(4), &|_| {}).unwrap();
    for s in &inf.core_stop {
        assert!(
            !truth.disabled.contains(s),
            "a core was placed on a disabled tile"
        );
    }
    // With the tiles known, 32 pairs fill the 32 remaining tiles exactly.
    let mut used = inf.core_stop.clone();
    used.sort_unstable();
    used.dedup();
    assert_eq!(used.len(), 32);
    let acc = groundtruth::accuracy(
        &grid,
        &grid.symmetries(),
        (&inf.core_stop, &[]),
        (&truth.core_stop, &[]),
    );
    assert_eq!(acc.exact_fraction, 1.0, "{acc:?}");
}

#[test]
fn tile_groups_are_kept_together_even_when_wrong() {
    let m = Model::load("knl-7210", &[]).unwrap();
    let grid = preset_grid(&m, HopCosts::Fixed).unwrap();
    let truth = groundtruth::generate(&m, &grid, Kind::CoreToCore, 0.0, 4).unwrap();
    // Pair every core with the core of the next tile instead of its true mate.
    let mut groups = truth.tiles.clone();
    let n = groups.len();
    let firsts: Vec<u32> = groups.iter().map(|g| g[0]).collect();
    for (k, g) in groups.iter_mut().enumerate() {
        g[0] = firsts[(k + 1) % n];
    }
    let p = Problem::new(&grid, &truth.measured, &groups).unwrap();
    let inf = infer(&p, &search(2), &|_| {}).unwrap();
    for g in &groups {
        assert_eq!(inf.core_stop[g[0] as usize], inf.core_stop[g[1] as usize]);
    }
    // The wrong constraint cannot explain the matrix.
    assert!(inf.solution.sse > 1.0, "{}", inf.solution.sse);
}

#[test]
fn errors_come_before_any_search() {
    let m = LatencyMatrix::from_rows(
        (0..10).collect(),
        &(0..10)
            .map(|i| {
                (0..10)
                    .map(|j| (i != j).then_some(50.0 + (i as f64 - j as f64).abs()))
                    .collect()
            })
            .collect::<Vec<_>>(),
    );
    let meas = Measured::from_c2c(&m);
    // A 3 x 3 mesh has room for 9 cores.
    let g = Grid::uniform(3, 3, Routing::Xy, 1, 1, 1, HopCosts::Fit).unwrap();
    let e = Problem::new(&g, &meas, &[]).err().unwrap().to_string();
    assert!(e.contains("10 CPUs") && e.contains("room for 9"), "{e}");
    // Disabling tiles shrinks the room.
    let mut g = Grid::uniform(4, 3, Routing::Xy, 1, 1, 1, HopCosts::Fit).unwrap();
    g.disable(&[0, 1, 2]);
    let e = Problem::new(&g, &meas, &[]).err().unwrap().to_string();
    assert!(e.contains("room for 9"), "{e}");
    // A group larger than a tile.
    let g = Grid::uniform(4, 4, Routing::Xy, 1, 1, 2, HopCosts::Fit).unwrap();
    let e = Problem::new(&g, &meas, &[vec![0, 1, 2]])
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("3 cores must share a tile but a tile holds 2"),
        "{e}"
    );
    // More targets than stops that may hold one.
    let rows: Vec<Vec<Option<f64>>> = (0..4)
        .map(|_| (0..10).map(|j| Some(40.0 + j as f64)).collect())
        .collect();
    let t = Measured::from_targets(
        (0..4).collect(),
        (0..10).map(|j| format!("t{j}")).collect(),
        &rows,
    );
    let g = Grid::uniform(3, 3, Routing::Xy, 1, 1, 1, HopCosts::Fit).unwrap();
    let e = Problem::new(&g, &t, &[]).err().unwrap().to_string();
    assert!(e.contains("10 targets"), "{e}");
    // A CPU without a single measured pair.
    let mut holes = m.clone();
    for j in 1..10 {
        holes.clear(0, j);
    }
    let g = Grid::uniform(4, 4, Routing::Xy, 1, 1, 1, HopCosts::Fit).unwrap();
    let e = Problem::new(&g, &Measured::from_c2c(&holes), &[])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("CPU 0 has no measured latency"), "{e}");
}

#[test]
fn record_rebuilds_the_latency_model() {
    let m = Model::load("mesh", &["noc.cols=4".into(), "noc.rows=4".into()]).unwrap();
    let grid = preset_grid(&m, HopCosts::Fit).unwrap();
    let truth = groundtruth::generate(&m, &grid, Kind::CoreToCore, 0.0, 9).unwrap();
    let p = Problem::new(&grid, &truth.measured, &[]).unwrap();
    let opts = search(2);
    let inf = infer(&p, &opts, &|_| {}).unwrap();
    let r = record::inference_record(
        "gen",
        "modeled",
        &grid,
        Some("mesh".into()),
        &truth.measured,
        &inf,
        &[],
        &opts,
        Vec::new(),
    );
    let json = serde_json::to_string(&r).unwrap();
    let back: InferenceRecord = serde_json::from_str(&json).unwrap();
    let lm = back.latency_model().unwrap();
    // Zero noise: the rebuilt model predicts every measured latency.
    for o in &truth.measured.obs {
        let a = r.cores[o.a as usize].stop;
        let b = r.cores[o.b as usize].stop;
        assert!(
            (lm.ns(a, b) - o.y).abs() < 1e-6,
            "{} vs {}",
            lm.ns(a, b),
            o.y
        );
    }
    assert!(r.r_squared > 0.999999);
    assert_eq!(r.restarts.len(), 2);
    assert!(r.cores.iter().all(|c| c.confidence > 0.99));
}
