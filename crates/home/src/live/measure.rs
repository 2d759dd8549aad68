//! The two measurements on pinned scoped threads: flushed reads, and forwarded reads
//! with the owner/reader handshake.

use super::topo_err;
use crate::error::HomeError;
use numalab_topo::bind::{HwlocPlacer, Placer};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::timing::LiveLine;

// ---- the forwarded handshake -------------------------------------------------------

const HS_INIT: u64 = 0;
const HS_READY: u64 = 1;
const HS_FAILED: u64 = u64::MAX - 1;
const HS_STOP: u64 = u64::MAX;

/// The handshake between reader and owner, on its own cache lines (never the measured
/// one). `state`: even n >= 2 asks the owner to write line `line`; n + 1 says it has.
#[repr(align(256))]
struct Handshake {
    state: AtomicU64,
    /// The index of the line to write.
    line: AtomicUsize,
}

/// Sets `state` to `value` when dropped while panicking (or always, if `always`), so
/// that the other thread stops spinning.
struct SignalOnDrop<'a> {
    state: &'a AtomicU64,
    value: u64,
    always: bool,
}

impl Drop for SignalOnDrop<'_> {
    fn drop(&mut self) {
        if self.always || std::thread::panicking() {
            self.state.store(self.value, Ordering::Release);
        }
    }
}

/// Flushed reads of each of `lines` from CPU `reader`, `k` flush+load iterations
/// per sample: `samples[i * repeats + r]`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn flushed(
    placer: &HwlocPlacer,
    k: u32,
    reader: u32,
    lines: &[LiveLine<'_>],
    repeats: u32,
) -> Result<Vec<f64>, HomeError> {
    let reps = repeats as usize;
    std::thread::scope(|s| {
        let h = s.spawn(move || -> Result<Vec<f64>, HomeError> {
            placer.pin_current_thread(reader).map_err(topo_err)?;
            let zero = std::hint::black_box(0usize);
            let mut out = vec![0.0; lines.len() * reps];
            for r in 0..reps {
                for (i, &a) in lines.iter().enumerate() {
                    out[i * reps + r] = a.flushed_batch_ns(k, zero);
                }
            }
            Ok(out)
        });
        h.join()
            .unwrap_or_else(|_| Err(HomeError::Runtime("the measuring thread panicked".into())))
    })
}

/// Flushed reads need a user-mode cache flush, which this build lacks.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn flushed(
    _: &HwlocPlacer,
    _: u32,
    _: u32,
    _: &[LiveLine<'_>],
    _: u32,
) -> Result<Vec<f64>, HomeError> {
    Err(HomeError::Unsupported(
        "flushed reads need a user-mode cache flush, which this build has only for x86-64 and aarch64; use forwarded reads".into(),
    ))
}

/// Forwarded reads of each of `lines` from CPU `reader`, each line written by CPU
/// `owner` just before: `samples[i * repeats + r]`.
pub(super) fn forwarded(
    placer: &HwlocPlacer,
    reader: u32,
    owner: u32,
    lines: &[LiveLine<'_>],
    repeats: u32,
) -> Result<Vec<f64>, HomeError> {
    let reps = repeats as usize;
    let hs = Handshake {
        state: AtomicU64::new(HS_INIT),
        line: AtomicUsize::new(0),
    };
    let hs = &hs;
    std::thread::scope(|s| {
        let owner_thread = s.spawn(move || -> Result<(), HomeError> {
            let _guard = SignalOnDrop {
                state: &hs.state,
                value: HS_FAILED,
                always: false,
            };
            if let Err(e) = placer.pin_current_thread(owner) {
                hs.state.store(HS_FAILED, Ordering::Release);
                return Err(topo_err(e));
            }
            hs.state.store(HS_READY, Ordering::Release);
            let mut expect = 2u64;
            loop {
                let st = hs.state.load(Ordering::Acquire);
                if st == HS_STOP {
                    return Ok(());
                }
                if st == expect {
                    lines[hs.line.load(Ordering::Relaxed)].write(expect);
                    hs.state.store(expect + 1, Ordering::Release);
                    expect += 2;
                } else {
                    std::hint::spin_loop();
                }
            }
        });
        let reader_thread = s.spawn(move || -> Result<Vec<f64>, HomeError> {
            // Whatever happens, the owner is told to stop.
            let _stop = SignalOnDrop {
                state: &hs.state,
                value: HS_STOP,
                always: true,
            };
            placer.pin_current_thread(reader).map_err(topo_err)?;
            loop {
                match hs.state.load(Ordering::Acquire) {
                    HS_INIT => std::hint::spin_loop(),
                    HS_READY => break,
                    // The owner's error is reported by its join.
                    _ => return Ok(Vec::new()),
                }
            }
            let mut out = vec![0.0; lines.len() * reps];
            let mut req = 2u64;
            for r in 0..reps {
                for (i, &a) in lines.iter().enumerate() {
                    // Warm the reader's TLB entry for the page with an untimed read;
                    // the owner's write then takes the line away again.
                    std::hint::black_box(a.read());
                    hs.line.store(i, Ordering::Relaxed);
                    hs.state.store(req, Ordering::Release);
                    loop {
                        let st = hs.state.load(Ordering::Acquire);
                        if st == req + 1 {
                            break;
                        }
                        if st == HS_FAILED {
                            return Ok(Vec::new());
                        }
                        std::hint::spin_loop();
                    }
                    out[i * reps + r] = a.timed_read_ns();
                    req += 2;
                }
            }
            Ok(out)
        });
        let read = reader_thread
            .join()
            .unwrap_or_else(|_| Err(HomeError::Runtime("the reading thread panicked".into())));
        let own = owner_thread
            .join()
            .unwrap_or_else(|_| Err(HomeError::Runtime("the owner thread panicked".into())));
        own?;
        let out = read?;
        if out.len() != lines.len() * reps {
            return Err(HomeError::Runtime(
                "the owner thread stopped before the reads were done".into(),
            ));
        }
        Ok(out)
    })
}
