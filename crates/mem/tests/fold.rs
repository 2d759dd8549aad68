//! Warnings a big machine gives once per cell, folded on the terminal into one line a
//! code (issue 45 item 3): the producers' own warnings, many times with different
//! figures, through `numalab_schema::fold::Fold`: how many, the worst three in order,
//! the remedy.

use numalab_mem::bandwidth::cell_quality_warnings;
use numalab_mem::migrate::{pages_not_moved, Method, MethodResult};
use numalab_schema::fold::Fold;
use numalab_schema::memory::PagePlacement;
use std::collections::BTreeMap;

/// Folds `warnings` (key, warning) of one code: the lines shown at once and the folded
/// line.
fn fold(warnings: Vec<(String, numalab_schema::Warning)>) -> (usize, numalab_schema::Warning) {
    let mut f = Fold::default();
    let shown = warnings.iter().filter(|(k, w)| f.note(k, w)).count();
    let folded = f.folded();
    assert_eq!(folded.len(), 1, "{folded:?}");
    (shown, folded[0].clone())
}

fn order(m: &str, parts: &[&str]) {
    let at: Vec<usize> = parts
        .iter()
        .map(|p| m.find(p).unwrap_or_else(|| panic!("{p} in {m}")))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{parts:?} in {m}");
}

/// A 64-cell bandwidth matrix whose threads were out of step on 20 cells and whose
/// samples spread on 20: one line each, the largest factors and spreads first.
#[test]
fn imbalance_and_noise_of_many_cells_fold_worst_first() {
    let mut imbalance = Vec::new();
    let mut noisy = Vec::new();
    for cell in 0..64 {
        // 20 cells over 1.25x: 1.30x .. 2.25x, cell 13 the worst at 3.10x.
        let factor = match cell {
            13 => 3.1,
            c if c < 20 => 1.3 + 0.05 * c as f64,
            _ => 1.1,
        };
        // 20 cells spread beyond 10%: 11% .. 30%, cell 40 the worst at 55%.
        let spread = match cell {
            40 => 0.55,
            c if (30..50).contains(&c) => 0.11 + 0.01 * (c - 30) as f64,
            _ => 0.02,
        };
        for w in cell_quality_warnings(factor, spread) {
            let key = format!("mem/bandwidth/matrix/cell{cell}");
            match w.code.as_str() {
                "imbalance" => imbalance.push((key, w)),
                "noisy" => noisy.push((key, w)),
                other => panic!("{other}"),
            }
        }
    }
    assert_eq!((imbalance.len(), noisy.len()), (20, 20));
    let (shown, w) = fold(imbalance);
    assert_eq!(shown, 1);
    assert!(
        w.message.starts_with(
            "imbalance: 19 more records had this warning, each its own message (20 in all"
        ),
        "{}",
        w.message
    );
    order(
        &w.message,
        &[
            "the worst: mem/bandwidth/matrix/cell13: the slowest thread took 3.10x",
            "cell19: the slowest thread took 2.25x",
            "cell18: the slowest thread took 2.20x",
        ],
    );
    assert_eq!(
        w.remedy.as_deref(),
        Some("rerun on an idle machine; check `numalab doctor`")
    );
    let (shown, w) = fold(noisy);
    assert_eq!(shown, 1);
    assert!(
        w.message.starts_with("noisy: 19 more records"),
        "{}",
        w.message
    );
    order(
        &w.message,
        &[
            "cell40: samples spread by 55%",
            "cell49: samples spread by 30%",
            "cell48: samples spread by 29%",
        ],
    );
    assert!(!w.message.contains("spread by 11%"), "{}", w.message);
}

fn moved(not: u64) -> MethodResult {
    MethodResult {
        method: Method::MovePages,
        sample_ns: vec![1.0],
        throughput_gbps: None,
        percent_of_reference: None,
        ns_per_page: 1.0,
        pages_on_target: 4096 - not,
        pages_not_moved: BTreeMap::from([("EBUSY".to_string(), not)]),
        destination: PagePlacement {
            pages_per_node: vec![(1, 4096 - not)],
            not_present: 0,
        },
        data_verified: true,
        note: None,
    }
}

/// move_pages left pages behind in 12 cells of a migrate sweep, each a different
/// number: one line, the lowest shares moved first, with the remedy; a cell that moved
/// every page has no warning.
#[test]
fn pages_not_moved_of_many_cells_fold_lowest_share_first() {
    assert!(pages_not_moved(&moved(0), 4096, 1).is_none());
    let counts = [10u64, 400, 2048, 7, 90, 3000, 1, 64, 1024, 5, 700, 33];
    let warnings: Vec<_> = counts
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let w = pages_not_moved(&moved(n), 4096, 1).unwrap();
            (format!("mem/migrate/0-1/{i}"), w)
        })
        .collect();
    assert!(
        warnings[2].1.message.starts_with(
            "move_pages: only 50.0% of the pages were moved to node 1: 2048 of 4096 were not (2048 EBUSY)"
        ),
        "{}",
        warnings[2].1.message
    );
    let (shown, w) = fold(warnings);
    assert_eq!(shown, 1);
    assert!(
        w.message.starts_with("pages_not_moved: 11 more records"),
        "{}",
        w.message
    );
    order(
        &w.message,
        &[
            "mem/migrate/0-1/5: move_pages: only 26.8%",
            "mem/migrate/0-1/2: move_pages: only 50.0%",
            "mem/migrate/0-1/8: move_pages: only 75.0%",
        ],
    );
    assert!(!w.message.contains("/10:"), "{}", w.message);
    assert_eq!(
        w.remedy.as_deref(),
        Some("free memory on the target node, or check that no other process shares the pages")
    );
}
