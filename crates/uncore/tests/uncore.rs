//! Discovery, encoding, grouping, replayed arithmetic, refusals and bad input, on the
//! constructed sysfs trees under tests/fixtures (see their PROVENANCE.md), and the
//! real backend on this machine's own /sys.

use numalab_uncore::backend::EventSpec;
use numalab_uncore::sysfs::{Device, FormatField};
use numalab_uncore::{
    compare_with_probe, discover, packages_from_sysfs, Backend, Class, Discovery, Extra,
    PerfBackend, ReplayBackend, Session, UncoreReport, What,
};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load(name: &str) -> Discovery {
    let root = fixture(name);
    discover(&root, &packages_from_sysfs(&root)).expect("fixture discovers")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn run(d: &Discovery, what: &What, backend: &mut ReplayBackend) -> UncoreReport {
    let s = Session::start(d, what, backend).expect("session starts");
    s.stop().expect("session stops")
}

// ---------------------------------------------------------------- discovery

#[test]
fn discovers_sapphire_rapids() {
    let d = load("spr-2s");
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    let count = |c: Class| d.uncore().filter(|x| x.class == c).count();
    assert_eq!(count(Class::IntelImc), 8);
    assert_eq!(count(Class::IntelImcFreeRunning), 4);
    assert_eq!(count(Class::IntelCha), 4);
    assert_eq!(count(Class::IntelUpi), 4);
    assert_eq!(count(Class::OtherUncore), 1);
    assert_eq!(d.other_names(), ["cpu", "software", "tracepoint"]);
    let imc = d.device("uncore_imc_0").unwrap();
    assert_eq!(imc.pmu_type, 40);
    assert_eq!(imc.cpus, [0, 56]);
    assert_eq!(d.socket_of(0), Some(0));
    assert_eq!(d.socket_of(56), Some(1));
    assert_eq!(d.socket_of(168), Some(1));
    let cas = &imc.events["cas_count_read"];
    assert_eq!(cas.scale, Some(6.103515625e-5));
    assert_eq!(cas.unit.as_deref(), Some("MiB"));
    // 6.103515625e-5 MiB is exactly one 64-byte line.
    assert_eq!(6.103515625e-5 * 1024.0 * 1024.0, 64.0);
}

#[test]
fn discovers_genoa_milan_and_cmn() {
    let g = load("genoa-1s");
    assert_eq!(g.uncore().filter(|x| x.class == Class::AmdUmc).count(), 12);
    assert_eq!(g.device("amd_df").unwrap().class, Class::AmdDf);
    assert_eq!(g.device("amd_l3").unwrap().class, Class::OtherUncore);
    let m = load("milan-2s");
    assert_eq!(m.device("amd_df").unwrap().cpus, [0, 64]);
    let a = load("altra-cmn");
    let cmn = a.device("arm_cmn_0").unwrap();
    assert_eq!(cmn.class, Class::ArmCmn);
    assert_eq!(cmn.cpus, [0]);
    assert_eq!(cmn.events["watchpoint_up"].params().len(), 5);
    assert_eq!(a.other_names(), ["armv8_pmuv3_0", "software"]);
}

// ---------------------------------------------------------------- encoding

#[test]
fn encodes_through_format_fields() {
    let d = load("spr-2s");
    let imc = d.device("uncore_imc_0").unwrap();
    let e = imc.encode_event("cas_count_read").unwrap();
    assert_eq!((e.pmu_type, e.config), (40, [0xcf05, 0, 0, 0]));
    assert_eq!(
        imc.encode_event("cas_count_write").unwrap().config[0],
        0xf005
    );
    // A bare one-bit term is a flag: edge is config:18.
    assert_eq!(
        imc.encode_str("event=0x05,edge").unwrap().config[0],
        0x05 | 1 << 18
    );
    // SPR CHA umask spreads over config:8-15,32-63: the low 8 bits of 0xc001fe01 go to
    // bits 8-15, the rest (0xc001fe) from bit 32 up.
    let cha = d.device("uncore_cha_0").unwrap();
    let miss = cha.encode_str("event=0x35,umask=0xc001fe01").unwrap();
    assert_eq!(miss.config[0], 0x00c0_01fe_0000_0135);
    let filt = cha.encode_str("event=0x35,filter_tid=0x3ff").unwrap();
    assert_eq!(filt.config[1], 0x3ff);
    // Milan DF: event 0x7c7 needs bits 8-11 of the event in config:32-35.
    let m = load("milan-2s");
    let df = m.device("amd_df").unwrap();
    let e = df.encode_str("event=0x7c7,umask=0x02").unwrap();
    assert_eq!(e.config[0], 0xc7 | 0x02 << 8 | 0x7 << 32);
    // Values that do not fit are refused, not truncated.
    let err = df.encode_str("event=0x4000").unwrap_err();
    assert!(err.contains("does not fit field event"), "{err}");
    // CMN: type config:0-15, eventid config:16-26.
    let a = load("altra-cmn");
    let cmn = a.device("arm_cmn_0").unwrap();
    assert_eq!(
        cmn.encode_event("hnf_mc_reqs").unwrap().config[0],
        0x5 | 0xd << 16
    );
    // A '?' parameter must be given.
    assert!(cmn
        .encode_event("watchpoint_up")
        .unwrap_err()
        .contains("must be given"));
}

#[test]
fn format_fields_place_bits_lowest_first() {
    let f = FormatField::parse("umask", "config:8-15,32-55\n", Path::new("x")).unwrap();
    assert_eq!(f.width(), 32);
    assert_eq!(f.place(0x1ff).unwrap(), 0xff << 8 | 1 << 32);
    let one = FormatField::parse("edge", "config:18", Path::new("x")).unwrap();
    assert_eq!(one.place(1).unwrap(), 1 << 18);
    assert!(one.place(2).is_err());
}

/// perf-event2's own sysfs parser (DynamicBuilder) agrees with ours wherever it can
/// parse the format (it handles single ranges only, and wants every field set).
#[test]
fn encoding_agrees_with_perf_event2_dynamic_builder() {
    use perf_event::events::Dynamic;
    use perf_event::Builder;
    let mut checked = 0;
    for (fx, dev) in [
        ("altra-cmn", "arm_cmn_0"),
        ("genoa-1s", "amd_umc_0"),
        ("spr-2s", "uncore_imc_free_running_0"),
    ] {
        let d = load(fx);
        let device = d.device(dev).unwrap();
        for (name, ev) in &device.events {
            if !ev.params().is_empty() {
                continue;
            }
            // DynamicBuilder wants every field set and applies them in hash order, so
            // an event is comparable only when no other field overlaps its own (perf
            // applies just the event's terms; CMN's wp_combine overlaps occupid).
            let own: Vec<_> = ev.terms.iter().map(|t| &device.formats[&t.field]).collect();
            let overlaps = device.formats.iter().any(|(f, ff)| {
                !ev.terms.iter().any(|t| &t.field == f)
                    && own
                        .iter()
                        .any(|o| o.word == ff.word && o.mask & ff.mask != 0)
            });
            if overlaps {
                continue;
            }
            let mut b = Dynamic::builder(&device.path).unwrap();
            for f in device.formats.keys() {
                b.field(f, 0).unwrap();
            }
            b.event(name).unwrap();
            let theirs = Builder::new(b.build().unwrap());
            let attrs = theirs.attrs();
            let ours = device.encode_event(name).unwrap();
            assert_eq!(attrs.type_, ours.pmu_type, "{dev}/{name}");
            assert_eq!(attrs.config, ours.config[0], "{dev}/{name}");
            checked += 1;
        }
        // Events numalab encodes from vendor files, on UMC.
        if dev == "amd_umc_0" {
            let mut b = Dynamic::builder(&device.path).unwrap();
            b.field("event", 0x0a)
                .unwrap()
                .field("rdwrmask", 2)
                .unwrap();
            let theirs = Builder::new(b.build().unwrap());
            let ours = device.encode_str("event=0x0a,rdwrmask=0x2").unwrap();
            assert_eq!(theirs.attrs().config, ours.config[0]);
            checked += 1;
        }
    }
    assert!(checked >= 5, "{checked}");
}

// ---------------------------------------------------------------- grouping

#[test]
fn groups_respect_each_box_budget() {
    for fx in ["spr-2s", "genoa-1s", "milan-2s", "altra-cmn"] {
        let d = load(fx);
        let what = What::all();
        let p = numalab_uncore::plan(&d, &what).unwrap();
        assert!(!p.groups.is_empty(), "{fx}");
        for g in &p.groups {
            let (budget, _) = what.budgets.get(g.class);
            match budget {
                Some(n) => assert!(
                    g.events.len() <= n as usize,
                    "{fx} {}: {:?}",
                    g.device,
                    g.events
                ),
                None => assert_eq!(g.events.len(), 1, "{fx} {}", g.device),
            }
        }
    }
    // SPR CHA: clock + hit + miss, clock + demand reads to local + remote DRAM, clock
    // + their prefetches, clock + dir snoop + no snoop; pairs never split.
    let d = load("spr-2s");
    let p = numalab_uncore::plan(&d, &What::all()).unwrap();
    let cha: Vec<Vec<&str>> = p
        .groups
        .iter()
        .filter(|g| g.device == "uncore_cha_0" && g.cpu == 0)
        .map(|g| g.events.iter().map(|e| e.name.as_str()).collect())
        .collect();
    assert_eq!(
        cha,
        [
            vec![
                "UNC_CHA_CLOCKTICKS",
                "UNC_CHA_TOR_INSERTS.IA_HIT",
                "UNC_CHA_TOR_INSERTS.IA_MISS"
            ],
            vec![
                "UNC_CHA_CLOCKTICKS",
                "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_LOCAL",
                "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_REMOTE"
            ],
            vec![
                "UNC_CHA_CLOCKTICKS",
                "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_LOCAL",
                "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_REMOTE"
            ],
            vec![
                "UNC_CHA_CLOCKTICKS",
                "UNC_CHA_DIR_LOOKUP.SNP",
                "UNC_CHA_DIR_LOOKUP.NO_SNP"
            ],
        ]
    );
    assert!(p
        .notes
        .iter()
        .any(|n| n.starts_with("uncore_cha_0: 4 groups")));
    // Every box is opened on each CPU of its cpumask: 8 iMC x 2 sockets.
    let imc = p
        .groups
        .iter()
        .filter(|g| g.class == Class::IntelImc)
        .count();
    assert_eq!(imc, 16);
    // Milan DF: 8 DRAM channels + 4 links, 4 counters, no clock: 3 groups per socket.
    let m = load("milan-2s");
    let p = numalab_uncore::plan(&m, &What::all()).unwrap();
    let sizes: Vec<usize> = p
        .groups
        .iter()
        .filter(|g| g.cpu == 0)
        .map(|g| g.events.len())
        .collect();
    assert_eq!(sizes, [4, 4, 4]);
    // A budget override (e.g. from CPUID on a live Zen 4) changes the grouping.
    let mut what = What::all();
    what.budgets
        .overrides
        .push((Class::AmdDf, Some(16), "test".into()));
    let p = numalab_uncore::plan(&m, &what).unwrap();
    assert_eq!(p.groups.iter().filter(|g| g.cpu == 0).count(), 1);
}

// ---------------------------------------------------------------- arithmetic

/// 1.5e9 CAS reads and 0.5e9 CAS writes in 2 s on socket 0's eight channels (each
/// channel 187.5e6 and 62.5e6); socket 1 a tenth of that.
fn spr_replay() -> ReplayBackend {
    let mut b = ReplayBackend::new(2.0);
    for i in 0..8 {
        let dev = format!("uncore_imc_{i}");
        b.set_all(&dev, "clockticks", 4_000_000_000);
        b.set(&dev, 0, "cas_count_read", 187_500_000);
        b.set(&dev, 0, "cas_count_write", 62_500_000);
        b.set(&dev, 56, "cas_count_read", 18_750_000);
        b.set(&dev, 56, "cas_count_write", 6_250_000);
        b.set(&dev, 0, "UNC_M_CAS_COUNT.ALL", 250_000_000);
        b.set(&dev, 56, "UNC_M_CAS_COUNT.ALL", 25_000_000);
    }
    for i in 0..4 {
        let dev = format!("uncore_cha_{i}");
        b.set_all(&dev, "UNC_CHA_CLOCKTICKS", 4_000_000_000);
        b.set_all(&dev, "UNC_CHA_TOR_INSERTS.IA_HIT", 300_000_000);
        b.set_all(&dev, "UNC_CHA_TOR_INSERTS.IA_MISS", 100_000_000);
        b.set_all(&dev, "UNC_CHA_DIR_LOOKUP.SNP", 20_000_000);
        b.set_all(&dev, "UNC_CHA_DIR_LOOKUP.NO_SNP", 60_000_000);
        b.set_all(&dev, "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_LOCAL", 60_000_000);
        b.set_all(&dev, "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_REMOTE", 20_000_000);
        b.set_all(
            &dev,
            "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_LOCAL",
            15_000_000,
        );
        b.set_all(
            &dev,
            "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_REMOTE",
            5_000_000,
        );
        let upi = format!("uncore_upi_{i}");
        b.set_all(&upi, "UNC_UPI_TxL_FLITS.ALL_DATA", 9_000_000_000);
    }
    b
}

#[test]
fn sapphire_rapids_bandwidth_llc_and_links() {
    let d = load("spr-2s");
    let mut b = spr_replay();
    let r = run(&d, &What::all(), &mut b);
    assert!(r.not_opened.is_empty(), "{:?}", r.not_opened);
    assert!(r.permission.is_none());
    assert_eq!(r.seconds, Some(2.0));
    // Per channel, socket 0: 187.5e6 * 64 B = 12e9 B in 2 s = 6.0 GB/s read;
    // 62.5e6 * 64 B = 4e9 B = 2.0 GB/s write.
    let c = r
        .controllers
        .iter()
        .find(|c| c.device == "uncore_imc_3" && c.cpu == 0)
        .unwrap();
    assert_eq!(c.socket, Some(0));
    assert!(close(c.read_bytes.value.unwrap(), 12.0e9));
    assert!(close(c.read_gbps.value.unwrap(), 6.0));
    assert!(close(c.write_gbps.value.unwrap(), 2.0));
    assert!(close(c.total_gbps.value.unwrap(), 8.0));
    assert_eq!(c.running_fraction, Some(1.0));
    // Socket 0: 1.5e9 * 64 B = 96e9 B in 2 s = 48 GB/s read, 0.5e9 * 64 = 32e9 B =
    // 16 GB/s write. Socket 1: a tenth.
    let s0 = r.socket(0).unwrap();
    assert_eq!(s0.controllers, 8);
    assert!(close(s0.read_bytes.value.unwrap(), 96.0e9));
    assert!(close(s0.read_gbps.value.unwrap(), 48.0));
    assert!(close(s0.write_gbps.value.unwrap(), 16.0));
    let s1 = r.socket(1).unwrap();
    assert!(close(s1.read_gbps.value.unwrap(), 4.8));
    // LLC: 4 CHAs * 3e8 hits, 4 * 1e8 misses: lookups 1.6e9, hit ratio 0.75, although
    // each CHA group was on counters a quarter of the time (4 groups, 4 counters).
    assert!(close(s0.llc_lookups.value.unwrap(), 1.6e9));
    assert!(close(s0.llc_hit_ratio.value.unwrap(), 0.75));
    let cha = r
        .boxes
        .iter()
        .find(|b| b.device == "uncore_cha_0" && b.cpu == 0)
        .unwrap();
    assert_eq!(cha.running_fraction, Some(0.25));
    // Intel's NUMA read shares: per CHA 6e7 + 1.5e7 reads to local DRAM, 2e7 + 5e6 to
    // remote, so 75% and 25% on each socket.
    assert!(close(
        s0.numa_reads_addressed_to_local_dram.value.unwrap(),
        75.0
    ));
    assert!(close(
        s0.numa_reads_addressed_to_remote_dram.value.unwrap(),
        25.0
    ));
    assert!(close(
        s1.numa_reads_addressed_to_remote_dram.value.unwrap(),
        25.0
    ));
    // Directory: 2e7 of 8e7 lookups sent snoops.
    assert!(close(s0.directory_lookups.value.unwrap(), 3.2e8));
    assert!(close(s0.directory_snoop_share.value.unwrap(), 0.25));
    // CMN-only figure: absent with a reason, not 0.
    assert!(s0.snoops_sent.value.is_none() && s0.snoops_sent.reason.is_some());
    // UPI: 9e9 data flits * 64/9 B = 64e9 B in 2 s = 32 GB/s per link end; 4 links.
    let l = r
        .links
        .iter()
        .find(|l| l.link == "uncore_upi_2" && l.cpu == 56)
        .unwrap();
    assert!(close(l.tx_bytes.value.unwrap(), 64.0e9));
    assert!(close(l.tx_gbps.value.unwrap(), 32.0));
    assert!(close(s1.link_tx_bytes.value.unwrap(), 256.0e9));
    // Formulas cited once each.
    assert!(r
        .formulas
        .iter()
        .any(|f| f.figure == "tx_bytes (intel_upi)" && f.source.contains("64 / 9")));
    // Free-running iMC counters and iio are listed, not counted.
    assert!(r
        .devices
        .iter()
        .any(|d| d.name == "uncore_imc_free_running_0"));
    assert!(r
        .boxes
        .iter()
        .all(|b| !b.device.starts_with("uncore_imc_free")));
}

#[test]
fn genoa_umc_bandwidth() {
    let d = load("genoa-1s");
    let mut b = ReplayBackend::new(1.0);
    for i in 0..12 {
        let dev = format!("amd_umc_{i}");
        b.set_all(&dev, "umc_mem_clk", 2_400_000_000);
        b.set_all(&dev, "umc_cas_cmd.rd", 100_000_000);
        b.set_all(&dev, "umc_cas_cmd.wr", 25_000_000);
    }
    let r = run(&d, &What::all(), &mut b);
    assert!(r.not_opened.is_empty(), "{:?}", r.not_opened);
    // Per UMC: 1e8 * 64 B = 6.4e9 B in 1 s = 6.4 GB/s read, 2.5e7 * 64 = 1.6 GB/s write.
    let c = r.controller("amd_umc_7").unwrap();
    assert!(close(c.read_gbps.value.unwrap(), 6.4));
    assert!(close(c.write_gbps.value.unwrap(), 1.6));
    // Socket: 12 * 6.4 = 76.8 GB/s read, 12 * 1.6 = 19.2 GB/s write.
    let s = r.socket(0).unwrap();
    assert!(close(s.read_gbps.value.unwrap(), 76.8));
    assert!(close(s.write_gbps.value.unwrap(), 19.2));
    // The Zen 2/3 DF events do not apply to a PerfMonV2 fabric: said, not guessed.
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("amd_df") && n.contains("config:0-7,32-37")),
        "{:?}",
        r.notes
    );
    assert!(s.llc_hit_ratio.value.is_none());
    assert!(s
        .link_tx_bytes
        .reason
        .as_deref()
        .unwrap()
        .contains("no socket-link counters"));
}

#[test]
fn milan_data_fabric_channels_and_links_multiplexed() {
    let d = load("milan-2s");
    let mut b = ReplayBackend::new(1.0);
    for k in 0..8u64 {
        b.set_all(
            "amd_df",
            &format!("dram_channel_data_controller_{k}"),
            (k + 1) * 10_000_000,
        );
    }
    for k in 0..4 {
        b.set_all(
            "amd_df",
            &format!("remote_outbound_data_controller_{k}"),
            50_000_000,
        );
    }
    let r = run(&d, &What::all(), &mut b);
    // Three groups per socket: each on counters a third of the time.
    assert!(r
        .boxes
        .iter()
        .all(|b| close(b.running_fraction.unwrap(), 1.0 / 3.0)));
    // Channel 2: 3e7 requests * 64 B = 1.92e9 B in 1 s; read/write not separable.
    let c = r.controller("amd_df dram channel 2").unwrap();
    assert!((c.total_gbps.value.unwrap() - 1.92).abs() < 1e-6);
    assert!(c.read_bytes.value.is_none());
    assert!(c
        .read_bytes
        .reason
        .as_deref()
        .unwrap()
        .contains("reads and writes together"));
    // Socket: (1+..+8) * 1e7 * 64 B = 2.304e10 B = 23.04 GB/s.
    let s = r.socket(1).unwrap();
    assert!((s.total_gbps.value.unwrap() - 23.04).abs() < 1e-6);
    assert!(s.read_gbps.value.is_none());
    // Links: 5e7 packets * 32 B = 1.6e9 B each, 4 links = 6.4e9 B.
    assert!((s.link_tx_bytes.value.unwrap() / 6.4e9 - 1.0).abs() < 1e-6);
}

#[test]
fn cmn_mesh_memory_and_slc() {
    let d = load("altra-cmn");
    let mut b = ReplayBackend::new(1.0);
    b.set_all("arm_cmn_0", "hnf_slc_sf_cache_access", 1_000_000_000)
        .set_all("arm_cmn_0", "hnf_cache_miss", 250_000_000)
        .set_all("arm_cmn_0", "hnf_mc_reqs", 500_000_000)
        .set_all("arm_cmn_0", "hnf_mc_retries", 5_000_000)
        .set_all("arm_cmn_0", "hnf_dir_snoops_sent", 1_000_000)
        .set_all("arm_cmn_0", "hnf_brd_snoops_sent", 3_000_000);
    let r = run(&d, &What::all(), &mut b);
    // 5e8 requests * 64 B = 32e9 B in 1 s = 32 GB/s; split unknown.
    let c = r.controller("arm_cmn_0 (all HN-F)").unwrap();
    assert!(close(c.total_gbps.value.unwrap(), 32.0));
    assert!(c.write_gbps.value.is_none());
    let s = r.socket(0).unwrap();
    // SLC: 1 - 2.5e8 / 1e9 = 0.75.
    assert!(close(s.llc_hit_ratio.value.unwrap(), 0.75));
    assert!(close(s.snoops_sent.value.unwrap(), 4.0e6));
    assert!(s.directory_snoop_share.value.is_none());
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("retried 5000000 of 500000000")));
    // Two groups: [access, miss, mc_reqs, mc_retries], [dir, brd].
    assert_eq!(r.boxes.len(), 2);
}

#[test]
fn a_box_whose_clock_reads_zero_is_not_counted_here() {
    let d = load("spr-2s");
    let mut b = spr_replay();
    for i in 0..8 {
        b.set(&format!("uncore_imc_{i}"), 56, "clockticks", 0);
    }
    let r = run(&d, &What::memory(), &mut b);
    let s1 = r.socket(1).unwrap();
    assert!(s1.read_bytes.value.is_none());
    assert!(s1
        .read_bytes
        .reason
        .as_deref()
        .unwrap()
        .contains("not counted here"));
    let e = r
        .boxes
        .iter()
        .find(|b| b.device == "uncore_imc_0" && b.cpu == 56)
        .unwrap();
    assert!(e.events.iter().all(|e| e.state == "not_counted_here"));
    assert!(r.socket(0).unwrap().read_bytes.value.is_some());
}

#[test]
fn events_missing_from_sysfs_are_absent_with_the_reason() {
    // A copy of the SPR tree whose iMC PMUs have no events/ (kernels before 6.4).
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture("spr-2s"), tmp.path());
    for i in 0..8 {
        std::fs::remove_dir_all(tmp.path().join(format!(
            "sys/bus/event_source/devices/uncore_imc_{i}/events"
        )))
        .unwrap();
    }
    let d = discover(tmp.path(), &packages_from_sysfs(tmp.path())).unwrap();
    let mut b = spr_replay();
    let r = run(&d, &What::memory(), &mut b);
    let s0 = r.socket(0).unwrap();
    assert!(s0.read_gbps.value.is_none());
    assert!(s0
        .read_gbps
        .reason
        .as_deref()
        .unwrap()
        .contains("lists no event cas_count_read"));
    assert!(r
        .not_opened
        .iter()
        .any(|n| n.kind == "unencodable" && n.event == "cas_count_read"));
}

// ---------------------------------------------------------------- refusals

#[test]
fn refused_system_wide_counting_is_explained() {
    let d = load("spr-2s");
    let mut b = spr_replay();
    b.refuse_all = Some(libc::EACCES);
    let r = run(&d, &What::all(), &mut b);
    let p = r.permission.as_ref().expect("explained");
    assert_eq!(p.paranoid, Some(2));
    assert!(
        p.message.contains("perf_event_paranoid is 2"),
        "{}",
        p.message
    );
    assert!(p.message.contains("<= 0") && p.message.contains("CAP_PERFMON"));
    assert!(p.remedy.contains("sysctl kernel.perf_event_paranoid=0"));
    assert!(p.remedy.contains("setcap cap_perfmon+ep"));
    // Every planned event is named.
    let planned: usize = b.asked.iter().map(|g| g.events.len()).sum();
    assert_eq!(r.not_opened.len(), planned);
    assert!(r.not_opened.iter().all(|n| n.kind == "denied"));
    assert!(r
        .not_opened
        .iter()
        .any(|n| n.device == "uncore_upi_3" && n.cpu == 56));
    // Figures are absent with reasons, never 0.
    for c in &r.controllers {
        assert!(c.read_bytes.value.is_none());
        assert!(c
            .read_bytes
            .reason
            .as_deref()
            .unwrap()
            .contains("not opened"));
    }
    assert!(r.sockets.iter().all(|s| s.llc_hit_ratio.value.is_none()));
}

#[test]
fn refusal_when_paranoid_already_allows_points_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture("altra-cmn"), tmp.path());
    std::fs::write(
        tmp.path().join("proc/sys/kernel/perf_event_paranoid"),
        "-1\n",
    )
    .unwrap();
    let d = discover(tmp.path(), &packages_from_sysfs(tmp.path())).unwrap();
    let mut b = ReplayBackend::new(1.0);
    b.refuse_all = Some(libc::EPERM);
    let r = run(&d, &What::all(), &mut b);
    let p = r.permission.unwrap();
    assert_eq!(p.paranoid, Some(-1));
    assert!(p.message.contains("seccomp"));
}

#[test]
fn one_event_not_supported_is_named() {
    let d = load("spr-2s");
    let mut b = spr_replay();
    b.fail("uncore_upi_1", "UNC_UPI_TxL_FLITS.ALL_DATA", libc::ENOENT);
    let r = run(&d, &What::all(), &mut b);
    assert!(r.permission.is_none());
    let n: Vec<_> = r
        .not_opened
        .iter()
        .filter(|n| n.device == "uncore_upi_1")
        .collect();
    assert_eq!(n.len(), 2); // both sockets
    assert!(n.iter().all(|n| n.kind == "not_supported"));
    let l = r.links.iter().find(|l| l.link == "uncore_upi_1").unwrap();
    assert!(l.tx_bytes.value.is_none());
    assert!(r.socket(0).unwrap().link_tx_bytes.value.is_none());
}

// ---------------------------------------------------------------- probe comparison

#[test]
fn probe_comparison() {
    let d = load("spr-2s");
    let r = run(&d, &What::memory(), &mut spr_replay());
    // Controllers: 48 + 4.8 = 52.8 GB/s read, 16 + 1.6 = 17.6 GB/s write over 2 s.
    let ok = compare_with_probe(&r, 105.6e9, 35.2e9, 2.0).unwrap();
    assert_eq!(ok.verdict, "agree");
    assert!(!ok.is_finding());
    let off = compare_with_probe(&r, 80.0e9, 35.2e9, 2.0).unwrap();
    assert_eq!(off.verdict, "disagree");
    assert!(off.is_finding());
    let read = off.sides.iter().find(|s| s.side == "read").unwrap();
    assert!(close(read.difference_pct, 100.0 * (52.8 - 40.0) / 40.0));
    // Write-allocate: a probe that read 70.4 GB and wrote 35.2 GB without NT stores.
    let rfo = compare_with_probe(&r, 70.4e9, 35.2e9, 2.0).unwrap();
    assert!(rfo.text.contains("write-allocate"), "{}", rfo.text);
    // Controllers that count nothing: not counted here, not a finding.
    let mut zero = ReplayBackend::new(2.0);
    for i in 0..8 {
        let dev = format!("uncore_imc_{i}");
        zero.set_all(&dev, "clockticks", 1);
        zero.set_all(&dev, "cas_count_read", 0);
        zero.set_all(&dev, "cas_count_write", 0);
    }
    let rz = run(&d, &What::memory(), &mut zero);
    let nc = compare_with_probe(&rz, 1e9, 0.0, 2.0).unwrap();
    assert_eq!(nc.verdict, "not_counted");
    // No uncore at all: nothing to compare.
    let none = run(
        &load("altra-cmn"),
        &What::only(Vec::new()),
        &mut ReplayBackend::new(1.0),
    );
    assert!(compare_with_probe(&none, 1e9, 0.0, 1.0).is_none());
}

// ---------------------------------------------------------------- bad input

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dst = to.join(e.file_name());
        if e.path().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

fn bad_pmu(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sys/bus/event_source/devices/uncore_imc_0");
    let mut all = vec![
        ("type", "40\n"),
        ("cpumask", "0\n"),
        ("format/event", "config:0-7\n"),
        ("format/umask", "config:8-15\n"),
        ("events/cas_count_read", "event=0x05,umask=0xcf\n"),
    ];
    all.retain(|(p, _)| !files.iter().any(|(q, _)| q == p));
    all.extend_from_slice(files);
    for (p, t) in all {
        let f = dir.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, t).unwrap();
    }
    (tmp, dir)
}

#[test]
fn malformed_sysfs_files_name_the_file() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "events/cas_count_read",
            "event0x05\n",
            "events/cas_count_read",
            "has no '=value'",
        ),
        (
            "events/cas_count_read",
            "event=0x05,bogus=1\n",
            "events/cas_count_read",
            "unknown format field \"bogus\"",
        ),
        (
            "events/cas_count_read",
            "event=0xzz\n",
            "events/cas_count_read",
            "is not a number",
        ),
        (
            "events/cas_count_read",
            "\n",
            "events/cas_count_read",
            "empty event string",
        ),
        (
            "format/umask",
            "cfg:8-15\n",
            "format/umask",
            "unknown perf_event_attr word",
        ),
        ("format/umask", "config8-15\n", "format/umask", "has no ':'"),
        (
            "format/umask",
            "config:15-8\n",
            "format/umask",
            "runs backwards",
        ),
        ("format/umask", "config:8-99\n", "format/umask", "beyond 63"),
        ("type", "abc\n", "type", "is not a non-negative integer"),
        ("cpumask", "0-\n", "cpumask", "not a CPU list"),
        (
            "events/cas_count_read.scale",
            "lots\n",
            "events/cas_count_read.scale",
            "is not a number",
        ),
    ];
    for (file, text, named, says) in cases {
        let (_tmp, dir) = bad_pmu(&[(file, text)]);
        let err = Device::read(&dir).expect_err(file);
        assert_eq!(err.path, dir.join(named), "{file}: {err}");
        assert!(err.to_string().contains(says), "{file}: {err}");
        assert!(err
            .to_string()
            .starts_with(&dir.join(named).display().to_string()));
    }
}

#[test]
fn discovery_keeps_going_past_a_malformed_pmu() {
    let (tmp, _) = bad_pmu(&[("type", "x\n")]);
    let good = tmp.path().join("sys/bus/event_source/devices/software");
    std::fs::create_dir_all(&good).unwrap();
    std::fs::write(good.join("type"), "1\n").unwrap();
    let d = discover(tmp.path(), &Default::default()).unwrap();
    assert_eq!(d.devices.len(), 1);
    assert_eq!(d.problems.len(), 1);
    let r = run(&d, &What::all(), &mut ReplayBackend::new(1.0));
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("unreadable PMU") && n.contains("uncore_imc_0/type")));
    // A missing tree is one clear error.
    let err = discover(&tmp.path().join("nowhere"), &Default::default()).unwrap_err();
    assert!(err
        .to_string()
        .contains("nowhere/sys/bus/event_source/devices"));
}

// ---------------------------------------------------------------- this machine

#[test]
fn this_machine_without_uncore_pmus_says_so() {
    let root = Path::new("/");
    let d = discover(root, &packages_from_sysfs(root)).unwrap();
    if d.uncore().next().is_some() {
        eprintln!("this machine has uncore PMUs; the no-uncore test does not apply");
        return;
    }
    let mut backend = PerfBackend;
    let s = Session::start(&d, &What::all(), &mut backend).unwrap();
    let r = s.stop().unwrap();
    assert!(r.devices.is_empty() && r.boxes.is_empty());
    let note = r
        .notes
        .iter()
        .find(|n| n.contains("no uncore PMU found"))
        .unwrap();
    assert!(note.contains("software"), "{note}");
    assert!(compare_with_probe(&r, 1e9, 1e9, 1.0).is_none());
}

#[test]
fn real_backend_counts_a_system_wide_sysfs_pmu_here() {
    let root = Path::new("/");
    let d = discover(root, &packages_from_sysfs(root)).unwrap();
    // The software PMU has no format: raw config words. config=0 is cpu-clock.
    let mut extra = vec![Extra {
        device: "software".into(),
        event: "config=0".into(),
    }];
    if d.device("msr")
        .is_some_and(|m| m.events.contains_key("tsc"))
    {
        extra.push(Extra {
            device: "msr".into(),
            event: "tsc".into(),
        });
    }
    let mut backend = PerfBackend;
    let s = Session::start(&d, &What::only(extra.clone()), &mut backend).unwrap();
    let t = std::time::Instant::now();
    let mut x = 0u64;
    while t.elapsed() < std::time::Duration::from_millis(50) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    std::hint::black_box(x);
    let r = s.stop().unwrap();
    assert_eq!(r.boxes.len(), extra.len());
    for b in &r.boxes {
        let e = &b.events[0];
        match e.state.as_str() {
            "counted" => {
                assert!(e.value.unwrap() > 0.0, "{b:?}");
                assert!(b.time_enabled_ns.unwrap() >= 40_000_000, "{b:?}");
                assert!(b.running_fraction.unwrap() > 0.0);
            }
            "not_opened" if effective_uid_is_root() => {
                panic!("{}: root may count system-wide: {:?}", b.device, e.reason)
            }
            "not_opened" => {
                // Not permitted here: then the refusal must be explained.
                let kind = &r
                    .not_opened
                    .iter()
                    .find(|n| n.device == b.device)
                    .unwrap()
                    .kind;
                if kind == "denied" {
                    assert!(r.permission.is_some());
                }
                eprintln!("{}: {}", b.device, e.reason.as_deref().unwrap_or(""));
            }
            other => panic!("{}: {other}", b.device),
        }
    }
}

fn effective_uid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

#[test]
fn real_backend_reports_an_unknown_pmu_type_per_event() {
    // A type no PMU has: the kernel answers ENOENT, which is named, not an error.
    let spec = numalab_uncore::backend::GroupSpec {
        device: "nonexistent".into(),
        cpu: 0,
        events: vec![EventSpec {
            name: "nothing".into(),
            encoding: numalab_uncore::sysfs::Encoding {
                pmu_type: 0x7fff_0000,
                config: [0; 4],
            },
        }],
    };
    let mut b = PerfBackend;
    let mut o = b.open(&[spec]);
    let st = o.statuses();
    assert!(st[0][0].is_err());
    assert!(o.read()[0].is_err());
}

#[test]
fn records_round_trip() {
    let d = load("spr-2s");
    let r = run(&d, &What::all(), &mut spr_replay());
    let rec = numalab_uncore::UncoreCounts {
        context: Some("test".into()),
        report: r,
    };
    let json = serde_json::to_string(&rec).unwrap();
    let back: numalab_uncore::UncoreCounts = serde_json::from_str(&json).unwrap();
    assert_eq!(back, rec);
    // Absent figures carry their reason in the JSON.
    assert!(json.contains("\"value\":null,\"reason\":"));
}
