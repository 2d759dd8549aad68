//! The layout records moved to `numalab_records::layout`: a journal written by numalab
//! 0.1.0 before the move (`fixtures/records-0.1.0.jsonl`: two inferences, one of a core x
//! target matrix, four ground-truth levels and an affinity) still decodes, every record
//! encodes back to the same JSON, and its floorplan still predicts latencies.

use numalab_layout::record::{
    self, AffinityRecord, GroundTruthRecord, InferenceRecord, InferenceRecordExt,
};
use numalab_layout::{HopCosts, Kind};
use numalab_model::Model;
use numalab_schema::RecordKind;
use std::path::Path;

fn old_bundle() -> numalab_schema::Bundle {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/records-0.1.0.jsonl");
    let (bundle, warnings) = numalab_schema::journal::read_bundle(&path).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    bundle
}

fn same_json<T: RecordKind>(bundle: &numalab_schema::Bundle) -> Vec<T> {
    let mut out = Vec::new();
    for r in bundle.records.iter().filter(|r| r.kind == T::KIND) {
        let typed: T = r.decode::<T>().unwrap().unwrap();
        assert_eq!(
            serde_json::to_value(&typed).unwrap(),
            r.data,
            "{} does not encode back to what was written",
            r.key
        );
        out.push(typed);
    }
    out
}

#[test]
fn records_written_before_the_move_decode_and_encode_the_same() {
    let b = old_bundle();
    let inf: Vec<InferenceRecord> = same_json(&b);
    let gt: Vec<GroundTruthRecord> = same_json(&b);
    let aff: Vec<AffinityRecord> = same_json(&b);
    assert_eq!((inf.len(), gt.len(), aff.len()), (2, 4, 1));
    assert_eq!(inf[0].kind, Kind::CoreToTarget);
    assert_eq!(inf[0].targets.len(), 3);
    assert_eq!(inf[1].geometry.preset.as_deref(), Some("knl-7210"));
    assert_eq!(inf[1].geo.routing, record::MeshRouting::Yx);
    assert_eq!(gt[0].hop_costs, HopCosts::Fixed);
    assert_eq!(gt[0].tile_groups_correct_fraction, Some(1.0));
    assert_eq!(gt[2].kind, Kind::CoreToTarget);
    assert_eq!(aff[0].nearest_targets.len(), 3);
}

#[test]
fn an_old_floorplan_still_predicts_latencies() {
    let b = old_bundle();
    let inf: Vec<InferenceRecord> = same_json(&b);
    // The core x target inference had no noise and a perfect fit (residual 0): 7 ns at
    // the own stop, and each hop of the round trip 1 ns (the fitted constants).
    let r = &inf[0];
    assert!(r.residual_rms_ns < 1e-6);
    let lm = r.latency_model().unwrap();
    let at = |x: u32, y: u32| y * r.geo.cols + x;
    let base = r.base_ns + r.same_stop_ns;
    assert!((lm.ns(at(0, 0), at(0, 0)) - base).abs() < 1e-6);
    assert!((lm.ns(at(0, 0), at(1, 0)) - r.base_ns - 2.0 * r.constants[2].value_ns).abs() < 1e-6);
    assert!((lm.ns(at(0, 0), at(3, 3)) - lm.ns(at(3, 3), at(0, 0))).abs() < 1e-9);
    assert!(lm.ns(at(0, 0), at(3, 3)) > lm.ns(at(0, 0), at(1, 1)));
    // The Xeon Phi floorplan rebuilds too.
    let knl = inf[1].latency_model().unwrap();
    assert_eq!(knl.grid.capacity, 2);
}

#[test]
fn the_mesh_geometry_is_the_models_geometry_in_json() {
    for preset in ["knl-7210", "mesh:yx", "neoverse-v1-64:half", "altra-q80-2s"] {
        let m = Model::load(preset, &[]).unwrap();
        // One type: the record's mesh is the model's geometry, and its JSON reads back.
        let mesh: record::MeshGeometry = m.geo.clone();
        let json = serde_json::to_string(&mesh).unwrap();
        assert_eq!(json, serde_json::to_string(&m.geo).unwrap(), "{preset}");
        let back: record::MeshGeometry = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m.geo, "{preset}");
    }
}
