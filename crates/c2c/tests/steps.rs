//! A level is a step that holds for every member, not a cut through a gradient.
//!
//! Synthetic matrices with known truth: meshes where latency grows with the distance to
//! the line's home (no level may appear, the gradient is reported), and machines with
//! real steps (SMT pairs, complexes, sockets) with noise and outliers (every step found,
//! exactly the right groups), a complex with an internal gradient (not split), and two
//! neighbouring complexes with a noisy step (not merged).

use numalab_c2c::matrix::LatencyMatrix;
use numalab_c2c::structure::{infer, Structure, GRADIENT_POSITION};

/// xorshift64* with Box-Muller normals: deterministic, no dependency.
mod common;
use common::*;

fn describe(s: &Structure) -> String {
    let levels: Vec<String> = s
        .levels
        .iter()
        .map(|l| {
            format!(
                "[{}] {:?} {:.1}/{:.1} ns",
                l.shape(),
                l.evidence,
                l.intra_ns.unwrap_or(f64::NAN),
                l.inter_ns.unwrap_or(f64::NAN)
            )
        })
        .collect();
    format!("{} | notes: {:?}", levels.join(" "), s.notes)
}

/// Manhattan distance between tiles `a` and `b` of a `cols`-wide mesh.
fn hops(a: usize, b: usize, cols: usize) -> f64 {
    ((a % cols).abs_diff(b % cols) + (a / cols).abs_diff(b / cols)) as f64
}

/// Home tile of the line for the pair (a, b): a hash of the pair, as an address hash
/// spreads lines over the caching agents of a mesh.
fn hashed_home(a: usize, b: usize, tiles: usize) -> usize {
    let mut h = (a as u64 * 0x9E37_79B9 + b as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 31;
    (h % tiles as u64) as usize
}

/// A mesh of `rows x cols` tiles, one core each: a transfer goes from core A to the
/// line's home and from there to core B, `hop_ns` per hop, plus Gaussian noise.
fn mesh(
    rows: usize,
    cols: usize,
    hop_ns: f64,
    noise_ns: f64,
    home: impl Fn(usize, usize) -> usize,
    seed: u64,
) -> LatencyMatrix {
    let mut rng = Rng(seed);
    let n = rows * cols;
    matrix(n, |i, j| {
        let h = home(i, j);
        40.0 + hop_ns * (hops(i, h, cols) + hops(h, j, cols)) + noise_ns * rng.normal()
    })
}

/// Where the line of a pair lives.
type Home = dyn Fn(usize, usize) -> usize;

#[test]
fn a_mesh_gradient_is_no_level_and_is_reported() {
    let mut failures = Vec::new();
    let mut seed = 1;
    for (rows, cols) in [(6usize, 6usize), (8, 8)] {
        let tiles = rows * cols;
        for noise in [1.0, 2.0, 4.0] {
            for hop in [1.0, 2.5] {
                // The line's home hashed per pair, and (as with one buffer for every
                // pair) fixed on one tile: a corner and the centre.
                let homes: [(&str, Box<Home>); 3] = [
                    ("hashed", Box::new(move |a, b| hashed_home(a, b, tiles))),
                    ("corner", Box::new(|_, _| 0)),
                    ("centre", Box::new(move |_, _| rows / 2 * cols + cols / 2)),
                ];
                for (name, home) in homes {
                    seed += 1;
                    let m = mesh(rows, cols, hop, noise, home, seed);
                    let s = infer(&m);
                    let case = format!("{rows}x{cols} home {name}, {hop} ns/hop, noise {noise} ns");
                    if !s.levels.is_empty() {
                        failures.push(format!("{case}: {}", describe(&s)));
                        continue;
                    }
                    // The gradient is reported, over the whole machine, with its range.
                    let Some(g) = s.gradients.iter().find(|g| g.within.is_none()) else {
                        failures.push(format!("{case}: no gradient reported: {}", describe(&s)));
                        continue;
                    };
                    assert!(g.low_ns < g.high_ns && g.low_ns > 30.0, "{case}: {g:?}");
                    // With the home fixed, latency is a sum of each core's distance to
                    // it: the gradient follows the cores' positions. Hashed per pair,
                    // it mostly depends on the pair; either way the spread is reported.
                    if name != "hashed" && g.positional < GRADIENT_POSITION {
                        failures.push(format!("{case}: not positional: {g:?}"));
                    }
                    assert!(
                        s.notes.iter().any(|n| n.contains("no discrete level")),
                        "{case}: {:?}",
                        s.notes
                    );
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Two sockets x `complexes` complexes x 8 cores x 2 SMT threads (siblings n and n + half),
/// steps at `smt`, `complex`, `socket` and `remote` ns, relative Gaussian noise, and
/// `outliers` of the pairs off by 10-30% either way.
fn stepped(complexes: usize, noise: f64, outliers: f64, seed: u64) -> LatencyMatrix {
    let cores = 2 * complexes * 8;
    let n = 2 * cores;
    let mut rng = Rng(seed);
    matrix(n, |i, j| {
        let (ci, cj) = (i % cores, j % cores);
        let base = if ci == cj {
            10.0
        } else if ci / 8 == cj / 8 {
            30.0
        } else if ci / (8 * complexes) == cj / (8 * complexes) {
            70.0
        } else {
            120.0
        };
        let mut v = base * (1.0 + noise * rng.normal());
        if rng.unit() < outliers {
            let off = 0.1 + 0.2 * rng.unit();
            v *= if rng.unit() < 0.5 {
                1.0 - off
            } else {
                1.0 + off
            };
        }
        v
    })
}

#[test]
fn real_steps_are_all_found_with_exactly_their_groups_despite_outliers() {
    for (seed, complexes) in [(7u64, 2usize), (8, 3), (9, 4)] {
        let m = stepped(complexes, 0.03, 0.02, seed);
        let n = m.n() as u32;
        let cores = n / 2;
        let s = infer(&m);
        let case = format!("{complexes} complexes per socket, seed {seed}");
        let smt: Vec<Vec<u32>> = (0..cores).map(|c| vec![c, c + cores]).collect();
        let cx: Vec<Vec<u32>> = (0..cores / 8)
            .map(|x| {
                (x * 8..x * 8 + 8)
                    .chain(cores + x * 8..cores + x * 8 + 8)
                    .collect()
            })
            .collect();
        let per_socket = cores / 2;
        let sockets: Vec<Vec<u32>> = (0..2)
            .map(|k| {
                (k * per_socket..(k + 1) * per_socket)
                    .chain(cores + k * per_socket..cores + (k + 1) * per_socket)
                    .collect()
            })
            .collect();
        let want = [sorted(smt), sorted(cx), sorted(sockets)];
        let got: Vec<Vec<Vec<u32>>> = s.levels.iter().map(groups).collect();
        assert_eq!(got.len(), 3, "{case}: {}", describe(&s));
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "{case}: {}", describe(&s));
        }
    }
}

/// `complexes` complexes of 8 cores; inside a complex the latency grows with the distance
/// between the cores along it by `grad_ns` in all (e.g. a ring stop to the next), and
/// complexes `0` and `1` are `near_ns` apart, all others `far_ns`.
fn complexes(
    count: usize,
    inside_ns: f64,
    grad_ns: f64,
    near_ns: f64,
    far_ns: f64,
    noise_ns: f64,
    seed: u64,
) -> LatencyMatrix {
    let mut rng = Rng(seed);
    matrix(8 * count, |i, j| {
        let (xi, xj) = (i / 8, j / 8);
        let base = if xi == xj {
            inside_ns + grad_ns * (i % 8).abs_diff(j % 8) as f64 / 7.0
        } else if xi.min(xj) == 0 && xi.max(xj) == 1 {
            near_ns
        } else {
            far_ns
        };
        base + noise_ns * rng.normal()
    })
}

fn complex_groups(count: usize) -> Vec<Vec<u32>> {
    (0..count as u32)
        .map(|x| (x * 8..x * 8 + 8).collect())
        .collect()
}

#[test]
fn a_complex_with_an_internal_gradient_is_not_split() {
    for (seed, count, grad) in [
        (21u64, 4usize, 2.0),
        (22, 4, 3.0),
        (23, 6, 2.5),
        (24, 8, 3.0),
    ] {
        let m = complexes(count, 28.0, grad, 80.0, 80.0, 0.3, seed);
        let s = infer(&m);
        let case = format!("{count} complexes, {grad} ns gradient inside, seed {seed}");
        assert_eq!(s.levels.len(), 1, "{case}: {}", describe(&s));
        assert_eq!(groups(&s.levels[0]), complex_groups(count), "{case}");
    }
}

#[test]
fn two_neighbouring_complexes_with_a_noisy_step_are_not_merged() {
    for (seed, count) in [(31u64, 4usize), (32, 4), (33, 6), (34, 8)] {
        // 30 ns inside, 45 ns to the neighbour, 100 ns to the others, 2 ns of noise.
        let m = complexes(count, 30.0, 0.0, 45.0, 100.0, 2.0, seed);
        let s = infer(&m);
        let case = format!("{count} complexes, seed {seed}");
        let want = complex_groups(count);
        assert!(
            s.levels.iter().any(|l| groups(l) == want),
            "{case}: {}",
            describe(&s)
        );
        // No level cuts a complex.
        for l in &s.levels {
            for g in &l.groups {
                assert!(
                    g.cpus.iter().all(|&c| g.cpus.contains(&(c / 8 * 8))),
                    "{case}: {:?} cuts a complex: {}",
                    g.cpus,
                    describe(&s)
                );
            }
        }
    }
}

#[test]
fn noise_alone_is_neither_a_level_nor_a_gradient_with_position() {
    for seed in 40..60u64 {
        for n in [8usize, 16, 48, 64] {
            let mut rng = Rng(seed * 31 + n as u64);
            // 3% Gaussian noise around 50 ns, no structure at all.
            let m = matrix(n, |_, _| 50.0 * (1.0 + 0.03 * rng.normal()));
            let s = infer(&m);
            assert!(
                s.levels.is_empty(),
                "{n} CPUs, seed {seed}: {}",
                describe(&s)
            );
            // A spread may be reported, but never as growing with where the CPUs are.
            for g in &s.gradients {
                assert!(
                    g.positional < GRADIENT_POSITION,
                    "{n} CPUs, seed {seed}: {g:?}"
                );
                assert!(s.notes.iter().any(|x| x.contains("depends on the pair")));
            }
        }
    }
}
