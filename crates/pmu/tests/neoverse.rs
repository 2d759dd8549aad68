//! Every Neoverse core numalab ships Arm's files for (N1, N2, N3, V1, V2, V3): the MIDR
//! picks its catalog, and counts go through the catalog's metric machinery to the values
//! of Arm's published formulas, written out by hand below for each core (the topdown
//! level 1 differs from core to core: N1 has only stall cycles, N2 subtracts a slot per
//! cycle from the front end, N3 and V3 charge front-end flushes to bad speculation
//! instead of branch mispredictions, V1 and V2 weigh those differently).
//!
//! The expected values never come from the catalog's formula strings: if a file were
//! swapped, a formula mis-parsed or a per-core formula not applied, these tests fail.

use numalab_pmu::catalog::{self, Catalog};
use numalab_pmu::metrics::{evaluate_all, EventState, EventValue};
use numalab_schema::machine::CpuIdentity;
use std::collections::HashMap;

type Counts = HashMap<&'static str, f64>;

/// One core: its catalog id and name, a MIDR of real silicon (implementer 0x41, the part
/// number as Arm's `cpus.json` gives it) and its topdown slots per cycle.
struct Core {
    id: &'static str,
    name: &'static str,
    midr: u64,
    part: u32,
    slots: u32,
}

const CORES: [Core; 6] = [
    // Ampere Altra: r3p1.
    Core {
        id: "neoverse-n1",
        name: "Neoverse N1",
        midr: 0x413f_d0c1,
        part: 0xd0c,
        slots: 5,
    },
    Core {
        id: "neoverse-n2",
        name: "Neoverse N2",
        midr: 0x410f_d493,
        part: 0xd49,
        slots: 5,
    },
    Core {
        id: "neoverse-n3",
        name: "Neoverse N3",
        midr: 0x410f_d8e0,
        part: 0xd8e,
        slots: 5,
    },
    // Graviton3: r1p1.
    Core {
        id: "neoverse-v1",
        name: "Neoverse V1",
        midr: 0x411f_d401,
        part: 0xd40,
        slots: 8,
    },
    // Grace: r0p0.
    Core {
        id: "neoverse-v2",
        name: "Neoverse V2",
        midr: 0x410f_d4f0,
        part: 0xd4f,
        slots: 8,
    },
    Core {
        id: "neoverse-v3",
        name: "Neoverse V3",
        midr: 0x410f_d841,
        part: 0xd84,
        slots: 10,
    },
];

fn core(id: &str) -> &'static Core {
    CORES.iter().find(|c| c.id == id).unwrap()
}

/// The part numbers above are the ones in Arm's cpus.json (shipped with numalab).
#[test]
fn part_numbers_are_arms() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/arm/pmu/cpus.json");
    let cpus: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for c in &CORES {
        let entry = cpus["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == c.name)
            .unwrap_or_else(|| panic!("{} not in cpus.json", c.name));
        assert_eq!(entry["implementer"], 0x41, "{}", c.name);
        let cpuid = entry["cpuid"].as_str().unwrap();
        assert_eq!(cpuid, format!("0x41{:03x}", c.part), "{}", c.name);
        // The MIDR fields: implementer [31:24], architecture 0xf [19:16], part [15:4].
        assert_eq!(c.midr >> 24, 0x41, "{}", c.name);
        assert_eq!((c.midr >> 16) & 0xf, 0xf, "{}", c.name);
        assert_eq!(((c.midr >> 4) & 0xfff) as u32, c.part, "{}", c.name);
    }
}

/// (a) The MIDR picks each core's own catalog, from sysfs alone, from the identity's
/// fields, and as a `--cpu-model` value; the catalog has the core's slots and counters.
#[test]
fn midr_detects_every_core() {
    for c in &CORES {
        let m = catalog::detect(&CpuIdentity::default(), Some(c.midr)).unwrap();
        assert_eq!(
            (m.catalog.as_str(), m.cpu.as_str()),
            (c.id, c.name),
            "{:#x}",
            c.midr
        );
        assert_eq!(m.how, format!("MIDR 0x{:08x}", c.midr));
        let id = CpuIdentity {
            architecture: Some("aarch64".into()),
            implementer: Some(0x41),
            part: Some(c.part),
            variant: Some(((c.midr >> 20) & 0xf) as u32),
            revision: Some((c.midr & 0xf) as u32),
            ..Default::default()
        };
        assert_eq!(catalog::detect(&id, None).unwrap().catalog, c.id);
        let m = catalog::resolve_model(&format!("0x{:08x}", c.midr)).unwrap();
        assert_eq!(m.catalog, c.id);
        let cat = catalog::load_match(&m).unwrap();
        assert_eq!(cat.midr, Some((0x41, c.part)), "{}", c.id);
        assert_eq!(cat.slots, Some(c.slots), "{}", c.id);
        assert_eq!(cat.counters, 6, "{}", c.id);
        assert_eq!(cat.event("CPU_CYCLES").unwrap().raw_code().unwrap(), "r11");
        assert_eq!(cat.event("INST_RETIRED").unwrap().raw_code().unwrap(), "r8");
    }
    // Another part of the same implementer is not taken for one of these.
    let m = catalog::detect(&CpuIdentity::default(), Some(0x410f_d830)).unwrap();
    assert_eq!(m.catalog, catalog::ARM_GENERIC_ID, "{m:?}");
}

/// Counts every core shares, with realistic magnitudes (`k` keeps the cores apart).
fn common(cycles: f64, k: f64) -> Counts {
    let inst = (cycles * 1.1 * k).round();
    let spec = (inst * 1.15).round();
    let br = (inst * 0.18).round();
    let l1d = (inst * 0.42).round();
    let l1d_tlb = (l1d * 1.02).round();
    let l1i_tlb = (inst * 0.26).round();
    HashMap::from([
        ("CPU_CYCLES", cycles),
        ("INST_RETIRED", inst),
        ("INST_SPEC", spec),
        ("STALL_FRONTEND", (cycles * 0.12 * k).round()),
        ("STALL_BACKEND", (cycles * 0.35 / k).round()),
        ("BR_RETIRED", br),
        ("BR_MIS_PRED_RETIRED", (br * 0.021 * k).round()),
        ("L1D_CACHE", l1d),
        ("L1D_CACHE_REFILL", (l1d * 0.037 * k).round()),
        ("L1D_TLB", l1d_tlb),
        ("DTLB_WALK", (l1d_tlb * 0.0011 * k).round()),
        ("L1I_TLB", l1i_tlb),
        ("ITLB_WALK", (l1i_tlb * 0.0004 / k).round()),
        ("DP_SPEC", (spec * 0.46).round()),
        ("DSB_SPEC", (spec * 0.0007).round()),
        ("BR_IMMED_SPEC", (spec * 0.15).round()),
        ("BR_INDIRECT_SPEC", (spec * 0.012).round()),
        ("PC_WRITE_SPEC", (spec * 0.13).round()),
    ])
}

/// Each core's counts: the shared ones plus the topdown events, chosen so that the
/// slots stalled add up (STALL_SLOT = STALL_SLOT_FRONTEND + STALL_SLOT_BACKEND).
fn counts(id: &str) -> Counts {
    let (cycles, k, topdown): (f64, f64, &[(&'static str, f64)]) = match id {
        "neoverse-n1" => (2.0e9, 1.0, &[]),
        "neoverse-n2" => (
            1.5e9,
            1.07,
            &[
                // N2 counts one extra front-end slot per cycle (its formula subtracts it).
                ("STALL_SLOT_FRONTEND", 3.3e9),
                ("STALL_SLOT_BACKEND", 3.0e9),
                ("STALL_SLOT", 6.3e9),
                ("BR_MIS_PRED", 4.0e6),
                ("OP_RETIRED", 2.7e9),
                ("OP_SPEC", 3.0e9),
            ],
        ),
        "neoverse-n3" => (
            1.8e9,
            0.93,
            &[
                ("STALL_SLOT_FRONTEND", 2.7e9),
                ("STALL_SLOT_BACKEND", 2.25e9),
                ("STALL_SLOT", 4.95e9),
                ("STALL_FRONTEND_FLUSH", 9.0e7),
                ("BR_MIS_PRED", 5.0e6),
                ("OP_RETIRED", 3.2e9),
                ("OP_SPEC", 3.6e9),
            ],
        ),
        "neoverse-v1" => (
            2.4e9,
            1.21,
            &[
                ("STALL_SLOT_FRONTEND", 3.84e9),
                ("STALL_SLOT_BACKEND", 8.64e9),
                ("STALL_SLOT", 12.48e9),
                ("BR_MIS_PRED", 6.0e6),
                ("OP_RETIRED", 5.0e9),
                ("OP_SPEC", 5.5e9),
            ],
        ),
        "neoverse-v2" => (
            3.0e9,
            0.88,
            &[
                ("STALL_SLOT_FRONTEND", 3.6e9),
                ("STALL_SLOT_BACKEND", 12.0e9),
                ("STALL_SLOT", 15.6e9),
                ("BR_MIS_PRED", 9.0e6),
                ("OP_RETIRED", 6.6e9),
                ("OP_SPEC", 7.0e9),
            ],
        ),
        "neoverse-v3" => (
            2.6e9,
            1.13,
            &[
                ("STALL_SLOT_FRONTEND", 5.72e9),
                ("STALL_SLOT_BACKEND", 8.58e9),
                ("STALL_SLOT", 14.3e9),
                ("STALL_FRONTEND_FLUSH", 7.8e7),
                ("BR_MIS_PRED", 7.0e6),
                ("OP_RETIRED", 7.1e9),
                ("OP_SPEC", 7.9e9),
            ],
        ),
        _ => unreachable!("{id}"),
    };
    let mut c = common(cycles, k);
    c.extend(topdown.iter().copied());
    c
}

/// The topdown level 1 of each core, by hand from Arm's telemetry specification of that
/// core (`metrics.<name>.formula` in data/pmu/cpu/neoverse/neoverse-*.json), in percent.
fn expected_topdown(id: &str, v: &dyn Fn(&str) -> f64) -> Vec<(&'static str, f64)> {
    let cycles = v("CPU_CYCLES");
    if id == "neoverse-n1" {
        // N1 has no slot events: its level 1 is stall cycles.
        return vec![
            (
                "frontend_stalled_cycles",
                v("STALL_FRONTEND") / cycles * 100.0,
            ),
            (
                "backend_stalled_cycles",
                v("STALL_BACKEND") / cycles * 100.0,
            ),
        ];
    }
    let slots = f64::from(core(id).slots) * cycles;
    let (ssf, ssb, ss) = (
        v("STALL_SLOT_FRONTEND"),
        v("STALL_SLOT_BACKEND"),
        v("STALL_SLOT"),
    );
    let retired_share = v("OP_RETIRED") / v("OP_SPEC");
    let mispred = v("BR_MIS_PRED") / cycles;
    let (fe, be, ret, bad) = match id {
        "neoverse-n2" => {
            let issued = 1.0 - (ss - cycles) / slots;
            (
                (ssf - cycles) / slots - mispred,
                ssb / slots - 3.0 * mispred,
                retired_share * issued,
                (1.0 - retired_share) * issued + 4.0 * mispred,
            )
        }
        "neoverse-v1" => {
            let issued = 1.0 - ss / slots;
            (
                ssf / slots - 4.0 * mispred,
                ssb / slots,
                issued * retired_share,
                (1.0 - retired_share) * issued + 4.0 * mispred,
            )
        }
        "neoverse-v2" => {
            let issued = 1.0 - ss / slots;
            (
                ssf / slots - mispred,
                ssb / slots - 3.0 * mispred,
                retired_share * issued,
                (1.0 - retired_share) * issued + 4.0 * mispred,
            )
        }
        "neoverse-n3" | "neoverse-v3" => {
            let issued = 1.0 - ss / slots;
            let flush = v("STALL_FRONTEND_FLUSH") / cycles;
            (
                ssf / slots - flush,
                ssb / slots,
                issued * retired_share,
                issued * (1.0 - retired_share) + flush,
            )
        }
        _ => unreachable!("{id}"),
    };
    vec![
        ("frontend_bound", fe * 100.0),
        ("backend_bound", be * 100.0),
        ("retiring", ret * 100.0),
        ("bad_speculation", bad * 100.0),
    ]
}

/// The other metrics checked on every core: Arm's (vendor) names and numalab's
/// methodology names for the same quantities.
fn expected_others(id: &str, v: &dyn Fn(&str) -> f64) -> Vec<(&'static str, f64)> {
    let ipc = v("INST_RETIRED") / v("CPU_CYCLES");
    let l1d = v("L1D_CACHE_REFILL") / v("L1D_CACHE");
    let br = v("BR_MIS_PRED_RETIRED") / v("BR_RETIRED");
    let dtlb = v("DTLB_WALK") / v("L1D_TLB");
    let itlb = v("ITLB_WALK") / v("L1I_TLB");
    // Neoverse N3 has no BR_IMMED_SPEC/BR_INDIRECT_SPEC: Arm's N3 file takes
    // PC_WRITE_SPEC for branches and takes DSB_SPEC out of DP_SPEC.
    let (branches, dp) = if id == "neoverse-n3" {
        (v("PC_WRITE_SPEC"), v("DP_SPEC") - v("DSB_SPEC"))
    } else {
        (v("BR_IMMED_SPEC") + v("BR_INDIRECT_SPEC"), v("DP_SPEC"))
    };
    let spec = v("INST_SPEC");
    vec![
        ("ipc", ipc),
        ("l1d_cache_miss_ratio", l1d),
        ("l1d_miss_rate", l1d),
        ("branch_misprediction_ratio", br),
        ("branch_misprediction_rate", br),
        ("dtlb_walk_ratio", dtlb),
        ("dtlb_walk_rate", dtlb),
        ("itlb_walk_ratio", itlb),
        ("itlb_walk_rate", itlb),
        ("frontend_stall_rate", v("STALL_FRONTEND") / v("CPU_CYCLES")),
        ("backend_stall_rate", v("STALL_BACKEND") / v("CPU_CYCLES")),
        ("branch_percentage", branches / spec * 100.0),
        ("mix_branch_pct", branches / spec * 100.0),
        ("integer_dp_percentage", dp / spec * 100.0),
        ("mix_dp_pct", dp / spec * 100.0),
    ]
}

fn event_values(c: &Catalog, counts: &Counts) -> Vec<EventValue> {
    counts
        .iter()
        // Only what the core has (N3 has no BR_IMMED_SPEC, N1 no STALL_SLOT).
        .filter(|(n, _)| c.event(n).is_some())
        .map(|(n, v)| EventValue {
            name: n.to_string(),
            code: c.event(n).and_then(|e| e.raw_code()),
            value: Some(*v),
            raw_count: Some(*v as u64),
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
        })
        .collect()
}

/// Evaluates `expected`'s metrics through the catalog and compares.
fn check(c: &Catalog, counts: &Counts, expected: &[(&str, f64)]) {
    let names: Vec<String> = expected.iter().map(|(n, _)| n.to_string()).collect();
    let got = evaluate_all(c, &names, &event_values(c, counts));
    for (name, want) in expected {
        let m = got
            .iter()
            .find(|m| m.name == *name)
            .unwrap_or_else(|| panic!("{}: no metric {name}", c.id));
        let v = m
            .value
            .unwrap_or_else(|| panic!("{}: {name} n/a: {:?}", c.id, m.reason));
        assert!(
            (v - want).abs() <= 1e-12 * want.abs().max(1.0),
            "{}: {name} = {v}, Arm's formula gives {want}",
            c.id
        );
    }
}

/// (b) Topdown level 1 and the usual ratios, for each core, equal Arm's formulas.
#[test]
fn metrics_equal_arms_formulas_on_every_core() {
    for core in &CORES {
        let c = catalog::load(core.id).unwrap();
        let counts = counts(core.id);
        let v = |n: &str| *counts.get(n).unwrap_or_else(|| panic!("count {n}"));
        let topdown = expected_topdown(core.id, &v);
        check(&c, &counts, &topdown);
        check(&c, &counts, &expected_others(core.id, &v));
        // The values are plausible shares, and on the cores with slots the four level-1
        // categories share out every slot.
        for (name, pct) in &topdown {
            assert!(*pct > 0.0 && *pct < 100.0, "{}: {name} = {pct}", core.id);
        }
        if core.id == "neoverse-n1" {
            assert!(c.select_metrics("topdown").is_err());
        } else {
            let sum: f64 = topdown.iter().map(|(_, p)| p).sum();
            assert!(
                (sum - 100.0).abs() < 1e-9,
                "{}: level 1 sums to {sum}",
                core.id
            );
            assert_eq!(
                c.select_metrics("topdown").unwrap(),
                [
                    "frontend_bound",
                    "backend_bound",
                    "retiring",
                    "bad_speculation"
                ],
                "{}",
                core.id
            );
        }
    }
}

/// The metrics are not merely ratios that any counts satisfy: on N2, with the extra
/// front-end slot per cycle not subtracted, the front-end share would be 20 points
/// higher; the check above would catch a formula that forgot it.
#[test]
fn n2_front_end_subtracts_one_slot_per_cycle() {
    let c = catalog::load("neoverse-n2").unwrap();
    let counts = counts("neoverse-n2");
    let v = |n: &str| counts[n];
    let got = evaluate_all(
        &c,
        &["frontend_bound".to_string()],
        &event_values(&c, &counts),
    )[0]
    .value
    .unwrap();
    let naive = (v("STALL_SLOT_FRONTEND") / (5.0 * v("CPU_CYCLES"))
        - v("BR_MIS_PRED") / v("CPU_CYCLES"))
        * 100.0;
    assert!((naive - got - 20.0).abs() < 1e-9, "{naive} vs {got}");
}

/// A missing topdown input is "n/a" with the reason, on the new cores as on the old.
#[test]
fn missing_slot_event_is_not_available() {
    for id in ["neoverse-n3", "neoverse-v2", "neoverse-v3"] {
        let c = catalog::load(id).unwrap();
        let mut counts = counts(id);
        counts.remove("STALL_SLOT_BACKEND");
        let m = &evaluate_all(
            &c,
            &["backend_bound".to_string()],
            &event_values(&c, &counts),
        )[0];
        assert_eq!(m.value, None, "{id}");
        assert_eq!(
            m.reason.as_deref(),
            Some("missing input: STALL_SLOT_BACKEND not counted"),
            "{id}"
        );
    }
}
