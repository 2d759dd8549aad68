//! Arm Statistical Profiling Extension (SPE) records, decoded from the bytes the
//! `arm_spe` PMU writes into its perf AUX area, and mapped into the [`MemSample`] that
//! PEBS, IBS and the `perf script` import produce, so that one analysis serves all.
//!
//! Written from the packet format of the Arm Architecture Reference Manual for A-profile
//! (chapter "Statistical Profiling Extension", the packet descriptions of the profiling
//! data): every packet is a header byte (or an extended two-byte header) followed by a
//! little-endian payload; a record is the packets of one sampled operation, ended by an
//! End packet or a Timestamp packet.
//!
//! | header | packet | payload |
//! |---|---|---|
//! | `0000_0000` | Padding | none |
//! | `0000_0001` | End | none |
//! | `0111_0001` | Timestamp | 8 bytes |
//! | `01ss_0010` | Events | 2^ss bytes, one bit per event |
//! | `01ss_0011` | Data Source | 2^ss bytes, IMPLEMENTATION DEFINED |
//! | `0110_01ii` | Context | 4 bytes, CONTEXTIDR_EL1 (ii=0) or _EL2 (ii=1) |
//! | `0100_10cc` | Operation Type | 1 byte, class cc: 0 other, 1 load/store, 2 branch |
//! | `1011_0iii` | Address | 8 bytes, index iii: 0 PC, 1 branch target, 2 data virtual, 3 data physical, 4 previous branch target |
//! | `1001_1iii` | Counter | 2 bytes, index iii: 0 total latency, 1 issue latency, 2 translation latency |
//! | `0010_00hh` then one of the two above | extended Address / Counter | index = hh << 3 \| iii |
//!
//! The decoder never panics: an unknown header byte is skipped and counted, a packet cut
//! off by the end of the bytes ends the decoding (counted as truncated), and a record
//! not ended by End or Timestamp is dropped and counted.

use crate::datasrc::{bits::*, DataSrc};
use crate::sample::MemSample;

/// Event bits of the Events packet (architecture-defined positions).
pub mod events {
    /// The operation generated an exception.
    pub const EXCEPTION: u64 = 1 << 0;
    /// The operation was architecturally executed (retired).
    pub const RETIRED: u64 = 1 << 1;
    /// A level 1 data cache access.
    pub const L1D_ACCESS: u64 = 1 << 2;
    /// A level 1 data cache refill (miss).
    pub const L1D_REFILL: u64 = 1 << 3;
    /// A TLB access.
    pub const TLB_ACCESS: u64 = 1 << 4;
    /// A TLB walk (the access missed the TLBs).
    pub const TLB_WALK: u64 = 1 << 5;
    /// A conditional instruction failed its condition (branch not taken).
    pub const NOT_TAKEN: u64 = 1 << 6;
    /// A branch that was mispredicted.
    pub const MISPREDICTED: u64 = 1 << 7;
    /// A last-level cache access.
    pub const LLC_ACCESS: u64 = 1 << 8;
    /// A last-level cache miss.
    pub const LLC_MISS: u64 = 1 << 9;
    /// The access was served from another socket or chip (remote access).
    pub const REMOTE_ACCESS: u64 = 1 << 10;
    /// The access was misaligned.
    pub const ALIGNMENT: u64 = 1 << 11;
}

/// The operation class of the Operation Type packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpClass {
    /// Not a load, store or branch (cc = 0).
    Other,
    /// A load, store or atomic (cc = 1).
    LoadStore,
    /// A branch or exception return (cc = 2).
    Branch,
    /// A class the architecture reserves (cc = 3).
    Reserved,
}

/// An Operation Type packet: its class and its one-byte payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpType {
    /// The class.
    pub class: OpClass,
    /// The payload (sub-class bits).
    pub payload: u8,
}

impl OpType {
    /// A load (payload bit 0 clear) of the load/store class.
    pub fn is_load(self) -> bool {
        self.class == OpClass::LoadStore && self.payload & 1 == 0
    }
    /// A store (payload bit 0 set) of the load/store class.
    pub fn is_store(self) -> bool {
        self.class == OpClass::LoadStore && self.payload & 1 != 0
    }
    /// A branch.
    pub fn is_branch(self) -> bool {
        self.class == OpClass::Branch
    }
    /// A load/store of the "extended" sub-class (payload bits 1 set, 7:5 clear) marked
    /// atomic (payload bit 2).
    pub fn is_atomic(self) -> bool {
        self.class == OpClass::LoadStore && self.payload & 0xe2 == 0x02 && self.payload & 0x04 != 0
    }
    /// A conditional branch (payload bit 0 of the branch class).
    pub fn is_conditional_branch(self) -> bool {
        self.class == OpClass::Branch && self.payload & 1 != 0
    }
    /// An indirect branch (payload bit 1 of the branch class).
    pub fn is_indirect_branch(self) -> bool {
        self.class == OpClass::Branch && self.payload & 2 != 0
    }
}

/// Where the data came from, in the Neoverse encoding of the Data Source packet.
///
/// The packet is IMPLEMENTATION DEFINED; the values are those of the Arm Neoverse N1
/// Technical Reference Manual (the SPE data-source packet of the core's
/// implementation-defined features), shared by the later Neoverse cores (N2, V1, V2).
/// Other values, and other implementers' cores, are [`Source::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// 0x0: the level 1 data cache.
    L1d,
    /// 0x8: the core's level 2 cache.
    L2,
    /// 0x9: another core's cache in the same cluster.
    PeerCore,
    /// 0xa: the local cluster's shared cache.
    LocalCluster,
    /// 0xb: the system-level cache (the interconnect's, in front of memory).
    SystemCache,
    /// 0xc: a cache of another cluster on the same chip.
    PeerCluster,
    /// 0xd: another chip (socket): its caches or its memory.
    Remote,
    /// 0xe: DRAM.
    Dram,
    /// Any other value.
    Other(u16),
}

impl Source {
    /// Decodes the Neoverse value.
    pub fn neoverse(v: u16) -> Source {
        match v {
            0x0 => Source::L1d,
            0x8 => Source::L2,
            0x9 => Source::PeerCore,
            0xa => Source::LocalCluster,
            0xb => Source::SystemCache,
            0xc => Source::PeerCluster,
            0xd => Source::Remote,
            0xe => Source::Dram,
            o => Source::Other(o),
        }
    }
}

/// One sampled operation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpeRecord {
    /// The instruction's virtual address (PC).
    pub pc: Option<u64>,
    /// The exception level it ran at (0 user, 1 kernel, 2 hypervisor), with the PC.
    pub el: Option<u8>,
    /// A branch's target address.
    pub branch_target: Option<u64>,
    /// The data virtual address (top-byte tag removed).
    pub virt_addr: Option<u64>,
    /// The data physical address; absent unless the PMU was asked for it (`pa_enable`,
    /// which needs privilege).
    pub phys_addr: Option<u64>,
    /// Total latency, cycles from dispatch to completion.
    pub total_latency: Option<u16>,
    /// Issue latency, cycles from dispatch to issue.
    pub issue_latency: Option<u16>,
    /// Translation latency, cycles of the address translation.
    pub translation_latency: Option<u16>,
    /// The Events packet's bits ([`events`]); 0 when there was none.
    pub events: u64,
    /// The Data Source packet's raw value.
    pub source: Option<u16>,
    /// The Operation Type packet.
    pub op: Option<OpType>,
    /// CONTEXTIDR_EL1 (the kernel writes the thread id there when built with
    /// `CONFIG_PID_IN_CONTEXTIDR`).
    pub context: Option<u32>,
    /// The Timestamp packet (the generic timer's count, not perf's clock).
    pub timestamp: Option<u64>,
}

impl SpeRecord {
    /// Whether an event bit ([`events`]) is set.
    pub fn has(&self, event: u64) -> bool {
        self.events & event != 0
    }
    /// A mispredicted branch.
    pub fn mispredicted(&self) -> bool {
        self.has(events::MISPREDICTED)
    }
    /// An access served from another socket or chip.
    pub fn remote(&self) -> bool {
        self.has(events::REMOTE_ACCESS) || self.source.map(Source::neoverse) == Some(Source::Remote)
    }
}

/// What [`decode`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decoded {
    /// The complete records, in order.
    pub records: Vec<SpeRecord>,
    /// Header bytes no packet starts with (skipped one by one).
    pub bad_bytes: u64,
    /// Records that had packets but no End or Timestamp before the bytes ran out.
    pub incomplete: u64,
    /// Whether the last packet was cut off by the end of the bytes.
    pub truncated: bool,
    /// Bytes up to the end of the last complete record (or of padding between
    /// records): a reader that gets more bytes later keeps `bytes[consumed..]` and
    /// decodes it with them.
    pub consumed: usize,
}

enum Packet {
    Pad,
    End,
    Timestamp(u64),
    Events(u64),
    Source(u64),
    Context(u8, u64),
    Op(u8, u64),
    Address(u8, u64),
    Counter(u8, u64),
}

enum Step {
    Packet(Packet, usize),
    Bad,
    Short,
}

fn payload(b: &[u8], at: usize, n: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(n)?)?;
    Some(
        s.iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)),
    )
}

/// The packet at `b[0..]`: the packet and its length in bytes.
fn packet(b: &[u8]) -> Step {
    let Some(&h) = b.first() else {
        return Step::Short;
    };
    let sized = |n: usize, at: usize, f: &dyn Fn(u64) -> Packet| match payload(b, at, n) {
        Some(v) => Step::Packet(f(v), at + n),
        None => Step::Short,
    };
    let sz = 1usize << ((h >> 4) & 3);
    match h {
        0x00 => Step::Packet(Packet::Pad, 1),
        0x01 => Step::Packet(Packet::End, 1),
        0x71 => sized(8, 1, &Packet::Timestamp),
        _ if h & 0xfc == 0x20 => {
            let Some(&h1) = b.get(1) else {
                return Step::Short;
            };
            let index = ((h & 3) << 3) | (h1 & 7);
            if h1 & 0xf8 == 0xb0 {
                sized(8, 2, &|v| Packet::Address(index, v))
            } else if h1 & 0xf8 == 0x98 {
                sized(2, 2, &|v| Packet::Counter(index, v))
            } else {
                Step::Bad
            }
        }
        _ if h & 0xcf == 0x42 => sized(sz, 1, &Packet::Events),
        _ if h & 0xcf == 0x43 => sized(sz, 1, &Packet::Source),
        _ if h & 0xfc == 0x64 => sized(4, 1, &|v| Packet::Context(h & 3, v)),
        _ if h & 0xfc == 0x48 => sized(1, 1, &|v| Packet::Op(h & 3, v)),
        _ if h & 0xf8 == 0xb0 => sized(8, 1, &|v| Packet::Address(h & 7, v)),
        _ if h & 0xf8 == 0x98 => sized(2, 1, &|v| Packet::Counter(h & 7, v)),
        _ => Step::Bad,
    }
}

/// An instruction address (PC, branch target): bits 55:0, sign-extended from bit 55
/// (kernel addresses have the top byte all ones).
fn code_address(v: u64) -> u64 {
    let a = v & 0x00ff_ffff_ffff_ffff;
    if a & (1 << 55) != 0 {
        a | 0xff00_0000_0000_0000
    } else {
        a
    }
}

fn apply(r: &mut SpeRecord, p: Packet) {
    match p {
        Packet::Pad | Packet::End | Packet::Timestamp(_) => {}
        Packet::Events(v) => r.events = v,
        Packet::Source(v) => r.source = Some(v as u16),
        Packet::Context(0, v) => r.context = Some(v as u32),
        Packet::Context(..) => {}
        Packet::Op(c, v) => {
            r.op = Some(OpType {
                class: match c {
                    0 => OpClass::Other,
                    1 => OpClass::LoadStore,
                    2 => OpClass::Branch,
                    _ => OpClass::Reserved,
                },
                payload: v as u8,
            })
        }
        Packet::Address(0, v) => {
            r.pc = Some(code_address(v));
            r.el = Some(((v >> 61) & 3) as u8);
        }
        Packet::Address(1, v) => r.branch_target = Some(code_address(v)),
        // Data virtual address: bits 63:56 are the tag (top-byte ignore); the address
        // proper is bits 55:0, sign-extended.
        Packet::Address(2, v) => r.virt_addr = Some(code_address(v)),
        // Data physical address: bits 55:0 (63 NS, 62 CH, 59:56 PAT are attributes).
        Packet::Address(3, v) => r.phys_addr = Some(v & 0x00ff_ffff_ffff_ffff),
        Packet::Address(..) => {}
        Packet::Counter(0, v) => r.total_latency = Some(v as u16),
        Packet::Counter(1, v) => r.issue_latency = Some(v as u16),
        Packet::Counter(2, v) => r.translation_latency = Some(v as u16),
        Packet::Counter(..) => {}
    }
}

/// Decodes SPE bytes (the AUX area's contents, in order) into records.
pub fn decode(bytes: &[u8]) -> Decoded {
    let mut out = Decoded::default();
    let mut cur = SpeRecord::default();
    let mut started = false;
    let mut at = 0usize;
    while at < bytes.len() {
        match packet(&bytes[at..]) {
            Step::Packet(p, n) => {
                at += n;
                match p {
                    Packet::Pad => {}
                    Packet::End | Packet::Timestamp(_) => {
                        if let Packet::Timestamp(t) = p {
                            cur.timestamp = Some(t);
                        }
                        if started {
                            out.records.push(std::mem::take(&mut cur));
                        }
                        cur = SpeRecord::default();
                        started = false;
                    }
                    p => {
                        apply(&mut cur, p);
                        started = true;
                    }
                }
                if !started {
                    out.consumed = at;
                }
            }
            Step::Bad => {
                out.bad_bytes += 1;
                at += 1;
                if !started {
                    out.consumed = at;
                }
            }
            Step::Short => {
                out.truncated = true;
                break;
            }
        }
    }
    if started {
        out.incomplete += 1;
    }
    out
}

/// The `perf_mem_data_src` value of a record: the operation, the Neoverse data source
/// (table in the module docs of [`Source`]), the TLB outcome from the events, locked for
/// atomics, remote from the remote-access event.
///
/// | source | level written |
/// |---|---|
/// | L1D | L1 hit |
/// | L2 | L2 hit |
/// | peer core, peer cluster | a cache of another core on the same node (remote, hops 0), snoopx PEER |
/// | local cluster | L3 hit |
/// | system cache | memory-side cache |
/// | remote | remote (another socket), level not said |
/// | DRAM | local RAM, or remote RAM with the remote-access event |
///
/// Without a Data Source packet, an L1D access that did not refill is an L1 hit and the
/// level is otherwise not said.
pub fn data_src(r: &SpeRecord) -> DataSrc {
    let op = match r.op {
        Some(o) if o.is_load() => OP_LOAD,
        Some(o) if o.is_store() => OP_STORE,
        _ => OP_NA,
    };
    let remote_ev = r.has(events::REMOTE_ACCESS);
    let (lvl, lvl_num, mut remote, snoopx, mut hops) = match r.source.map(Source::neoverse) {
        Some(Source::L1d) => (LVL_L1 | LVL_HIT, LVLNUM_L1, false, 0, 0),
        Some(Source::L2) => (LVL_L2 | LVL_HIT, LVLNUM_L2, false, 0, 0),
        Some(Source::PeerCore) | Some(Source::PeerCluster) => {
            (0, LVLNUM_ANY_CACHE, true, SNOOPX_PEER, HOPS_0)
        }
        Some(Source::LocalCluster) => (LVL_L3 | LVL_HIT, LVLNUM_L3, false, 0, 0),
        Some(Source::SystemCache) => (0, LVLNUM_MSC, false, 0, 0),
        Some(Source::Remote) => (0, LVLNUM_NA, true, 0, HOPS_2),
        Some(Source::Dram) => (LVL_LOC_RAM | LVL_HIT, LVLNUM_RAM, false, 0, 0),
        Some(Source::Other(_)) => (LVL_NA, LVLNUM_NA, false, 0, 0),
        None if r.has(events::L1D_ACCESS) && !r.has(events::L1D_REFILL) => {
            (LVL_L1 | LVL_HIT, LVLNUM_L1, false, 0, 0)
        }
        None => (LVL_NA, LVLNUM_NA, false, 0, 0),
    };
    if remote_ev && !(remote && hops == HOPS_0) {
        remote = true;
        hops = HOPS_2;
    }
    let lvl = if remote && lvl & LVL_LOC_RAM != 0 {
        LVL_REM_RAM1 | LVL_HIT
    } else {
        lvl
    };
    let tlb = if r.has(events::TLB_WALK) {
        TLB_MISS | TLB_WK
    } else if r.has(events::TLB_ACCESS) {
        TLB_HIT | TLB_L1
    } else {
        TLB_NA
    };
    let lock = if r.op.is_some_and(OpType::is_atomic) {
        LOCK_LOCKED
    } else {
        0
    };
    DataSrc::build(op, lvl, 0, lock, tlb, lvl_num, remote, snoopx, 0, hops)
}

/// A memory sample of a record: loads and stores with a data address (branches and
/// other operations are not memory samples: None), attributed to process `pid` and
/// thread `tid` (the caller's to choose: SPE records name no process; a Context packet,
/// when there is one, holds CONTEXTIDR_EL1, where the kernel writes the thread id when
/// built with `CONFIG_PID_IN_CONTEXTIDR`); `cpu` is the CPU whose buffer held it. The
/// weight is the total latency (0 when not recorded); the time stamp is left out (SPE
/// counts the generic timer, not perf's clock).
pub fn to_mem_sample(r: &SpeRecord, pid: u32, tid: u32, cpu: u32) -> Option<MemSample> {
    let op = r.op?;
    if !(op.is_load() || op.is_store()) {
        return None;
    }
    let addr = r.virt_addr?;
    Some(MemSample {
        seq: 0,
        pid,
        tid,
        cpu,
        time_ns: None,
        ip: r.pc,
        code: None,
        addr,
        data_src: data_src(r),
        weight: u64::from(r.total_latency.unwrap_or(0)),
        phys_addr: r.phys_addr.filter(|&p| p != 0),
        event: 0,
    })
}

/// Counts over decoded records, for the notes of a live run: what SPE says beyond the
/// memory samples (mispredicted branches, remote accesses) and what it did not say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Records decoded.
    pub records: u64,
    /// Loads and stores.
    pub memory: u64,
    /// Loads and stores without a physical address.
    pub memory_without_phys: u64,
    /// Branches.
    pub branches: u64,
    /// Mispredicted branches.
    pub mispredicted: u64,
    /// Accesses served from another socket or chip.
    pub remote: u64,
    mispredicted_at: std::collections::HashMap<u64, u64>,
}

impl Summary {
    /// Counts `records`.
    pub fn of(records: &[SpeRecord]) -> Summary {
        let mut s = Summary::default();
        for r in records {
            s.add(r);
        }
        s
    }

    /// Counts one more record.
    pub fn add(&mut self, r: &SpeRecord) {
        self.records += 1;
        if let Some(op) = r.op {
            if op.is_load() || op.is_store() {
                self.memory += 1;
                if r.phys_addr.is_none() {
                    self.memory_without_phys += 1;
                }
                if r.remote() {
                    self.remote += 1;
                }
            }
            if op.is_branch() {
                self.branches += 1;
            }
        }
        if r.mispredicted() {
            self.mispredicted += 1;
            if let Some(pc) = r.pc {
                *self.mispredicted_at.entry(pc).or_default() += 1;
            }
        }
    }

    /// Mispredicted branches per PC, most first (at most 10).
    pub fn top_mispredicted(&self) -> Vec<(u64, u64)> {
        let mut top: Vec<(u64, u64)> = self.mispredicted_at.iter().map(|(&a, &b)| (a, b)).collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        top.truncate(10);
        top
    }

    /// The notes a record carries: mispredicts and remote accesses, and the missing
    /// physical addresses with `why_no_phys` (why the run has none).
    pub fn notes(&self, why_no_phys: &str) -> Vec<String> {
        let mut n = Vec::new();
        if self.branches > 0 || self.mispredicted > 0 {
            let top: Vec<String> = self
                .top_mispredicted()
                .iter()
                .map(|(pc, c)| format!("{pc:#x} ({c})"))
                .collect();
            n.push(format!(
                "Arm SPE: {} of {} sampled branches mispredicted{}",
                self.mispredicted,
                self.branches,
                if top.is_empty() {
                    String::new()
                } else {
                    format!("; most at {}", top.join(", "))
                }
            ));
        }
        if self.memory > 0 {
            n.push(format!(
                "Arm SPE: {} of {} sampled loads and stores were remote accesses (another socket or chip)",
                self.remote, self.memory
            ));
        }
        if self.memory_without_phys > 0 {
            n.push(format!(
                "Arm SPE: {} of {} loads and stores have no physical address: {why_no_phys}",
                self.memory_without_phys, self.memory
            ));
        }
        n
    }
}

#[cfg(test)]
mod tests;
