//! Recovery of model-generated placements (ground truth from `numalab-model`).

use numalab_layout::groundtruth::{self, TrialOptions};
use numalab_layout::{HopCosts, Kind, Options};
use numalab_model::Model;

fn opts(kind: Kind, hop_costs: HopCosts) -> TrialOptions {
    TrialOptions {
        kind,
        hop_costs,
        disabled_known: false,
        search: Options {
            seed: 1,
            restarts: 4,
            sweeps: 300,
            threads: 2,
        },
    }
}

#[test]
fn knl_zero_noise_is_exact_modulo_symmetry() {
    let m = Model::load("knl-7210", &[]).unwrap();
    for seed in [1, 2] {
        let t =
            groundtruth::trial(&m, &opts(Kind::CoreToCore, HopCosts::Fixed), 0.0, seed).unwrap();
        eprintln!("{t:?}");
        assert_eq!(t.tile_groups_found, 32);
        assert_eq!(t.tile_groups_correct, 32);
        assert_eq!(t.accuracy.exact_fraction, 1.0, "{t:?}");
    }
}

#[test]
fn mesh_8x8_zero_noise_fitted_costs() {
    let m = Model::load("mesh", &[]).unwrap();
    let t = groundtruth::trial(&m, &opts(Kind::CoreToCore, HopCosts::Fit), 0.0, 3).unwrap();
    eprintln!("{t:?}");
    assert_eq!(t.accuracy.exact_fraction, 1.0, "{t:?}");
}
