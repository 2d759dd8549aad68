//! `numalab home bench --map MAP`: the reduction kernel of the mesh study (Figure 3a) on
//! this machine, with memory from the home-aware allocator.
//!
//! A map of this machine (same fingerprint) with a recovered hash and homes placed on a
//! floorplan opens a [`LivePool`]: huge pages whose lines' homes the hash gives. For
//! every affinity strength (any line, then 0..`max_distance` hops) each of `threads`
//! threads, pinned to CPUs spread over the floorplan, takes `lines_per_thread` lines
//! homed within that distance of its CPU; all threads then run the kernel at once:
//! flush their lines (so every read goes core -> home -> memory), then sum the first word
//! of every line, timed. A point's latency is the kernel's time per line (reads may
//! overlap, as in a real reduction); its cycles and data-TLB misses come from the
//! thread's own counters (perf_event_open through `perf-event2`) where the machine has
//! them, and are left empty, with the reason in the notes, where it has not.

use crate::error::HomeError;
use crate::ffi::LivePool;
use crate::live::LiveLine;
use crate::map::Watch;
use numalab_records::home::{BenchRecord, HomeMapRecord, SweepPoint};
use numalab_topo::bind::{HwlocPlacer, Placer};
use std::time::Instant;

/// What to run.
#[derive(Debug, Clone)]
pub struct LiveBenchOptions {
    /// Threads (one per CPU).
    pub threads: usize,
    /// Lines each thread reads.
    pub lines_per_thread: usize,
    /// Largest affinity strength, hops.
    pub max_distance: u32,
    /// Timed rounds per point (the median round is kept).
    pub rounds: usize,
}

impl LiveBenchOptions {
    /// Refuses a count of 0 (threads, lines, rounds), naming the flags.
    pub fn check(&self) -> Result<(), String> {
        if self.threads == 0 || self.lines_per_thread == 0 || self.rounds == 0 {
            return Err("--threads, --lines and --rounds must be at least 1".into());
        }
        Ok(())
    }

    /// The run's configuration, as recorded in the envelope: the map's path, the
    /// options and the pool's size.
    pub fn config(&self, map: &std::path::Path, pool_bytes: usize) -> serde_json::Value {
        serde_json::json!({
            "map": map.display().to_string(), "threads": self.threads, "lines": self.lines_per_thread,
            "max_distance": self.max_distance, "rounds": self.rounds, "pool_bytes": pool_bytes,
        })
    }

    /// Bytes of the pool for a map of `homes` homes: room for every thread's lines at
    /// the strictest distance (one home holds about 1/homes of the lines), twice over,
    /// from 64 MiB to 1 GiB.
    pub fn pool_bytes(&self, homes: usize) -> usize {
        self.threads
            .saturating_mul(self.lines_per_thread)
            .saturating_mul(64 * 2)
            .saturating_mul(homes.max(1))
            .clamp(64 << 20, 1 << 30)
    }
}

/// A home map of this machine and the pool the bench takes its lines from.
pub struct Prepared {
    /// The map read from the `--map` path.
    pub map: HomeMapRecord,
    /// The pool, opened against this machine's fingerprint.
    pub pool: LivePool,
    /// The pool's size ([`LiveBenchOptions::pool_bytes`]), recorded in the configuration.
    pub pool_bytes: usize,
}

/// Reads the map at `path` ([`crate::ffi::load_map`]), checks `opts` (a usage error,
/// before any memory is taken) and opens a pool of [`LiveBenchOptions::pool_bytes`] for
/// the map's homes with this machine's physical addresses and fingerprint: everything
/// [`run`] needs.
pub fn prepare(path: &std::path::Path, opts: &LiveBenchOptions) -> Result<Prepared, HomeError> {
    let map = crate::ffi::load_map(path)?;
    opts.check().map_err(HomeError::Usage)?;
    let pool_bytes = opts.pool_bytes(map.homes.len());
    let here = crate::live::live_fingerprint();
    let pool = LivePool::open(&map, pool_bytes, &crate::ffi::pagemap_phys, &here)?;
    Ok(Prepared {
        map,
        pool,
        pool_bytes,
    })
}

/// Up to `k` of the map's CPUs spread over its floorplan (farthest-point sampling).
fn spread(cpu_stops: &[[u32; 3]], k: usize) -> Vec<u32> {
    let mut chosen: Vec<[u32; 3]> = cpu_stops.first().copied().into_iter().collect();
    while chosen.len() < k {
        let next = cpu_stops
            .iter()
            .filter(|c| !chosen.iter().any(|d| d[0] == c[0]))
            .max_by_key(|c| {
                let d = chosen
                    .iter()
                    .map(|d| c[1].abs_diff(d[1]) + c[2].abs_diff(d[2]))
                    .min()
                    .unwrap_or(0);
                (d, std::cmp::Reverse(c[0]))
            });
        match next {
            Some(&c) => chosen.push(c),
            None => break,
        }
    }
    chosen.into_iter().map(|c| c[0]).collect()
}

/// Counters of the calling thread: cycles and data-TLB read misses, each when it opens.
struct Counters {
    cycles: Option<perf_event::Counter>,
    tlb: Option<perf_event::Counter>,
}

impl Counters {
    /// Opens both on the calling thread, user space only, disabled; a counter that does
    /// not open is left out with the reason.
    fn open() -> (Counters, Vec<String>) {
        use numalab_perfopen as perfopen;
        use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware};
        let build = |event: perfopen::Encoding| {
            perfopen::builder(
                &event,
                perfopen::Target::CallingThread,
                perfopen::Exclude::KERNEL_AND_HV,
            )
            .build()
        };
        let mut why = Vec::new();
        let cycles = build(perfopen::Encoding::of(Hardware::CPU_CYCLES))
            .map_err(|e| why.push(format!("cycles: {}", numalab_schema::text::io_reason(&e))))
            .ok();
        let tlb = build(perfopen::Encoding::of(Cache {
            which: CacheId::DTLB,
            operation: CacheOp::READ,
            result: CacheResult::MISS,
        }))
        .map_err(|e| {
            why.push(format!(
                "dTLB read misses: {}",
                numalab_schema::text::io_reason(&e)
            ))
        })
        .ok();
        (Counters { cycles, tlb }, why)
    }

    fn start(&mut self) {
        for c in [&mut self.cycles, &mut self.tlb].into_iter().flatten() {
            let _ = c.reset();
            let _ = c.enable();
        }
    }

    fn stop(&mut self) -> (Option<u64>, Option<u64>) {
        let read = |c: &mut Option<perf_event::Counter>| {
            c.as_mut().and_then(|c| {
                let _ = c.disable();
                c.read().ok()
            })
        };
        // A counter that reads exactly zero over thousands of memory reads is not
        // counting here: no figure rather than a zero.
        let cyc = read(&mut self.cycles).filter(|&v| v > 0);
        let tlb = read(&mut self.tlb);
        (cyc, tlb)
    }
}

/// What one thread's kernel gives.
struct KernelResult {
    ns_per_line: f64,
    cycles: Option<f64>,
    tlb_misses: Option<f64>,
    /// Why counters are missing.
    why: Vec<String>,
}

/// One thread's kernel: `rounds` times, flush the lines, then sum their first words,
/// timed. Returns (ns per line, cycles per round, dTLB misses per round) of the median
/// round, and why counters are missing.
fn kernel(cpu: u32, lines: &[LiveLine<'_>], rounds: usize) -> Result<KernelResult, HomeError> {
    let placer = HwlocPlacer::new().map_err(|e| HomeError::Runtime(e.to_string()))?;
    placer
        .pin_current_thread(cpu)
        .map_err(|e| HomeError::Runtime(format!("pinning to CPU {cpu}: {e}")))?;
    let (mut counters, why) = Counters::open();
    let mut samples: Vec<(f64, Option<u64>, Option<u64>)> = Vec::with_capacity(rounds);
    let mut sink = 0u64;
    for _ in 0..rounds.max(1) {
        for &a in lines {
            a.flush();
        }
        counters.start();
        crate::live::fence_start();
        let t0 = Instant::now();
        let mut sum = 0u64;
        for &a in lines {
            sum = sum.wrapping_add(a.read());
        }
        crate::live::fence_end();
        let ns = t0.elapsed().as_secs_f64() * 1e9;
        let (cyc, tlb) = counters.stop();
        sink = sink.wrapping_add(std::hint::black_box(sum));
        samples.push((ns, cyc, tlb));
    }
    std::hint::black_box(sink);
    samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (ns, cyc, tlb) = samples[samples.len() / 2];
    Ok(KernelResult {
        ns_per_line: ns / lines.len().max(1) as f64,
        cycles: cyc.map(|c| c as f64),
        tlb_misses: tlb.map(|c| c as f64),
        why,
    })
}

/// Runs the sweep on this machine with `rec`'s map, in a pool of `bytes`.
pub fn run(
    rec: &HomeMapRecord,
    opts: &LiveBenchOptions,
    pool: &mut LivePool,
    watch: &mut dyn Watch,
) -> Result<BenchRecord, HomeError> {
    if opts.threads == 0 || opts.lines_per_thread == 0 || opts.rounds == 0 {
        return Err(HomeError::Usage(
            "--threads, --lines and --rounds must be at least 1".into(),
        ));
    }
    let cpus = spread(&rec.cpu_stops, opts.threads);
    if cpus.len() < opts.threads {
        return Err(HomeError::Usage(format!(
            "--threads {}: the map's floorplan places {} CPUs",
            opts.threads,
            cpus.len()
        )));
    }
    let mut notes = vec![format!(
        "Measured: {} threads on CPUs {}, {} lines each, median of {} rounds; the lines are flushed before each round, so every read goes through its home to memory.",
        cpus.len(),
        cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
        opts.lines_per_thread,
        opts.rounds
    )];
    let distances: Vec<Option<u32>> = std::iter::once(None)
        .chain((0..=opts.max_distance).map(Some))
        .collect();
    let mut sweep: Vec<SweepPoint> = Vec::new();
    let mut counter_notes: Vec<String> = Vec::new();
    for (k, &d) in distances.iter().enumerate() {
        if watch.stop() {
            return Err(HomeError::Interrupted);
        }
        watch.step("affinity sweep", k as u64, distances.len() as u64);
        let mut taken: Vec<Vec<*mut u8>> = Vec::new();
        let mut short = None;
        for &c in &cpus {
            match pool.alloc(c, d, opts.lines_per_thread) {
                Ok(v) => taken.push(v),
                Err(e) => {
                    short = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = short {
            for v in &taken {
                let p: Vec<*const u8> = v.iter().map(|&p| p as *const u8).collect();
                pool.free(&p)?;
            }
            notes.push(format!(
                "Affinity strength {}: not enough lines ({e}).",
                d.map_or("any".to_string(), |d| format!("{d} hops"))
            ));
            continue;
        }
        let buffer = pool.live_buffer();
        let lines: Vec<Vec<LiveLine<'_>>> = taken
            .iter()
            .map(|v| {
                v.iter()
                    .map(|&p| {
                        buffer.line(p as usize).ok_or_else(|| {
                            HomeError::Runtime(format!("{p:?} is not a line of the pool"))
                        })
                    })
                    .collect()
            })
            .collect::<Result<_, _>>()?;
        let results: Vec<Result<KernelResult, HomeError>> = std::thread::scope(|s| {
            let hs: Vec<_> = cpus
                .iter()
                .zip(&lines)
                .map(|(&c, a)| s.spawn(move || kernel(c, a, opts.rounds)))
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(HomeError::Runtime("a kernel thread panicked".into()))
                    })
                })
                .collect()
        });
        for v in &taken {
            let p: Vec<*const u8> = v.iter().map(|&p| p as *const u8).collect();
            pool.free(&p)?;
        }
        let mut lat = 0.0;
        let mut cyc: Option<f64> = Some(0.0);
        let mut tlb: Option<f64> = Some(0.0);
        for r in results {
            let r = r?;
            lat += r.ns_per_line;
            cyc = cyc.zip(r.cycles).map(|(a, b)| a.max(b));
            tlb = tlb.zip(r.tlb_misses).map(|(a, b)| a + b);
            for w in r.why {
                if !counter_notes.contains(&w) {
                    counter_notes.push(w);
                }
            }
        }
        let latency_ns = lat / cpus.len() as f64;
        let base = sweep.first().map_or(latency_ns, |p| p.latency_ns);
        sweep.push(SweepPoint {
            distance_hops: d,
            latency_ns,
            cycles: cyc,
            outstanding_cycles: None,
            tlb_misses: tlb,
            distant_interface_share: None,
            gain: 1.0 - latency_ns / base,
            gain_true_map: None,
        });
    }
    if !counter_notes.is_empty() {
        notes.push(format!(
            "Counters not counted here: {}.",
            counter_notes.join("; ")
        ));
    }
    notes.push("Outstanding-request cycles need a vendor event (not read yet); the share of distant memory interfaces needs interface places, which a map does not locate; the stencil runs on the model only.".into());
    Ok(BenchRecord {
        input_origin: "measured".into(),
        machine: rec.fingerprint.current().cpu_model,
        lines_per_thread: opts.lines_per_thread,
        sweep,
        stencil: Vec::new(),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::Quiet;
    use numalab_records::home::{Access, HashFit, Home};

    /// A map of this machine with a synthetic hash (bits 6-7: 4 homes at the corners of a
    /// 4 x 4 mesh) and this machine's CPUs placed on it, as `LivePool` needs.
    fn synthetic_map() -> HomeMapRecord {
        let fp = crate::live::live_fingerprint();
        let cpus = crate::live::allowed_cpus().unwrap();
        let corners = [[0u32, 0u32], [3, 0], [0, 3], [3, 3]];
        HomeMapRecord {
            input_origin: "measured".into(),
            fingerprint: fp,
            buffer_bytes: 2 << 20,
            page_bytes: 2 << 20,
            huge_pages: true,
            physical_addresses: true,
            line_bytes: 64,
            access: Access::Forwarded,
            probe_cpus: cpus.clone(),
            owner_cpu: None,
            repeats: 1,
            noise_ns: 1.0,
            sample_offsets: vec![],
            lines_measured: 0,
            floorplan: Some("test".into()),
            cpu_stops: cpus
                .iter()
                .enumerate()
                .map(|(i, &c)| [c, corners[i % 4][0], corners[i % 4][1]])
                .collect(),
            structure_visible: true,
            homes_reproduced: None,
            interfaces_reproduced: None,
            homes: (0..4u8)
                .map(|id| Home {
                    id,
                    lines: 0,
                    profile_ns: vec![],
                    stop: Some(corners[id as usize]),
                    stop_confidence: None,
                    stop_residual_ns: None,
                })
                .collect(),
            interfaces: vec![],
            pages: vec![],
            home_hash: Some(HashFit {
                what: "home".into(),
                status: "recovered".into(),
                observed_bits: !0x3f,
                masks: vec![1 << 6, 1 << 7],
                table: vec![0, 1, 2, 3],
                linear: true,
                agreement: 1.0,
                notes: vec![],
            }),
            interface_hash: None,
            slice_hash: None,
            measure_seconds: 0.0,
            infer_seconds: 0.0,
            notes: vec![],
        }
    }

    #[test]
    fn prepare_reads_the_map_then_checks_the_options() {
        let err = |r: Result<Prepared, HomeError>| r.err().expect("refused");
        let opts = LiveBenchOptions {
            threads: 0,
            lines_per_thread: 64,
            max_distance: 3,
            rounds: 3,
        };
        let dir = std::env::temp_dir().join(format!("numalab-prepare-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = err(prepare(&dir.join("missing.json"), &opts));
        assert!(matches!(missing, HomeError::Input { .. }), "{missing}");
        let path = dir.join("map.json");
        std::fs::write(&path, serde_json::to_vec(&synthetic_map()).unwrap()).unwrap();
        let e = err(prepare(&path, &opts));
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        assert_eq!(
            e.to_string(),
            "--threads, --lines and --rounds must be at least 1"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_live_kernel_runs_on_lines_from_the_pool() {
        let rec = synthetic_map();
        // A fake physical address per page (the test does not depend on root): page i
        // at i x 2 MiB, so bits 6-7 of a line's offset choose its home.
        let phys = |r: &numalab_topo::bind::Region| -> Result<Vec<u64>, HomeError> {
            Ok((0..r.pages() as u64)
                .map(|i| i * r.page_bytes() as u64)
                .collect())
        };
        let mut pool = match LivePool::open(&rec, 4 << 20, &phys, &rec.fingerprint) {
            Ok(p) => p,
            Err(e) => panic!("the pool opens on this machine: {e}"),
        };
        let opts = LiveBenchOptions {
            threads: 1,
            lines_per_thread: 64,
            max_distance: 3,
            rounds: 3,
        };
        let r = run(&rec, &opts, &mut pool, &mut Quiet).unwrap();
        assert_eq!(r.input_origin, "measured");
        // Any line, then 0..3 hops: every distance has lines (4 homes, 2 MiB each way).
        assert_eq!(r.sweep.len(), 5, "{:?}", r.notes);
        assert_eq!(r.sweep[0].distance_hops, None);
        assert_eq!(r.sweep[0].gain, 0.0);
        for p in &r.sweep {
            assert!(p.latency_ns.is_finite() && p.latency_ns > 0.0, "{p:?}");
            assert!(p.gain_true_map.is_none() && p.distant_interface_share.is_none());
        }
        // Every line handed out went back.
        assert_eq!(pool.pool().free_lines(), pool.pool().lines());
        // This VM has no PMU: no cycles, and a note saying why.
        if r.sweep[0].cycles.is_none() {
            assert!(
                r.notes.iter().any(|n| n.contains("not counted here")),
                "{:?}",
                r.notes
            );
        }
        let too_many = LiveBenchOptions {
            threads: 99,
            ..opts
        };
        assert!(matches!(
            run(&rec, &too_many, &mut pool, &mut Quiet),
            Err(HomeError::Usage(_))
        ));
    }

    #[test]
    fn threads_are_spread_over_the_floorplan() {
        let stops = [[0, 0, 0], [1, 0, 1], [2, 3, 3], [3, 1, 1], [4, 3, 0]];
        assert_eq!(spread(&stops, 2), vec![0, 2]);
        assert_eq!(spread(&stops, 9).len(), 5);
    }

    #[test]
    fn the_config_names_the_map_and_the_pool() {
        let o = LiveBenchOptions {
            threads: 4,
            lines_per_thread: 8,
            max_distance: 2,
            rounds: 3,
        };
        let c = o.config(std::path::Path::new("map-out"), 1 << 26);
        assert_eq!(c["map"], "map-out");
        assert_eq!(
            (c["lines"].clone(), c["rounds"].clone()),
            (8.into(), 3.into())
        );
        assert_eq!(c["pool_bytes"], 1u64 << 26);
    }
}
