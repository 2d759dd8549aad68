//! Live Arm SPE: the `arm_spe` event opened per CPU for a command, with its AUX area
//! mapped (`auxmap.rs`), and the area's packets decoded by [`crate::spe`] into the
//! [`MemSample`]s PEBS and IBS produce; the ring buffer's MMAP2 records give the
//! mappings. Untested on hardware (numalab's CI has no SPE machine): the decoder and
//! the attributes are tested, the kernel's answers are not.

use super::{open_error, Facility, LiveError, LiveOptions};
use crate::auxmap::AuxRing;
use crate::sample::{MemSample, Samples};
use crate::spe;
use numalab_perfopen as perfopen;
use std::os::fd::AsRawFd;

/// The config terms asked of the PMU, each only where its format field exists: time
/// stamps, physical addresses (when asked), loads, stores (when asked) and branches
/// (for the mispredicts), random jitter on the interval, no latency floor.
pub fn config_terms(f: &Facility, phys_addr: bool, stores: bool) -> Vec<(&'static str, u64)> {
    [
        ("ts_enable", 1),
        ("pa_enable", u64::from(phys_addr)),
        ("load_filter", 1),
        ("store_filter", u64::from(stores)),
        ("branch_filter", 1),
        ("jitter", 1),
        ("min_latency", 0),
    ]
    .into_iter()
    .filter(|(n, _)| f.formats.iter().any(|(k, _)| k == n))
    .collect()
}

/// The attributes of the SPE event for `scope`: the PMU's type and the encoded terms,
/// the sampling interval (`period`, operations between samples), the exclusions, the
/// start, mmap/mmap2/mmap_data/comm/task records with sample_id_all (the ring buffer
/// carries the mappings and the threads' processes; the samples go to the AUX area).
pub fn builder(
    f: &Facility,
    config: [u64; 3],
    scope: perfopen::Target,
    opts: &LiveOptions,
    start: perfopen::Start,
) -> perf_event::Builder<'static> {
    let encoding = perfopen::Encoding {
        pmu_type: f.pmu_type,
        config: [config[0], config[1], config[2], 0],
    };
    let exclude = perfopen::Exclude {
        kernel: !opts.include_kernel,
        hv: !opts.include_kernel,
    };
    let mut b = perfopen::builder(&encoding, scope, exclude);
    perfopen::set_start(&mut b, start, true);
    b.mmap(true)
        .mmap2(true)
        .mmap_data(true)
        .comm(true)
        .task(true)
        .sample_id_all(true)
        .sample_period(opts.period)
        .sample(perf_event::SampleFlag::from_bits_retain(super::SAMPLE_TYPE));
    b
}

/// One CPU's SPE event with its rings, and the bytes not yet decoded.
pub(super) struct SpeRing {
    counter: perf_event::Counter,
    ring: AuxRing,
    pid: u32,
    cpu: u32,
    pending: Vec<u8>,
}

/// AUX ring sizes tried, pages: the locked-memory limit (perf_event_mlock_kb) may
/// refuse the larger ones when many CPUs each map one.
const AUX_PAGES: [usize; 3] = [64, 16, 4];
const DATA_PAGES: usize = 8;

/// Opens the SPE event on every scope (command: every CPU the PMU covers) and maps its
/// rings. With `pa_enable` refused for want of privilege (EACCES, EPERM), again
/// without physical addresses, with a note.
pub(super) fn open(
    f: &Facility,
    pid: i32,
    scopes: &[perfopen::Target],
    opts: &LiveOptions,
    start: perfopen::Start,
    notes: &mut Vec<String>,
) -> Result<(Vec<SpeRing>, bool), LiveError> {
    let event = format!("{}//", f.pmu);
    let open_all = |phys: bool| -> Result<Vec<SpeRing>, Failed> {
        let terms = config_terms(f, phys, opts.stores);
        let config = super::encode_terms("", &f.formats, &terms)
            .map_err(|e| Failed::Open(std::io::Error::other(e)))?;
        let mut v = Vec::new();
        for &scope in scopes {
            let counter = builder(f, config, scope, opts, start)
                .build()
                .map_err(Failed::Open)?;
            let mut last = std::io::Error::other("no ring size tried");
            let mut ring = None;
            for pages in AUX_PAGES {
                match AuxRing::map(counter.as_raw_fd(), DATA_PAGES, pages) {
                    Ok(r) => {
                        ring = Some(r);
                        break;
                    }
                    Err(e) => last = e,
                }
            }
            let ring = ring.ok_or(Failed::Map(last))?;
            let cpu = match scope {
                perfopen::Target::TaskOnCpu { cpu, .. } | perfopen::Target::Cpu(cpu) => cpu as u32,
                _ => 0,
            };
            v.push(SpeRing {
                counter,
                ring,
                pid: pid as u32,
                cpu,
                pending: Vec::new(),
            });
        }
        Ok(v)
    };
    let fail = |e: Failed| match e {
        Failed::Open(e) => open_error(event.clone(), e),
        Failed::Map(e) => LiveError::Open {
            event: event.clone(),
            detail: map_failure(&e),
        },
    };
    let asks_phys = opts.phys_addr && f.formats.iter().any(|(k, _)| k == "pa_enable");
    match open_all(asks_phys) {
        Ok(v) => Ok((v, asks_phys)),
        Err(Failed::Open(e))
            if asks_phys && matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) =>
        {
            notes.push(format!(
                "physical addresses not sampled: the arm_spe driver refused pa_enable ({e}); it allows it with CAP_PERFMON (or CAP_SYS_ADMIN)"
            ));
            open_all(false).map(|v| (v, false)).map_err(fail)
        }
        Err(e) => Err(fail(e)),
    }
}

/// Why opening failed: the event, or the mapping of its AUX area.
enum Failed {
    Open(std::io::Error),
    Map(std::io::Error),
}

/// What an AUX area that cannot be mapped at the smallest size means.
pub fn map_failure(e: &std::io::Error) -> String {
    format!(
        "cannot map its AUX area ({e}), even at {} pages per CPU: the locked-memory allowance for perf buffers (/proc/sys/kernel/perf_event_mlock_kb, then RLIMIT_MEMLOCK) is too small for one area per CPU; raise it, or run with CAP_IPC_LOCK",
        AUX_PAGES[AUX_PAGES.len() - 1]
    )
}

/// PERF_RECORD_* types read from the ring buffer.
const RECORD_LOST: u32 = 2;
const RECORD_FORK: u32 = 7;
const RECORD_MMAP2: u32 = 10;
const RECORD_AUX: u32 = 11;
/// PERF_AUX_FLAG_TRUNCATED, _COLLISION.
const AUX_TRUNCATED: u64 = 0x1;
const AUX_COLLISION: u64 = 0x8;

/// The records of ring-buffer bytes: (type, misc, body). Stops at a header that does
/// not fit (never panics).
pub fn split_records(bytes: &[u8]) -> Vec<(u32, u16, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Some(h) = bytes.get(at..at + 8) {
        let ty = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]);
        let misc = u16::from_ne_bytes([h[4], h[5]]);
        let size = u16::from_ne_bytes([h[6], h[7]]) as usize;
        let Some(body) = (size >= 8).then(|| bytes.get(at + 8..at + size)).flatten() else {
            break;
        };
        out.push((ty, misc, body));
        at += size;
    }
    out
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    b.get(i * 8..i * 8 + 8)
        .map(|s| u64::from_ne_bytes(s.try_into().unwrap_or([0; 8])))
}

/// What the SPE rings said besides the samples.
#[derive(Debug, Default)]
pub(super) struct SpeTally {
    pub summary: spe::Summary,
    pub bad_bytes: u64,
    pub incomplete: u64,
    pub truncated_aux: u64,
    pub collisions: u64,
    pub overwritten_bytes: u64,
    pub kernel_records: u64,
    /// The process of each thread seen (PERF_RECORD_FORK, MMAP2): a record's Context
    /// packet names its thread.
    pub process_of: std::collections::HashMap<u32, u32>,
}

impl SpeTally {
    /// The notes of a run: what SPE says about branches and remote accesses, physical
    /// addresses (`phys`: whether asked and granted), and data lost or not decoded.
    pub fn notes(&self, phys: bool) -> Vec<String> {
        let why = if phys {
            "the PMU did not write them"
        } else {
            "not sampled (pa_enable off: not asked, or refused for want of CAP_PERFMON)"
        };
        let mut n = self.summary.notes(why);
        if self.truncated_aux + self.collisions + self.overwritten_bytes > 0 {
            n.push(format!(
                "Arm SPE: the AUX area overflowed ({} truncated, {} collisions, {} bytes overwritten): samples are missing",
                self.truncated_aux, self.collisions, self.overwritten_bytes
            ));
        }
        if self.bad_bytes + self.incomplete > 0 {
            n.push(format!(
                "Arm SPE: {} bytes not decodable as packets, {} records cut off",
                self.bad_bytes, self.incomplete
            ));
        }
        n
    }
}

impl SpeRing {
    /// Enables the event (running-process targets).
    pub(super) fn enable(&mut self) {
        let _ = self.counter.enable();
    }
    /// Disables the event.
    pub(super) fn disable(&mut self) {
        let _ = self.counter.disable();
    }

    /// Reads the ring buffer: mappings (numbered from `seq`), lost counts, AUX flags,
    /// the threads' processes. Called for every ring before [`SpeRing::drain_aux`], so
    /// that a mapping made on one CPU precedes the samples another CPU took in it.
    pub(super) fn drain_ring(&mut self, data: &mut Samples, seq: &mut u64, tally: &mut SpeTally) {
        let mut buf = Vec::new();
        self.ring.read_data(&mut buf);
        read_ring_records(&buf, data, seq, tally);
    }

    /// Reads the AUX area's new bytes and decodes the complete records into samples of
    /// event `ev`. Records of EL1 and above are dropped unless `include_kernel`.
    /// `last`: the final read (what is left undecoded is counted as cut off).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn drain_aux(
        &mut self,
        ev: u16,
        include_kernel: bool,
        data: &mut Samples,
        seq: &mut u64,
        fresh: &mut Vec<MemSample>,
        tally: &mut SpeTally,
        last: bool,
    ) {
        tally.overwritten_bytes += self.ring.read_aux(&mut self.pending);
        let d = spe::decode(&self.pending);
        tally.bad_bytes += d.bad_bytes;
        if last {
            tally.incomplete += d.incomplete;
        }
        for s in samples_of(&d.records, self.pid, self.cpu, include_kernel, tally) {
            let s = MemSample {
                seq: *seq,
                event: ev,
                ..s
            };
            *seq += 1;
            fresh.push(s.clone());
            data.samples.push(s);
        }
        self.pending.drain(..d.consumed.min(self.pending.len()));
        if last {
            self.pending.clear();
        }
    }
}

/// Moves ring-buffer records into `data` and `tally`: MMAP2 mappings (numbered from
/// `seq`), LOST counts, AUX flags, and the process of each thread from FORK and MMAP2.
pub(super) fn read_ring_records(
    buf: &[u8],
    data: &mut Samples,
    seq: &mut u64,
    tally: &mut SpeTally,
) {
    for (ty, misc, body) in split_records(buf) {
        match ty {
            RECORD_MMAP2 => {
                if let Ok(mut m) = super::parse_mmap2_record(body, misc) {
                    if let Some(tid) = u32_at(body, 1) {
                        tally.process_of.insert(tid, m.pid);
                    }
                    m.seq = *seq;
                    *seq += 1;
                    data.mappings.push(m);
                }
            }
            RECORD_FORK => {
                if let (Some(pid), Some(tid)) = (u32_at(body, 0), u32_at(body, 2)) {
                    tally.process_of.insert(tid, pid);
                }
            }
            RECORD_LOST => data.lost += u64_at(body, 1).unwrap_or(0),
            RECORD_AUX => {
                let flags = u64_at(body, 2).unwrap_or(0);
                tally.truncated_aux += u64::from(flags & AUX_TRUNCATED != 0);
                tally.collisions += u64::from(flags & AUX_COLLISION != 0);
            }
            _ => {}
        }
    }
}

/// The memory samples of decoded records from the area of `cpu` for the command
/// `pid`, counted into `tally`: a record whose Context packet names a thread (the
/// kernel writes the thread id into CONTEXTIDR_EL1 when built with
/// CONFIG_PID_IN_CONTEXTIDR) gets that thread and its process (when a FORK or MMAP2
/// record said which, else the command's); without one, the command's.
pub(super) fn samples_of(
    records: &[spe::SpeRecord],
    pid: u32,
    cpu: u32,
    include_kernel: bool,
    tally: &mut SpeTally,
) -> Vec<MemSample> {
    let mut out = Vec::new();
    for r in records {
        tally.summary.add(r);
        if !include_kernel && r.el.is_some_and(|el| el > 0) {
            tally.kernel_records += 1;
            continue;
        }
        let Some(mut s) = spe::to_mem_sample(r, pid, pid, cpu) else {
            continue;
        };
        if let Some(tid) = r.context.filter(|&t| t != 0) {
            s.tid = tid;
            s.pid = *tally.process_of.get(&tid).unwrap_or(&pid);
        }
        out.push(s);
    }
    out
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    b.get(i * 4..i * 4 + 4)
        .map(|s| u32::from_ne_bytes(s.try_into().unwrap_or([0; 4])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::FacilityKind;

    fn spe_facility(formats: &[(&str, &str)]) -> Facility {
        Facility {
            kind: FacilityKind::ArmSpe,
            pmu: "arm_spe_0".into(),
            pmu_type: 8,
            formats: formats
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            loads_event: None,
            stores_event: None,
            loads_aux_event: None,
            cpus: None,
        }
    }

    /// The formats Linux's arm_spe driver publishes (drivers/perf/arm_spe_pmu.c).
    const FORMATS: [(&str, &str); 8] = [
        ("ts_enable", "config:0"),
        ("pa_enable", "config:1"),
        ("pct_enable", "config:2"),
        ("jitter", "config:16"),
        ("branch_filter", "config:32"),
        ("load_filter", "config:33"),
        ("store_filter", "config:34"),
        ("min_latency", "config2:0-11"),
    ];

    #[test]
    fn attributes_are_pinned() {
        let f = spe_facility(&FORMATS);
        let opts = LiveOptions {
            period: 1024,
            ..Default::default()
        };
        let terms = config_terms(&f, true, true);
        let c = super::super::encode_terms("", &f.formats, &terms).unwrap();
        // ts, pa, jitter, branch, load, store; no pct (needs privilege, not asked).
        assert_eq!(c, [1 | 2 | 1 << 16 | 1 << 32 | 1 << 33 | 1 << 34, 0, 0]);
        let c2 =
            super::super::encode_terms("", &f.formats, &config_terms(&f, false, false)).unwrap();
        assert_eq!(c2, [1 | 1 << 16 | 1 << 32 | 1 << 33, 0, 0]);
        let b = builder(
            &f,
            c,
            perfopen::Target::TaskOnCpu { pid: 42, cpu: 3 },
            &opts,
            perfopen::Start::AtExec,
        );
        let a = b.attrs();
        assert_eq!((a.type_, a.config, a.config1, a.config2), (8, c[0], 0, 0));
        assert_eq!(a.freq(), 0);
        assert_eq!(a.sample_type, super::super::SAMPLE_TYPE);
        assert_eq!((a.exclude_kernel(), a.exclude_hv()), (1, 1));
        assert_eq!((a.disabled(), a.enable_on_exec(), a.inherit()), (1, 1, 1));
        assert_eq!((a.mmap(), a.mmap_data(), a.sample_id_all()), (1, 1, 1));
        assert_eq!(a.precise_ip(), 0);
        // A PMU without some fields: only those it has are asked.
        let f = spe_facility(&FORMATS[..2]);
        assert_eq!(
            config_terms(&f, true, true),
            vec![("ts_enable", 1), ("pa_enable", 1)]
        );
    }

    fn push(b: &mut Vec<u8>, ty: u32, misc: u16, body: &[u8]) {
        b.extend_from_slice(&ty.to_ne_bytes());
        b.extend_from_slice(&misc.to_ne_bytes());
        b.extend_from_slice(&((body.len() + 8) as u16).to_ne_bytes());
        b.extend_from_slice(body);
    }

    #[test]
    fn ring_records_give_mappings_threads_and_flags() {
        let mut b = Vec::new();
        // FORK: pid, ppid, tid, ptid, time.
        let fork: Vec<u8> = [500u32, 1, 501, 500]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .chain(7u64.to_ne_bytes())
            .collect();
        push(&mut b, RECORD_FORK, 0, &fork);
        // MMAP2 of thread 502 of process 600: pid, tid, addr, len, pgoff, maj, min, ino,
        // ino_generation, prot, flags, file name.
        let mut m = Vec::new();
        m.extend(600u32.to_ne_bytes());
        m.extend(502u32.to_ne_bytes());
        for v in [0x7f00_0000_0000u64, 0x10_0000, 0] {
            m.extend(v.to_ne_bytes());
        }
        m.extend(8u32.to_ne_bytes());
        m.extend(1u32.to_ne_bytes());
        m.extend(1234u64.to_ne_bytes());
        m.extend(0u64.to_ne_bytes());
        m.extend(3u32.to_ne_bytes());
        m.extend(2u32.to_ne_bytes());
        m.extend(b"//anon\0\0");
        push(&mut b, RECORD_MMAP2, 0, &m);
        push(
            &mut b,
            RECORD_LOST,
            0,
            &[1u64, 5]
                .iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect::<Vec<u8>>(),
        );
        let aux: Vec<u8> = [0u64, 4096, AUX_TRUNCATED | AUX_COLLISION]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        push(&mut b, RECORD_AUX, 0, &aux);
        let (mut data, mut seq, mut tally) = (Samples::default(), 10, SpeTally::default());
        read_ring_records(&b, &mut data, &mut seq, &mut tally);
        assert_eq!(data.mappings.len(), 1);
        assert_eq!(
            (
                data.mappings[0].pid,
                data.mappings[0].start,
                data.mappings[0].seq,
                seq
            ),
            (600, 0x7f00_0000_0000, 10, 11)
        );
        assert_eq!(data.lost, 5);
        assert_eq!((tally.truncated_aux, tally.collisions), (1, 1));
        assert_eq!(tally.process_of.get(&501), Some(&500));
        assert_eq!(tally.process_of.get(&502), Some(&600));
        // Records naming thread 501 go to process 500; an unknown thread to the command;
        // no context: the command's; EL1 records are dropped unless asked.
        let rec = |ctx: Option<u32>, el: u8| spe::SpeRecord {
            pc: Some(0x400000),
            el: Some(el),
            virt_addr: Some(0x1000),
            op: Some(spe::OpType {
                class: spe::OpClass::LoadStore,
                payload: 0,
            }),
            context: ctx,
            ..Default::default()
        };
        let recs = [
            rec(Some(501), 0),
            rec(Some(777), 0),
            rec(None, 0),
            rec(None, 1),
        ];
        let got = samples_of(&recs, 42, 3, false, &mut tally);
        let who: Vec<(u32, u32, u32)> = got.iter().map(|s| (s.pid, s.tid, s.cpu)).collect();
        assert_eq!(who, vec![(500, 501, 3), (42, 777, 3), (42, 42, 3)]);
        assert_eq!((tally.kernel_records, tally.summary.records), (1, 4));
        assert_eq!(samples_of(&recs, 42, 3, true, &mut tally).len(), 4);
        let notes = tally.notes(false);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("overflowed (1 truncated, 1 collisions")),
            "{notes:?}"
        );
        assert!(map_failure(&std::io::Error::from_raw_os_error(libc::EPERM))
            .contains("perf_event_mlock_kb"));
    }

    #[test]
    fn ring_records_split_and_never_panic() {
        let mut b = Vec::new();
        let aux: Vec<u8> = [0u64, 4096, 0x1]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        push(&mut b, RECORD_AUX, 0, &aux);
        push(&mut b, RECORD_LOST, 0, &[0; 16]);
        let r = split_records(&b);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].0, u64_at(r[0].2, 2)), (RECORD_AUX, Some(1)));
        for n in 0..b.len() {
            assert!(split_records(&b[..n]).len() <= 2);
        }
        // A size below the header's stops the split.
        let mut z = b.clone();
        z[6] = 3;
        z[7] = 0;
        assert!(split_records(&z).is_empty());
    }
}
