//! Samples a [`PowerSource`] every N ms on a background thread while a measurement
//! runs. A failed read is recorded and sampling goes on; [`Sampler::stop`] returns at
//! once (an `ipmitool` run in flight is killed; a Redfish request in flight is left to
//! finish on its own time limit and its result dropped).

use crate::PowerSource;
use numalab_records::bmc::{
    BmcPowerRecord, BmcSample, BmcSampleError, BmcSource, COVERS_WHOLE_NODE,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// At most this many failed reads are kept in a record; the rest are counted.
pub const MAX_KEPT_ERRORS: usize = 200;

/// How long [`Sampler::stop`] waits for a read in flight before it gives up on it.
const STOP_GRACE: Duration = Duration::from_millis(250);

#[derive(Default)]
struct Collected {
    samples: Vec<BmcSample>,
    errors: Vec<BmcSampleError>,
    errors_dropped: u64,
    source: Option<BmcSource>,
}

struct Shared {
    stop: AtomicBool,
    wake: Mutex<bool>,
    cv: Condvar,
    data: Mutex<Collected>,
}

/// A running sampler; [`Sampler::stop`] ends it and gives the record.
pub struct Sampler {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
    started: Instant,
    started_unix_ms: u64,
    interval: Duration,
    initial_source: BmcSource,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("interval", &self.interval)
            .field("source", &self.initial_source)
            .finish_non_exhaustive()
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Sampler {
    /// Starts sampling `source` now and then every `interval` (at least 10 ms). A read
    /// slower than the interval delays the next one; missed ticks are skipped, not
    /// caught up.
    pub fn start(mut source: Box<dyn PowerSource>, interval: Duration) -> Sampler {
        let interval = interval.max(Duration::from_millis(10));
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            wake: Mutex::new(false),
            cv: Condvar::new(),
            data: Mutex::new(Collected::default()),
        });
        let started = Instant::now();
        let started_unix_ms = unix_ms(SystemTime::now());
        let initial_source = source.source();
        let thread_shared = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("bmc-sampler".into())
            .spawn(move || {
                let sh = thread_shared;
                let mut next = started;
                loop {
                    if sh.stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let t0 = Instant::now();
                    let wall = unix_ms(SystemTime::now());
                    let result = source.read(&sh.stop);
                    let read_s = t0.elapsed().as_secs_f64();
                    if sh.stop.load(Ordering::Relaxed) {
                        // Stopped during the read: its result belongs after the end.
                        break;
                    }
                    {
                        let mut d = sh.data.lock().unwrap_or_else(|p| p.into_inner());
                        match result {
                            Ok(reading) => d.samples.push(BmcSample {
                                t_s: t0.duration_since(started).as_secs_f64(),
                                unix_ms: wall,
                                read_s,
                                reading,
                            }),
                            Err(e) => {
                                if d.errors.len() < MAX_KEPT_ERRORS {
                                    d.errors.push(BmcSampleError {
                                        t_ms: t0.duration_since(started).as_millis() as u64,
                                        error: e.to_string(),
                                    });
                                } else {
                                    d.errors_dropped += 1;
                                }
                            }
                        }
                        d.source = Some(source.source());
                    }
                    next += interval;
                    let now = Instant::now();
                    while next <= now {
                        next += interval;
                    }
                    let mut woken = sh.wake.lock().unwrap_or_else(|p| p.into_inner());
                    while !*woken {
                        let now = Instant::now();
                        if now >= next {
                            break;
                        }
                        woken = sh
                            .cv
                            .wait_timeout(woken, next - now)
                            .unwrap_or_else(|p| p.into_inner())
                            .0;
                    }
                    if *woken {
                        break;
                    }
                }
            })
            .expect("spawning the BMC sampler thread");
        Sampler {
            shared,
            handle: Some(handle),
            started,
            started_unix_ms,
            interval,
            initial_source,
        }
    }

    /// The number of samples taken so far.
    pub fn samples_so_far(&self) -> usize {
        self.shared
            .data
            .lock()
            .map(|d| d.samples.len())
            .unwrap_or(0)
    }

    /// Stops sampling and returns the record. Returns within about a quarter of a
    /// second even when a read is in flight.
    pub fn stop(mut self) -> BmcPowerRecord {
        self.signal_stop();
        let duration_s = self.started.elapsed().as_secs_f64();
        if let Some(h) = self.handle.take() {
            let deadline = Instant::now() + STOP_GRACE;
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            if h.is_finished() {
                let _ = h.join();
            }
            // Otherwise the thread is blocked in a request with its own time limit; it
            // exits after it without touching the record again.
        }
        let mut d = self.shared.data.lock().unwrap_or_else(|p| p.into_inner());
        let d = std::mem::take(&mut *d);
        let source = d.source.unwrap_or_else(|| self.initial_source.clone());
        let mean_watts = if d.samples.is_empty() {
            None
        } else {
            Some(d.samples.iter().map(|s| s.reading.watts).sum::<f64>() / d.samples.len() as f64)
        };
        let mut notes = vec![
            "BMC figures are averaged by the BMC over its own window and refresh about once a second; \
             they lag the load and cannot resolve phases shorter than a few seconds"
                .to_string(),
        ];
        if self.interval < Duration::from_secs(1) {
            notes.push(format!(
                "sampled every {} ms, faster than a BMC refreshes: consecutive samples repeat values",
                self.interval.as_millis()
            ));
        }
        if let Some(p) = d.samples.iter().find_map(|s| s.reading.bmc_period_s) {
            notes.push(format!("the BMC reports its statistics period as {p} s"));
        }
        if source.insecure() {
            notes.push(
                "TLS certificate NOT verified (insecure): the figures could come from anyone on the path"
                    .into(),
            );
        }
        let slow = d.samples.iter().map(|s| s.read_s).fold(0.0, f64::max);
        if slow > self.interval.as_secs_f64() {
            notes.push(format!(
                "a read took up to {slow:.2} s, longer than the interval: ticks were skipped"
            ));
        }
        BmcPowerRecord {
            source,
            covers: COVERS_WHOLE_NODE.to_string(),
            interval_ms: self.interval.as_millis() as u64,
            started_unix_ms: self.started_unix_ms,
            duration_s,
            samples: d.samples,
            errors: d.errors,
            errors_dropped: d.errors_dropped,
            mean_watts,
            notes,
            during: None,
        }
    }

    fn signal_stop(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let mut w = self.shared.wake.lock().unwrap_or_else(|p| p.into_inner());
        *w = true;
        self.shared.cv.notify_all();
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.signal_stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BmcError;
    use numalab_records::bmc::{BmcAccess, BmcReading, BmcSourceKind};

    /// A source that gives 100 W, 101 W, ... and fails every third read.
    struct Counting {
        n: u32,
        slow: Duration,
    }

    impl PowerSource for Counting {
        fn source(&self) -> BmcSource {
            BmcSource {
                kind: BmcSourceKind::IpmiDcmi,
                access: BmcAccess::InBand,
                sensors: vec![],
                method: "test".into(),
                description: "test".into(),
            }
        }
        fn read(&mut self, cancel: &AtomicBool) -> Result<BmcReading, BmcError> {
            self.n += 1;
            let until = Instant::now() + self.slow;
            while Instant::now() < until {
                if cancel.load(Ordering::Relaxed) {
                    return Err(BmcError::Cancelled);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            if self.n.is_multiple_of(3) {
                return Err(BmcError::NoPower(format!("read {}", self.n)));
            }
            Ok(BmcReading::watts(99.0 + f64::from(self.n), vec![]))
        }
    }

    #[test]
    fn samples_and_errors_are_recorded_in_order() {
        let s = Sampler::start(
            Box::new(Counting {
                n: 0,
                slow: Duration::ZERO,
            }),
            Duration::from_millis(20),
        );
        let t = Instant::now();
        while s.samples_so_far() < 6 && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let r = s.stop();
        assert!(r.samples.len() >= 6, "{}", r.samples.len());
        assert!(!r.errors.is_empty());
        assert!(r.samples.windows(2).all(|w| w[0].t_s < w[1].t_s));
        assert_eq!(r.samples[0].reading.watts, 100.0);
        assert_eq!(r.covers, COVERS_WHOLE_NODE);
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("faster than a BMC refreshes")));
        assert!(r.mean_watts.is_some());
    }

    #[test]
    fn stop_is_prompt_while_a_read_is_in_flight() {
        let s = Sampler::start(
            Box::new(Counting {
                n: 0,
                slow: Duration::from_secs(30),
            }),
            Duration::from_secs(1),
        );
        std::thread::sleep(Duration::from_millis(50));
        let t = Instant::now();
        let r = s.stop();
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert!(r.samples.is_empty());
    }
}
