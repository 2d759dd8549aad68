//! Hot spots: sample the instruction pointer (with call chains) of a child process and
//! attribute the samples to functions and source lines.
//!
//! Counting says *what* limits a program; sampling says *where*. The child is created
//! gated; one sampler per CPU is attached before its exec (`inherit` so threads are
//! sampled — the kernel refuses inherited per-task ring buffers, hence per CPU —
//! `enable_on_exec` so sampling starts exactly at exec, MMAP2 records so addresses can
//! be mapped back to files). Samples are attributed with the binaries' own symbols and
//! DWARF line tables (the `object`/`addr2line`/`gimli` crates). Software clock sampling
//! (`cpu-clock`) needs no PMU, so this path runs on VMs too.
//!
//! Sampling has skid: a hardware overflow interrupt lands a few instructions after the
//! instruction that caused the event, and a timer sample lands wherever the program was;
//! the report says so, and functions are more trustworthy than single lines.

use crate::catalog::{Catalog, Encoding, EventRef};
use numalab_perfopen as perfopen;
use numalab_proc::{Outcome, ProcError, Spec};
use numalab_schema::{cpulist, Classify, ErrorClass};
use perf_event::data::Record as PerfRecord;
use perf_event::{SampleFlag, Sampler};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

// What a sampling run records lives in numalab-records.
pub use numalab_records::pmu::{FunctionHits, LineHits, SampleReport};

/// How to sample.
#[derive(Debug, Clone)]
pub struct SampleConfig {
    /// The event (resolved through the catalog; `cpu-clock` works everywhere).
    pub event: EventRef,
    /// Samples per second (frequency mode), used when `period` is None.
    pub frequency_hz: u64,
    /// Events per sample.
    pub period: Option<u64>,
    /// Include kernel-mode samples.
    pub include_kernel: bool,
}

/// Why sampling failed.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    /// The command could not be started.
    #[error(transparent)]
    Proc(#[from] ProcError),
    /// The sampler could not be set up.
    #[error("cannot sample {event}: {detail}")]
    Open {
        /// The event.
        event: String,
        /// Why.
        detail: String,
    },
}

impl Classify for SampleError {
    fn class(&self) -> ErrorClass {
        match self {
            SampleError::Proc(e) => e.class(),
            SampleError::Open { .. } => ErrorClass::Unsupported,
        }
    }
}

/// The skid note for an event.
pub fn skid_note(event: &EventRef) -> String {
    match event.encoding {
        Encoding::Software(_) => format!(
            "{} samples come from a timer interrupt: the instruction pointer is wherever the program was when the timer fired. Over many samples the share per function is unbiased; a single hot line is where time went, not necessarily the instruction that caused the wait (a stalled load's cost often shows on the instruction after it).",
            event.name
        ),
        _ => format!(
            "{} samples have skid: the overflow interrupt lands a few instructions after the instruction that caused the event, so the hot instruction shown is often the one after the culprit (e.g. the `subs` after a missing `ldrb`). Trust functions and loops more than single lines; Arm SPE or x86 PEBS (precise sampling) reduce skid.",
            event.name
        ),
    }
}

fn sampler_for(cfg: &SampleConfig, pid: i32, cpu: usize) -> std::io::Result<Sampler> {
    // Raw events as PERF_TYPE_RAW: the kernel hands them to the CPU PMU that takes them.
    let Some(encoding) = cfg.event.encoding.perf(None) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "wall time is not an event that can be sampled",
        ));
    };
    let mut b = perfopen::builder(
        &encoding,
        perfopen::Target::TaskOnCpu { pid, cpu },
        perfopen::Exclude::kernel_unless(cfg.include_kernel),
    );
    perfopen::set_start(&mut b, perfopen::Start::AtExec, true);
    b.mmap(true)
        .mmap2(true)
        .comm(true)
        .sample_id_all(true)
        .sample(
            SampleFlag::IP
                | SampleFlag::TID
                | SampleFlag::PERIOD
                | SampleFlag::CALLCHAIN
                | SampleFlag::CPU,
        );
    match cfg.period {
        Some(p) => b.sample_period(p),
        None => b.sample_frequency(cfg.frequency_hz),
    };
    b.build()?.sampled(512 * 1024)
}

#[derive(Debug, Clone)]
struct Mapping {
    pid: u32,
    start: u64,
    len: u64,
    pgoff: u64,
    path: String,
}

#[derive(Debug, Clone)]
struct RawSample {
    pid: u32,
    ip: u64,
    chain: Vec<u64>,
}

#[derive(Default)]
struct Collected {
    samples: Vec<RawSample>,
    mappings: Vec<Mapping>,
    lost: u64,
}

/// Marker values in call chains (PERF_CONTEXT_*): above this, not addresses.
const CONTEXT_MAX: u64 = u64::MAX - 4095;

fn drain(samplers: &mut [Sampler], out: &mut Collected) {
    for s in samplers.iter_mut() {
        while let Some(rec) = s.next_record() {
            let Ok(parsed) = rec.parse_record() else {
                continue;
            };
            match parsed {
                PerfRecord::Sample(smp) => {
                    let Some(ip) = smp.ip() else { continue };
                    let chain = smp
                        .callchain()
                        .map(|c| c.iter().copied().filter(|&a| a < CONTEXT_MAX).collect())
                        .unwrap_or_default();
                    out.samples.push(RawSample {
                        pid: smp.pid().unwrap_or(0),
                        ip,
                        chain,
                    });
                }
                PerfRecord::Mmap2(m) => out.mappings.push(Mapping {
                    pid: m.pid,
                    start: m.addr,
                    len: m.len,
                    pgoff: m.pgoff,
                    path: String::from_utf8_lossy(&m.filename).into_owned(),
                }),
                PerfRecord::Mmap(m) => out.mappings.push(Mapping {
                    pid: m.pid,
                    start: m.addr,
                    len: m.len,
                    pgoff: m.pgoff,
                    path: String::from_utf8_lossy(&m.filename).into_owned(),
                }),
                PerfRecord::Lost(l) => out.lost += l.lost,
                _ => {}
            }
        }
    }
}

/// Samples `spec` as `cfg` says and attributes the samples.
pub fn sample(spec: &Spec, cfg: &SampleConfig) -> Result<SampleReport, SampleError> {
    let mut child = spec.clone();
    child.gated = true;
    let mut running = numalab_proc::spawn(&child)?;
    let pid = running.pid();
    let mut samplers = Vec::new();
    for cpu in cpulist::online(std::path::Path::new("/")) {
        match sampler_for(cfg, pid, cpu) {
            Ok(s) => samplers.push(s),
            Err(e) => {
                let detail = match e.raw_os_error() {
                    Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => format!(
                        "the PMU does not support sampling it ({e}); cpu-clock sampling works on every machine"
                    ),
                    Some(libc::EACCES) | Some(libc::EPERM) => format!(
                        "permission denied ({e}): sampling your own processes needs perf_event_paranoid <= 2, kernel samples <= 1 (or CAP_PERFMON)"
                    ),
                    _ => e.to_string(),
                };
                let _ = running.release();
                let _ = running.wait();
                return Err(SampleError::Open {
                    event: cfg.event.name.clone(),
                    detail,
                });
            }
        }
    }
    running.release()?;
    let waiter = std::thread::spawn(move || running.wait());
    let mut got = Collected::default();
    while !waiter.is_finished() {
        drain(&mut samplers, &mut got);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let outcome = waiter.join().unwrap_or_else(|_| blank_outcome(&spec.argv));
    drain(&mut samplers, &mut got);
    drop(samplers);
    let fallback = program_path(spec);
    let mut report = attribute(&got, fallback.as_deref());
    report.event = cfg.event.name.clone();
    report.frequency_hz = cfg.period.is_none().then_some(cfg.frequency_hz);
    report.period = cfg.period;
    report.skid = skid_note(&cfg.event);
    report.command = spec.argv.clone();
    report.outcome = outcome;
    Ok(report)
}

/// The program's resolved path (used when a mapped file's path no longer exists).
fn program_path(spec: &Spec) -> Option<String> {
    let p = spec.argv.first()?;
    let path = if p.contains('/') {
        Some(PathBuf::from(p))
    } else {
        std::env::var("PATH").ok().and_then(|path| {
            path.split(':')
                .map(|d| Path::new(d).join(p))
                .find(|c| c.is_file())
        })
    };
    path.map(|p| p.display().to_string())
}

struct ObjectInfo {
    loader: Option<addr2line::Loader>,
    /// (file offset, file size, virtual address) of each loadable segment.
    segments: Vec<(u64, u64, u64)>,
}

fn load_object(path: &str) -> Option<ObjectInfo> {
    use object::{Object, ObjectSegment};
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let segments = file
        .segments()
        .map(|s| {
            let (off, size) = s.file_range();
            (off, size, s.address())
        })
        .collect();
    Some(ObjectInfo {
        loader: addr2line::Loader::new(path).ok(),
        segments,
    })
}

impl ObjectInfo {
    fn svma(&self, file_offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(off, size, _)| file_offset >= *off && file_offset < off + size)
            .map(|(off, _, vaddr)| vaddr + (file_offset - off))
    }

    /// (function, file:line) for an address in this object. For inlined code both are
    /// the outermost function's: its name and the line of its own source where the
    /// inlined code sits (a line in the user's code rather than in a library header).
    fn symbolize(&self, svma: u64) -> (Option<String>, Option<(String, u32)>) {
        let Some(loader) = &self.loader else {
            return (None, None);
        };
        let mut function = None;
        let mut line = None;
        if let Ok(mut frames) = loader.find_frames(svma) {
            while let Ok(Some(f)) = frames.next() {
                if let Some(name) = f.function.as_ref().and_then(|n| n.demangle().ok()) {
                    function = Some(name.into_owned());
                }
                if let Some(l) = f
                    .location
                    .as_ref()
                    .and_then(|l| Some((l.file?.to_string(), l.line?)))
                {
                    line = Some(l);
                }
            }
        }
        if function.is_none() {
            function = loader
                .find_symbol(svma)
                .map(|s| addr2line::demangle_auto(s.into(), None).into_owned());
        }
        if line.is_none() {
            line = loader
                .find_location(svma)
                .ok()
                .flatten()
                .and_then(|l| Some((l.file?.to_string(), l.line?)));
        }
        (function, line)
    }
}

fn is_kernel_address(ip: u64) -> bool {
    ip >= 0xffff_0000_0000_0000
}

/// (function, object, source line) of an address.
type Place = (String, String, Option<(String, u32)>);

/// Per function: self samples, total samples, samples per source line.
type FunctionTally = (u64, u64, HashMap<(String, u32), u64>);

struct Symbolizer<'a> {
    mappings: &'a [Mapping],
    objects: HashMap<String, Option<ObjectInfo>>,
    fallback: Option<&'a str>,
    cache: HashMap<(u32, u64), Place>,
}

impl Symbolizer<'_> {
    /// (function, object, line) for an address of process `pid`.
    fn lookup(&mut self, pid: u32, ip: u64) -> Place {
        if let Some(hit) = self.cache.get(&(pid, ip)) {
            return hit.clone();
        }
        let result = self.lookup_uncached(pid, ip);
        self.cache.insert((pid, ip), result.clone());
        result
    }

    fn lookup_uncached(&mut self, pid: u32, ip: u64) -> Place {
        if is_kernel_address(ip) {
            return ("[kernel]".into(), "[kernel]".into(), None);
        }
        let m = self
            .mappings
            .iter()
            .rev()
            .find(|m| m.pid == pid && ip >= m.start && ip < m.start + m.len)
            .or_else(|| {
                self.mappings
                    .iter()
                    .rev()
                    .find(|m| ip >= m.start && ip < m.start + m.len)
            })
            .cloned();
        let Some(m) = m else {
            return ("[unknown]".into(), "[unknown]".into(), None);
        };
        if m.path.starts_with('[') || m.path.is_empty() {
            let label = if m.path.is_empty() {
                "[anonymous]".into()
            } else {
                m.path.clone()
            };
            return (label.clone(), label, None);
        }
        // A rebuilt program shows as "(deleted)" or a vanished path: use the program's
        // current file only when it has the same name.
        let base = |p: &str| {
            Path::new(p.trim_end_matches(" (deleted)"))
                .file_name()
                .map(|f| f.to_os_string())
        };
        let path = match self.fallback {
            Some(fb) if !Path::new(&m.path).exists() && base(fb) == base(&m.path) => fb.to_string(),
            _ => m.path.clone(),
        };
        let info = self
            .objects
            .entry(path.clone())
            .or_insert_with(|| load_object(&path));
        let short = Path::new(&m.path)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or(m.path.clone());
        let Some(info) = info else {
            return (format!("[{short}]"), m.path.clone(), None);
        };
        let file_offset = ip - m.start + m.pgoff;
        let Some(svma) = info.svma(file_offset) else {
            return (format!("[{short}]"), m.path.clone(), None);
        };
        let (f, l) = info.symbolize(svma);
        (
            f.unwrap_or_else(|| format!("[{short}+0x{file_offset:x}]")),
            m.path.clone(),
            l,
        )
    }
}

fn attribute(got: &Collected, fallback: Option<&str>) -> SampleReport {
    let mut sym = Symbolizer {
        mappings: &got.mappings,
        objects: HashMap::new(),
        fallback,
        cache: HashMap::new(),
    };
    let total = got.samples.len() as u64;
    let mut funcs: HashMap<(String, String), FunctionTally> = HashMap::new();
    let mut lines: HashMap<(String, u32, String), u64> = HashMap::new();
    let mut depths = Vec::new();
    let mut attributed = 0;
    for s in &got.samples {
        let (f, obj, line) = sym.lookup(s.pid, s.ip);
        if !f.starts_with('[') {
            attributed += 1;
        }
        let e = funcs.entry((f.clone(), obj.clone())).or_default();
        e.0 += 1;
        if let Some((file, l)) = &line {
            *e.2.entry((file.clone(), *l)).or_default() += 1;
            *lines.entry((file.clone(), *l, f.clone())).or_default() += 1;
        }
        // Inclusive counts: every distinct function on the chain (return addresses - 1
        // point into the call instruction).
        let mut on_chain: Vec<(String, String)> = vec![(f, obj)];
        if !s.chain.is_empty() {
            depths.push(s.chain.len() as f64);
        }
        for (k, &addr) in s.chain.iter().enumerate() {
            if k == 0 && addr == s.ip {
                continue;
            }
            let (cf, cobj, _) = sym.lookup(s.pid, addr.saturating_sub(1));
            if !on_chain.iter().any(|(a, b)| a == &cf && b == &cobj) {
                on_chain.push((cf, cobj));
            }
        }
        for key in on_chain {
            funcs.entry(key).or_default().1 += 1;
        }
    }
    let pct = |n: u64| {
        if total > 0 {
            n as f64 * 100.0 / total as f64
        } else {
            0.0
        }
    };
    let mut functions: Vec<FunctionHits> = funcs
        .into_iter()
        .map(
            |((function, object), (selfc, totalc, flines))| FunctionHits {
                hottest_line: flines
                    .into_iter()
                    .max_by_key(|(k, n)| (*n, std::cmp::Reverse(k.clone())))
                    .map(|((file, l), _)| format!("{file}:{l}")),
                function,
                object,
                self_samples: selfc,
                self_pct: pct(selfc),
                total_samples: totalc,
                total_pct: pct(totalc),
            },
        )
        .collect();
    functions.sort_by(|a, b| {
        b.self_samples
            .cmp(&a.self_samples)
            .then(b.total_samples.cmp(&a.total_samples))
            .then(a.function.cmp(&b.function))
    });
    let functions_seen = functions.len();
    functions.truncate(200);
    let mut lines: Vec<LineHits> = lines
        .into_iter()
        .map(|((file, line, function), n)| LineHits {
            file,
            line,
            function,
            samples: n,
            pct: pct(n),
        })
        .collect();
    lines.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then(a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });
    lines.truncate(50);
    SampleReport {
        event: String::new(),
        frequency_hz: None,
        period: None,
        samples: total,
        lost: got.lost,
        attributed,
        callchain_depth_median: numalab_stats::Summary::of(&depths).map(|s| s.median),
        functions,
        functions_seen,
        lines,
        skid: String::new(),
        command: Vec::new(),
        outcome: blank_outcome(&[]),
    }
}

/// An outcome with nothing known (before the real one is filled in).
fn blank_outcome(argv: &[String]) -> Outcome {
    Outcome {
        argv: argv.to_vec(),
        exit_code: None,
        signal: None,
        signal_name: None,
        timed_out: false,
        interrupted: false,
        wall_ns: 0,
        user_cpu_ns: 0,
        sys_cpu_ns: 0,
        max_rss_bytes: 0,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        stdout: None,
        leftovers_killed: false,
        supervisor_lost: false,
    }
}

/// Resolves the event to sample (`cpu-clock` by default).
pub fn resolve(catalog: &Catalog, event: &str) -> Result<EventRef, crate::catalog::CatalogError> {
    catalog.resolve_event(event)
}
