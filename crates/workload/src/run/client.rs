//! The closed-loop clients: each pinned thread answers requests back to back between
//! the start gate and the stop time, recording a sample per request.

use super::*;

#[derive(Debug, Clone, Copy)]
pub(super) struct Sample {
    pub(super) end_ns: u64,
    pub(super) latency_ns: u64,
    pub(super) kind: RequestKind,
    pub(super) settled: u64,
}

#[derive(Debug, Default)]
pub(super) struct ClientOut {
    pub(super) samples: Vec<Sample>,
    pub(super) cpu_s: f64,
    pub(super) wall_s: f64,
}

/// A barrier that can be cancelled (if a client thread cannot be started, the ones
/// already waiting must not wait forever).
pub(super) struct Gate {
    pub(super) state: Mutex<(usize, bool)>,
    pub(super) cv: Condvar,
    pub(super) n: usize,
}

impl Gate {
    pub(super) fn new(n: usize) -> Self {
        Gate {
            state: Mutex::new((0, false)),
            cv: Condvar::new(),
            n,
        }
    }

    pub(super) fn wait(&self) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        if g.0 >= self.n {
            self.cv.notify_all();
        }
        while g.0 < self.n && !g.1 {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub(super) fn cancel(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        self.cv.notify_all();
    }
}

pub(super) struct Shared {
    pub(super) t0: AtomicU64,
    pub(super) t1: AtomicU64,
    pub(super) stop: AtomicBool,
    pub(super) ready: Gate,
    pub(super) go: Gate,
    pub(super) completed: AtomicU64,
    pub(super) failure: Mutex<Option<WorkloadError>>,
}

pub(super) fn client(
    index: usize,
    slot: Slot,
    graph: crate::graph::GraphRef<'_>,
    config: &RunConfig,
    placer: &dyn Placer,
    shared: &Shared,
) -> ClientOut {
    let mut worker = match placer.pin_current_thread(slot.pu) {
        Ok(()) => Some(Worker::new(graph.nodes(), config.ea)),
        Err(e) => {
            shared.failure.lock().unwrap().get_or_insert(e.into());
            None
        }
    };
    shared.ready.wait();
    shared.go.wait();
    let Some(worker) = worker.as_mut() else {
        return ClientOut::default();
    };
    if shared.stop.load(Ordering::SeqCst) {
        return ClientOut::default();
    }
    let t0 = shared.t0.load(Ordering::SeqCst);
    let t1 = shared.t1.load(Ordering::SeqCst);
    let mut gen = RequestGen::new(&graph, config.graph.seed, index as u64, config.route_share);
    let mut req = Request::default();
    let mut samples = Vec::with_capacity(1 << 14);
    let mut first: Option<(f64, u64)> = None;
    loop {
        if shared.stop.load(Ordering::Relaxed) || interrupt::requested() {
            break;
        }
        let start = now_ns();
        if start >= t1 {
            break;
        }
        if first.is_none() && start >= t0 {
            first = Some((thread_cpu_s(), start));
        }
        gen.next(&mut req);
        let answer = worker.serve(&graph, &req);
        let end = now_ns();
        if end >= t0 && end <= t1 {
            samples.push(Sample {
                end_ns: end,
                latency_ns: end - start,
                kind: answer.kind,
                settled: answer.settled,
            });
        }
        std::hint::black_box(answer.value);
        shared.completed.fetch_add(1, Ordering::Relaxed);
    }
    let (cpu_s, wall_s) = match first {
        Some((c0, w0)) => (thread_cpu_s() - c0, (now_ns() - w0) as f64 / 1e9),
        None => (0.0, 0.0),
    };
    ClientOut {
        samples,
        cpu_s,
        wall_s,
    }
}

pub(super) fn sleep_until(t: u64, step_ns: u64) {
    let now = now_ns();
    if t > now {
        std::thread::sleep(Duration::from_nanos((t - now).min(step_ns)));
    }
}
