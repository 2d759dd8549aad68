//! Tests of home map fingerprints: differences named, the current recipe made from the
//! machine identity, and maps of the first recipe read.

use super::*;

#[test]
fn fingerprints_name_what_differs() {
    let a = Fingerprint {
        recipe: FINGERPRINT_RECIPE.into(),
        source: "live".into(),
        cpu_model: "X".into(),
        stepping: "1".into(),
        cpus: 2,
        node_memory_bytes: vec![1 << 30],
        memory_basis: MEMORY_BLOCKS.into(),
        modes: vec!["smt off".into()],
    };
    assert!(a.differences(&a).is_empty());
    let b = Fingerprint {
        cpus: 4,
        ..a.clone()
    };
    assert_eq!(a.differences(&b), vec!["2 vs 4 CPUs".to_string()]);
    let more = Fingerprint {
        node_memory_bytes: vec![2 << 30],
        ..a.clone()
    };
    assert_eq!(
        a.differences(&more),
        vec!["memory per node [1073741824] vs [2147483648] bytes (memory blocks)".to_string()]
    );
    // A map from before memory blocks were counted: its MemTotal is not compared
    // with this machine's memory blocks, the other fields still are.
    let old: Fingerprint = serde_json::from_value(serde_json::json!({
        "source": "live", "cpu_model": "X", "stepping": "1", "cpus": 4,
        "node_memory_bytes": [1_000_000_000u64], "modes": ["smt off"]
    }))
    .unwrap();
    assert_eq!(old.memory_basis, MEMORY_MEMTOTAL);
    assert_eq!(a.differences(&old), vec!["2 vs 4 CPUs".to_string()]);
    let old_same_basis = Fingerprint {
        node_memory_bytes: vec![1 << 30],
        ..old.clone()
    };
    assert_eq!(old.differences(&old_same_basis).len(), 1);
}

/// A live fingerprint of the first recipe, as maps made before the recipe field hold it.
fn v1(cpu_model: &str, stepping: &str, cpus: u32) -> Fingerprint {
    let f: Fingerprint = serde_json::from_value(serde_json::json!({
        "source": "live", "cpu_model": cpu_model, "stepping": stepping, "cpus": cpus,
        "node_memory_bytes": [1u64 << 30], "memory_basis": MEMORY_BLOCKS,
        "modes": ["1 NUMA node"]
    }))
    .unwrap();
    assert_eq!(f.recipe, FINGERPRINT_RECIPE_V1);
    f
}

/// This machine's fingerprint now, from its CPU kinds.
fn now(kinds: &[CpuIdentity], cpus: u64) -> Fingerprint {
    let identity = MachineIdentity {
        cpu: CpuId::of_kinds(kinds),
        cores: None,
        pus: Some(cpus),
        numa_nodes: Some(1),
    };
    Fingerprint::new(
        "live",
        &identity,
        vec![1 << 30],
        MEMORY_BLOCKS,
        vec!["1 NUMA node".into()],
    )
}

fn spr(stepping: u32) -> CpuIdentity {
    CpuIdentity {
        vendor: Some("GenuineIntel".into()),
        model_name: Some("Intel(R) Xeon(R) Platinum 8480+".into()),
        family: Some(6),
        model: Some(143),
        stepping: Some(stepping),
        ..Default::default()
    }
}

#[test]
fn the_current_recipe_is_the_machine_identity() {
    let n1 = now(&[arm_cpu(0x41, 0xd0c, Some(3), Some(1))], 160);
    assert_eq!(n1.recipe, FINGERPRINT_RECIPE);
    assert_eq!(n1.cpu_model, "Arm Neoverse N1 (MIDR 0x413fd0c1, r3p1)");
    assert_eq!(n1.stepping, "MIDR 0x413fd0c1");
    assert_eq!(n1.cpus, 160);
    assert_eq!(n1.current(), n1);
    let x86 = now(&[spr(8)], 2);
    assert_eq!(x86.cpu_model, "Intel(R) Xeon(R) Platinum 8480+");
    assert_eq!(x86.stepping, "family 6 model 143 stepping 8");
    let nothing = now(&[], 1);
    assert_eq!(
        (nothing.cpu_model.as_str(), nothing.stepping.as_str()),
        ("unknown", "unknown")
    );
    // The recipe is written with the map.
    let json = serde_json::to_value(&n1).unwrap();
    assert_eq!(json["recipe"], FINGERPRINT_RECIPE);
}

#[test]
fn an_old_arm_map_of_this_machine_is_accepted_and_of_another_refused() {
    // The words the first recipe took from an Ampere Altra's `/proc/cpuinfo`.
    let old = v1("implementer 0x41 part 0xd0c", "variant 0x3 revision 1", 160);
    let here = now(&[arm_cpu(0x41, 0xd0c, Some(3), Some(1))], 160);
    let current = old.current();
    assert_eq!(current.recipe, FINGERPRINT_RECIPE);
    assert_eq!(current.stepping, "MIDR 0x413fd0c1");
    assert_eq!(current, here);
    assert!(old.differences(&here).is_empty());
    assert!(here.differences(&old).is_empty());
    // Another revision of the part is another machine.
    let r3p0 = now(&[arm_cpu(0x41, 0xd0c, Some(3), Some(0))], 160);
    assert_eq!(
        old.differences(&r3p0),
        vec![
            "CPU model \"Arm Neoverse N1 (MIDR 0x413fd0c1, r3p1)\" vs \"Arm Neoverse N1 (MIDR 0x413fd0c0, r3p0)\"".to_string(),
            "stepping \"MIDR 0x413fd0c1\" vs \"MIDR 0x413fd0c0\"".to_string(),
        ]
    );
    // A revision the kernel did not give counts as 0, as in the register.
    let unsaid = v1("implementer 0x41 part 0xd0c", "variant 0x3 revision ?", 160);
    assert!(unsaid.differences(&r3p0).is_empty());
    // big.LITTLE: the parts and their variants pair in order.
    let old = v1(
        "implementer 0x41 part 0xd05 + implementer 0x41 part 0xd41",
        "variant 0x2 revision 0 + variant 0x1 revision 0",
        8,
    );
    let here = now(
        &[
            arm_cpu(0x41, 0xd05, Some(2), Some(0)),
            arm_cpu(0x41, 0xd41, Some(1), Some(0)),
        ],
        8,
    );
    assert_eq!(here.stepping, "MIDR 0x412fd050 + MIDR 0x411fd410");
    assert!(old.differences(&here).is_empty());
    let x86 = now(&[spr(8)], 8);
    assert_eq!(old.differences(&x86).len(), 2);
}

#[test]
fn an_old_x86_map_of_this_machine_is_accepted_and_of_another_refused() {
    let old = v1(
        "Intel(R) Xeon(R) Platinum 8480+",
        "family 6 model 143 stepping 8",
        2,
    );
    let here = now(&[spr(8)], 2);
    assert_eq!(old.current(), here);
    assert!(old.differences(&here).is_empty());
    // Another stepping, another CPU count: named.
    let other = now(&[spr(7)], 4);
    assert_eq!(
        old.differences(&other),
        vec![
            "stepping \"family 6 model 143 stepping 8\" vs \"family 6 model 143 stepping 7\""
                .to_string(),
            "2 vs 4 CPUs".to_string(),
        ]
    );
    // Mixed steppings of one model: one model name stands for every stepping.
    let mixed = v1(
        "Intel(R) Xeon(R) Platinum 8480+",
        "family 6 model 143 stepping 7 + family 6 model 143 stepping 8",
        2,
    );
    assert!(mixed.differences(&now(&[spr(7), spr(8)], 2)).is_empty());
    // Nothing known then, nothing known now.
    assert!(v1("unknown", "unknown", 2)
        .differences(&now(&[], 2))
        .is_empty());
}

#[test]
fn old_words_that_cannot_be_read_stay_and_differ() {
    for (model, stepping) in [
        ("implementer 0x41 part zz", "variant 0x3 revision 1"),
        ("Some CPU", "family six model 1 stepping 1"),
        // Two models and three steppings cannot be paired.
        ("A + B", "family 6 model 1 stepping 1 + family 6 model 1 stepping 2 + family 6 model 1 stepping 3"),
    ] {
        let old = v1(model, stepping, 2);
        let current = old.current();
        assert_eq!(current.recipe, FINGERPRINT_RECIPE_V1, "{model}");
        assert_eq!((current.cpu_model.as_str(), current.stepping.as_str()), (model, stepping));
        assert!(!old.differences(&now(&[spr(8)], 2)).is_empty());
    }
    // A model's fingerprint keeps its words whatever its recipe.
    let model: Fingerprint = serde_json::from_value(serde_json::json!({
        "source": "model:mesh", "cpu_model": "mesh", "stepping": "seed 1", "cpus": 64,
        "node_memory_bytes": [1u64 << 36], "modes": ["1 NUMA nodes"]
    }))
    .unwrap();
    assert_eq!(model.current(), model);
}

#[test]
fn an_arm_name_follows_the_midr_table() {
    // A map whose name an older table gave: the MIDR decides.
    let mut stored = now(&[arm_cpu(0x41, 0xd0c, Some(3), Some(1))], 4);
    let here = stored.clone();
    stored.cpu_model = "Arm part 0xd0c (unknown to numalab; MIDR 0x413fd0c1, r3p1)".into();
    assert!(stored.differences(&here).is_empty());
}
