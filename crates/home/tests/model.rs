//! The whole inference on model-generated machines, scored against the truth it never
//! sees (issue: "proof without the hardware"). Buffers use 64 KiB pages so that a debug
//! build runs in seconds; `numalab home map --model` runs the full-size case (2 MiB
//! pages), whose figures are in docs/home.md.

use numalab_home::alloc::{Homes, LinePool};
use numalab_home::bench::{self, BenchOptions};
use numalab_home::groundtruth::{trial, TrialOptions, TrialOutcome};
use numalab_home::map::Quiet;
use numalab_home::probe::Line;

fn small(preset: &str, noise: f64, seed: u64) -> TrialOptions {
    let mut t = TrialOptions::new(preset);
    t.truth.noise_ns = noise;
    t.truth.seed = seed;
    t.truth.page_bytes = 64 << 10;
    t.truth.pages = 40;
    t.map.seed = seed;
    t.search.restarts = 4;
    t.hash_checks = 20_000;
    t
}

fn run(t: &TrialOptions) -> TrialOutcome {
    trial(t, &mut Quiet).expect("the trial runs")
}

#[test]
fn knl_homes_lines_and_hash_are_recovered_at_4_ns() {
    let out = run(&small("knl-7210", 4.0, 1));
    let a = &out.accuracy;
    assert_eq!(a.home_places_true, 38);
    assert_eq!(a.homes_found, 38, "{a:?}");
    // The profiles alone, then the map (hash-relabelled): the 99% is the map's.
    assert!(a.line_accuracy_profiles >= 0.97, "{a:?}");
    assert!(a.line_accuracy_hash.unwrap() >= 0.99, "{a:?}");
    assert!(a.hash_exact, "{a:?}");
    assert_eq!(a.hash_addresses_tried, 20_000);
    assert!(a.homes_located_exact.unwrap() >= 0.95, "{a:?}");
    assert_eq!(a.interfaces_found, 2, "{a:?}");
    assert_eq!(a.interface_accuracy, Some(1.0), "{a:?}");
    let h = out.mapped.record.home_hash.as_ref().unwrap();
    assert_eq!(h.status, "recovered");
    assert!(!h.linear, "38 homes cannot be a linear hash");
    assert!(out.mapped.record.structure_visible);
    assert!(out.mapped.record.homes_reproduced.unwrap() >= 0.95);
    // The same hash in the published form: it gives what the GF(2) fit gives.
    let s = out
        .mapped
        .record
        .slice_hash
        .as_ref()
        .expect("a published form");
    assert!(s.valid() && s.slices == 38, "{s:?}");
    let mut agree = 0;
    let mut tried = 0;
    for p in out.mapped.record.pages.iter().filter_map(|p| p.phys) {
        for line in (0..1024u64).step_by(7) {
            let a = p + 64 * line;
            tried += 1;
            agree += usize::from(s.slice(a).is_some() && s.slice(a) == h.predict(a));
        }
    }
    assert_eq!(agree, tried);
}

#[test]
fn a_cmn_like_mesh_of_64_slices_is_mapped_by_place() {
    let out = run(&small("neoverse-v1-64:numa1", 4.0, 2));
    let a = &out.accuracy;
    assert_eq!(a.homes_true, 64);
    // Two SLC slices per home node: 32 places latency can tell apart.
    assert_eq!(a.home_places_true, 32);
    assert_eq!(a.homes_found, 32, "{a:?}");
    assert!(a.line_accuracy_hash.unwrap() >= 0.99, "{a:?}");
    assert!(a.hash_exact, "{a:?}");
    assert!(a.homes_located_exact.unwrap() >= 0.95, "{a:?}");
}

#[test]
fn without_physical_addresses_the_hash_stays_within_a_page() {
    let mut t = small("knl-7210", 2.0, 3);
    t.truth.phys_known = false;
    t.floorplan = false;
    let out = run(&t);
    let h = out.mapped.record.home_hash.as_ref().unwrap();
    assert_eq!(h.status, "page-offset", "{h:?}");
    assert!(!out.accuracy.hash_exact);
    assert!(out.accuracy.line_accuracy_hash.unwrap() >= 0.99);
    assert!(out.mapped.record.homes.iter().all(|h| h.stop.is_none()));
    assert!(out
        .mapped
        .record
        .notes
        .iter()
        .any(|n| n.contains("No physical addresses")));
}

#[test]
fn the_allocator_hands_out_only_lines_within_the_distance_by_the_true_map() {
    let out = run(&small("knl-7210", 4.0, 4));
    let m = &out.machine;
    let rec = &out.mapped.record;
    let fit = rec.home_hash.as_ref().unwrap();
    let lpp = m.buffer.lines_per_page() as u32;
    let lines: Vec<Line> = (0..m.page_phys.len())
        .flat_map(|page| (0..lpp).map(move |offset| Line { page, offset }))
        .collect();
    let ids: Vec<u8> = lines
        .iter()
        .map(|&l| fit.predict(m.pa(l)).unwrap())
        .collect();
    let homes = Homes::from_record(rec).unwrap();
    let g = &m.model.geo;
    for cpu in [0u32, 17, 40, 63] {
        for d in [1u32, 2, 3] {
            let mut pool = LinePool::new(ids.clone());
            let got = pool.take(&homes, cpu, Some(d), 64).unwrap();
            for &i in &got {
                let true_home = m.home_stops[m.home_of(lines[i]) as usize];
                let hops = g.hops(m.layout.core_stop[cpu as usize], true_home);
                assert!(hops <= d, "CPU {cpu} distance {d}: a line {hops} hops away");
            }
        }
    }
}

#[test]
fn the_affinity_sweep_gains_what_the_true_map_gains() {
    let mut b = BenchOptions::new("knl-7210");
    b.trial = small("knl-7210", 4.0, 5);
    b.lines_per_thread = 64;
    b.threads = 8;
    b.stencil_threads = vec![4];
    let (_, r) = bench::run(&b, &mut Quiet).unwrap();
    let near = r.sweep.iter().find(|p| p.distance_hops == Some(0)).unwrap();
    let want = near.gain_true_map.unwrap();
    assert!(want > 0.0, "{r:?}");
    assert!(
        (near.gain - want).abs() <= 0.1 * want,
        "gain {} against {} from the true map",
        near.gain,
        want
    );
    let sc: Vec<_> = r.stencil.iter().collect();
    assert_eq!(sc.len(), 2);
    let scatter = sc.iter().find(|p| p.placement == "scatter").unwrap();
    let co = sc.iter().find(|p| p.placement == "co-located").unwrap();
    assert!(co.step_ns < scatter.step_ns, "{sc:?}");
}

#[test]
fn noise_free_groups_are_exact_and_a_single_home_is_no_structure() {
    let out = run(&small("mesh", 0.0, 6));
    assert_eq!(out.accuracy.line_accuracy_profiles, 1.0);
    let mut t = small("mesh", 1.0, 7);
    t.truth.sets = vec!["slc.count=1".into(), "slc.stops=[[0,0]]".into()];
    match trial(&t, &mut Quiet) {
        Ok(out) => {
            assert_eq!(out.mapped.record.homes.len(), 1);
            assert!(out
                .mapped
                .record
                .notes
                .iter()
                .any(|n| n.contains("No home structure")));
        }
        // A preset that refuses one slice at a stop list is a refusal, not a structure.
        Err(e) => assert!(e.to_string().contains("slc"), "{e}"),
    }
}
