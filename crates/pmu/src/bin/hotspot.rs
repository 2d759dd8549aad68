//! A small workload with one deliberately hot function, used by numalab-pmu's tests
//! (counting and sampling a real child process, finding its hottest function from
//! debug info) and handy for trying `numalab profile` by hand.
//!
//! Usage: `numalab-pmu-hotspot [ROUNDS] [THREADS]` — each thread runs ROUNDS rounds of
//! `numalab_hot_loop` (about 90% of the time) and `numalab_cold_loop` (about 10%).

use std::hint::black_box;

/// The hot function: a dependent multiply-add chain the compiler cannot remove.
#[inline(never)]
fn numalab_hot_loop(n: u64) -> u64 {
    let mut x = black_box(1u64);
    for i in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(black_box(i));
    }
    x
}

/// A colder function, so that attribution has something to rank below.
#[inline(never)]
fn numalab_cold_loop(n: u64) -> u64 {
    let mut x = black_box(3u64);
    for i in 0..n {
        x ^= black_box(i).rotate_left(7);
    }
    x
}

fn work(rounds: u64) -> u64 {
    let mut acc = 0u64;
    for _ in 0..rounds {
        acc = acc.wrapping_add(numalab_hot_loop(900_000));
        acc = acc.wrapping_add(numalab_cold_loop(100_000));
    }
    acc
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1).max(1);
    let handles: Vec<_> = (1..threads)
        .map(|_| std::thread::spawn(move || work(rounds)))
        .collect();
    let mut acc = work(rounds);
    for h in handles {
        acc = acc.wrapping_add(h.join().unwrap_or(0));
    }
    println!("{acc}");
}
