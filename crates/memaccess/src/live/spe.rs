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
/// start, mmap/mmap2/mmap_data/comm records with sample_id_all (the ring buffer carries
/// the mappings; the samples go to the AUX area).
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
    let open_all = |phys: bool| -> Result<Vec<SpeRing>, std::io::Error> {
        let terms = config_terms(f, phys, opts.stores);
        let config = super::encode_terms("", &f.formats, &terms).map_err(std::io::Error::other)?;
        let mut v = Vec::new();
        for &scope in scopes {
            let counter = builder(f, config, scope, opts, start).build()?;
            let mut last = None;
            let mut ring = None;
            for pages in AUX_PAGES {
                match AuxRing::map(counter.as_raw_fd(), DATA_PAGES, pages) {
                    Ok(r) => {
                        ring = Some(r);
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            let ring =
                ring.ok_or_else(|| last.unwrap_or_else(|| std::io::Error::other("no ring")))?;
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
    let asks_phys = opts.phys_addr && f.formats.iter().any(|(k, _)| k == "pa_enable");
    match open_all(asks_phys) {
        Ok(v) => Ok((v, asks_phys)),
        Err(e)
            if asks_phys && matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) =>
        {
            notes.push(format!(
                "physical addresses not sampled: the arm_spe driver refused pa_enable ({e}); it allows it with CAP_PERFMON (or CAP_SYS_ADMIN)"
            ));
            open_all(false)
                .map(|v| (v, false))
                .map_err(|e| open_error(event, e))
        }
        Err(e) => Err(open_error(event, e)),
    }
}

/// PERF_RECORD_* types read from the ring buffer.
const RECORD_LOST: u32 = 2;
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

    /// Reads the ring buffer (mappings, lost counts, AUX flags), then the AUX area's
    /// new bytes, decoding the complete records into samples of event `ev`. Records
    /// of EL1 and above are dropped unless `include_kernel`. `last`: the final read
    /// (what is left undecoded is counted as cut off).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn drain(
        &mut self,
        ev: u16,
        include_kernel: bool,
        data: &mut Samples,
        seq: &mut u64,
        fresh: &mut Vec<MemSample>,
        tally: &mut SpeTally,
        last: bool,
    ) {
        let mut buf = Vec::new();
        self.ring.read_data(&mut buf);
        for (ty, misc, body) in split_records(&buf) {
            match ty {
                RECORD_MMAP2 => {
                    if let Ok(mut m) = super::parse_mmap2_record(body, misc) {
                        m.seq = *seq;
                        *seq += 1;
                        data.mappings.push(m);
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
        tally.overwritten_bytes += self.ring.read_aux(&mut self.pending);
        let d = spe::decode(&self.pending);
        tally.bad_bytes += d.bad_bytes;
        if last {
            tally.incomplete += d.incomplete;
        }
        for r in &d.records {
            tally.summary.add(r);
            if !include_kernel && r.el.is_some_and(|el| el > 0) {
                tally.kernel_records += 1;
                continue;
            }
            if let Some(mut s) = spe::to_mem_sample(r, self.pid, self.pid, self.cpu) {
                s.seq = *seq;
                s.event = ev;
                *seq += 1;
                fresh.push(s.clone());
                data.samples.push(s);
            }
        }
        self.pending.drain(..d.consumed.min(self.pending.len()));
        if last {
            self.pending.clear();
        }
    }
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
