//! Facility detection on constructed sysfs trees and on this machine, event-term
//! encoding, and the parsing of kernel records from bytes laid out as the kernel
//! writes them.

use numalab_memaccess::live::{
    self, encode_terms, parse_mmap2_record, parse_sample_record, FacilityKind, SAMPLE_TYPE,
    SAMPLE_TYPE_PHYS,
};
use numalab_memaccess::{detect, LiveError, LiveOptions, Target};
use std::path::Path;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn dev(root: &Path, name: &str) -> String {
    let _ = root;
    format!("bus/event_source/devices/{name}")
}

fn spe(root: &Path) {
    let d = dev(root, "arm_spe_0");
    write(root, &format!("{d}/type"), "8\n");
    write(root, &format!("{d}/format/ts_enable"), "config:0\n");
    write(root, &format!("{d}/format/pa_enable"), "config:1\n");
    write(root, &format!("{d}/format/load_filter"), "config:33\n");
    write(root, &format!("{d}/format/min_latency"), "config2:0-11\n");
}

fn pebs(root: &Path) {
    let d = dev(root, "cpu");
    write(root, &format!("{d}/type"), "4\n");
    write(
        root,
        &format!("{d}/events/mem-loads"),
        "event=0xcd,umask=0x1,ldlat=3\n",
    );
    write(
        root,
        &format!("{d}/events/mem-stores"),
        "event=0xd0,umask=0x82\n",
    );
    write(root, &format!("{d}/format/event"), "config:0-7\n");
    write(root, &format!("{d}/format/umask"), "config:8-15\n");
    write(root, &format!("{d}/format/ldlat"), "config1:0-15\n");
}

fn ibs(root: &Path) {
    let d = dev(root, "ibs_op");
    write(root, &format!("{d}/type"), "11\n");
    write(root, &format!("{d}/format/cnt_ctl"), "config:19\n");
    write(root, &format!("{d}/cpumask"), "0-3,8\n");
}

fn plain(root: &Path) {
    for (n, t) in [
        ("software", "1"),
        ("tracepoint", "2"),
        ("breakpoint", "5"),
        ("msr", "9"),
        ("uprobe", "7"),
    ] {
        write(root, &format!("{}/type", dev(root, n)), t);
    }
}

#[test]
fn arm_spe_is_found_with_its_format_fields() {
    let d = tempfile::tempdir().unwrap();
    plain(d.path());
    spe(d.path());
    let f = detect(d.path()).unwrap();
    assert_eq!(
        (f.kind, f.pmu.as_str(), f.pmu_type),
        (FacilityKind::ArmSpe, "arm_spe_0", 8)
    );
    assert!(f
        .formats
        .contains(&("load_filter".into(), "config:33".into())));
    assert!(f
        .formats
        .contains(&("min_latency".into(), "config2:0-11".into())));
    assert_eq!(f.loads_aux_event, None);
    // A running process is not sampled with SPE: said plainly, nothing opened.
    let opts = LiveOptions {
        sysfs_root: d.path().to_path_buf(),
        ..Default::default()
    };
    let e = live::record(
        &Target::Pid {
            pid: std::process::id() as i32,
            duration: std::time::Duration::from_millis(1),
        },
        &opts,
    )
    .unwrap_err();
    assert!(matches!(e, LiveError::NotImplemented(_)), "{e}");
    assert_eq!(e.to_string(), live::SPE_PID);
    assert!(e.to_string().contains("perf mem record -p PID"), "{e}");
}

#[test]
fn an_arm_machine_without_spe_says_why() {
    // What the emulated Neoverse N1 guest shows (QEMU has no SPE): the core PMU and
    // software sources, no arm_spe_*.
    let d = tempfile::tempdir().unwrap();
    plain(d.path());
    write(
        d.path(),
        &format!("{}/type", dev(d.path(), "armv8_pmuv3_0")),
        "10\n",
    );
    let e = detect(d.path()).unwrap_err();
    assert_eq!(e.hint.as_deref(), Some(live::ARM_WITHOUT_SPE));
    let m = e.to_string();
    for want in [
        "looked for Arm SPE (arm_spe_*)",
        "this machine has armv8_pmuv3_0, breakpoint",
        "exposes no arm_spe PMU",
        "QEMU's emulated CPUs have none",
        "CONFIG_ARM_SPE_PMU",
        "perf mem record",
    ] {
        assert!(m.contains(want), "{want}: {m}");
    }
    // Live recording refuses with the same error before starting the command.
    let opts = LiveOptions {
        sysfs_root: d.path().to_path_buf(),
        ..Default::default()
    };
    match live::record(&Target::Command(numalab_proc::Spec::new(["true"])), &opts) {
        Err(LiveError::Unsupported(u)) => assert_eq!(u, e),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    // An x86 machine without a facility gets no Arm hint.
    let d2 = tempfile::tempdir().unwrap();
    plain(d2.path());
    assert_eq!(detect(d2.path()).unwrap_err().hint, None);
}

#[test]
fn sapphire_rapids_publishes_mem_loads_aux() {
    let d = tempfile::tempdir().unwrap();
    plain(d.path());
    pebs(d.path());
    write(
        d.path(),
        &format!("{}/events/mem-loads-aux", dev(d.path(), "cpu")),
        "event=0x03,umask=0x82\n",
    );
    let f = detect(d.path()).unwrap();
    assert_eq!(f.loads_aux_event.as_deref(), Some("event=0x03,umask=0x82"));
    assert_eq!(
        encode_terms(f.loads_aux_event.as_deref().unwrap(), &f.formats, &[]).unwrap(),
        [0x8203, 0, 0]
    );
}

#[test]
fn intel_pebs_load_latency_and_its_encoding() {
    let d = tempfile::tempdir().unwrap();
    plain(d.path());
    pebs(d.path());
    let f = detect(d.path()).unwrap();
    assert_eq!(
        (f.kind, f.pmu.as_str(), f.pmu_type),
        (FacilityKind::IntelPebs, "cpu", 4)
    );
    assert_eq!(
        f.loads_event.as_deref(),
        Some("event=0xcd,umask=0x1,ldlat=3")
    );
    assert_eq!(f.stores_event.as_deref(), Some("event=0xd0,umask=0x82"));
    let c = encode_terms(
        f.loads_event.as_deref().unwrap(),
        &f.formats,
        &[("ldlat", 30)],
    )
    .unwrap();
    assert_eq!(c, [0x1cd, 30, 0]);
    let c = encode_terms(f.stores_event.as_deref().unwrap(), &f.formats, &[]).unwrap();
    assert_eq!(c, [0x82d0, 0, 0]);
    // Split ranges and errors.
    let fmts = vec![
        ("x".to_string(), "config:0-3,8-11".to_string()),
        ("y".into(), "config1:5".into()),
    ];
    assert_eq!(
        encode_terms("x=0xab,y", &fmts, &[]).unwrap(),
        [0xa0b, 1 << 5, 0]
    );
    assert!(encode_terms("x=0x1ff", &fmts, &[])
        .unwrap_err()
        .contains("does not fit"));
    assert!(encode_terms("z=1", &fmts, &[])
        .unwrap_err()
        .contains("no format field"));
    // A core PMU with mem-loads but no ldlat format is not PEBS load latency.
    let d2 = tempfile::tempdir().unwrap();
    plain(d2.path());
    write(d2.path(), &format!("{}/type", dev(d2.path(), "cpu")), "4");
    write(
        d2.path(),
        &format!("{}/events/mem-loads", dev(d2.path(), "cpu")),
        "event=0xcd",
    );
    assert!(detect(d2.path()).is_err());
}

#[test]
fn amd_ibs_op() {
    let d = tempfile::tempdir().unwrap();
    plain(d.path());
    ibs(d.path());
    let f = detect(d.path()).unwrap();
    assert_eq!(
        (f.kind, f.pmu.as_str(), f.pmu_type),
        (FacilityKind::AmdIbsOp, "ibs_op", 11)
    );
    assert_eq!(
        f.formats,
        vec![("cnt_ctl".to_string(), "config:19".to_string())]
    );
}

#[test]
fn none_names_what_was_looked_for() {
    let d = tempfile::tempdir().unwrap();
    plain(d.path());
    let e = detect(d.path()).unwrap_err();
    let m = e.to_string();
    for want in [
        "arm_spe_*",
        "mem-loads",
        "ibs_op",
        "breakpoint, msr, software, tracepoint, uprobe",
        "perf mem record",
    ] {
        assert!(m.contains(want), "{want}: {m}");
    }
    assert!(!m.contains('\n'));
}

#[test]
fn this_machine_has_none_and_live_recording_says_so() {
    let Err(e) = detect(Path::new("/sys")) else {
        eprintln!("this machine has a sampling facility; the no-facility check is skipped");
        return;
    };
    assert!(e.looked_for.len() == 3, "{e}");
    let r = numalab_memaccess::record(
        &Target::Command(numalab_proc::Spec::new(["true"])),
        &Default::default(),
    );
    match r {
        Err(LiveError::Unsupported(u)) => assert_eq!(u, e),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

fn push64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_ne_bytes());
}
fn push32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_ne_bytes());
}

#[test]
fn kernel_sample_records() {
    // IP, TID, TIME, ADDR, CPU, PERIOD, WEIGHT, DATA_SRC, PHYS_ADDR, in the kernel's order.
    let mut b = Vec::new();
    push64(&mut b, 0x555555555120); // ip
    push32(&mut b, 4242); // pid
    push32(&mut b, 4243); // tid
    push64(&mut b, 8_123_400_142_000); // time
    push64(&mut b, 0x7f0000001000); // addr
    push32(&mut b, 3); // cpu
    push32(&mut b, 0); // res
    push64(&mut b, 4000); // period
    push64(&mut b, 400); // weight
    push64(&mut b, 0x113a29402042); // data_src
    push64(&mut b, 0x48000000); // phys_addr
    let s = parse_sample_record(&b, SAMPLE_TYPE_PHYS).unwrap();
    assert_eq!(
        (
            s.ip,
            s.pid,
            s.tid,
            s.time_ns,
            s.addr,
            s.cpu,
            s.weight,
            s.data_src.0,
            s.phys_addr
        ),
        (
            Some(0x555555555120),
            4242,
            4243,
            Some(8_123_400_142_000),
            0x7f0000001000,
            3,
            400,
            0x113a29402042,
            Some(0x48000000)
        )
    );
    assert!(s.data_src.remote_node());
    // Without PHYS_ADDR the same bytes minus the last field.
    let s2 = parse_sample_record(&b[..b.len() - 8], SAMPLE_TYPE).unwrap();
    assert_eq!((s2.weight, s2.phys_addr), (400, None));
    // Cut short: an error, no panic, at every length.
    for n in 0..b.len() {
        assert!(
            parse_sample_record(&b[..n], SAMPLE_TYPE_PHYS).is_err(),
            "{n}"
        );
    }
    // WEIGHT_STRUCT: the latency is the low 32 bits.
    let mut w = Vec::new();
    push64(&mut w, (7u64 << 32) | 123);
    push64(&mut w, 0x113a29402042);
    let s3 = parse_sample_record(&w, (1 << 24) | (1 << 15)).unwrap();
    assert_eq!(s3.weight, 123);
    // Fields it does not read are refused.
    assert!(parse_sample_record(&b, SAMPLE_TYPE | (1 << 5)).is_err());
}

#[test]
fn kernel_mmap2_records() {
    let mut b = Vec::new();
    push32(&mut b, 4242);
    push32(&mut b, 4242);
    push64(&mut b, 0x555555556000);
    push64(&mut b, 0x1000);
    push64(&mut b, 0x2000);
    push32(&mut b, 8); // maj
    push32(&mut b, 1); // min
    push64(&mut b, 131090); // ino
    push64(&mut b, 0); // generation
    push32(&mut b, (libc::PROT_READ | libc::PROT_WRITE) as u32);
    push32(&mut b, libc::MAP_PRIVATE as u32);
    b.extend_from_slice(b"/opt/graphwalk/bin/graphwalk\0\0\0\0");
    let m = parse_mmap2_record(&b, 0).unwrap();
    assert_eq!(
        (
            m.pid,
            m.start,
            m.len,
            m.pgoff,
            m.dev_ino,
            m.prot.as_deref(),
            m.path.as_str()
        ),
        (
            4242,
            0x555555556000,
            0x1000,
            0x2000,
            Some((8, 1, 131090)),
            Some("rw-p"),
            "/opt/graphwalk/bin/graphwalk"
        )
    );
    // The build-id form (misc bit 14): size, 3 reserved bytes, 20 id bytes.
    let mut c = b[..32].to_vec();
    c.push(4);
    c.extend_from_slice(&[0, 0, 0]);
    let mut id = [0u8; 20];
    id[..4].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    c.extend_from_slice(&id);
    push32(&mut c, libc::PROT_READ as u32);
    push32(&mut c, libc::MAP_SHARED as u32);
    c.extend_from_slice(b"//anon\0\0");
    let m = parse_mmap2_record(&c, 1 << 14).unwrap();
    assert_eq!(
        (
            m.build_id.as_deref(),
            m.dev_ino,
            m.prot.as_deref(),
            m.path.as_str()
        ),
        (Some("deadbeef"), None, Some("r--s"), "//anon")
    );
    for n in 0..40 {
        assert!(parse_mmap2_record(&b[..n], 0).is_err(), "{n}");
    }
}

#[test]
fn move_pages_asks_where_pages_of_a_live_process_are() {
    use numalab_memaccess::node::{resolve_nodes, MovePages, NodeHow, NodeOf, NodeResolver};
    use numalab_memaccess::{DataSrc, MemSample};
    let page = numalab_memaccess::node::page_size() as usize;
    let mut buf = vec![0u8; 8 * page];
    for i in (0..buf.len()).step_by(page) {
        unsafe { std::ptr::write_volatile(&mut buf[i], 1) };
    }
    let touched = buf.as_ptr() as u64 + page as u64;
    let s = |addr: u64, pid: u32| MemSample {
        seq: 0,
        pid,
        tid: pid,
        cpu: 0,
        time_ns: None,
        ip: None,
        code: None,
        addr,
        data_src: DataSrc(0x113a29402042),
        weight: 100,
        phys_addr: None,
        event: 0,
    };
    let me = std::process::id();
    let mut mp = MovePages::new();
    let got = mp.resolve(&[s(touched, me)]);
    let node = got[0].expect("a touched page has a node");
    let online = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
    let nodes = numalab_schema::cpulist::parse(online.trim()).unwrap_or_default();
    assert!(
        nodes.is_empty() || nodes.contains(&node),
        "{node} not in {nodes:?}"
    );
    // A process that does not exist: no node, the PMU's word instead, and said how.
    let mut mp2 = MovePages::new();
    let answers = resolve_nodes(&[s(touched, i32::MAX as u32 - 7)], &mut [&mut mp2]);
    assert_eq!(answers[0].node, NodeOf::RemotePerPmu);
    assert_eq!(answers[0].how, NodeHow::PmuRemoteBit);
    assert!(
        mp2.error.as_deref().unwrap_or("").contains("move_pages"),
        "{:?}",
        mp2.error
    );
    let answers = resolve_nodes(&[s(touched, me)], &mut [&mut mp]);
    assert_eq!(
        (answers[0].node, answers[0].how),
        (NodeOf::Node(node), NodeHow::MovePages)
    );
    drop(buf);
}
