//! `perf_mem_data_src` decoding against values built by hand from the documented bit
//! positions (include/uapi/linux/perf_event.h): op 0, lvl 5, snoop 19, lock 24, dtlb
//! 26, lvl_num 33, remote 37, snoopx 38, blk 40, hops 43.

use numalab_memaccess::datasrc::{DataSrc, Level, Op, Tlb};

#[allow(clippy::too_many_arguments)]
fn v(
    op: u64,
    lvl: u64,
    snoop: u64,
    lock: u64,
    dtlb: u64,
    num: u64,
    remote: u64,
    snoopx: u64,
    blk: u64,
    hops: u64,
) -> u64 {
    op | lvl << 5
        | snoop << 19
        | lock << 24
        | dtlb << 26
        | num << 33
        | remote << 37
        | snoopx << 38
        | blk << 40
        | hops << 43
}

#[test]
fn fields_come_from_their_bit_positions() {
    let x = v(0x2, 0x102, 0x08, 0x1, 0x0a, 0xd, 1, 0x2, 0x4, 3);
    let d = DataSrc(x);
    assert_eq!(d.mem_op(), 0x2);
    assert_eq!(d.mem_lvl(), 0x102);
    assert_eq!(d.mem_snoop(), 0x08);
    assert_eq!(d.mem_lock(), 0x1);
    assert_eq!(d.mem_dtlb(), 0x0a);
    assert_eq!(d.mem_lvl_num(), 0xd);
    assert!(d.mem_remote());
    assert_eq!(d.mem_snoopx(), 0x2);
    assert_eq!(d.mem_blk(), 0x4);
    assert_eq!(d.mem_hops(), 3);
    assert_eq!(
        DataSrc::build(0x2, 0x102, 0x08, 0x1, 0x0a, 0xd, true, 0x2, 0x4, 3),
        d
    );
    // The fixture's remote-RAM load, as a literal.
    assert_eq!(
        v(0x2, 0x102, 0x08, 0x1, 0x0a, 0xd, 1, 0, 0x1, 2),
        0x113a29402042
    );
}

#[test]
fn levels_remote_hitm_and_tlb() {
    // Newer fields: lvl_num RAM + remote + hops 2 (remote node, same socket).
    let d = DataSrc(v(0x2, 0, 0x08, 0, 0, 0xd, 1, 0, 0, 2));
    assert_eq!(
        (d.op(), d.level(), d.remote_node()),
        (Op::Load, Level::RemoteRam, true)
    );
    // Remote bit with hops 0 (remote core, same node): a peer cache, not another node.
    let d = DataSrc(v(0x2, 0, 0x04, 0, 0, 0x3, 1, 0, 0, 1));
    assert_eq!((d.level(), d.remote_node()), (Level::PeerCache, false));
    // Remote cache two hops away via lvl_num ANY_CACHE + remote + hops 3.
    let d = DataSrc(v(0x2, 0, 0, 0, 0, 0xb, 1, 0, 0, 3));
    assert_eq!((d.level(), d.remote_node()), (Level::RemoteCache, true));
    // Old bits only: REM_CCE1 | HIT.
    let d = DataSrc(v(0x2, 0x400 | 0x2, 0x10, 0, 0, 0, 0, 0, 0, 0));
    assert_eq!(
        (d.level(), d.remote_node(), d.hitm()),
        (Level::RemoteCache, true, true)
    );
    // Old bits: local RAM hit; L1 hit; a miss names no source.
    assert_eq!(
        DataSrc(v(0x2, 0x80 | 0x2, 0, 0, 0, 0, 0, 0, 0, 0)).level(),
        Level::LocalRam
    );
    assert_eq!(
        DataSrc(v(0x2, 0x08 | 0x2, 0, 0, 0, 0, 0, 0, 0, 0)).level(),
        Level::L1
    );
    assert_eq!(
        DataSrc(v(0x2, 0x08 | 0x4, 0, 0, 0, 0, 0, 0, 0, 0)).level(),
        Level::Unknown
    );
    // lvl_num wins over mem_lvl when both are set.
    assert_eq!(
        DataSrc(v(0x2, 0x40 | 0x2, 0, 0, 0, 0x2, 0, 0, 0, 0)).level(),
        Level::L2
    );
    // NA everywhere (what a PMU without a source says).
    let na = DataSrc(v(0x1, 0x1, 0x1, 0x1, 0x1, 0xf, 0, 0, 0x1, 0));
    assert_eq!(
        (na.op(), na.level(), na.has_level(), na.tlb()),
        (Op::Unknown, Level::Unknown, false, Tlb::Unknown)
    );
    // Arm SPE reports a peer transfer (snoopx PEER) where x86 reports HITM.
    assert!(DataSrc(v(0x2, 0, 0, 0, 0, 0x3, 0, 0x2, 0, 0)).hitm());
    // Stores, prefetches.
    assert_eq!(DataSrc(v(0x4, 0, 0, 0, 0, 0, 0, 0, 0, 0)).op(), Op::Store);
    assert_eq!(
        DataSrc(v(0x8, 0, 0, 0, 0, 0, 0, 0, 0, 0)).op(),
        Op::Prefetch
    );
    // TLB: L1|HIT is a hit; WK|MISS a miss; L2|MISS a miss.
    assert_eq!(
        DataSrc(v(0x2, 0, 0, 0, 0x08 | 0x02, 0, 0, 0, 0, 0)).tlb(),
        Tlb::Hit
    );
    assert_eq!(
        DataSrc(v(0x2, 0, 0, 0, 0x20 | 0x04, 0, 0, 0, 0, 0)).tlb(),
        Tlb::Miss
    );
    assert_eq!(
        DataSrc(v(0x2, 0, 0, 0, 0x10 | 0x04, 0, 0, 0, 0, 0)).tlb(),
        Tlb::Miss
    );
    // Locked.
    assert!(DataSrc(v(0x2, 0, 0, 0x2, 0, 0, 0, 0, 0, 0)).locked());
    // Later kernels' levels.
    assert_eq!(
        DataSrc(v(0x2, 0, 0, 0, 0, 0x9, 0, 0, 0, 0)).level(),
        Level::Cxl
    );
    assert_eq!(
        DataSrc(v(0x2, 0, 0, 0, 0, 0xe, 0, 0, 0, 0)).level(),
        Level::Pmem
    );
}

#[test]
fn percentile_and_bins() {
    use numalab_memaccess::analysis::{bin_of, nearest_rank};
    let v: Vec<u64> = (1..=10).collect();
    assert_eq!(nearest_rank(&v, 90.0), Some(9));
    assert_eq!(nearest_rank(&v, 100.0), Some(10));
    assert_eq!(nearest_rank(&v, 0.0), Some(1));
    assert_eq!(nearest_rank(&[], 90.0), None);
    assert_eq!(
        [
            bin_of(0),
            bin_of(1),
            bin_of(2),
            bin_of(3),
            bin_of(4),
            bin_of(255),
            bin_of(256)
        ],
        [0, 0, 1, 1, 2, 7, 8]
    );
}
