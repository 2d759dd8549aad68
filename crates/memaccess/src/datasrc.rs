//! `perf_mem_data_src`, decoded from its numeric value.
//!
//! The layout is the kernel's (include/uapi/linux/perf_event.h), little-endian bit
//! fields of one u64:
//!
//! | bits | field | values used here |
//! |---|---|---|
//! | 0-4 | mem_op | 0x1 NA, 0x2 LOAD, 0x4 STORE, 0x8 PFETCH, 0x10 EXEC |
//! | 5-18 | mem_lvl | 0x1 NA, 0x2 HIT, 0x4 MISS, 0x8 L1, 0x10 LFB, 0x20 L2, 0x40 L3, 0x80 LOC_RAM, 0x100 REM_RAM1, 0x200 REM_RAM2, 0x400 REM_CCE1, 0x800 REM_CCE2, 0x1000 IO, 0x2000 UNC |
//! | 19-23 | mem_snoop | 0x1 NA, 0x2 NONE, 0x4 HIT, 0x8 MISS, 0x10 HITM |
//! | 24-25 | mem_lock | 0x1 NA, 0x2 LOCKED |
//! | 26-32 | mem_dtlb | 0x1 NA, 0x2 HIT, 0x4 MISS, 0x8 L1, 0x10 L2, 0x20 WK (walker), 0x40 OS |
//! | 33-36 | mem_lvl_num | 1 L1, 2 L2, 3 L3, 4 L4, 5 L2 MHB, 6 MSC, 8 UNC, 9 CXL, 0xa IO, 0xb ANY_CACHE, 0xc LFB, 0xd RAM, 0xe PMEM, 0xf NA |
//! | 37 | mem_remote | 1 remote |
//! | 38-39 | mem_snoopx | 0x1 FWD, 0x2 PEER |
//! | 40-42 | mem_blk | 0x1 NA, 0x2 DATA, 0x4 ADDR |
//! | 43-45 | mem_hops | 1 HOPS_0 remote core same node, 2 HOPS_1 remote node same socket, 3 HOPS_2 remote socket same board, 4 HOPS_3 remote board |
//!
//! Linux 6.1 leaves mem_lvl_num 5-8 unassigned (later kernels added L2 MHB, MSC, UNC
//! and renamed 9 from EXTN_MEM to CXL); decoding the later names costs nothing.
//! A PMU fills either the old `mem_lvl` bits, the newer `mem_lvl_num` + `mem_remote` +
//! `mem_hops`, or both; [`DataSrc::level`] prefers the newer fields.

/// Bit positions and masks.
pub mod bits {
    /// mem_op shift.
    pub const OP_SHIFT: u32 = 0;
    /// mem_lvl shift.
    pub const LVL_SHIFT: u32 = 5;
    /// mem_snoop shift.
    pub const SNOOP_SHIFT: u32 = 19;
    /// mem_lock shift.
    pub const LOCK_SHIFT: u32 = 24;
    /// mem_dtlb shift.
    pub const TLB_SHIFT: u32 = 26;
    /// mem_lvl_num shift.
    pub const LVLNUM_SHIFT: u32 = 33;
    /// mem_remote shift.
    pub const REMOTE_SHIFT: u32 = 37;
    /// mem_snoopx shift.
    pub const SNOOPX_SHIFT: u32 = 38;
    /// mem_blk shift.
    pub const BLK_SHIFT: u32 = 40;
    /// mem_hops shift.
    pub const HOPS_SHIFT: u32 = 43;

    /// mem_op values.
    pub const OP_NA: u64 = 0x01;
    /// A load.
    pub const OP_LOAD: u64 = 0x02;
    /// A store.
    pub const OP_STORE: u64 = 0x04;
    /// A prefetch.
    pub const OP_PFETCH: u64 = 0x08;
    /// Code.
    pub const OP_EXEC: u64 = 0x10;

    /// mem_lvl values.
    pub const LVL_NA: u64 = 0x01;
    /// Hit.
    pub const LVL_HIT: u64 = 0x02;
    /// Miss.
    pub const LVL_MISS: u64 = 0x04;
    /// L1.
    pub const LVL_L1: u64 = 0x08;
    /// Line fill buffer.
    pub const LVL_LFB: u64 = 0x10;
    /// L2.
    pub const LVL_L2: u64 = 0x20;
    /// L3.
    pub const LVL_L3: u64 = 0x40;
    /// Local DRAM.
    pub const LVL_LOC_RAM: u64 = 0x80;
    /// Remote DRAM, 1 hop.
    pub const LVL_REM_RAM1: u64 = 0x100;
    /// Remote DRAM, 2 hops.
    pub const LVL_REM_RAM2: u64 = 0x200;
    /// Remote cache, 1 hop.
    pub const LVL_REM_CCE1: u64 = 0x400;
    /// Remote cache, 2 hops.
    pub const LVL_REM_CCE2: u64 = 0x800;
    /// I/O memory.
    pub const LVL_IO: u64 = 0x1000;
    /// Uncached.
    pub const LVL_UNC: u64 = 0x2000;

    /// mem_snoop values.
    pub const SNOOP_NA: u64 = 0x01;
    /// No snoop.
    pub const SNOOP_NONE: u64 = 0x02;
    /// Snoop hit.
    pub const SNOOP_HIT: u64 = 0x04;
    /// Snoop miss.
    pub const SNOOP_MISS: u64 = 0x08;
    /// Snoop hit modified.
    pub const SNOOP_HITM: u64 = 0x10;
    /// mem_snoopx: forward.
    pub const SNOOPX_FWD: u64 = 0x01;
    /// mem_snoopx: transfer from a peer cache.
    pub const SNOOPX_PEER: u64 = 0x02;

    /// mem_lock: locked.
    pub const LOCK_LOCKED: u64 = 0x02;

    /// mem_dtlb values.
    pub const TLB_NA: u64 = 0x01;
    /// TLB hit.
    pub const TLB_HIT: u64 = 0x02;
    /// TLB miss.
    pub const TLB_MISS: u64 = 0x04;
    /// L1 TLB.
    pub const TLB_L1: u64 = 0x08;
    /// L2 TLB.
    pub const TLB_L2: u64 = 0x10;
    /// Hardware walker.
    pub const TLB_WK: u64 = 0x20;
    /// OS fault handler.
    pub const TLB_OS: u64 = 0x40;

    /// mem_lvl_num values.
    pub const LVLNUM_L1: u64 = 0x01;
    /// L2.
    pub const LVLNUM_L2: u64 = 0x02;
    /// L3.
    pub const LVLNUM_L3: u64 = 0x03;
    /// L4.
    pub const LVLNUM_L4: u64 = 0x04;
    /// L2 miss handling buffer (after 6.1).
    pub const LVLNUM_L2_MHB: u64 = 0x05;
    /// Memory-side cache (after 6.1).
    pub const LVLNUM_MSC: u64 = 0x06;
    /// Uncached (after 6.1).
    pub const LVLNUM_UNC: u64 = 0x08;
    /// CXL (6.1: "extension memory").
    pub const LVLNUM_CXL: u64 = 0x09;
    /// I/O.
    pub const LVLNUM_IO: u64 = 0x0a;
    /// Any cache.
    pub const LVLNUM_ANY_CACHE: u64 = 0x0b;
    /// Line fill buffer.
    pub const LVLNUM_LFB: u64 = 0x0c;
    /// RAM.
    pub const LVLNUM_RAM: u64 = 0x0d;
    /// Persistent memory.
    pub const LVLNUM_PMEM: u64 = 0x0e;
    /// Not available.
    pub const LVLNUM_NA: u64 = 0x0f;

    /// mem_hops: remote core, same node.
    pub const HOPS_0: u64 = 1;
    /// Remote node, same socket.
    pub const HOPS_1: u64 = 2;
    /// Remote socket, same board.
    pub const HOPS_2: u64 = 3;
    /// Remote board.
    pub const HOPS_3: u64 = 4;
}

use bits::*;

/// What kind of access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// A load.
    Load,
    /// A store.
    Store,
    /// A prefetch.
    Prefetch,
    /// Instruction fetch.
    Exec,
    /// Not said.
    Unknown,
}

/// Where the access was served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// L1 data cache.
    L1,
    /// Line fill buffer / L1 miss handling.
    Lfb,
    /// L2.
    L2,
    /// L3 / last level.
    L3,
    /// L4.
    L4,
    /// Some cache, not said which.
    AnyCache,
    /// Memory-side cache.
    MemorySideCache,
    /// A cache of another core on the same node (hops 0).
    PeerCache,
    /// A cache on another node.
    RemoteCache,
    /// DRAM of the local node.
    LocalRam,
    /// DRAM of another node.
    RemoteRam,
    /// Persistent memory.
    Pmem,
    /// CXL / extension memory.
    Cxl,
    /// I/O.
    Io,
    /// Uncached.
    Uncached,
    /// Not said.
    Unknown,
}

impl Level {
    /// Name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Level::L1 => "L1",
            Level::Lfb => "LFB",
            Level::L2 => "L2",
            Level::L3 => "L3",
            Level::L4 => "L4",
            Level::AnyCache => "any cache",
            Level::MemorySideCache => "memory-side cache",
            Level::PeerCache => "peer cache (same node)",
            Level::RemoteCache => "remote cache",
            Level::LocalRam => "local RAM",
            Level::RemoteRam => "remote RAM",
            Level::Pmem => "PMEM",
            Level::Cxl => "CXL",
            Level::Io => "I/O",
            Level::Uncached => "uncached",
            Level::Unknown => "unknown",
        }
    }
}

/// TLB outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tlb {
    /// Hit (in the L1 or L2 TLB).
    Hit,
    /// Missed: a walk or the OS was needed.
    Miss,
    /// Not said.
    Unknown,
}

/// A `perf_mem_data_src` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DataSrc(pub u64);

impl DataSrc {
    fn field(self, shift: u32, width: u32) -> u64 {
        (self.0 >> shift) & ((1u64 << width) - 1)
    }
    /// mem_op (5 bits).
    pub fn mem_op(self) -> u64 {
        self.field(OP_SHIFT, 5)
    }
    /// mem_lvl (14 bits).
    pub fn mem_lvl(self) -> u64 {
        self.field(LVL_SHIFT, 14)
    }
    /// mem_snoop (5 bits).
    pub fn mem_snoop(self) -> u64 {
        self.field(SNOOP_SHIFT, 5)
    }
    /// mem_lock (2 bits).
    pub fn mem_lock(self) -> u64 {
        self.field(LOCK_SHIFT, 2)
    }
    /// mem_dtlb (7 bits).
    pub fn mem_dtlb(self) -> u64 {
        self.field(TLB_SHIFT, 7)
    }
    /// mem_lvl_num (4 bits).
    pub fn mem_lvl_num(self) -> u64 {
        self.field(LVLNUM_SHIFT, 4)
    }
    /// mem_remote (1 bit).
    pub fn mem_remote(self) -> bool {
        self.field(REMOTE_SHIFT, 1) != 0
    }
    /// mem_snoopx (2 bits).
    pub fn mem_snoopx(self) -> u64 {
        self.field(SNOOPX_SHIFT, 2)
    }
    /// mem_blk (3 bits).
    pub fn mem_blk(self) -> u64 {
        self.field(BLK_SHIFT, 3)
    }
    /// mem_hops (3 bits).
    pub fn mem_hops(self) -> u64 {
        self.field(HOPS_SHIFT, 3)
    }

    /// The kind of access.
    pub fn op(self) -> Op {
        let op = self.mem_op();
        if op & OP_LOAD != 0 {
            Op::Load
        } else if op & OP_STORE != 0 {
            Op::Store
        } else if op & OP_PFETCH != 0 {
            Op::Prefetch
        } else if op & OP_EXEC != 0 {
            Op::Exec
        } else {
            Op::Unknown
        }
    }

    /// Where it was served from: `mem_lvl_num` with `mem_remote` and `mem_hops` when
    /// set, else the old `mem_lvl` bits.
    pub fn level(self) -> Level {
        let num = self.mem_lvl_num();
        let remote = self.mem_remote();
        let hops = self.mem_hops();
        if num != 0 && num != LVLNUM_NA {
            let cache = |l: Level| {
                if remote {
                    if hops == HOPS_0 {
                        Level::PeerCache
                    } else {
                        Level::RemoteCache
                    }
                } else {
                    l
                }
            };
            return match num {
                LVLNUM_L1 => cache(Level::L1),
                LVLNUM_L2 => cache(Level::L2),
                LVLNUM_L3 => cache(Level::L3),
                LVLNUM_L4 => cache(Level::L4),
                LVLNUM_L2_MHB => cache(Level::L2),
                LVLNUM_MSC => cache(Level::MemorySideCache),
                LVLNUM_ANY_CACHE => cache(Level::AnyCache),
                LVLNUM_LFB => cache(Level::Lfb),
                LVLNUM_RAM => {
                    if remote && hops != HOPS_0 {
                        Level::RemoteRam
                    } else {
                        Level::LocalRam
                    }
                }
                LVLNUM_PMEM => Level::Pmem,
                LVLNUM_CXL => Level::Cxl,
                LVLNUM_IO => Level::Io,
                LVLNUM_UNC => Level::Uncached,
                _ => Level::Unknown,
            };
        }
        let lvl = self.mem_lvl();
        if lvl == 0 || lvl & LVL_NA != 0 && lvl & !LVL_NA == 0 {
            return Level::Unknown;
        }
        // A miss names the level that missed, not where the data came from.
        if lvl & LVL_HIT == 0 && lvl & LVL_MISS != 0 {
            return Level::Unknown;
        }
        if lvl & (LVL_REM_RAM1 | LVL_REM_RAM2) != 0 {
            Level::RemoteRam
        } else if lvl & (LVL_REM_CCE1 | LVL_REM_CCE2) != 0 {
            Level::RemoteCache
        } else if lvl & LVL_LOC_RAM != 0 {
            Level::LocalRam
        } else if lvl & LVL_L3 != 0 {
            Level::L3
        } else if lvl & LVL_L2 != 0 {
            Level::L2
        } else if lvl & LVL_LFB != 0 {
            Level::Lfb
        } else if lvl & LVL_L1 != 0 {
            Level::L1
        } else if lvl & LVL_IO != 0 {
            Level::Io
        } else if lvl & LVL_UNC != 0 {
            Level::Uncached
        } else {
            Level::Unknown
        }
    }

    /// Whether the PMU says the access was served from another node (its memory or a
    /// cache there): the remote levels of `mem_lvl`, or `mem_remote` unless `mem_hops`
    /// says "remote core, same node".
    pub fn remote_node(self) -> bool {
        matches!(self.level(), Level::RemoteRam | Level::RemoteCache)
            || (self.mem_remote() && self.mem_hops() != HOPS_0)
    }

    /// Whether the PMU says anything about locality (a level was given).
    pub fn has_level(self) -> bool {
        self.level() != Level::Unknown || self.mem_remote()
    }

    /// A load that hit a line modified in another core's cache (snoop HITM), or was
    /// transferred from a peer cache (snoopx PEER, what Arm SPE reports instead).
    pub fn hitm(self) -> bool {
        self.mem_snoop() & SNOOP_HITM != 0 || self.mem_snoopx() & SNOOPX_PEER != 0
    }

    /// TLB outcome.
    pub fn tlb(self) -> Tlb {
        let t = self.mem_dtlb();
        if t & TLB_MISS != 0 || t & (TLB_WK | TLB_OS) != 0 && t & TLB_HIT == 0 {
            Tlb::Miss
        } else if t & TLB_HIT != 0 {
            Tlb::Hit
        } else {
            Tlb::Unknown
        }
    }

    /// A locked (atomic) access.
    pub fn locked(self) -> bool {
        self.mem_lock() & LOCK_LOCKED != 0
    }

    /// Builds a value from fields (for tests and synthetic data).
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        op: u64,
        lvl: u64,
        snoop: u64,
        lock: u64,
        dtlb: u64,
        lvl_num: u64,
        remote: bool,
        snoopx: u64,
        blk: u64,
        hops: u64,
    ) -> DataSrc {
        DataSrc(
            (op & 0x1f) << OP_SHIFT
                | (lvl & 0x3fff) << LVL_SHIFT
                | (snoop & 0x1f) << SNOOP_SHIFT
                | (lock & 0x3) << LOCK_SHIFT
                | (dtlb & 0x7f) << TLB_SHIFT
                | (lvl_num & 0xf) << LVLNUM_SHIFT
                | u64::from(remote) << REMOTE_SHIFT
                | (snoopx & 0x3) << SNOOPX_SHIFT
                | (blk & 0x7) << BLK_SHIFT
                | (hops & 0x7) << HOPS_SHIFT,
        )
    }
}
