//! The attributes each caller's case gets (the values the crates set before they shared
//! this one), and real software-event groups opened on the calling thread.

use super::*;
use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware, Software};
use perf_event::Builder;

/// The group read format's bits: GROUP | ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING.
const GROUP_BITS: u64 = (1 << 3) | (1 << 2) | 1 | (1 << 1);
/// `perf-event2`'s default read format: TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING.
const DEFAULT_BITS: u64 = 1 | (1 << 1);

/// What one case must have in its attributes and arguments.
#[derive(Debug, PartialEq, Eq)]
struct Expect {
    type_: u32,
    config: [u64; 4],
    read_format: u64,
    exclude_kernel: u64,
    exclude_hv: u64,
    inherit: u64,
    disabled: u64,
    enable_on_exec: u64,
    /// The pid argument as `perf-event2` shows it (`Other(pid)`, `Any`, `ThisProcess`).
    who: String,
    /// The CPU argument (`Some(cpu)`, `None`: any).
    cpu: String,
}

/// Reads a builder into an [`Expect`]: the attributes, and the pid and CPU from its
/// Debug form (the only place `perf-event2` shows them).
fn seen(b: &Builder<'_>) -> Expect {
    let a = b.attrs();
    let dbg = format!("{b:?}");
    let field = |name: &str, end: &str| -> String {
        let start = dbg.find(name).expect(name) + name.len();
        let len = dbg[start..].find(end).expect(end);
        dbg[start..start + len].to_string()
    };
    Expect {
        type_: a.type_,
        config: [a.config, a.config1, a.config2, a.config3],
        read_format: a.read_format,
        exclude_kernel: a.exclude_kernel(),
        exclude_hv: a.exclude_hv(),
        inherit: a.inherit(),
        disabled: a.disabled(),
        enable_on_exec: a.enable_on_exec(),
        who: field("who: ", ", cpu: "),
        cpu: field(", cpu: ", ", event_data: "),
    }
}

#[test]
fn pmu_counting_a_gated_child_starts_at_exec_with_inherit() {
    // numalab-pmu, count.rs: Target::Child, a raw event with config1, user space only.
    let e = Encoding::new(attrs::TYPE_RAW, 0x1cd).with_config1(0x3);
    let mut leader = builder(&e, Target::Task(4242), Exclude::kernel_unless(false));
    prepare_member(&mut leader, Start::AtExec, true);
    let want = Expect {
        type_: 4,
        config: [0x1cd, 0x3, 0, 0],
        read_format: GROUP_BITS,
        exclude_kernel: 1,
        exclude_hv: 1,
        inherit: 1,
        disabled: 1,
        enable_on_exec: 1,
        who: "Other(4242)".into(),
        cpu: "None".into(),
    };
    assert_eq!(seen(&leader), want);
    let mut member = builder(&e, Target::Task(4242), Exclude::kernel_unless(false));
    prepare_member(&mut member, Start::AtExec, false);
    assert_eq!(
        seen(&member),
        Expect {
            disabled: 0,
            enable_on_exec: 0,
            ..want
        }
    );
}

#[test]
fn pmu_counting_threads_and_cpus_starts_at_once() {
    // numalab-pmu, count.rs: Target::Threads (one inherited task each) with the kernel
    // counted and the core PMU's dynamic type for raw events.
    let e = Encoding::new(10, 0x11);
    let mut b = builder(&e, Target::Task(77), Exclude::kernel_unless(true));
    prepare_member(&mut b, Start::Now, true);
    let thread = Expect {
        type_: 10,
        config: [0x11, 0, 0, 0],
        read_format: GROUP_BITS,
        exclude_kernel: 0,
        exclude_hv: 1,
        inherit: 1,
        disabled: 0,
        enable_on_exec: 0,
        who: "Other(77)".into(),
        cpu: "None".into(),
    };
    assert_eq!(seen(&b), thread);
    // Target::Cpus: every process on one CPU, no inherit; a hardware event.
    let e = Encoding::new(attrs::TYPE_HARDWARE, 1);
    let mut b = builder(&e, Target::Cpu(3), Exclude::kernel_unless(false));
    prepare_member(&mut b, Start::Now, false);
    assert_eq!(
        seen(&b),
        Expect {
            type_: 0,
            config: [1, 0, 0, 0],
            exclude_kernel: 1,
            inherit: 0,
            who: "Any".into(),
            cpu: "Some(3)".into(),
            ..thread
        }
    );
}

#[test]
fn uncore_groups_count_everything_on_one_cpu_disabled() {
    // numalab-uncore, backend.rs: a dynamic PMU's type, four config words, any pid on
    // one CPU, nothing excluded, every member disabled until the group is enabled.
    let e = Encoding {
        pmu_type: 0x2a,
        config: [0x0304, 0x11, 0x22, 0x33],
    };
    let want = Expect {
        type_: 0x2a,
        config: [0x0304, 0x11, 0x22, 0x33],
        read_format: GROUP_BITS,
        exclude_kernel: 0,
        exclude_hv: 0,
        inherit: 0,
        disabled: 1,
        enable_on_exec: 0,
        who: "Any".into(),
        cpu: "Some(7)".into(),
    };
    for leader in [true, false] {
        let mut b = builder(&e, Target::Cpu(7), Exclude::NOTHING);
        prepare_member(&mut b, Start::Disabled, leader);
        assert_eq!(seen(&b), want);
    }
}

#[test]
fn samplers_keep_the_default_read_format() {
    // numalab-pmu, sample.rs: PERF_TYPE_RAW, a gated task on one CPU with inherit.
    let e = Encoding::new(attrs::TYPE_RAW, 0x11).with_config1(5);
    let mut b = builder(
        &e,
        Target::TaskOnCpu { pid: 9, cpu: 2 },
        Exclude::kernel_unless(false),
    );
    set_start(&mut b, Start::AtExec, true);
    let pmu_sampler = Expect {
        type_: 4,
        config: [0x11, 5, 0, 0],
        read_format: DEFAULT_BITS,
        exclude_kernel: 1,
        exclude_hv: 1,
        inherit: 1,
        disabled: 1,
        enable_on_exec: 1,
        who: "Other(9)".into(),
        cpu: "Some(2)".into(),
    };
    assert_eq!(seen(&b), pmu_sampler);
    // numalab-memaccess, live.rs: PEBS (three config words, the hypervisor excluded
    // with the kernel) on a gated task per CPU ...
    let pebs = Encoding {
        pmu_type: 4,
        config: [0x1cd, 30, 7, 0],
    };
    let mut b = builder(
        &pebs,
        Target::TaskOnCpu { pid: 9, cpu: 2 },
        Exclude {
            kernel: true,
            hv: true,
        },
    );
    set_start(&mut b, Start::AtExec, true);
    assert_eq!(
        seen(&b),
        Expect {
            config: [0x1cd, 30, 7, 0],
            ..pmu_sampler
        }
    );
    // ... and IBS (nothing excluded) on each thread of a running process.
    let ibs = Encoding {
        pmu_type: 11,
        config: [0; 4],
    };
    let mut b = builder(&ibs, Target::Thread(31), Exclude::NOTHING);
    set_start(&mut b, Start::Now, true);
    assert_eq!(
        seen(&b),
        Expect {
            type_: 11,
            config: [0; 4],
            read_format: DEFAULT_BITS,
            exclude_kernel: 0,
            exclude_hv: 0,
            inherit: 0,
            disabled: 0,
            enable_on_exec: 0,
            who: "Other(31)".into(),
            cpu: "None".into(),
        }
    );
}

#[test]
fn calling_thread_events_are_what_perf_event2_builds_by_default() {
    // numalab-home, bench_live.rs (cycles, dTLB read misses: `Builder::new(event)`) and
    // numalab-pmu's capability.rs and check.rs (observe_self, any CPU, user space).
    let dtlb = Cache {
        which: CacheId::DTLB,
        operation: CacheOp::READ,
        result: CacheResult::MISS,
    };
    assert_eq!(Encoding::of(Hardware::CPU_CYCLES), Encoding::new(0, 0));
    assert_eq!(Encoding::of(dtlb.clone()), Encoding::new(3, 0x1_0003));
    assert_eq!(Encoding::of(Software::TASK_CLOCK), Encoding::new(1, 1));
    let cases: Vec<(Builder<'static>, Encoding)> = vec![
        (
            Builder::new(Hardware::CPU_CYCLES),
            Encoding::of(Hardware::CPU_CYCLES),
        ),
        (Builder::new(dtlb.clone()), Encoding::of(dtlb)),
        (
            Builder::new(Software::TASK_CLOCK),
            Encoding::of(Software::TASK_CLOCK),
        ),
    ];
    for (mut old, e) in cases {
        let new = builder(&e, Target::CallingThread, Exclude::KERNEL_AND_HV);
        assert_eq!(format!("{new:?}"), format!("{old:?}"));
        assert_eq!(seen(&new), seen(&old));
        old.observe_self()
            .any_cpu()
            .exclude_kernel(true)
            .exclude_hv(true);
        assert_eq!(format!("{new:?}"), format!("{old:?}"));
    }
}

/// Some work for the counters to see.
fn spin() -> u64 {
    let mut x = 1u64;
    for i in 0..2_000_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(std::hint::black_box(i));
    }
    std::hint::black_box(x)
}

fn software(config: u64) -> Option<Builder<'static>> {
    Some(builder(
        &Encoding::new(attrs::TYPE_SOFTWARE, config),
        Target::CallingThread,
        Exclude::KERNEL_AND_HV,
    ))
}

#[test]
fn a_software_group_on_the_calling_thread_opens_counts_and_reads() {
    // task-clock leads; a member that is not an event is skipped; page faults and
    // context switches join the group (software events work without a PMU).
    let (mut g, statuses) = Group::open(
        [software(1), None, software(2), software(3)],
        Start::Disabled,
    );
    assert!(g.is_open());
    assert!(
        matches!(
            statuses[..],
            [
                MemberStatus::Opened,
                MemberStatus::NotAnEvent,
                MemberStatus::Opened,
                MemberStatus::Opened
            ]
        ),
        "{statuses:?}"
    );
    let before = g.read().unwrap();
    assert_eq!(before.counts[0], Some(0), "disabled until enabled");
    g.enable().unwrap();
    spin();
    g.disable().unwrap();
    let v = g.read().unwrap();
    assert_eq!(v.counts.len(), 4);
    assert!(v.counts[0].unwrap() > 0, "{v:?}");
    assert_eq!(v.counts[1], None);
    assert!(v.counts[2].is_some() && v.counts[3].is_some(), "{v:?}");
    assert!(v.time_enabled_ns > 0, "{v:?}");
    assert!(
        v.time_running_ns > 0 && v.time_running_ns <= v.time_enabled_ns,
        "{v:?}"
    );
    // Stopped: a second read gives the same counts.
    assert_eq!(g.read().unwrap().counts, v.counts);
}

#[test]
fn a_group_started_now_counts_without_enable() {
    let (mut g, statuses) = Group::open([software(1)], Start::Now);
    assert!(
        matches!(statuses[..], [MemberStatus::Opened]),
        "{statuses:?}"
    );
    spin();
    let v = g.read().unwrap();
    assert!(v.counts[0].unwrap() > 0, "{v:?}");
}

#[test]
fn refused_members_are_named_and_an_empty_group_says_so() {
    // A software config the kernel does not have: refused with its errno, and the next
    // member leads instead.
    let (mut g, statuses) = Group::open([software(0xffff), software(1)], Start::Now);
    match &statuses[..] {
        [MemberStatus::Failed(e), MemberStatus::Opened] => assert!(e.raw_os_error().is_some()),
        other => panic!("{other:?}"),
    }
    spin();
    let v = g.read().unwrap();
    assert_eq!(v.counts[0], None);
    assert!(v.counts[1].unwrap() > 0);
    // Nothing opened: nothing to start, stop or read.
    let (mut g, statuses) = Group::open([software(0xffff), None], Start::Disabled);
    assert!(!g.is_open());
    assert!(matches!(statuses[1], MemberStatus::NotAnEvent));
    assert!(g.enable().is_ok() && g.disable().is_ok());
    assert_eq!(g.read(), Err(NO_EVENT_OPENED.to_string()));
}

#[test]
fn every_errno_the_crates_tell_apart_has_its_class() {
    // The errnos `pmu` (capability statuses) and `uncore` (open errors) told apart
    // before they shared this classification, and those perf_event_open(2) lists
    // beside them.
    let table = [
        (libc::EACCES, Failure::Denied),
        (libc::EPERM, Failure::Denied),
        (libc::ENOENT, Failure::NotSupported),
        (libc::ENODEV, Failure::NotSupported),
        (libc::EOPNOTSUPP, Failure::NotSupported),
        (libc::EINVAL, Failure::Invalid),
        (libc::EBUSY, Failure::Busy),
        (libc::EMFILE, Failure::TooMany),
        (libc::ENFILE, Failure::TooMany),
        (libc::ENOSPC, Failure::TooMany),
        (libc::ESRCH, Failure::NoSuchTask),
        (libc::E2BIG, Failure::Other),
        (libc::EBADF, Failure::Other),
        (libc::EFAULT, Failure::Other),
        (libc::EINTR, Failure::Other),
        (libc::EOVERFLOW, Failure::Other),
        (libc::EIO, Failure::Other),
    ];
    for (errno, class) in table {
        assert_eq!(Failure::of_errno(errno), class, "errno {errno}");
        let e = std::io::Error::from_raw_os_error(errno);
        assert_eq!(Failure::of_io(&e), class, "errno {errno}");
    }
    // An error without an errno.
    let e = std::io::Error::other("no errno");
    assert_eq!(Failure::of_io(&e), Failure::Other);
}
