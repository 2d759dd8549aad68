//! The attributes live sampling asks of the kernel, pinned: PEBS load latency alone and
//! led by mem-loads-aux (Sapphire Rapids and later P-cores), as perfopen's tests pin
//! theirs.

use super::*;
use perf_event::SampleSkid;

fn pebs(loads_aux: Option<&str>) -> Facility {
    let f = |a: &str, b: &str| (a.to_string(), b.to_string());
    Facility {
        kind: FacilityKind::IntelPebs,
        pmu: "cpu".into(),
        pmu_type: 4,
        formats: vec![
            f("event", "config:0-7"),
            f("ldlat", "config1:0-15"),
            f("umask", "config:8-15"),
        ],
        // As Linux publishes them on Sapphire Rapids (events/mem-loads, mem-stores,
        // mem-loads-aux).
        loads_event: Some("event=0xcd,umask=0x1,ldlat=3".into()),
        stores_event: Some("event=0xcd,umask=0x2".into()),
        loads_aux_event: loads_aux.map(str::to_string),
        cpus: None,
    }
}

/// (type, config, config1, disabled, enable_on_exec, inherit, exclude_kernel,
/// precise_ip, sample_type, mmap).
type Seen = (u32, u64, u64, u64, u64, u64, u64, u64, u64, u64);

fn seen(b: &perf_event::Builder<'_>) -> Seen {
    let a = b.attrs();
    (
        a.type_,
        a.config,
        a.config1,
        a.disabled(),
        a.enable_on_exec(),
        a.inherit(),
        a.exclude_kernel(),
        a.precise_ip(),
        a.sample_type,
        a.mmap(),
    )
}

#[test]
fn sapphire_rapids_loads_are_led_by_mem_loads_aux() {
    let opts = LiveOptions::default();
    let f = pebs(Some("event=0x03,umask=0x82"));
    let specs = event_specs(&f, &opts).unwrap();
    assert_eq!(specs.len(), 2);
    let (name, leader_cfg) = specs[0].leader.clone().unwrap();
    assert_eq!(name, "cpu/mem-loads-aux/");
    assert_eq!(leader_cfg, [0x8203, 0, 0]);
    // Stores need no leader.
    assert!(specs[1].leader.is_none());
    let scope = perfopen::Target::TaskOnCpu { pid: 42, cpu: 1 };
    let (leader, member) = builders(
        &specs[0],
        scope,
        4000,
        perfopen::Start::AtExec,
        SampleSkid::RequireZero,
        SAMPLE_TYPE_PHYS,
    );
    // The leader counts (no sampling, no records), starts at the exec; the load
    // sampler is its member, enabled so that it runs whenever the leader does.
    assert_eq!(seen(&leader.unwrap()), (4, 0x8203, 0, 1, 1, 1, 1, 0, 0, 0));
    assert_eq!(
        seen(&member),
        (4, 0x1cd, 30, 0, 0, 1, 1, 3, SAMPLE_TYPE_PHYS, 1)
    );
    // A running process: everything at once.
    let (leader, member) = builders(
        &specs[0],
        perfopen::Target::Thread(42),
        4000,
        perfopen::Start::Now,
        SampleSkid::Constant,
        SAMPLE_TYPE,
    );
    assert_eq!(seen(&leader.unwrap()), (4, 0x8203, 0, 0, 0, 0, 1, 0, 0, 0));
    assert_eq!(seen(&member), (4, 0x1cd, 30, 0, 0, 0, 1, 1, SAMPLE_TYPE, 1));
}

#[test]
fn earlier_cores_sample_loads_alone() {
    let opts = LiveOptions {
        ldlat: 50,
        include_kernel: true,
        ..Default::default()
    };
    let specs = event_specs(&pebs(None), &opts).unwrap();
    assert!(specs.iter().all(|e| e.leader.is_none()));
    let (leader, member) = builders(
        &specs[0],
        perfopen::Target::TaskOnCpu { pid: 42, cpu: 1 },
        4000,
        perfopen::Start::AtExec,
        SampleSkid::RequireZero,
        SAMPLE_TYPE,
    );
    assert!(leader.is_none());
    // Alone, the sampler leads itself: disabled until the exec.
    assert_eq!(seen(&member), (4, 0x1cd, 50, 1, 1, 1, 0, 3, SAMPLE_TYPE, 1));
}

#[test]
fn a_leader_that_does_not_fit_the_formats_is_refused_by_name() {
    let f = pebs(Some("event=0x03,umask=0x82,bogus=1"));
    let Err(LiveError::Open { event, detail }) = event_specs(&f, &LiveOptions::default()) else {
        panic!("expected Open");
    };
    assert_eq!(event, "cpu/mem-loads-aux/");
    assert!(detail.contains("bogus"), "{detail}");
}
