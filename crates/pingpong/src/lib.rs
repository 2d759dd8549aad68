//! Ping-pong of one cache line between two pinned threads: the measurement itself.
//!
//! Two threads, each pinned to one CPU through a [`Placer`], pass a counter back and
//! forth in one 64-byte line. Each round trip moves the line twice (to the answering CPU
//! and back), so half the round-trip time is the one-way core-to-core latency that the
//! `core-to-core-latency` tool and the literature report.
//!
//! Two variants:
//! - [`Variant::Cas`]: both threads spin on `compare_exchange` (a locked read-modify-write,
//!   as in core-to-core-latency's default benchmark). A failed CAS also takes the line
//!   exclusive, so this measures contended ownership transfers.
//! - [`Variant::Flag`]: one thread stores, the other spins on plain loads until it sees
//!   the value, then stores its answer. Reads share the line; only stores take it. This
//!   is the message-passing latency of a flag.
//!
//! Each pair gets a fresh page, bound to a chosen NUMA node (`home_node`) before its first
//! touch, because on multi-socket machines where the line's memory lives changes the
//! answer (the home agent / directory of the line is on that node). The node the kernel
//! really used is recorded next to the one asked for.
//!
//! Protocol per pair: pin both threads, touch the line, warm-up samples (discarded), then
//! timed samples. A sample times `round_trips` round trips with CLOCK_MONOTONIC on the
//! first thread; batches are long enough that clock resolution and read cost stay under
//! 1% (checked against [`numalab_clock::ClockCheck`]).

#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod plan;
pub mod probe;
pub mod start;
// The raw access, the one module allowed `unsafe`.
#[allow(unsafe_code)]
mod sys;

pub use plan::{pair_key, run_plan, Estimate, Measured, PlanError};

use numalab_topo::bind::{MemPolicy, PageKind, PagePlacement, Placer, Region};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;

/// Which ping-pong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// Both threads compare-and-swap the same word.
    Cas,
    /// Store a flag, spin on plain loads for the answer.
    Flag,
}

impl Variant {
    /// Name used in records and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Cas => "cas",
            Variant::Flag => "flag",
        }
    }
}

/// How a pair is measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// Ping-pong variant.
    pub variant: Variant,
    /// Round trips per timed sample.
    pub round_trips: u32,
    /// Timed samples per pair.
    pub samples: u32,
    /// Samples run first and discarded (caches, frequency, page faults).
    pub warmup_samples: u32,
    /// NUMA node the line is bound to; `None`: the first thread's node (first touch).
    pub home_node: Option<u32>,
}

impl Default for Config {
    fn default() -> Self {
        // The same defaults as core-to-core-latency (1000 round trips, 300 samples), so
        // that figures compare one to one.
        Config {
            variant: Variant::Cas,
            round_trips: 1000,
            samples: 300,
            warmup_samples: 10,
            home_node: None,
        }
    }
}

/// What one pair measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairMeasurement {
    /// CPU of the first thread (starts each round trip, times it).
    pub first: u32,
    /// CPU of the answering thread.
    pub second: u32,
    /// Variant.
    pub variant: Variant,
    /// Node the line was bound to (`None`: first touch by the first thread).
    pub home_node_requested: Option<u32>,
    /// Node the kernel reports for the line's page after the run (`None`: unknown).
    pub home_node: Option<u32>,
    /// Half round-trip time of each timed sample, ns.
    pub samples_ns: Vec<f64>,
    /// Round trips per sample.
    pub round_trips: u32,
    /// Wall time of the whole pair (setup, warm-up, samples), ns.
    pub wall_ns: u64,
}

impl PairMeasurement {
    /// Statistics of the samples.
    pub fn summary(&self) -> Option<numalab_stats::Summary> {
        numalab_stats::Summary::of(&self.samples_ns)
    }
}

/// Why a pair could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum PingPongError {
    /// The two CPUs are the same.
    #[error("CPU {0} cannot ping-pong with itself; choose two different CPUs")]
    SameCpu(u32),
    /// Pinning or memory placement failed.
    #[error(transparent)]
    Topo(#[from] numalab_topo::TopoError),
    /// The run was interrupted (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
    /// The answering thread never answered (it could not run on its CPU).
    #[error("CPU {0} did not answer within {1} s: it may be offline, isolated, or busy with a real-time task")]
    NoAnswer(u32, u64),
}

impl numalab_schema::Classify for PingPongError {
    fn class(&self) -> numalab_schema::ErrorClass {
        use numalab_schema::ErrorClass;
        match self {
            PingPongError::SameCpu(_) => ErrorClass::Usage,
            PingPongError::Topo(e) => e.class(),
            PingPongError::Interrupted => ErrorClass::Interrupted,
            PingPongError::NoAnswer(..) => ErrorClass::Runtime,
        }
    }
}

/// The line and the abort flag, each on its own cache line.
#[repr(C, align(128))]
struct Padded<T>(T);

/// Seconds a thread waits for its partner before giving up.
const ANSWER_TIMEOUT_S: u64 = 10;

/// Measures one pair. `stop` is polled between samples (Ctrl-C).
pub fn measure_pair(
    placer: &dyn Placer,
    first: u32,
    second: u32,
    cfg: &Config,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<PairMeasurement, PingPongError> {
    if first == second {
        return Err(PingPongError::SameCpu(first));
    }
    let start = numalab_clock::now_ns();
    let mut region = Region::new(numalab_topo::bind::base_page_size(), PageKind::Base)?;
    if let Some(node) = cfg.home_node {
        placer.bind_region(&region, &MemPolicy::Bind(vec![node]))?;
    }
    let line: &AtomicU64 = sys::first_word(&mut region);
    let abort = Padded(AtomicBool::new(false));
    let total = (cfg.warmup_samples + cfg.samples) as u64 * cfg.round_trips as u64;
    let barrier = Barrier::new(2);
    let result: Result<Vec<f64>, PingPongError> = std::thread::scope(|s| {
        // Both threads always pass both barriers, whatever fails: a thread that
        // returned early would leave the other waiting at a barrier for ever. A failed
        // pinning raises `abort` before the first barrier, so after it both know.
        let answer = s.spawn(|| -> Result<(), PingPongError> {
            let pinned = placer.pin_current_thread(second);
            if pinned.is_err() {
                abort.0.store(true, Ordering::SeqCst);
            }
            barrier.wait();
            barrier.wait(); // the line is touched and the first thread is ready
            pinned?;
            if abort.0.load(Ordering::SeqCst) {
                // The first thread could not be pinned; it reports why.
                return Ok(());
            }
            answer_loop(line, &abort.0, cfg.variant, total, second)
        });
        // Both sides run in threads of their own, so the caller's CPU affinity is left
        // as it was (a pinned caller would pass its pinning on to everything it starts).
        // `Ok(None)`: the answering thread could not be pinned (it reports why).
        let timed = s.spawn(|| -> Result<Option<Vec<f64>>, PingPongError> {
            let pinned = placer.pin_current_thread(first);
            if pinned.is_err() {
                abort.0.store(true, Ordering::SeqCst);
            }
            barrier.wait();
            if let Err(e) = pinned {
                barrier.wait();
                return Err(e.into());
            }
            if abort.0.load(Ordering::SeqCst) {
                barrier.wait();
                return Ok(None);
            }
            // First touch by the first thread (the policy, if any, already decided the node).
            line.store(0, Ordering::SeqCst);
            barrier.wait();
            let mut out = Vec::with_capacity(cfg.samples as usize);
            let mut next = 0u64;
            for sample in 0..cfg.warmup_samples + cfg.samples {
                if stop() {
                    abort.0.store(true, Ordering::Relaxed);
                    return Err(PingPongError::Interrupted);
                }
                let t0 = numalab_clock::now_ns();
                for _ in 0..cfg.round_trips {
                    if !ping(line, &abort.0, cfg.variant, next) {
                        return Err(PingPongError::NoAnswer(second, ANSWER_TIMEOUT_S));
                    }
                    next += 2;
                }
                let t1 = numalab_clock::now_ns();
                if sample >= cfg.warmup_samples {
                    out.push((t1 - t0) as f64 / (2.0 * cfg.round_trips as f64));
                }
            }
            Ok(Some(out))
        });
        let timed = timed
            .join()
            .unwrap_or(Err(PingPongError::NoAnswer(first, ANSWER_TIMEOUT_S)));
        if timed.is_err() {
            abort.0.store(true, Ordering::Relaxed);
        }
        let answered = answer
            .join()
            .unwrap_or(Err(PingPongError::NoAnswer(second, ANSWER_TIMEOUT_S)));
        match (timed, answered) {
            (Ok(Some(v)), Ok(())) => Ok(v),
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(e),
            (Ok(None), Ok(())) => Err(PingPongError::NoAnswer(second, ANSWER_TIMEOUT_S)),
        }
    });
    let samples_ns = result?;
    let home_node = placer.page_nodes(&region).ok().and_then(|nodes| {
        PagePlacement::from_page_nodes(&nodes)
            .pages_per_node
            .first()
            .map(|p| p.0)
    });
    Ok(PairMeasurement {
        first,
        second,
        variant: cfg.variant,
        home_node_requested: cfg.home_node,
        home_node,
        samples_ns,
        round_trips: cfg.round_trips,
        wall_ns: numalab_clock::now_ns() - start,
    })
}

/// Spins until `cond` holds; false if aborted or the partner did not answer in time.
#[inline(always)]
fn spin_until(abort: &AtomicBool, mut cond: impl FnMut() -> bool) -> bool {
    let mut spins: u64 = 0;
    let mut deadline = 0u64;
    // No `spin_loop()` (PAUSE) in the hot loop: it delays the reaction by up to ~140
    // cycles on recent Intel cores, and under KVM it triggers pause-loop exits that make
    // the hypervisor deschedule the waiting vCPU. core-to-core-latency spins bare too.
    while !cond() {
        spins += 1;
        // Look at the clock and the abort flag only now and then: the hot loop touches
        // nothing but the line.
        if spins & 0xffff == 0 {
            if abort.load(Ordering::Relaxed) {
                return false;
            }
            let now = numalab_clock::now_ns();
            if deadline == 0 {
                deadline = now + ANSWER_TIMEOUT_S * 1_000_000_000;
            } else if now > deadline {
                abort.store(true, Ordering::Relaxed);
                return false;
            }
        }
    }
    true
}

/// One round trip from the first thread: the line holds `base` (even) when it is our
/// turn; we make it `base + 1`. The flag variant then waits for the answer `base + 2`;
/// the CAS variant finds it at its next turn.
#[inline(always)]
fn ping(line: &AtomicU64, abort: &AtomicBool, variant: Variant, base: u64) -> bool {
    match variant {
        // As in core-to-core-latency: spin with CAS until it is our turn (the previous
        // answer arrived), so consecutive successes are one round trip apart.
        Variant::Cas => spin_until(abort, || {
            line.compare_exchange(base, base + 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }),
        Variant::Flag => {
            line.store(base + 1, Ordering::Release);
            spin_until(abort, || line.load(Ordering::Acquire) == base + 2)
        }
    }
}

/// The answering thread: `total` answers.
fn answer_loop(
    line: &AtomicU64,
    abort: &AtomicBool,
    variant: Variant,
    total: u64,
    cpu: u32,
) -> Result<(), PingPongError> {
    for i in 0..total {
        let odd = 2 * i + 1;
        let ok = match variant {
            Variant::Cas => spin_until(abort, || {
                line.compare_exchange(odd, odd + 1, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            }),
            Variant::Flag => {
                let seen = spin_until(abort, || line.load(Ordering::Acquire) == odd);
                if seen {
                    line.store(odd + 1, Ordering::Release);
                }
                seen
            }
        };
        if !ok {
            // Either the first thread stopped (it reports why) or it never pinged.
            return if abort.load(Ordering::Relaxed) {
                Ok(())
            } else {
                Err(PingPongError::NoAnswer(cpu, ANSWER_TIMEOUT_S))
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::bind::HwlocPlacer;

    fn two_cpus() -> Option<(u32, u32)> {
        let m = numalab_topo::live().ok()?;
        let ids = m.pu_ids();
        (ids.len() >= 2).then(|| (ids[0], ids[1]))
    }

    #[test]
    fn both_variants_measure_a_real_pair() {
        let Some((a, b)) = two_cpus() else {
            eprintln!("skipped: this machine has fewer than 2 CPUs");
            return;
        };
        let placer = HwlocPlacer::new().expect("hwloc");
        for variant in [Variant::Cas, Variant::Flag] {
            let cfg = Config {
                variant,
                round_trips: 200,
                samples: 30,
                warmup_samples: 2,
                home_node: None,
            };
            let m = measure_pair(&placer, b, a, &cfg, &|| false).unwrap();
            assert_eq!(m.samples_ns.len(), 30);
            assert!(m.samples_ns.iter().all(|v| v.is_finite() && *v > 0.0));
            let s = m.summary().unwrap();
            assert!(s.min <= s.p10 && s.p10 <= s.median && s.median <= s.p90 && s.p90 <= s.max);
            assert_eq!((m.first, m.second, m.variant), (b, a, variant));
            assert!(m.home_node.is_some(), "the kernel knows where the line is");
        }
    }

    #[test]
    fn the_line_is_bound_to_the_requested_node() {
        let Some((a, b)) = two_cpus() else { return };
        let placer = HwlocPlacer::new().expect("hwloc");
        let m = numalab_topo::live().unwrap();
        let node = m.pu(a).and_then(|p| p.numa_node).unwrap_or(0);
        let cfg = Config {
            round_trips: 50,
            samples: 3,
            warmup_samples: 0,
            home_node: Some(node),
            ..Config::default()
        };
        let r = measure_pair(&placer, a, b, &cfg, &|| false).unwrap();
        assert_eq!(r.home_node_requested, Some(node));
        assert_eq!(r.home_node, Some(node));
    }

    #[test]
    fn the_callers_affinity_is_left_alone() {
        let Some((a, b)) = two_cpus() else { return };
        let allowed = sys::allowed_cpus;
        let before = allowed();
        let placer = HwlocPlacer::new().expect("hwloc");
        let cfg = Config {
            round_trips: 20,
            samples: 2,
            warmup_samples: 0,
            ..Config::default()
        };
        measure_pair(&placer, a, b, &cfg, &|| false).unwrap();
        assert_eq!(allowed(), before);
    }

    #[test]
    fn a_cpu_that_cannot_be_pinned_is_an_error_not_a_hang() {
        // A fake two-node machine: pinning to CPU 999 fails, on either side. (The
        // answering side's failure used to leave the first thread waiting at a
        // barrier for ever.)
        let placer = numalab_topo::bind::FakePlacer::for_machine(&crate::plan::tests::two_nodes());
        let cfg = Config {
            round_trips: 10,
            samples: 2,
            warmup_samples: 0,
            ..Config::default()
        };
        for (a, b) in [(0, 999), (999, 0)] {
            let r = measure_pair(&placer, a, b, &cfg, &|| false);
            match r {
                Err(PingPongError::Topo(e)) => {
                    assert!(e.to_string().contains("CPU 999"), "{e}")
                }
                other => panic!("{a}-{b}: {other:?}"),
            }
        }
    }

    #[test]
    fn same_cpu_and_interrupt_are_errors() {
        let placer = numalab_topo::bind::FakePlacer::default();
        let cfg = Config::default();
        assert!(matches!(
            measure_pair(&placer, 3, 3, &cfg, &|| false),
            Err(PingPongError::SameCpu(3))
        ));
        let Some((a, b)) = two_cpus() else { return };
        let placer = HwlocPlacer::new().expect("hwloc");
        let r = measure_pair(&placer, a, b, &cfg, &|| true);
        assert!(matches!(r, Err(PingPongError::Interrupted)), "{r:?}");
    }
}
