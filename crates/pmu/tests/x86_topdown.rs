//! x86 top-down: Intel TMA (perfmon files) and AMD Zen pipeline utilization, from
//! constructed counts through the catalog's metric machinery and the decision tree.
//! Every expected value is computed here by hand from the vendor's definition, not by
//! evaluating the shipped formula strings.

use numalab_pmu::catalog::{self, detect, load, resolve_model, Encoding, EventRef};
use numalab_pmu::count;
use numalab_pmu::metrics::{evaluate_all, EventState, EventValue, MetricValue};
use numalab_pmu::tree::walk_tree;
use numalab_schema::machine::CpuIdentity;

fn counted(name: &str, v: f64) -> EventValue {
    EventValue {
        name: name.to_string(),
        code: None,
        value: Some(v),
        raw_count: Some(v as u64),
        running_fraction: Some(1.0),
        time_enabled_ns: None,
        time_running_ns: None,
        supported: true,
        state: EventState::Counted,
        reason: None,
        unit: None,
        software: false,
        run: None,
        advertised: None,
        uncertainty: None,
    }
}

/// Counts by any event name or alias, stored under the catalog's canonical name.
fn counts(c: &catalog::Catalog, pairs: &[(&str, f64)]) -> Vec<EventValue> {
    pairs
        .iter()
        .map(|(n, v)| {
            let e = c
                .event(n)
                .unwrap_or_else(|| panic!("{}: no event {n}", c.id));
            counted(&e.name, *v)
        })
        .collect()
}

fn evaluated(id: &str, pairs: &[(&str, f64)]) -> (catalog::Catalog, Vec<MetricValue>) {
    let c = load(id).unwrap();
    let names = c.select_metrics("first-pass").unwrap();
    let ev = counts(&c, pairs);
    let m = evaluate_all(&c, &names, &ev);
    (c, m)
}

fn value(m: &[MetricValue], name: &str) -> f64 {
    let mv = m
        .iter()
        .find(|x| x.name == name)
        .unwrap_or_else(|| panic!("{name} not evaluated"));
    mv.value
        .unwrap_or_else(|| panic!("{name}: {:?}", mv.reason))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn cpu(vendor: &str, family: u32, model: u32, stepping: Option<u32>) -> CpuIdentity {
    CpuIdentity {
        architecture: Some("x86_64".into()),
        vendor: Some(vendor.into()),
        family: Some(family),
        model: Some(model),
        stepping,
        ..Default::default()
    }
}

#[test]
fn detection_by_family_and_model() {
    for (vendor, f, m, s, id) in [
        ("GenuineIntel", 6, 0x55, Some(4), "intel-skx"),
        ("GenuineIntel", 6, 0x55, Some(7), "intel-clx"),
        ("GenuineIntel", 6, 0x55, Some(11), "intel-clx"),
        ("GenuineIntel", 6, 0x6a, None, "intel-icx"),
        ("GenuineIntel", 6, 0x6c, None, "intel-icx"),
        ("GenuineIntel", 6, 0x8f, None, "intel-spr"),
        ("GenuineIntel", 6, 0xcf, None, "intel-emr"),
        ("GenuineIntel", 6, 0xad, None, "intel-gnr"),
        ("GenuineIntel", 6, 0xae, None, "intel-gnr"),
        ("GenuineIntel", 6, 0xaf, None, "intel-srf"),
        ("AuthenticAMD", 0x17, 0x31, None, "amd-zen2"),
        ("AuthenticAMD", 0x17, 0x71, None, "amd-zen2"),
        ("AuthenticAMD", 0x19, 0x01, None, "amd-zen3"),
        ("AuthenticAMD", 0x19, 0x21, None, "amd-zen3"),
        ("AuthenticAMD", 0x19, 0x11, None, "amd-zen4"),
        ("AuthenticAMD", 0x19, 0xa0, None, "amd-zen4"),
        ("AuthenticAMD", 0x1a, 0x02, None, "amd-zen5"),
    ] {
        let got = detect(&cpu(vendor, f, m, s), None).unwrap();
        assert_eq!(got.catalog, id, "{vendor} {f:#x} {m:#x} {s:?}: {got:?}");
        assert!(!got.how.contains("no vendor metrics"), "{id}: {}", got.how);
    }
}

#[test]
fn unknown_models_get_generic_events_and_say_so() {
    // Haswell-EP (6/0x3f), Zen 1 (0x17/0x01), Hygon: never another model's file.
    for (vendor, f, m) in [
        ("GenuineIntel", 6, 0x3f),
        ("AuthenticAMD", 0x17, 0x01),
        ("HygonGenuine", 0x18, 0x00),
    ] {
        let got = detect(&cpu(vendor, f, m, None), None).unwrap();
        assert_eq!(got.catalog, catalog::X86_ID, "{got:?}");
        assert!(
            got.how
                .contains(&format!("no vendor metrics for family {f} model {m}")),
            "{}",
            got.how
        );
    }
    // Zen 3: its own catalog, and a note that there is no top-down verdict.
    let z3 = detect(&cpu("AuthenticAMD", 0x19, 0x01, None), None).unwrap();
    assert!(z3.how.contains("no top-down verdict"), "{}", z3.how);
}

#[test]
fn cpu_model_names() {
    for (name, id) in [
        ("intel-skx", "intel-skx"),
        ("skylake-sp", "intel-skx"),
        ("cascade-lake", "intel-clx"),
        ("sapphire-rapids", "intel-spr"),
        ("Sapphire Rapids", "intel-spr"),
        ("emerald-rapids", "intel-emr"),
        ("granite-rapids", "intel-gnr"),
        ("sierra-forest", "intel-srf"),
        ("rome", "amd-zen2"),
        ("milan", "amd-zen3"),
        ("genoa", "amd-zen4"),
        ("turin", "amd-zen5"),
        ("amd-zen4", "amd-zen4"),
    ] {
        assert_eq!(resolve_model(name).unwrap().catalog, id, "{name}");
    }
    for id in catalog::x86_ids() {
        assert!(catalog::shipped().contains(&id), "{id}");
    }
    let e = resolve_model("sapphire-rapid").unwrap_err().to_string();
    assert!(e.contains("sapphire-rapids"), "{e}");
}

#[test]
fn intel_encodings() {
    let skx = load("intel-skx").unwrap();
    assert_eq!(skx.counters, 4);
    // Fixed-counter events: the kernel's encodings; AnyThread is bit 21.
    assert_eq!(
        skx.event("INST_RETIRED.ANY").unwrap().encoding,
        Encoding::Raw(0xc0)
    );
    assert_eq!(
        skx.event("CPU_CLK_UNHALTED.THREAD_ANY").unwrap().encoding,
        Encoding::Raw(0x3c | 1 << 21)
    );
    assert!(skx.is_fixed("CPU_CLK_UNHALTED.THREAD"));
    // A formula's modified event: L1D_PEND_MISS.FB_FULL (0x48, umask 2) with cmask 1.
    assert_eq!(
        skx.event("L1D_PEND_MISS.FB_FULL:c1").unwrap().encoding,
        Encoding::Raw(0x48 | 0x02 << 8 | 1 << 24)
    );
    let spr = load("intel-spr").unwrap();
    assert_eq!(spr.counters, 8);
    // Offcore response: the first code of "0x2A,0x2B", MSRValue in config1.
    assert_eq!(
        spr.event("OCR.DEMAND_DATA_RD.L3_MISS").unwrap().encoding,
        Encoding::RawExt {
            config: 0x2a | 0x01 << 8,
            config1: 0x3F_BFC0_0001
        }
    );
    // slots and the PERF_METRICS fields, by perf's names too.
    assert_eq!(spr.event("slots").unwrap().name, "TOPDOWN.SLOTS");
    assert_eq!(
        spr.event("topdown-be-bound").unwrap().encoding,
        Encoding::Raw(0x8300)
    );
    assert!(spr.is_fixed("PERF_METRICS.BACKEND_BOUND") && spr.is_fixed("TOPDOWN.SLOTS"));
    let zen4 = load("amd-zen4").unwrap();
    // AMD: event bits 8-11 go to config bits 32-35.
    assert_eq!(
        zen4.event("de_no_dispatch_per_slot.backend_stalls")
            .unwrap()
            .encoding,
        Encoding::Raw(0xa0 | 0x1e << 8 | 1 << 32)
    );
    assert_eq!(zen4.counters, 6);
}

/// Skylake-SP: TMA from formula events (no PERF_METRICS), SMT-off branch.
#[test]
fn skx_backend_memory_bound_from_formula_events() {
    let clk = 1.0e9;
    let idq_not_delivered = 4.0e8;
    let uops_issued = 1.1e9;
    let recovery = 2.5e7;
    let retire_slots = 1.0e9;
    let (stalls_mem_any, bound_on_stores, stalls_total) = (4.5e8, 5.0e7, 5.5e8);
    let (ports_1, ports_2) = (1.0e8, 1.0e8);
    let (stalls_l3_miss, stalls_l1d_miss, stalls_l2_miss) = (3.0e8, 4.0e8, 3.6e8);
    let (l2_hit, fb_hit, l1_miss, fb_full_c1) = (1.0e7, 1.0e6, 2.0e7, 1.0e6);
    let (c, m) = evaluated(
        "intel-skx",
        &[
            ("CPU_CLK_UNHALTED.THREAD", clk),
            ("INST_RETIRED.ANY", 8.0e8),
            ("cycles", clk),
            ("instructions", 8.0e8),
            ("IDQ_UOPS_NOT_DELIVERED.CORE", idq_not_delivered),
            ("UOPS_ISSUED.ANY", uops_issued),
            ("INT_MISC.RECOVERY_CYCLES", recovery),
            ("UOPS_RETIRED.RETIRE_SLOTS", retire_slots),
            ("CYCLE_ACTIVITY.STALLS_MEM_ANY", stalls_mem_any),
            ("EXE_ACTIVITY.BOUND_ON_STORES", bound_on_stores),
            ("CYCLE_ACTIVITY.STALLS_TOTAL", stalls_total),
            ("EXE_ACTIVITY.1_PORTS_UTIL", ports_1),
            ("EXE_ACTIVITY.2_PORTS_UTIL", ports_2),
            ("CYCLE_ACTIVITY.STALLS_L3_MISS", stalls_l3_miss),
            ("CYCLE_ACTIVITY.STALLS_L1D_MISS", stalls_l1d_miss),
            ("CYCLE_ACTIVITY.STALLS_L2_MISS", stalls_l2_miss),
            ("MEM_LOAD_RETIRED.L2_HIT", l2_hit),
            ("MEM_LOAD_RETIRED.FB_HIT", fb_hit),
            ("MEM_LOAD_RETIRED.L1_MISS", l1_miss),
            ("L1D_PEND_MISS.FB_FULL:c1", fb_full_c1),
        ],
    );
    // Intel TMA level 1 on Skylake: 4 slots per cycle per thread.
    let slots = 4.0 * clk;
    let fe = idq_not_delivered / slots;
    let bad = (uops_issued - retire_slots + 4.0 * recovery) / slots;
    let ret = retire_slots / slots;
    let be = 1.0 - fe - (uops_issued + 4.0 * recovery) / slots;
    assert!(close(value(&m, "tma_frontend_bound"), 100.0 * fe));
    assert!(close(value(&m, "tma_bad_speculation"), 100.0 * bad));
    assert!(close(value(&m, "tma_retiring"), 100.0 * ret));
    assert!(close(value(&m, "tma_backend_bound"), 100.0 * be));
    assert!(close(be, 0.6) && close(fe + bad + ret + be, 1.0));
    // Memory_Bound: the memory share of the stall/port-utilization cycles, of BE.
    let few_ports = ports_1 + ret * ports_2;
    let mem =
        (stalls_mem_any + bound_on_stores) / (stalls_total + few_ports + bound_on_stores) * be;
    assert!(close(value(&m, "tma_memory_bound"), 100.0 * mem));
    // DRAM_Bound: L3-miss stalls plus the L2-miss stalls not explained by L2 hits.
    let l2_stalls = (stalls_l1d_miss - stalls_l2_miss) / clk;
    let l2_hit_share =
        l2_hit * (1.0 + fb_hit / l1_miss) / (l2_hit * (1.0 + fb_hit / l1_miss) + fb_full_c1);
    let dram = stalls_l3_miss / clk + l2_stalls - l2_hit_share * l2_stalls;
    assert!(close(value(&m, "tma_dram_bound"), 100.0 * dram), "{dram}");
    // L3_Bound: stalls with an L2 miss that hit L3 (Intel's threshold: > 5%).
    let l3 = (stalls_l2_miss - stalls_l3_miss) / clk;
    assert!(close(value(&m, "tma_l3_bound"), 100.0 * l3));

    let r = walk_tree(&c, &m);
    assert_eq!(r.dominant.as_deref(), Some("backend"), "{}", r.verdict);
    assert!(
        r.verdict
            .starts_with("back-end bound: 60% of pipeline slots (tma_backend_bound) (IPC 0.800); tma_memory_bound 41% (tma_l3_bound 6.0%, tma_dram_bound 30%), tma_core_bound 19%"),
        "{}",
        r.verdict
    );
    assert_eq!(r.sides.len(), 4);
    assert!(close(r.sides[2].stall_rate.unwrap(), be));
    let dram_finding = r
        .findings
        .iter()
        .find(|f| f.metric == "tma_dram_bound")
        .unwrap();
    assert_eq!(dram_finding.group, "tma_memory_bound");
    assert_eq!(dram_finding.threshold, 10.0);
    assert!(dram_finding
        .description
        .as_deref()
        .unwrap()
        .contains("external memory (DRAM)"));
    // L1_Bound (stalls with loads pending but no L1D miss, 5%) is listed, below its
    // threshold (10%); nodes without counts are listed without a value.
    let step = r
        .steps
        .iter()
        .find(|s| s.group == "tma_memory_bound")
        .unwrap();
    let l1 = step
        .metrics
        .iter()
        .find(|s| s.name == "tma_l1_bound")
        .unwrap();
    assert!(close(
        l1.value.unwrap(),
        100.0 * (stalls_mem_any - stalls_l1d_miss) / clk
    ));
    assert!(!l1.notable);
    let core = r
        .steps
        .iter()
        .find(|s| s.group == "tma_core_bound")
        .unwrap();
    assert!(core
        .metrics
        .iter()
        .any(|s| s.value.is_none() && s.reason.is_some()));
    // The front end did not pass Intel's threshold (15%): not walked.
    assert!(!r.steps.iter().any(|s| s.group == "tma_frontend_bound"));
}

/// Sapphire Rapids: level 1 and 2 from slots and PERF_METRICS.
#[test]
fn spr_perf_metrics_and_slots() {
    let slots = 6.0e9;
    let (fe, bad, ret, be, mem) = (1.2e9, 3.0e8, 1.5e9, 3.0e9, 2.1e9);
    let dropping = 6.0e7;
    let (c, m) = evaluated(
        "intel-spr",
        &[
            ("TOPDOWN.SLOTS", slots),
            ("topdown-fe-bound", fe),
            ("topdown-bad-spec", bad),
            ("topdown-retiring", ret),
            ("topdown-be-bound", be),
            ("topdown-mem-bound", mem),
            ("INT_MISC.UOP_DROPPING", dropping),
            ("cycles", 1.0e9),
            ("instructions", 1.5e9),
        ],
    );
    let sum = fe + bad + ret + be;
    let fe_share = fe / sum - dropping / slots;
    let be_share = be / sum;
    let ret_share = ret / sum;
    let bad_share = (1.0 - (fe_share + be_share + ret_share)).max(0.0);
    assert!(close(value(&m, "tma_frontend_bound"), 100.0 * fe_share));
    assert!(close(value(&m, "tma_backend_bound"), 100.0 * be_share));
    assert!(close(value(&m, "tma_retiring"), 100.0 * ret_share));
    assert!(close(value(&m, "tma_bad_speculation"), 100.0 * bad_share));
    assert!(close(value(&m, "tma_memory_bound"), 100.0 * mem / sum));
    assert!(close(
        value(&m, "tma_core_bound"),
        100.0 * (be_share - mem / sum).max(0.0)
    ));
    let r = walk_tree(&c, &m);
    // The front end (19%) passes its threshold too; the back end (50%) is larger.
    assert_eq!(r.dominant.as_deref(), Some("backend"));
    assert!(
        r.verdict.starts_with(
            "back-end bound: 50% of pipeline slots (tma_backend_bound) (IPC 1.50); tma_memory_bound 35%"
        ),
        "{}",
        r.verdict
    );
    assert!(r.findings.iter().any(|f| f.metric == "tma_core_bound"));

    // Planning: every group with a topdown-* event is led by slots.
    let names = c.select_metrics("topdown").unwrap();
    assert_eq!(
        names,
        [
            "tma_frontend_bound",
            "tma_bad_speculation",
            "tma_backend_bound",
            "tma_retiring"
        ]
    );
    let mut plan = count::plan_default(&c, &names, &[], c.counters);
    let mut exact = count::plan_exact(&c, &names, &[], c.counters).unwrap();
    for p in [&mut plan, &mut exact] {
        count::slots_lead_topdown_groups(&c, p);
        let mut checked = 0;
        for g in &p.groups {
            if g.events
                .iter()
                .any(|e| catalog::is_topdown_metric(&e.encoding))
            {
                assert_eq!(
                    g.events[0].encoding,
                    Encoding::Raw(catalog::SLOTS_CONFIG),
                    "{g:?}"
                );
                assert_eq!(
                    g.events
                        .iter()
                        .filter(|e| e.name == "TOPDOWN.SLOTS")
                        .count(),
                    1
                );
                checked += 1;
            }
        }
        assert!(checked >= 1);
    }
    // A group of topdown events without slots gets it.
    let td = |n: &str| {
        let e = c.event(n).unwrap();
        EventRef {
            name: e.name.clone(),
            encoding: e.encoding,
        }
    };
    let mut p = count::plan_default(&c, &[], &[td("topdown-be-bound")], c.counters);
    count::slots_lead_topdown_groups(&c, &mut p);
    assert_eq!(p.groups[0].events, [td("slots"), td("topdown-be-bound")]);
}

/// Sierra Forest (E-core): TOPDOWN_*_BOUND events, 6 slots per cycle; Intel's E-core
/// thresholds are fractions of percentages (`>0.20`) and are read as 20%.
#[test]
fn srf_ecore_topdown() {
    let clk = 1.0e9;
    let (fe, bad, be, ret, alloc) = (1.2e9, 6.0e8, 3.0e9, 1.2e9, 3.0e8);
    let (c, m) = evaluated(
        "intel-srf",
        &[
            ("CPU_CLK_UNHALTED.CORE", clk),
            ("TOPDOWN_FE_BOUND.ALL_P", fe),
            ("TOPDOWN_BAD_SPECULATION.ALL_P", bad),
            ("TOPDOWN_BE_BOUND.ALL_P", be),
            ("TOPDOWN_RETIRING.ALL_P", ret),
            ("TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS", alloc),
            ("cycles", clk),
            ("instructions", 1.0e9),
        ],
    );
    let slots = 6.0 * clk;
    assert!(close(value(&m, "tma_frontend_bound"), 100.0 * fe / slots));
    assert!(close(value(&m, "tma_backend_bound"), 100.0 * be / slots));
    assert!(close(value(&m, "tma_core_bound"), 100.0 * alloc / slots));
    assert!(close(
        value(&m, "tma_resource_bound"),
        100.0 * (be - alloc) / slots
    ));
    let r = walk_tree(&c, &m);
    assert_eq!(r.dominant.as_deref(), Some("backend"), "{}", r.verdict);
    // Resource_Bound 45% > 20%: found; Core_Bound 5% < 10%: not.
    assert!(r.findings.iter().any(|f| f.metric == "tma_resource_bound"));
    assert!(!r.findings.iter().any(|f| f.metric == "tma_core_bound"));
    let vt = c.vendor_tree.as_ref().unwrap();
    let root = vt
        .roots
        .iter()
        .find(|n| n.name == "tma_frontend_bound")
        .unwrap();
    assert_eq!(root.threshold.as_deref(), Some("(tma_frontend_bound > 20)"));
}

/// Zen 4: AMD's pipeline utilization (6 dispatch slots per cycle).
#[test]
fn zen4_pipeline_utilization() {
    let cyc = 1.0e9;
    let (no_ops_fe, fe_c6, disp, ret_ops, be_stalls, smt) =
        (6.0e8, 5.0e7, 3.3e9, 3.0e9, 2.1e9, 0.0);
    let (load_nc, nc, ucode) = (6.0e8, 8.0e8, 3.0e7);
    let (c, m) = evaluated(
        "amd-zen4",
        &[
            ("ls_not_halted_cyc", cyc),
            ("de_no_dispatch_per_slot.no_ops_from_frontend", no_ops_fe),
            ("de_no_dispatch_per_slot.no_ops_from_frontend:c6", fe_c6),
            ("de_src_op_disp.all", disp),
            ("ex_ret_ops", ret_ops),
            ("de_no_dispatch_per_slot.backend_stalls", be_stalls),
            ("de_no_dispatch_per_slot.smt_contention", smt),
            ("ex_no_retire.load_not_complete", load_nc),
            ("ex_no_retire.not_complete", nc),
            ("ex_ret_ucode_ops", ucode),
            ("cycles", cyc),
            ("instructions", 2.0e9),
        ],
    );
    let slots = 6.0 * cyc;
    let be = be_stalls / slots;
    assert!(close(value(&m, "frontend_bound"), no_ops_fe / slots));
    assert!(close(
        value(&m, "bad_speculation"),
        (disp - ret_ops) / slots
    ));
    assert!(close(value(&m, "retiring"), ret_ops / slots));
    assert!(close(value(&m, "backend_bound"), be));
    assert!(close(value(&m, "backend_bound_memory"), be * load_nc / nc));
    assert!(close(
        value(&m, "frontend_bound_latency"),
        6.0 * fe_c6 / slots
    ));
    let r = walk_tree(&c, &m);
    assert_eq!(r.dominant.as_deref(), Some("backend"));
    assert!(
        r.verdict.starts_with(
            "back-end bound: 35% of pipeline slots (backend_bound) (IPC 2.00); backend_bound_memory 26%"
        ),
        "{}",
        r.verdict
    );
    assert!(!r.findings.iter().any(|f| f.metric == "backend_bound_cpu"));
}

/// Zen 3: no dispatch-slot events, so no top-down verdict; the other metrics work.
#[test]
fn zen3_metrics_without_a_verdict() {
    let c = load("amd-zen3").unwrap();
    assert!(c.vendor_tree.is_none());
    assert!(c.event("de_no_dispatch_per_slot.backend_stalls").is_none());
    let names = c.select_metrics("first-pass,vendor").unwrap();
    let mut ev = counts(
        &c,
        &[
            ("cycles", 1.0e9),
            ("instructions", 1.2e9),
            ("ls_not_halted_cyc", 1.0e9),
            ("ex_ret_instr", 1.2e9),
            ("ex_ret_brn", 2.4e8),
            ("ex_ret_brn_misp", 6.0e6),
            ("ls_l1_d_tlb_miss.all", 3.6e6),
        ],
    );
    for n in ["STALLED_CYCLES_FRONTEND", "STALLED_CYCLES_BACKEND"] {
        let mut e = counted(n, 0.0);
        e.value = None;
        e.state = EventState::NotSupported;
        e.supported = false;
        ev.push(e);
    }
    let m = evaluate_all(&c, &names, &ev);
    assert!(close(
        value(&m, "amd_branch_misprediction_rate"),
        6.0e6 / 2.4e8
    ));
    assert!(close(value(&m, "amd_dtlb_mpki"), 3.6e6 / 1.2e9 * 1000.0));
    assert!(close(value(&m, "amd_ipc"), 1.2));
    let r = walk_tree(&c, &m);
    assert_eq!(r.dominant, None);
    assert!(r.no_verdict.is_some(), "{}", r.verdict);
    assert!(c.select_metrics("topdown").is_err());
}
