//! The measured window: start the pinned clients, release them together, wait out the
//! warm-up, then watch the window (progress, power samples, stop requests) and collect
//! what each client recorded, with the CPU time spent around the window.

use super::*;
use crate::placement::Placement;

/// A CPU tick snapshot (busy, steal, total) before and after the window.
pub(super) type Ticks = ((u64, u64, u64), (u64, u64, u64));

/// What the window yields: each client's samples and the window's bounds and CPU time.
pub(super) struct Window {
    /// What each client recorded, in slot order.
    pub(super) outs: Vec<ClientOut>,
    /// When the window ended (its planned end, or the stop request).
    pub(super) stop_at: u64,
    /// When the window began.
    pub(super) t0: u64,
    /// Whether a stop request ended it early.
    pub(super) interrupted: bool,
    /// The process's CPU time during the window, seconds.
    pub(super) cpu_s: f64,
    /// The wall time over which `cpu_s` was read, seconds.
    pub(super) cpu_wall_s: f64,
    /// The worker CPUs' (busy, steal, total) ticks before and after the window.
    pub(super) ticks: Option<Ticks>,
}

/// What the measuring loop returns: when it stopped, whether interrupted, CPU figures.
struct Watched {
    stop_at: u64,
    interrupted: bool,
    cpu_s: f64,
    cpu_wall_s: f64,
    ticks: Option<Ticks>,
}

/// Runs one client per slot on the placed graph through warm-up and window.
pub(super) fn measure(
    config: &RunConfig,
    placer: &dyn Placer,
    slots: &[Slot],
    placed: &Placement,
    sys: &SysRoot,
    meter: &mut PowerMeter,
    observer: &mut dyn FnMut(Progress),
) -> Result<Window, WorkloadError> {
    let shared = Shared {
        t0: AtomicU64::new(0),
        t1: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        ready: Gate::new(slots.len() + 1),
        go: Gate::new(slots.len() + 1),
        completed: AtomicU64::new(0),
        failure: Mutex::new(None),
    };
    let pus: Vec<u32> = slots.iter().map(|s| s.pu).collect();
    std::thread::scope(|scope| -> Result<_, WorkloadError> {
        let mut handles = Vec::new();
        for (i, slot) in slots.iter().enumerate() {
            let view = placed.copies[placed.copy_of_client[i]].view();
            let shared = &shared;
            let h = std::thread::Builder::new()
                .name(format!("numalab-wl-{i}"))
                .spawn_scoped(scope, move || {
                    client(i, *slot, view, config, placer, shared)
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Threads already started wait at the gates: release them.
                    shared.stop.store(true, Ordering::SeqCst);
                    shared.ready.cancel();
                    shared.go.cancel();
                    return Err(WorkloadError::Runtime(format!(
                        "cannot start client thread {i}: {e}; use fewer --threads"
                    )));
                }
            }
        }
        shared.ready.wait();
        let failed = shared.failure.lock().unwrap().take();
        let begin = now_ns();
        let t0 = begin + (config.warmup_s * 1e9) as u64;
        let t1 = t0 + (config.duration_s * 1e9) as u64;
        if failed.is_some() {
            shared.stop.store(true, Ordering::SeqCst);
        }
        shared.t0.store(t0, Ordering::SeqCst);
        shared.t1.store(t1, Ordering::SeqCst);
        shared.go.wait();
        if let Some(e) = failed {
            join(handles);
            return Err(e);
        }
        if let Err(e) = warm_up(config, &shared, begin, t0, observer) {
            join(handles);
            return Err(e);
        }
        let w = watch(config, &shared, sys, &pus, meter, (t0, t1), observer);
        let outs = join(handles);
        Ok(Window {
            outs,
            stop_at: w.stop_at,
            t0,
            interrupted: w.interrupted,
            cpu_s: w.cpu_s,
            cpu_wall_s: w.cpu_wall_s,
            ticks: w.ticks,
        })
    })
}

/// Waits for the clients to finish and takes what they recorded (nothing for one that
/// panicked).
fn join(handles: Vec<std::thread::ScopedJoinHandle<'_, ClientOut>>) -> Vec<ClientOut> {
    handles
        .into_iter()
        .map(|h| h.join().unwrap_or_default())
        .collect::<Vec<ClientOut>>()
}

/// Waits until the window begins at `t0`, reporting progress; a stop request stops the
/// clients and ends the run.
fn warm_up(
    config: &RunConfig,
    shared: &Shared,
    begin: u64,
    t0: u64,
    observer: &mut dyn FnMut(Progress),
) -> Result<(), WorkloadError> {
    while now_ns() < t0 {
        if interrupt::requested() {
            shared.stop.store(true, Ordering::SeqCst);
            return Err(WorkloadError::Interrupted(
                "stopped during the warm-up; nothing was measured".into(),
            ));
        }
        observer(Progress::Warmup {
            elapsed_s: (now_ns() - begin) as f64 / 1e9,
            total_s: config.warmup_s,
        });
        sleep_until(t0, 50_000_000);
    }
    Ok(())
}

/// Watches the window from `t0` to `t1` (or a stop request), reporting progress and
/// sampling power, and reads the CPU time around it.
fn watch(
    config: &RunConfig,
    shared: &Shared,
    sys: &SysRoot,
    pus: &[u32],
    meter: &mut PowerMeter,
    (t0, t1): (u64, u64),
    observer: &mut dyn FnMut(Progress),
) -> Watched {
    let cpu0 = process_cpu_s();
    let wall0 = now_ns();
    let ticks0 = cpu_ticks(sys, pus);
    meter.start();
    let mut stop_at = t1;
    let mut interrupted = false;
    loop {
        let now = now_ns();
        if now >= t1 {
            break;
        }
        if interrupt::requested() {
            stop_at = now;
            interrupted = true;
            shared.stop.store(true, Ordering::SeqCst);
            break;
        }
        observer(Progress::Measuring {
            elapsed_s: (now.saturating_sub(t0)) as f64 / 1e9,
            total_s: config.duration_s,
            requests: shared.completed.load(Ordering::Relaxed),
        });
        meter.sample();
        sleep_until(t1, 250_000_000);
    }
    let cpu1 = process_cpu_s();
    let wall1 = now_ns();
    let ticks1 = cpu_ticks(sys, pus);
    Watched {
        stop_at,
        interrupted,
        cpu_s: cpu1 - cpu0,
        cpu_wall_s: (wall1 - wall0) as f64 / 1e9,
        ticks: ticks0.zip(ticks1),
    }
}
