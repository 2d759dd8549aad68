//! Structure inference at the users' scale (issue 45): an emulated 160-CPU server whose
//! only structure is noise and a few slowed vCPUs, a dual first-generation EPYC whose one
//! SMT pair is noisier than the rest, and a two-socket mesh whose latency grows with each
//! core's distance to the line's home (core pairs, then the socket, and a gradient).

use numalab_c2c::matrix::LatencyMatrix;
use numalab_c2c::structure::{infer, Structure, GRADIENT_POSITION};

mod common;
use common::*;

fn describe(s: &Structure) -> String {
    let levels: Vec<String> = s
        .levels
        .iter()
        .map(|l| format!("[{}] {:?}", l.shape(), l.evidence))
        .collect();
    format!("{} | notes: {:?}", levels.join(" "), s.notes)
}

/// An emulated server: every pair about 25 ns with relative noise `noise`, the vCPUs in
/// `slow` slower by `slow_ns` in every pair they are in (their host threads share a core),
/// and a share `tail` of the pairs up to 3x slower (a preempted measurement).
fn emulated(
    n: usize,
    slow: &[usize],
    slow_ns: f64,
    noise: f64,
    tail: f64,
    seed: u64,
) -> LatencyMatrix {
    let mut rng = Rng(seed);
    matrix(n, |i, j| {
        let mut v = 25.0 * (1.0 + noise * rng.normal());
        for c in [i, j] {
            if slow.contains(&c) {
                v += slow_ns;
            }
        }
        if rng.unit() < tail {
            v *= 1.0 + 2.0 * rng.unit();
        }
        v
    })
}

#[test]
fn an_emulated_160_cpu_server_has_no_level() {
    // The shape a user saw: "3 groups (1 x 155, 1 x 3, 1 x 2) at 29 ns between vs 25 ns
    // inside", a level made of a few vCPUs set apart by their slowest pairs.
    let cases: [(u64, Vec<usize>, f64, f64); 5] = [
        (1, vec![3, 77, 150], 2.0, 0.01),
        (2, vec![5, 6, 100, 120, 140], 3.0, 0.02),
        (3, vec![], 0.0, 0.03),
        (4, vec![159], 4.0, 0.01),
        (5, vec![0, 1, 2, 80, 81], 2.5, 0.02),
    ];
    for (seed, slow, slow_ns, tail) in cases {
        let s = infer(&emulated(160, &slow, slow_ns, 0.05, tail, seed));
        assert!(
            s.levels.is_empty(),
            "slow vCPUs {slow:?} +{slow_ns} ns, tail {tail}: {}",
            describe(&s)
        );
    }
}

/// Dual first-generation EPYC: 2 sockets x 4 dies x 2 CCX x 4 cores, SMT siblings at +64
/// (CPUs `0..n`, so a smaller `n` drops the siblings of the last cores). The pairs of core
/// `noisy` (and its sibling) have `factor` times the noise, and the siblings are
/// `noisy_smt_ns` apart instead of 15 ns.
fn naples(n: usize, factor: f64, noisy: usize, noisy_smt_ns: f64, seed: u64) -> LatencyMatrix {
    let mut rng = Rng(seed);
    matrix(n, |i, j| {
        let (ci, cj) = (i % 64, j % 64);
        let base = if ci == cj {
            if ci == noisy {
                noisy_smt_ns
            } else {
                15.0
            }
        } else if ci / 4 == cj / 4 {
            40.0
        } else if ci / 8 == cj / 8 {
            110.0
        } else if ci / 32 == cj / 32 {
            200.0
        } else {
            300.0
        };
        let f = if ci == noisy || cj == noisy {
            factor
        } else {
            1.0
        };
        (base * (1.0 + 0.03 * f * rng.normal())).max(1.0)
    })
}

#[test]
fn every_smt_pair_is_found_when_one_is_noisier_than_the_rest() {
    let blocks = |size: u32| -> Vec<Vec<u32>> {
        (0..64 / size)
            .map(|b| {
                (b * size..(b + 1) * size)
                    .chain(64 + b * size..64 + (b + 1) * size)
                    .collect()
            })
            .collect()
    };
    for (seed, factor, smt_ns) in [
        (1u64, 3.0, 15.0),
        (2, 4.0, 20.0),
        (3, 5.0, 25.0),
        (4, 3.0, 30.0),
    ] {
        let s = infer(&naples(128, factor, 17, smt_ns, seed));
        let case = format!("core 17 with {factor}x the noise, siblings {smt_ns} ns apart");
        let want = [blocks(1), blocks(4), blocks(8), blocks(32)];
        let got: Vec<Vec<Vec<u32>>> = s.levels.iter().map(groups).collect();
        assert_eq!(got.len(), 4, "{case}: {}", describe(&s));
        for (g, w) in got.iter().zip(want) {
            assert_eq!(*g, sorted(w), "{case}: {}", describe(&s));
        }
    }
}

#[test]
fn a_cpu_whose_sibling_is_missing_is_not_paired_with_another() {
    // CPUs 0-119: the siblings of cores 56-63 (CPUs 120-127) are not in the matrix.
    for seed in 1..4u64 {
        let s = infer(&naples(120, 4.0, 17, 25.0, seed));
        let finest = &s.levels[0];
        let mut want: Vec<Vec<u32>> = (0..56).map(|c| vec![c, c + 64]).collect();
        want.extend((56..64).map(|c| vec![c]));
        assert_eq!(
            groups(finest),
            sorted(want),
            "seed {seed}: {}",
            describe(&s)
        );
    }
}

/// Two sockets of `rows x cols` mesh stops, two cores on each stop (CPUs 0..2*stops on
/// socket 0), the line's home fixed on stop `home` of socket 0: a transfer costs each
/// core's hops to the home (`hop` ns each; socket 1 through its stop 0 and a link), the
/// cores of one stop are `pair` ns nearer, the other socket 80 ns farther; relative noise.
fn two_socket_mesh(pair: f64, noise: f64, home: usize, seed: u64) -> LatencyMatrix {
    let (rows, cols, hop) = (5usize, 8usize, 2.0);
    let per = 2 * rows * cols;
    let mut rng = Rng(seed);
    let d =
        |a: usize, b: usize| ((a % cols).abs_diff(b % cols) + (a / cols).abs_diff(b / cols)) as f64;
    matrix(2 * per, |i, j| {
        let (si, sj) = (i / per, j / per);
        let (ti, tj) = ((i % per) / 2, (j % per) / 2);
        let to_home = |s: usize, t: usize| {
            if s == 0 {
                d(t, home)
            } else {
                d(t, 0) + 8.0 + d(0, home)
            }
        };
        let mut v = 60.0 + hop * (to_home(si, ti) + to_home(sj, tj));
        if si != sj {
            v += 80.0;
        } else if ti == tj {
            v -= pair;
        }
        v * (1.0 + noise * rng.normal())
    })
}

#[test]
fn a_two_socket_mesh_has_core_pairs_and_sockets_and_a_gradient_not_groups() {
    let sockets: Vec<Vec<u32>> = vec![(0..80).collect(), (80..160).collect()];
    let pairs: Vec<Vec<u32>> = (0..80).map(|p| vec![2 * p, 2 * p + 1]).collect();
    for (seed, home, pair, noise) in [
        (1u64, 0usize, 10.0, 0.02),
        (2, 22, 10.0, 0.02),
        (3, 22, 6.0, 0.03),
        (4, 12, 15.0, 0.01),
        (5, 39, 8.0, 0.02),
        (6, 12, 20.0, 0.005),
    ] {
        let s = infer(&two_socket_mesh(pair, noise, home, seed));
        let case = format!("home at stop {home}, pairs {pair} ns nearer, noise {noise}");
        // Every level is the sockets or the core pairs: nothing in between.
        for l in &s.levels {
            let g = groups(l);
            assert!(
                g == sockets || g == sorted(pairs.clone()),
                "{case}: {}",
                describe(&s)
            );
        }
        assert!(
            s.levels.iter().any(|l| groups(l) == sockets),
            "{case}: {}",
            describe(&s)
        );
        // Inside a socket the spread is reported as a gradient with the cores' position.
        assert!(
            s.gradients
                .iter()
                .any(|g| g.positional >= GRADIENT_POSITION),
            "{case}: {:?}",
            s.gradients
        );
    }
}

/// Issue 50: a 2,000-CPU matrix (two sockets of 250 clusters of 4, as `c2c --input` of a
/// 2000x2000 CSV) used to take minutes (the clustering was O(n^3)); its structure is
/// asserted here, not its time (docs/benchmarks.md has the timing and the command).
#[test]
fn a_2000_cpu_matrix_is_inferred_with_its_clusters_and_sockets() {
    let n = 2000;
    let mut rng = Rng(50);
    let m = matrix(n, |i, j| {
        let base = if i / 4 == j / 4 {
            20.0
        } else if i / 1000 == j / 1000 {
            60.0
        } else {
            150.0
        };
        base * (1.0 + 0.01 * rng.normal())
    });
    let t = std::time::Instant::now();
    let s = infer(&m);
    eprintln!("2000 CPUs inferred in {:.1} s", t.elapsed().as_secs_f64());
    let shapes: Vec<String> = s.levels.iter().map(|l| l.shape()).collect();
    assert_eq!(shapes, ["500 x 4", "2 x 1000"], "{}", describe(&s));
    // Each cluster is 4 consecutive CPUs, each socket 1,000.
    for (level, size) in s.levels.iter().zip([4u32, 1000]) {
        for g in &level.groups {
            let first = g.cpus[0];
            assert_eq!(first % size, 0, "{}", describe(&s));
            assert_eq!(g.cpus, (first..first + size).collect::<Vec<u32>>());
        }
    }
}
