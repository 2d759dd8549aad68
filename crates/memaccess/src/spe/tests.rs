//! The decoder on bytes encoded here, packet by packet, from the architecture's format.

use super::*;
use crate::datasrc::Level;

/// Encodes SPE packets as the architecture lays them out.
#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn le(&mut self, v: u64, n: usize) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes()[..n]);
        self
    }
    /// Address packet, short header for index < 8, else the extended one.
    fn addr(&mut self, index: u8, v: u64) -> &mut Self {
        if index < 8 {
            self.0.push(0xb0 | index);
        } else {
            self.0.extend([0x20 | (index >> 3), 0xb0 | (index & 7)]);
        }
        self.le(v, 8)
    }
    fn addr_extended(&mut self, index: u8, v: u64) -> &mut Self {
        self.0.extend([0x20 | (index >> 3), 0xb0 | (index & 7)]);
        self.le(v, 8)
    }
    fn counter(&mut self, index: u8, v: u16) -> &mut Self {
        self.0.push(0x98 | index);
        self.le(u64::from(v), 2)
    }
    fn counter_extended(&mut self, index: u8, v: u16) -> &mut Self {
        self.0.extend([0x20 | (index >> 3), 0x98 | (index & 7)]);
        self.le(u64::from(v), 2)
    }
    /// Events packet with a payload of 2^sz bytes.
    fn events(&mut self, v: u64, sz: u8) -> &mut Self {
        self.0.push(0x42 | (sz << 4));
        self.le(v, 1 << sz)
    }
    fn source(&mut self, v: u64, sz: u8) -> &mut Self {
        self.0.push(0x43 | (sz << 4));
        self.le(v, 1 << sz)
    }
    fn op(&mut self, class: u8, payload: u8) -> &mut Self {
        self.0.extend([0x48 | class, payload]);
        self
    }
    fn context(&mut self, v: u32) -> &mut Self {
        self.0.push(0x64);
        self.le(u64::from(v), 4)
    }
    fn end(&mut self) -> &mut Self {
        self.0.push(0x01);
        self
    }
    fn pad(&mut self, n: usize) -> &mut Self {
        self.0.extend(std::iter::repeat_n(0u8, n));
        self
    }
    fn timestamp(&mut self, v: u64) -> &mut Self {
        self.0.push(0x71);
        self.le(v, 8)
    }
    /// A load or store record as Neoverse writes one: PC (EL0), data VA (tagged), PA,
    /// latencies, events, operation, source, then a timestamp.
    #[allow(clippy::too_many_arguments)]
    fn mem(
        &mut self,
        store: bool,
        pc: u64,
        va: u64,
        pa: Option<u64>,
        lat: u16,
        ev: u64,
        src: u64,
    ) -> &mut Self {
        self.addr(0, pc);
        self.addr(2, va);
        if let Some(pa) = pa {
            self.addr(3, pa | 1 << 63);
        }
        self.counter(0, lat).counter(1, 3).counter(2, 7);
        self.events(ev, 1).op(1, u8::from(store)).source(src, 1);
        self.timestamp(123_456)
    }
}

const RET: u64 = events::RETIRED;

#[test]
fn a_load_with_every_field() {
    let mut e = Enc::default();
    // PC with EL0 in bits 62:61 = 0, NS bit 63; a VA with a tag in the top byte.
    e.context(4242);
    e.addr(0, 0x8000_0000_0040_1234);
    e.addr(2, 0x5a00_ffff_8000_1000);
    e.addr(3, 0x8000_0008_8000_1000);
    e.counter(0, 512)
        .counter(1, 20)
        .counter(2, 40)
        .events(
            RET | events::L1D_ACCESS | events::L1D_REFILL | events::TLB_ACCESS,
            1,
        )
        .op(1, 0)
        .source(0xe, 1)
        .end();
    let d = decode(&e.0);
    assert_eq!((d.bad_bytes, d.incomplete, d.truncated), (0, 0, false));
    assert_eq!(d.records.len(), 1);
    let r = &d.records[0];
    assert_eq!(r.pc, Some(0x40_1234));
    assert_eq!(r.el, Some(0));
    assert_eq!(r.virt_addr, Some(0xffff_8000_1000));
    assert_eq!(r.phys_addr, Some(0x8_8000_1000));
    assert_eq!(
        (r.total_latency, r.issue_latency, r.translation_latency),
        (Some(512), Some(20), Some(40))
    );
    assert!(r.op.unwrap().is_load() && !r.op.unwrap().is_store());
    assert_eq!(r.source.map(Source::neoverse), Some(Source::Dram));
    assert_eq!(r.context, Some(4242));
    assert!(r.has(events::L1D_REFILL) && !r.mispredicted() && !r.remote());
    let s = to_mem_sample(r, 1, 2, 3).unwrap();
    // The caller names the process and thread (the context is the caller's to read).
    assert_eq!((s.pid, s.tid, s.cpu), (1, 2, 3));
    assert_eq!(
        (s.ip, s.addr, s.weight),
        (Some(0x40_1234), 0xffff_8000_1000, 512)
    );
    assert_eq!(s.phys_addr, Some(0x8_8000_1000));
    assert_eq!(s.data_src.level(), Level::LocalRam);
    assert_eq!(s.data_src.op(), crate::datasrc::Op::Load);
    assert_eq!(s.data_src.tlb(), crate::datasrc::Tlb::Hit);
    assert!(!s.data_src.remote_node());
}

#[test]
fn kernel_pc_sign_extends_and_el_is_read() {
    let mut e = Enc::default();
    // EL1 (bits 62:61 = 01), address bit 55 set: a kernel address.
    e.addr(0, 1 << 61 | 0x00ff_8000_1010_0000).op(2, 1).end();
    let r = &decode(&e.0).records[0];
    assert_eq!(r.pc, Some(0xffff_8000_1010_0000));
    assert_eq!(r.el, Some(1));
}

#[test]
fn extended_headers_give_the_same_packets() {
    let mut a = Enc::default();
    a.addr(2, 0x1000).counter(0, 99).op(1, 1).end();
    let mut b = Enc::default();
    b.addr_extended(2, 0x1000)
        .counter_extended(0, 99)
        .op(1, 1)
        .end();
    assert_eq!(b.0.len(), a.0.len() + 2);
    assert_eq!(decode(&a.0).records, decode(&b.0).records);
    assert_eq!(decode(&b.0).consumed, b.0.len());
    // An index above 7 (only the extended header can say it) is read and ignored.
    let mut c = Enc::default();
    c.addr(9, 0xdead)
        .counter_extended(12, 5)
        .addr(2, 0x2000)
        .op(1, 0)
        .end();
    let d = decode(&c.0);
    assert_eq!(d.bad_bytes, 0);
    assert_eq!(d.records[0].virt_addr, Some(0x2000));
    assert_eq!(d.records[0].total_latency, None);
    // An extended header followed by neither address nor counter is a bad byte.
    let d = decode(&[0x20, 0x01]);
    assert_eq!(d.bad_bytes, 1);
}

#[test]
fn payload_sizes_follow_the_header() {
    for sz in 0..4u8 {
        let mut e = Enc::default();
        e.events(events::MISPREDICTED, sz)
            .source(0x9, sz)
            .op(2, 1)
            .end();
        let d = decode(&e.0);
        assert_eq!(d.records.len(), 1, "sz {sz}");
        assert!(d.records[0].mispredicted());
        assert_eq!(d.records[0].source, Some(9));
    }
}

#[test]
fn records_end_at_end_or_timestamp_and_padding_is_skipped() {
    let mut e = Enc::default();
    e.pad(3);
    e.mem(false, 0x400000, 0x10000, None, 10, RET, 0x0);
    e.pad(5);
    e.mem(true, 0x400004, 0x10040, None, 20, RET, 0x8);
    e.end(); // an End with nothing before it: no record
    e.addr(0, 0x400008).op(2, 0); // no End: incomplete
    let d = decode(&e.0);
    assert_eq!(d.records.len(), 2);
    assert_eq!(d.incomplete, 1);
    assert_eq!(d.records[0].timestamp, Some(123_456));
    assert!(d.records[1].op.unwrap().is_store());
    assert_eq!(
        to_mem_sample(&d.records[1], 7, 7, 0)
            .unwrap()
            .data_src
            .level(),
        Level::L2
    );
    // Unknown header bytes are skipped, one at a time.
    let mut bad = vec![0xff, 0x02, 0xc0];
    bad.extend(&e.0);
    let d2 = decode(&bad);
    assert_eq!(d2.bad_bytes, 3);
    assert_eq!(d2.records, d.records);
}

#[test]
fn neoverse_sources_map_to_levels() {
    let cases: [(u64, u64, Level, bool, bool); 9] = [
        (0x0, 0, Level::L1, false, false),
        (0x8, 0, Level::L2, false, false),
        (0x9, 0, Level::PeerCache, false, true),
        (0xa, 0, Level::L3, false, false),
        (0xb, 0, Level::MemorySideCache, false, false),
        (0xc, 0, Level::PeerCache, false, true),
        (0xd, events::REMOTE_ACCESS, Level::Unknown, true, false),
        (0xe, 0, Level::LocalRam, false, false),
        (0xe, events::REMOTE_ACCESS, Level::RemoteRam, true, false),
    ];
    for (src, ev, level, remote, peer) in cases {
        let mut e = Enc::default();
        e.mem(false, 0x400000, 0x10000, None, 100, RET | ev, src);
        let r = &decode(&e.0).records[0];
        let ds = to_mem_sample(r, 1, 1, 0).unwrap().data_src;
        assert_eq!(ds.level(), level, "source {src:#x}");
        assert_eq!(ds.remote_node(), remote, "source {src:#x}");
        assert_eq!(ds.hitm(), peer, "source {src:#x}");
        assert_eq!(r.remote(), remote || src == 0xd, "source {src:#x}");
    }
    // An unknown value: level not said.
    let mut e = Enc::default();
    e.mem(false, 0x400000, 0x10000, None, 100, RET, 0x3);
    let r = &decode(&e.0).records[0];
    assert_eq!(r.source.map(Source::neoverse), Some(Source::Other(3)));
    assert_eq!(data_src(r).level(), Level::Unknown);
    // No source packet: an L1D access without refill is an L1 hit, a TLB walk a miss.
    let mut e = Enc::default();
    e.addr(2, 0x10000)
        .events(
            events::L1D_ACCESS | events::TLB_ACCESS | events::TLB_WALK,
            0,
        )
        .op(1, 0)
        .end();
    let ds = data_src(&decode(&e.0).records[0]);
    assert_eq!(ds.level(), Level::L1);
    assert_eq!(ds.tlb(), crate::datasrc::Tlb::Miss);
    // An atomic (extended class, AT bit) is locked.
    let mut e = Enc::default();
    e.addr(2, 0x10000).op(1, 0x06).end();
    let r = &decode(&e.0).records[0];
    assert!(r.op.unwrap().is_atomic());
    assert!(data_src(r).locked());
}

#[test]
fn branches_are_not_memory_samples_but_are_summarised() {
    let mut e = Enc::default();
    for i in 0..5u64 {
        e.addr(0, 0x400100)
            .addr(1, 0x400200)
            .events(RET | if i < 3 { events::MISPREDICTED } else { 0 }, 0)
            .op(2, 1)
            .end();
    }
    e.addr(0, 0x400300)
        .events(RET | events::MISPREDICTED | events::NOT_TAKEN, 0)
        .op(2, 3)
        .end();
    e.mem(
        false,
        0x400000,
        0x10000,
        None,
        300,
        RET | events::REMOTE_ACCESS,
        0xe,
    );
    e.mem(false, 0x400000, 0x10040, None, 30, RET, 0x8);
    let d = decode(&e.0);
    assert_eq!(d.records.len(), 8);
    assert!(d.records[0].op.unwrap().is_conditional_branch());
    assert!(d.records[5].op.unwrap().is_indirect_branch());
    assert_eq!(d.records[0].branch_target, Some(0x400200));
    assert!(to_mem_sample(&d.records[0], 1, 1, 0).is_none());
    let s = Summary::of(&d.records);
    assert_eq!(
        (
            s.records,
            s.memory,
            s.memory_without_phys,
            s.branches,
            s.mispredicted,
            s.remote
        ),
        (8, 2, 2, 6, 4, 1)
    );
    assert_eq!(s.top_mispredicted(), vec![(0x400100, 3), (0x400300, 1)]);
    let notes = s.notes("not asked (pa_enable=0)");
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes[0]
        .contains("4 of 6 sampled branches mispredicted; most at 0x400100 (3), 0x400300 (1)"));
    assert!(notes[1].contains("1 of 2"));
    assert!(notes[2].contains("2 of 2 loads and stores have no physical address: not asked"));
}

/// xorshift64*: deterministic pseudo-random bytes for the property checks.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn random_bytes_and_truncations_never_panic() {
    let mut next = rng(0x5eed);
    for round in 0..2000 {
        let n = (next() % 300) as usize;
        let mut b: Vec<u8> = (0..n).map(|_| next() as u8).collect();
        // Bias half the rounds towards valid headers so that packets are decoded.
        if round % 2 == 0 {
            const H: [u8; 12] = [
                0x00, 0x01, 0x71, 0x42, 0x52, 0x63, 0x65, 0x49, 0xb2, 0x98, 0x20, 0x21,
            ];
            for x in b.iter_mut().step_by(3) {
                *x = H[(next() % H.len() as u64) as usize];
            }
        }
        for cut in [0, n / 3, n / 2, n.saturating_sub(1), n] {
            let d = decode(&b[..cut]);
            for r in &d.records {
                let _ = to_mem_sample(r, 1, 1, 0);
                let _ = data_src(r);
            }
            let _ = Summary::of(&d.records).notes("x");
        }
    }
}

#[test]
fn every_prefix_of_a_valid_stream_decodes_a_prefix_of_its_records() {
    let mut e = Enc::default();
    e.mem(false, 0x400000, 0x10000, Some(0x8000_0000), 100, RET, 0xe);
    e.addr(0, 0x400100)
        .events(RET | events::MISPREDICTED, 0)
        .op(2, 1)
        .end();
    e.pad(7);
    e.mem(true, 0x400004, 0x10040, None, 20, RET, 0x9);
    let full = decode(&e.0);
    assert_eq!(full.records.len(), 3);
    for n in 0..=e.0.len() {
        let d = decode(&e.0[..n]);
        assert_eq!(d.bad_bytes, 0, "prefix {n}");
        assert!(d.records.len() <= 3);
        assert_eq!(d.records[..], full.records[..d.records.len()], "prefix {n}");
        // What is left after `consumed` decodes, with the rest, to the remaining records.
        let rest = decode(&e.0[d.consumed..]);
        assert_eq!(
            rest.records[..],
            full.records[d.records.len()..],
            "prefix {n}"
        );
    }
}

#[test]
fn decoded_records_feed_the_shared_attribution() {
    use crate::sample::{Mapping, Samples};
    let mut e = Enc::default();
    // 6 slow remote loads and 2 fast local ones into an anonymous buffer, 2 stores into
    // the heap, 1 mispredicted branch; no physical addresses.
    for i in 0..6u64 {
        e.mem(
            false,
            0x400010,
            0x7f00_0000_0000 + i * 64,
            None,
            600,
            RET | events::REMOTE_ACCESS,
            0xe,
        );
    }
    for i in 0..2u64 {
        e.mem(
            false,
            0x400020,
            0x7f00_0000_1000 + i * 64,
            None,
            4,
            RET,
            0x0,
        );
    }
    for i in 0..2u64 {
        e.mem(true, 0x400030, 0x60_0000 + i * 8, None, 9, RET, 0x0);
    }
    e.addr(0, 0x400040)
        .events(RET | events::MISPREDICTED, 0)
        .op(2, 1)
        .end();
    let d = decode(&e.0);
    let mut data = Samples::default();
    let ev = data.event_index("arm_spe_0//");
    for (i, m) in [
        (0x7f00_0000_0000u64, 0x10_0000u64, "//anon"),
        (0x60_0000, 0x2_1000, "[heap]"),
    ]
    .into_iter()
    .enumerate()
    {
        data.mappings.push(Mapping {
            seq: i as u64,
            pid: 77,
            start: m.0,
            len: m.1,
            pgoff: 0,
            prot: Some("rw-p".into()),
            path: m.2.into(),
            dev_ino: None,
            build_id: None,
        });
    }
    for r in &d.records {
        if let Some(mut s) = to_mem_sample(r, 77, 77, 2) {
            s.seq = 10 + data.samples.len() as u64;
            s.event = ev;
            data.samples.push(s);
        }
    }
    data.has_ip = true;
    assert_eq!(data.samples.len(), 10);
    let attribution = crate::attribute::attribute(
        &data,
        &crate::attribute::AttributeOptions {
            read_symbols: false,
            regions: Vec::new(),
        },
    );
    let nodes = crate::node::resolve_nodes(&data.samples, &mut []);
    let rec = crate::analysis::analyze(
        &data,
        &attribution,
        &nodes,
        &crate::analysis::AnalysisOptions::default(),
        numalab_records::memaccess::MemSource {
            kind: "measured".into(),
            path: None,
            format: None,
            command: Vec::new(),
            pid: Some(77),
            events: Vec::new(),
        },
        "Arm SPE".into(),
    );
    assert_eq!(
        (rec.samples, rec.loads, rec.stores, rec.remote),
        (10, 8, 2, 6)
    );
    let anon = rec.mappings.iter().find(|m| m.kind == "anonymous").unwrap();
    assert_eq!((anon.samples, anon.loads), (8, 8));
    let heap = rec.mappings.iter().find(|m| m.kind == "heap").unwrap();
    assert_eq!((heap.samples, heap.stores), (2, 2));
    assert_eq!(rec.slow_loads, anon.slow_loads);
    assert!(rec.slow_loads >= 6, "{}", rec.slow_loads);
}
