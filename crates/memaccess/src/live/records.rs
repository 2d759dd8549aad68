//! The kernel's records of a live run (PERF_RECORD_SAMPLE, MMAP2, LOST) turned into the
//! importer's [`MemSample`] / [`Mapping`], parsed by perf-event-data (perf-event2's
//! `data`), the parser `numalab_pmu::sample` uses too.

use crate::datasrc::DataSrc;
use crate::sample::{Mapping, MemSample};
use perf_event::data::endian::Native;
use perf_event::data::parse::{ParseConfig, Parser};
use perf_event::data::{DataSource, Mmap2, Record, Sample};

// Sample type bits (include/uapi/linux/perf_event.h).
const S_IP: u64 = 1 << 0;
const S_TID: u64 = 1 << 1;
const S_TIME: u64 = 1 << 2;
const S_ADDR: u64 = 1 << 3;
const S_READ: u64 = 1 << 4;
const S_CALLCHAIN: u64 = 1 << 5;
const S_CPU: u64 = 1 << 7;
const S_PERIOD: u64 = 1 << 8;
const S_RAW: u64 = 1 << 10;
const S_BRANCH_STACK: u64 = 1 << 11;
const S_REGS_USER: u64 = 1 << 12;
const S_STACK_USER: u64 = 1 << 13;
const S_WEIGHT: u64 = 1 << 14;
const S_DATA_SRC: u64 = 1 << 15;
const S_TRANSACTION: u64 = 1 << 17;
const S_REGS_INTR: u64 = 1 << 18;
pub(super) const S_PHYS_ADDR: u64 = 1 << 19;
const S_WEIGHT_STRUCT: u64 = 1 << 24;

/// The sample fields [`parse_sample_record`] reads; others make it refuse.
pub const SAMPLE_TYPE: u64 =
    S_IP | S_TID | S_TIME | S_ADDR | S_CPU | S_PERIOD | S_WEIGHT | S_DATA_SRC;
/// With physical addresses.
pub const SAMPLE_TYPE_PHYS: u64 = SAMPLE_TYPE | S_PHYS_ADDR;

// Record types (enum perf_event_type).
const RECORD_SAMPLE: u32 = 9;
const RECORD_MMAP2: u32 = 10;

/// One record of a live run, as the sampler keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Decoded {
    /// A data-address sample (seq and event still 0).
    Sample(MemSample),
    /// A mapping (seq still 0).
    Mapping(Mapping),
    /// Samples the kernel dropped.
    Lost(u64),
}

/// Keeps what this crate reads of a parsed record: samples, MMAP2 mappings and lost
/// counts; other records (MMAP, COMM, EXIT...) are `None`.
pub(super) fn decode(record: &Record, sample_type: u64) -> Option<Decoded> {
    match record {
        Record::Sample(s) => Some(Decoded::Sample(mem_sample(s, sample_type))),
        Record::Mmap2(m) => Some(Decoded::Mapping(mapping(m))),
        Record::Lost(l) => Some(Decoded::Lost(l.lost)),
        _ => None,
    }
}

/// A parsed sample as a [`MemSample`]; a field the sample_type leaves out is 0 (or
/// `None`). With PERF_SAMPLE_WEIGHT_STRUCT the latency is the low 32 bits (var1_dw).
fn mem_sample(s: &Sample, sample_type: u64) -> MemSample {
    let weight = s.weight().unwrap_or(0);
    MemSample {
        seq: 0,
        pid: s.pid().unwrap_or(0),
        tid: s.tid().unwrap_or(0),
        cpu: s.cpu().unwrap_or(0),
        time_ns: s.time(),
        ip: s.ip(),
        code: None,
        addr: s.addr().unwrap_or(0),
        data_src: DataSrc(s.data_src().map_or(0, |d| data_src_word(&d))),
        weight: if sample_type & S_WEIGHT_STRUCT != 0 {
            weight & 0xffff_ffff
        } else {
            weight
        },
        phys_addr: s.phys_addr(),
        event: 0,
    }
}

/// The `perf_mem_data_src` word, put back together from the fields perf-event-data
/// decodes (it does not hand out the word): bits 0-45, every field [`DataSrc`] reads;
/// bits 46-63, reserved in the kernels this crate knows, are not kept.
fn data_src_word(d: &DataSource) -> u64 {
    use crate::datasrc::bits::{
        BLK_SHIFT, HOPS_SHIFT, LOCK_SHIFT, LVLNUM_SHIFT, LVL_SHIFT, OP_SHIFT, REMOTE_SHIFT,
        TLB_SHIFT,
    };
    // mem_snoop comes with mem_snoopx, both already at their places in the word.
    (d.mem_op().bits() << OP_SHIFT)
        | (d.mem_lvl().bits() << LVL_SHIFT)
        | d.mem_snoop().bits()
        | (d.mem_lock().bits() << LOCK_SHIFT)
        | (d.mem_dtlb().bits() << TLB_SHIFT)
        | (u64::from(d.mem_lvl_num().0) << LVLNUM_SHIFT)
        | (u64::from(d.mem_remote()) << REMOTE_SHIFT)
        | (d.mem_blk().bits() << BLK_SHIFT)
        | (u64::from(d.mem_hops()) << HOPS_SHIFT)
}

/// A parsed MMAP2 record as a [`Mapping`]: prot as perf prints it (`rw-p`), the
/// device and inode or the build id (hex), the file name up to its first NUL.
fn mapping(m: &Mmap2) -> Mapping {
    let (prot, flags) = (m.prot, m.flags);
    let p = |bit: u32, ch: char| if prot & bit != 0 { ch } else { '-' };
    let prot_s = format!(
        "{}{}{}{}",
        p(libc::PROT_READ as u32, 'r'),
        p(libc::PROT_WRITE as u32, 'w'),
        p(libc::PROT_EXEC as u32, 'x'),
        if flags & libc::MAP_SHARED as u32 != 0 {
            's'
        } else {
            'p'
        }
    );
    let dev_ino = match (m.maj(), m.min(), m.ino()) {
        (Some(maj), Some(min), Some(ino)) => Some((maj, min, ino)),
        _ => None,
    };
    let build_id = m
        .build_id()
        .map(|id| id.iter().map(|b| format!("{b:02x}")).collect::<String>());
    let name = &m.filename[..];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Mapping {
        seq: 0,
        pid: m.pid,
        start: m.addr,
        len: m.len,
        pgoff: m.pgoff,
        prot: Some(prot_s),
        path: String::from_utf8_lossy(&name[..end]).into_owned(),
        dev_ino,
        build_id,
    }
}

/// The parse configuration of records from an event opened with this sample_type
/// (and sample_id_all as said), as perf-event2 derives it from the attributes.
/// perf-event-data 0.1.8 does not know PERF_SAMPLE_WEIGHT_STRUCT: it is the same 8
/// bytes in the same place as PERF_SAMPLE_WEIGHT, so it is read as that.
pub(super) fn parse_config(sample_type: u64, sample_id_all: bool) -> ParseConfig<Native> {
    use perf_event::events::Software;
    use perf_event::{Builder, SampleFlag};
    let read_as = if sample_type & S_WEIGHT_STRUCT != 0 {
        (sample_type & !S_WEIGHT_STRUCT) | S_WEIGHT
    } else {
        sample_type
    };
    let mut b = Builder::new(Software::DUMMY);
    b.sample(SampleFlag::from_bits_retain(read_as))
        .sample_id_all(sample_id_all);
    ParseConfig::from(*b.attrs())
}

/// Parses one whole record (8-byte header, then the body) with `config`.
pub(super) fn parse_record<'a>(
    bytes: &'a [u8],
    config: ParseConfig<Native>,
) -> Result<Record<'a>, String> {
    Parser::new(bytes, config)
        .parse::<Record>()
        .map_err(|e| e.to_string())
}

/// A record's bytes: its header (type, misc, size) in the kernel's layout, then `body`.
fn with_header(ty: u32, misc: u16, body: &[u8]) -> Result<Vec<u8>, String> {
    let size = u16::try_from(body.len() + 8).map_err(|_| {
        format!(
            "a record body of {} bytes does not fit a perf record",
            body.len()
        )
    })?;
    let mut bytes = Vec::with_capacity(body.len() + 8);
    bytes.extend_from_slice(&ty.to_ne_bytes());
    bytes.extend_from_slice(&misc.to_ne_bytes());
    bytes.extend_from_slice(&size.to_ne_bytes());
    bytes.extend_from_slice(body);
    Ok(bytes)
}

/// Parses the body (after the 8-byte header) of a PERF_RECORD_SAMPLE with this
/// sample_type, in the kernel's field order. Fields this crate never asks for (read
/// values, call chains, raw data, branch stacks, registers, user stack, transaction)
/// make it refuse, as their sizes depend on other attributes.
pub fn parse_sample_record(body: &[u8], sample_type: u64) -> Result<MemSample, String> {
    let unsupported = S_READ
        | S_CALLCHAIN
        | S_RAW
        | S_BRANCH_STACK
        | S_REGS_USER
        | S_STACK_USER
        | S_TRANSACTION
        | S_REGS_INTR;
    if sample_type & unsupported != 0 {
        return Err(format!(
            "sample_type 0x{sample_type:x} has fields this parser does not read"
        ));
    }
    let bytes = with_header(RECORD_SAMPLE, 0, body)?;
    let record = parse_record(&bytes, parse_config(sample_type, false))?;
    match record {
        Record::Sample(s) => Ok(mem_sample(&s, sample_type)),
        other => Err(format!("not a sample record: {other:?}")),
    }
}

/// Parses the body of a PERF_RECORD_MMAP2: pid, tid, addr, len, pgoff, then either
/// maj, min, ino, ino_generation or (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) a build-id
/// size, 3 reserved bytes and 20 id bytes; prot, flags, the file name (NUL-padded).
pub fn parse_mmap2_record(body: &[u8], misc: u16) -> Result<Mapping, String> {
    let bytes = with_header(RECORD_MMAP2, misc, body)?;
    let record = parse_record(&bytes, parse_config(SAMPLE_TYPE, false))?;
    match record {
        Record::Mmap2(m) => Ok(mapping(&m)),
        other => Err(format!("not an MMAP2 record: {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push64(b: &mut Vec<u8>, v: u64) {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    fn push32(b: &mut Vec<u8>, v: u32) {
        b.extend_from_slice(&v.to_ne_bytes());
    }

    /// A whole record as the ring buffer holds it: header (type, misc, size), body.
    fn record(ty: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        with_header(ty, misc, body).unwrap()
    }

    /// The sample_id trailer sample_id_all appends to non-sample records with
    /// SAMPLE_TYPE's fields: pid, tid, time, cpu, res.
    fn sample_id(b: &mut Vec<u8>) {
        push32(b, 4242);
        push32(b, 4243);
        push64(b, 99);
        push32(b, 3);
        push32(b, 0);
    }

    /// Every data_src field at a value of its own: op LOAD, lvl HIT|L3, snoop HITM,
    /// lock LOCKED, dtlb HIT|L2, lvl_num 0xd (RAM), remote, snoopx PEER, blk ADDR,
    /// hops 2.
    const DATA_SRC: u64 = 0x02
        | (0x42 << 5)
        | (0x10 << 19)
        | (0x2 << 24)
        | (0x12 << 26)
        | (0xd << 33)
        | (1 << 37)
        | (0x2 << 38)
        | (0x4 << 40)
        | (2 << 43);

    #[test]
    fn a_ring_buffer_sample_decodes_every_field_memaccess_reads() {
        // IP, TID, TIME, ADDR, CPU, PERIOD, WEIGHT, DATA_SRC, PHYS_ADDR, in the
        // kernel's order, parsed with the configuration an opened sampler has.
        let mut b = Vec::new();
        push64(&mut b, 0x5555_5555_5120); // ip
        push32(&mut b, 4242); // pid
        push32(&mut b, 4243); // tid
        push64(&mut b, 8_123_400_142_000); // time
        push64(&mut b, 0x7f00_0000_1008); // addr
        push32(&mut b, 5); // cpu
        push32(&mut b, 0); // res
        push64(&mut b, 4000); // period
        push64(&mut b, 387); // weight
        push64(&mut b, DATA_SRC); // data_src
        push64(&mut b, 0x4800_0008); // phys_addr
        let bytes = record(RECORD_SAMPLE, 0, &b);
        let parsed = parse_record(&bytes, parse_config(SAMPLE_TYPE_PHYS, true)).unwrap();
        let Some(Decoded::Sample(s)) = decode(&parsed, SAMPLE_TYPE_PHYS) else {
            panic!("not a sample: {parsed:?}");
        };
        assert_eq!(
            s,
            MemSample {
                seq: 0,
                pid: 4242,
                tid: 4243,
                cpu: 5,
                time_ns: Some(8_123_400_142_000),
                ip: Some(0x5555_5555_5120),
                code: None,
                addr: 0x7f00_0000_1008,
                data_src: DataSrc(DATA_SRC),
                weight: 387,
                phys_addr: Some(0x4800_0008),
                event: 0,
            }
        );
        assert!(s.data_src.remote_node());
        assert!(s.data_src.hitm());
        // Without PHYS_ADDR: the same record less its last field.
        let bytes = record(RECORD_SAMPLE, 0, &b[..b.len() - 8]);
        let parsed = parse_record(&bytes, parse_config(SAMPLE_TYPE, true)).unwrap();
        let Some(Decoded::Sample(s)) = decode(&parsed, SAMPLE_TYPE) else {
            panic!("not a sample: {parsed:?}");
        };
        assert_eq!((s.weight, s.phys_addr, s.cpu), (387, None, 5));
    }

    #[test]
    fn the_data_source_word_survives_every_field_at_its_widest() {
        // Bits 0-45: every field perf-event-data decodes, all ones, and one at a time.
        let all = (1u64 << 46) - 1;
        let mut words = vec![all, DATA_SRC, 0];
        words.extend((0..46).map(|bit| 1u64 << bit));
        for w in words {
            let mut b = Vec::new();
            push64(&mut b, w);
            let bytes = record(RECORD_SAMPLE, 0, &b);
            let parsed = parse_record(&bytes, parse_config(S_DATA_SRC, false)).unwrap();
            let Record::Sample(s) = parsed else {
                panic!("not a sample");
            };
            assert_eq!(data_src_word(&s.data_src().unwrap()), w, "0x{w:x}");
        }
    }

    #[test]
    fn ring_buffer_mmap2_and_lost_records_with_their_sample_id() {
        let mut b = Vec::new();
        push32(&mut b, 4242);
        push32(&mut b, 4243);
        push64(&mut b, 0x7f00_0000_0000);
        push64(&mut b, 0x20_0000);
        push64(&mut b, 0);
        push32(&mut b, 0); // maj
        push32(&mut b, 0); // min
        push64(&mut b, 0); // ino
        push64(&mut b, 0); // generation
        push32(&mut b, (libc::PROT_READ | libc::PROT_WRITE) as u32);
        push32(&mut b, libc::MAP_PRIVATE as u32);
        b.extend_from_slice(b"//anon\0\0");
        sample_id(&mut b);
        let bytes = record(RECORD_MMAP2, 0, &b);
        let parsed = parse_record(&bytes, parse_config(SAMPLE_TYPE_PHYS, true)).unwrap();
        assert_eq!(
            decode(&parsed, SAMPLE_TYPE_PHYS),
            Some(Decoded::Mapping(Mapping {
                seq: 0,
                pid: 4242,
                start: 0x7f00_0000_0000,
                len: 0x20_0000,
                pgoff: 0,
                prot: Some("rw-p".into()),
                path: "//anon".into(),
                dev_ino: Some((0, 0, 0)),
                build_id: None,
            }))
        );
        // PERF_RECORD_LOST: id, lost, then the sample_id.
        let mut l = Vec::new();
        push64(&mut l, 7);
        push64(&mut l, 12);
        sample_id(&mut l);
        let bytes = record(2, 0, &l);
        let parsed = parse_record(&bytes, parse_config(SAMPLE_TYPE, true)).unwrap();
        assert_eq!(decode(&parsed, SAMPLE_TYPE), Some(Decoded::Lost(12)));
        // PERF_RECORD_COMM (pid, tid, name): not kept.
        let mut c = Vec::new();
        push32(&mut c, 4242);
        push32(&mut c, 4242);
        c.extend_from_slice(b"graphwalk\0\0\0\0\0\0\0");
        sample_id(&mut c);
        let bytes = record(3, 0, &c);
        let parsed = parse_record(&bytes, parse_config(SAMPLE_TYPE, true)).unwrap();
        assert_eq!(decode(&parsed, SAMPLE_TYPE), None);
    }
}
