//! The sharded cycle loop: contiguous ranges of routers stepped on their own threads,
//! meeting at a spinning barrier once per cycle and exchanging flits, credits and
//! packets through mailboxes.

use super::engine::generate;
use super::state::{Iq, Msg, Queued};
use super::Workload;
use crate::error::ModelError;
use crate::model::Model;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// A barrier that spins (then yields) rather than sleeps: a sharded simulation meets at
/// one twice per simulated cycle, a few microseconds apart. A thread that panics poisons
/// it ([`Poison`]), so that the others stop waiting and panic too.
struct SpinBarrier {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
}

impl SpinBarrier {
    /// Panics if another thread panicked (it will never arrive).
    fn check(&self) {
        if self.poisoned.load(Ordering::Relaxed) {
            panic!("another thread of the sharded simulation panicked");
        }
    }

    fn wait(&self) {
        let g = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.store(g.wrapping_add(1), Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == g {
            self.check();
            if spins < 256 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// A mailbox's contents (a panic elsewhere poisons the barrier, not this).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Poisons its barrier when dropped by a panicking thread.
struct Poison<'a>(&'a SpinBarrier);

impl Drop for Poison<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poisoned.store(true, Ordering::Relaxed);
        }
    }
}

/// The cycle loop of [`simulate`] on `shards` threads, from `sim`'s current cycle to the
/// end of the run or cycle `limit`; returns the nanoseconds a cycle took. Each
/// shard is an [`Iq`] that steps a contiguous range of routers and their sources; every flit and credit takes at
/// least a cycle to arrive, so within a cycle the routers are independent, and what a
/// router sends to another shard's router is handed over at the cycle's end (a mailbox
/// per shard and cycle parity) and placed in that router's delay line before its next
/// step. `sim` keeps the packet table, the random numbers and the statistics on this
/// thread: after each cycle it takes the delivered packets (in shard order, which is
/// router order) and creates the new ones, exactly as one thread does, so the figures
/// are the same bits on any number of threads.
///
/// One barrier per cycle: while this thread does that bookkeeping for cycle `t`, the
/// other shards already step their routers for `t + 1` (which needs none of it) and wait
/// only before injecting (which needs the packets created in `t`). This thread's own
/// shard is smaller by the bookkeeping's share, so that both sides take about as long.
pub(super) fn run_sharded(
    sim: &mut Iq,
    model: &Model,
    work: &Workload,
    shards: usize,
    window: (u64, u64),
    limit: u64,
) -> Result<f64, ModelError> {
    let routers = sim.planes * sim.n_stops;
    // Bounds: the first shard (this thread's) gets its share less the bookkeeping's,
    // about a router's step per 16 routers on this host's measurements (it delivers and
    // creates every packet), and at least a quarter of its share.
    let k = shards;
    let first = ((routers * (16 + 1 - k.min(16))) / (16 * k))
        .max(routers / (4 * k))
        .max(1);
    let mut bounds = vec![0, first];
    for i in 1..k {
        bounds.push(first + i * (routers - first) / (k - 1));
    }
    // The shards start from this simulator's state after the cycles it ran on its own
    // (none, or the cycles before the split): each is a copy that steps its own routers
    // and sources from there. The packet table and the statistics stay here; the link
    // counts and router steps each shard adds are summed at the end.
    let mut shard_of = vec![0u16; routers];
    for i in 0..k {
        shard_of[bounds[i]..bounds[i + 1]].fill(i as u16);
    }
    let pkts = std::mem::take(&mut sim.pkts);
    let mut parts: Vec<Iq> = (0..k)
        .map(|i| {
            let mut p = sim.clone();
            p.shard_of.clone_from(&shard_of);
            p.outbox = vec![Vec::new(); k];
            p.lo = bounds[i];
            p.span = bounds[i + 1] - bounds[i];
            p.link_busy.fill(0);
            p.router_cycles = 0;
            p
        })
        .collect();
    sim.pkts = pkts;
    sim.handoff = true;
    // Per shard and cycle parity: flits and credits from other shards, and its delivered
    // packets; per shard: the packets created for its sources.
    type Mailbox<T> = Vec<[Mutex<Vec<T>>; 2]>;
    let mailbox: Mailbox<Msg> = (0..k).map(|_| Default::default()).collect();
    let done: Mailbox<(u32, u64, u16)> = (0..k).map(|_| Default::default()).collect();
    let fresh: Vec<Mutex<Vec<(u32, Queued)>>> = (0..k).map(|_| Mutex::new(Vec::new())).collect();
    let barrier = SpinBarrier {
        n: k,
        arrived: AtomicUsize::new(0),
        generation: AtomicUsize::new(0),
        poisoned: AtomicBool::new(false),
    };
    // Cycles whose bookkeeping is done (new packets handed over), and whether the run
    // ends there.
    let booked = AtomicU64::new(sim.now);
    let stop = AtomicBool::new(false);
    // Router-cycles of each shard up to the end of each cycle parity: a shard may have
    // stepped one cycle past the last when it learns that it was the last.
    let counted: Vec<[AtomicU64; 2]> = (0..k)
        .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
        .collect();
    // A shard's routers in its cycle.
    let step = |p: &mut Iq, i: usize, scratch: &mut Vec<Msg>| {
        let parity = (p.now & 1) as usize;
        std::mem::swap(&mut *lock(&mailbox[i][parity ^ 1]), scratch);
        for m in scratch.drain(..) {
            if m.credit {
                p.send_credit::<true>(m.at, m.r as usize, usize::from(m.port), usize::from(m.vc));
            } else {
                p.send_flit::<true>(
                    m.at,
                    m.r as usize,
                    usize::from(m.port),
                    usize::from(m.vc),
                    m.flit,
                );
            }
        }
        p.step_routers::<true>();
        counted[i][parity].store(p.router_cycles, Ordering::Relaxed);
    };
    // Its sources in its cycle, once the packets created in the cycle before are in.
    let inject = |p: &mut Iq, i: usize| {
        let parity = (p.now & 1) as usize;
        for (si, q) in lock(&fresh[i]).drain(..) {
            p.sources[si as usize].queue.push_back(q);
        }
        p.inject::<true>();
        for (out, slots) in p.outbox.iter_mut().zip(&mailbox) {
            if !out.is_empty() {
                lock(&slots[parity]).append(out);
            }
        }
        lock(&done[i][parity]).append(&mut p.delivered);
        p.now += 1;
    };
    let mut outcome = Ok(());
    let start = sim.now;
    let mut end_cycle = start;
    // The time of the cycles after the first (which waits for the threads to start and
    // finds cold caches) up to the last (not the threads' ending).
    let t0 = std::time::Instant::now();
    let mut timed = (t0, t0);
    std::thread::scope(|scope| {
        let (own, rest) = parts.split_first_mut().expect("at least two shards");
        let (step, inject, barrier, stop, booked) = (&step, &inject, &barrier, &stop, &booked);
        for (j, p) in rest.iter_mut().enumerate() {
            scope.spawn(move || {
                let _poison = Poison(barrier);
                let mut scratch = Vec::new();
                let i = j + 1;
                loop {
                    step(p, i, &mut scratch);
                    // The packets created in the cycle before this one.
                    let mut spins = 0u32;
                    while booked.load(Ordering::Acquire) < p.now {
                        barrier.check();
                        if spins < 256 {
                            std::hint::spin_loop();
                            spins += 1;
                        } else {
                            std::thread::yield_now();
                        }
                    }
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    inject(p, i);
                    barrier.wait();
                }
            });
        }
        let _poison = Poison(barrier);
        let mut scratch = Vec::new();
        loop {
            step(own, 0, &mut scratch);
            inject(own, 0);
            barrier.wait();
            let parity = (sim.now & 1) as usize;
            for d in &done {
                for (id, at, hops) in lock(&d[parity]).drain(..) {
                    sim.deliver(id, at, hops);
                }
            }
            generate(sim, model, work);
            let mut by_shard: Vec<Vec<(u32, Queued)>> = vec![Vec::new(); k];
            for (si, q) in sim.new_pkts.drain(..) {
                by_shard[usize::from(shard_of[si as usize])].push((si, q));
            }
            for (f, b) in fresh.iter().zip(by_shard) {
                lock(f).extend(b);
            }
            let mut end = sim.now >= limit || (sim.now >= window.1 && sim.measured_in_flight == 0);
            end_cycle = sim.now;
            if !end {
                sim.now += 1;
                if sim.now & 0xffff == 0 && numalab_schema::interrupt::requested() {
                    outcome = Err(ModelError::Interrupted);
                    end = true;
                }
            }
            stop.store(end, Ordering::Relaxed);
            booked.store(end_cycle + 1, Ordering::Release);
            if end_cycle == start {
                timed.0 = std::time::Instant::now();
            }
            if end {
                timed.1 = std::time::Instant::now();
                break;
            }
        }
    });
    let ns = if end_cycle > start {
        (timed.1 - timed.0).as_nanos() as f64 / (end_cycle - start) as f64
    } else {
        (timed.1 - t0).as_nanos() as f64
    };
    outcome?;
    let parity = (end_cycle & 1) as usize;
    sim.router_cycles += counted
        .iter()
        .map(|c| c[parity].load(Ordering::Relaxed))
        .sum::<u64>();
    for p in &parts {
        for (a, b) in sim.link_busy.iter_mut().zip(&p.link_busy) {
            *a += b;
        }
    }
    Ok(ns)
}
