//! A comparison of a 1,200-CPU core-to-core matrix (issue 50): its 719,400 pairs are
//! all kept as the median figure's samples, but the comparison's bootstrap does not
//! resample them all 2,000 times (what took minutes at 2,000 CPUs): numalab-stats
//! resamples RESAMPLE_MAX_SAMPLES evenly spaced quantiles of them, the interval says so
//! and the row's name names it. A matrix of the fixture (64 CPUs) is resampled whole.

use numalab_report::compare::compare_all;
use numalab_report::load::{load, Loaded};
use numalab_report::metrics::metrics;
use numalab_stats::{Thinned, RESAMPLE_MAX_SAMPLES};
use serde_json::json;
use std::path::Path;

const N: usize = 1_200;

fn fixture() -> Loaded {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bundles/c2c-dual-xeon-gold-6242");
    load(&path).unwrap()
}

/// The fixture with its matrix widened to N CPUs: 40 ns within a package of N/2 CPUs,
/// 130 ns between packages, 10 ns between SMT siblings i and i+N/2... plus i+j
/// hundredths so that the pairs differ.
fn widened() -> Loaded {
    let mut l = fixture();
    let package = |c: usize| (c % (N / 2)) / (N / 4);
    let matrix: Vec<Vec<Option<f64>>> = (0..N)
        .map(|i| {
            (0..N)
                .map(|j| {
                    (i != j).then(|| {
                        let base = if i % (N / 2) == j % (N / 2) {
                            10.0
                        } else if package(i) == package(j) {
                            40.0
                        } else {
                            130.0
                        };
                        base + (i + j) as f64 / 100.0
                    })
                })
                .collect()
        })
        .collect();
    let r = l
        .bundle
        .records
        .iter_mut()
        .find(|r| r.kind == "c2c.matrix")
        .expect("the fixture has a matrix");
    r.data["cpus"] = json!((0..N as u32).collect::<Vec<_>>());
    r.data["matrix_ns"] = json!(matrix);
    l
}

#[test]
fn a_large_matrix_is_compared_from_a_bounded_sample_that_is_named() {
    let big = metrics(&widened());
    let median = big
        .iter()
        .find(|m| m.id.ends_with(".median") && m.id.starts_with("c2c."))
        .expect("a median figure");
    let pairs = N * (N - 1) / 2;
    assert_eq!(median.samples.len(), pairs);
    assert_eq!(median.name, "core-to-core latency, median pair (imported)");
    let min = big.iter().find(|m| m.id.ends_with(".min")).unwrap();
    assert_eq!(min.samples, vec![10.0 + (N / 2) as f64 / 100.0]);
    let max = big.iter().find(|m| m.id.ends_with(".max")).unwrap();
    assert!(max.samples[0] > 130.0);

    // The comparison with the fixture completes and shows the note.
    let small = metrics(&fixture());
    let report = compare_all(
        &[
            ("wide".into(), big.clone()),
            ("fixture".into(), small.clone()),
        ],
        Vec::new(),
    );
    let row = report.comparisons[0]
        .rows
        .iter()
        .find(|r| r.id == median.id)
        .expect("the median is compared");
    let interval = row.interval.as_ref().expect("an interval");
    assert_eq!(
        interval.thinned,
        Some(Thinned {
            quantiles: RESAMPLE_MAX_SAMPLES,
            samples: pairs
        })
    );
    assert!(
        row.name.ends_with(&format!(
            "(interval from {RESAMPLE_MAX_SAMPLES} quantiles of {pairs} samples)"
        )),
        "{}",
        row.name
    );
    // The value compared is the median of every pair, not of the quantiles.
    let mut sorted = median.samples.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(row.baseline, numalab_stats::median_sorted(&sorted).unwrap());
    assert!(interval.low <= row.ratio && row.ratio <= interval.high);

    // The fixture's 64 CPUs (2,016 pairs) are resampled whole, under the plain name.
    let m = small
        .iter()
        .find(|m| m.id.ends_with(".median") && m.id.starts_with("c2c."))
        .unwrap();
    assert_eq!(m.samples.len(), 64 * 63 / 2);
    let itself = compare_all(
        &[("a".into(), small.clone()), ("b".into(), small.clone())],
        Vec::new(),
    );
    let row = itself.comparisons[0]
        .rows
        .iter()
        .find(|r| r.id == m.id)
        .unwrap();
    assert_eq!(row.interval.as_ref().unwrap().thinned, None);
    assert_eq!(row.name, m.name);
}
