use super::*;

#[test]
fn every_shipped_catalog_loads_and_is_consistent() {
    for id in shipped() {
        let c = load(id).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert!(c.counters >= 1, "{id}");
        assert!(!c.events.is_empty() && !c.metrics.is_empty(), "{id}");
        // Every metric formula names only events that exist (checked in `build`,
        // asserted again here so the test fails loudly if that check is removed).
        for m in &c.metrics {
            for v in m.events() {
                assert!(c.event(&v).is_some(), "{id}: {} uses {v}", m.name);
            }
        }
        // Names unique.
        let mut names: Vec<&str> = c.metrics.iter().map(|m| m.name.as_str()).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len(), "{id}: duplicate metric names");
        let mut ev: Vec<String> = c.events.iter().map(|e| e.name.to_lowercase()).collect();
        ev.sort();
        let n = ev.len();
        ev.dedup();
        assert_eq!(n, ev.len(), "{id}: duplicate event names");
        // The methodology's first-pass set is complete on every catalog.
        for key in [
            "ipc",
            "frontend_stall_rate",
            "backend_stall_rate",
            "branch_mpki",
            "branch_misprediction_rate",
            "itlb_mpki",
            "dtlb_mpki",
            "l1d_mpki",
            "l1d_miss_rate",
            "ll_read_mpki",
            "ll_read_miss_rate",
        ] {
            assert!(c.metric(key).is_some(), "{id}: {key} missing");
        }
    }
}

/// Our methodology metrics that say they equal a vendor metric do, on every Arm
/// catalog, for arbitrary counts; and a vendor metric hidden by one of ours has the
/// same formula.
#[test]
fn methodology_agrees_with_vendor_metrics() {
    for id in ARM.iter().map(|a| a.id) {
        let c = load(id).unwrap();
        let value = |name: &str| {
            // Distinct, deterministic, non-zero counts per event.
            let h = name.bytes().fold(1469598103u64, |a, b| {
                a.wrapping_mul(1099511628211) ^ b as u64
            });
            expr::Input::Value((h % 1_000_000 + 1000) as f64)
        };
        let mut checked = 0;
        for m in c.metrics.iter().filter(|m| m.same_as.is_some()) {
            let target = m.same_as.as_deref().unwrap();
            let v = c
                .metric(target)
                .filter(|t| t.origin == MetricOrigin::Vendor)
                .or_else(|| c.shadowed.iter().find(|s| s.name == target))
                .unwrap_or_else(|| panic!("{id}: {} same_as unknown {target}", m.name));
            let ours = m.expr.eval(&value).unwrap() * m.scale;
            let theirs = v.expr.eval(&value).unwrap();
            assert!(
                (ours - theirs).abs() <= 1e-9 * theirs.abs().max(1.0),
                "{id}: {} = {ours} but vendor {target} = {theirs}",
                m.name
            );
            checked += 1;
        }
        assert!(checked >= 20, "{id}: only {checked} checked");
        for s in &c.shadowed {
            let ours = c.metric(&s.name).unwrap();
            assert_eq!(ours.same_as.as_deref(), Some(s.name.as_str()), "{id}");
            assert_eq!(ours.scale, 1.0, "{id}");
        }
    }
}

/// A per-core formula (`formula_for`) exists only where it is needed: on that core the
/// default formula names an event the core lacks, or differs from the vendor metric it
/// claims to equal. (So an override cannot outlive the reason for it.)
#[test]
fn per_core_formulas_are_needed() {
    let m = parse_toml("data/metrics/arm.toml", ARM_METRICS_TOML).unwrap();
    let mut seen = 0;
    for tm in &m.metric {
        for (core, formula) in &tm.formula_for {
            let c = load(core).unwrap();
            let ours = c.metric(&tm.name).unwrap();
            assert_eq!(&ours.formula, formula, "{core} {}", tm.name);
            let default = expr::parse(&tm.formula).unwrap();
            let lacks = default.variables().iter().any(|v| c.event(v).is_none());
            let target = tm.same_as.as_deref().unwrap();
            let vendor = c.metric(target).unwrap();
            let value = |name: &str| {
                let h = name
                    .bytes()
                    .fold(7u64, |a, b| a.wrapping_mul(31) ^ b as u64);
                expr::Input::Value((h % 9_000 + 1_000) as f64)
            };
            let differs = !lacks && {
                let a = default.eval(&value).unwrap() * tm.scale.unwrap_or(1.0);
                let b = vendor.expr.eval(&value).unwrap();
                (a - b).abs() > 1e-9 * b.abs().max(1.0)
            };
            assert!(
                lacks || differs,
                "{core} {}: formula_for is not needed",
                tm.name
            );
            seen += 1;
        }
    }
    assert_eq!(seen, 2, "mix_dp_pct and mix_branch_pct on Neoverse N3");
    // A core name that is not shipped is refused, not ignored.
    let mut bad = parse_toml(
        "t.toml",
        "[[metric]]\nname = \"x\"\ntitle = \"x\"\nformula = \"A\"\nunit = \"ratio\"\ngroup = \"g\"\n[metric.formula_for]\nneoverse-n9 = \"B\"\n",
    )
    .unwrap();
    let e = per_core_formulas(&mut bad.metric, "neoverse-n1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown core neoverse-n9"), "{e}");
}

/// Every Arm core's files are loaded with their counters and names; the newer cores'
/// PMU files give no counter count and numalab's table does (Arm Streamline: 6).
#[test]
fn arm_table_matches_the_files() {
    assert_eq!(arm_cores_text(), "Neoverse N1, N2, N3, V1, V2 and V3");
    for a in ARM {
        let c = load(a.id).unwrap();
        assert_eq!(c.name, a.name);
        assert_eq!(c.counters, 6, "{}", a.id);
        let p: ArmPmuFile = serde_json::from_str(a.pmu).unwrap();
        assert_eq!(p.counters.is_none(), a.counters.is_some(), "{}", a.id);
        assert_eq!(
            c.sources.iter().any(|s| s.contains("Streamline")),
            a.counters.is_some(),
            "{}",
            a.id
        );
        // The vendor tree's roots are the level-1 nodes only (N3 and V3 list level 2 too).
        let roots: Vec<&str> = c
            .vendor_tree
            .as_ref()
            .unwrap()
            .roots
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        if a.id == "neoverse-n1" {
            assert_eq!(roots, ["frontend_stalled_cycles", "backend_stalled_cycles"]);
        } else {
            let mut roots = roots;
            roots.sort();
            assert_eq!(
                roots,
                [
                    "backend_bound",
                    "bad_speculation",
                    "frontend_bound",
                    "retiring"
                ],
                "{}",
                a.id
            );
        }
    }
    let arm: Vec<_> = products()
        .into_iter()
        .filter(|(_, id)| id.starts_with("neoverse-"))
        .collect();
    assert!(arm.len() >= 18, "{arm:?}");
    for (product, id) in arm {
        assert!(shipped().contains(&id), "{product} -> {id}");
        assert_eq!(resolve_model(product).unwrap().catalog, id, "{product}");
    }
}

/// Our tree's sides look at the groups the vendor's N1 decision tree names.
#[test]
fn tree_follows_the_vendor_decision_tree() {
    let c = load("neoverse-n1").unwrap();
    let vt = c.vendor_tree.as_ref().unwrap();
    for b in &c.tree.branches {
        let root = b.vendor_root.as_deref().unwrap();
        let node = vt.roots.iter().find(|r| r.name == root).unwrap();
        let mut mapped: Vec<String> = b
            .groups
            .iter()
            .flat_map(|g| c.group(g).unwrap().vendor.clone())
            .collect();
        mapped.sort();
        let mut vendor = node.next_items.clone();
        vendor.sort();
        assert_eq!(mapped, vendor, "side {}", b.side);
        assert_eq!(b.sample, node.sample_events, "side {}", b.side);
    }
}

#[test]
fn n1_counts_and_codes() {
    let c = load("neoverse-n1").unwrap();
    assert_eq!(c.counters, 6);
    assert_eq!(c.midr, Some((0x41, 0xd0c)));
    // The cheat sheet's r4c is L1D_TLB_REFILL_RD; the architecture's 0x05 is L1D_TLB_REFILL.
    assert_eq!(
        c.event("L1D_TLB_REFILL").unwrap().encoding,
        Encoding::Raw(0x05)
    );
    assert_eq!(c.event_by_code(0x4c).unwrap().name, "L1D_TLB_REFILL_RD");
    // The methodology's first-pass table.
    for (name, code) in [
        ("CPU_CYCLES", 0x11),
        ("STALL_FRONTEND", 0x23),
        ("STALL_BACKEND", 0x24),
        ("INST_RETIRED", 0x08),
        ("INST_SPEC", 0x1b),
        ("BR_MIS_PRED_RETIRED", 0x22),
        ("LL_CACHE_MISS_RD", 0x37),
        ("REMOTE_ACCESS", 0x31),
    ] {
        assert_eq!(
            c.event(name).unwrap().encoding,
            Encoding::Raw(code),
            "{name}"
        );
    }
    // The methodology's table says CRYPTO_SPEC 0x76; Arm's files (and the Arm ARM) say
    // 0x77, and 0x76 is PC_WRITE_SPEC. The vendor file decides.
    assert_eq!(
        c.event("CRYPTO_SPEC").unwrap().encoding,
        Encoding::Raw(0x77)
    );
    assert_eq!(c.event_by_code(0x76).unwrap().name, "PC_WRITE_SPEC");
    assert_eq!(c.resolve_event("r11").unwrap().name, "CPU_CYCLES");
    assert_eq!(
        c.resolve_event("armv8_pmuv3_0/cpu_cycles/").unwrap().name,
        "CPU_CYCLES"
    );
    assert_eq!(
        c.resolve_event("armv8_pmuv3_0/event=0x8/").unwrap().name,
        "INST_RETIRED"
    );
    assert_eq!(
        c.resolve_event("instructions:u").unwrap().name,
        "INST_RETIRED"
    );
    assert_eq!(c.resolve_event("task-clock").unwrap().name, "TASK_CLOCK");
    let unnamed = c.resolve_event("r3ff").unwrap();
    assert_eq!(
        (unnamed.name.as_str(), unnamed.encoding),
        ("r3ff", Encoding::Raw(0x3ff))
    );
}

#[test]
fn unknown_names_list_close_matches() {
    let c = load("neoverse-n1").unwrap();
    let e = c.resolve_event("CPU_CYCLE").unwrap_err().to_string();
    assert!(e.contains("did you mean CPU_CYCLES"), "{e}");
    let e = c.select_metrics("ipc,l1d_mkpi").unwrap_err().to_string();
    assert!(e.contains("l1d_mpki"), "{e}");
    let e = resolve_model("neoverse-n3x").unwrap_err().to_string();
    assert!(e.contains("neoverse-n"), "{e}");
    let e = resolve_model("Neoverse E1").unwrap_err().to_string();
    assert!(e.contains("known Arm core"), "{e}");
    assert!(e.contains("Neoverse N1, N2, N3, V1, V2 and V3 only"), "{e}");
}

#[test]
fn metric_sets() {
    let c = load("neoverse-n2").unwrap();
    let first = c.select_metrics("first-pass").unwrap();
    assert!(first.contains(&"ipc".to_string()) && first.contains(&"cpus_utilized".to_string()));
    assert!(!first.contains(&"frontend_bound".to_string()));
    assert_eq!(
        c.select_metrics("topdown").unwrap(),
        [
            "frontend_bound",
            "backend_bound",
            "retiring",
            "bad_speculation"
        ]
    );
    assert_eq!(
        c.select_metrics("l1d").unwrap(),
        ["l1d_mpki", "l1d_miss_rate"]
    );
    assert!(c
        .select_metrics("vendor")
        .unwrap()
        .contains(&"ipc".to_string()));
    assert!(c.select_metrics("none").unwrap().is_empty());
    let e = load("neoverse-n1")
        .unwrap()
        .select_metrics("topdown")
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("(Arm publishes them for Neoverse N2, N3, V1, V2 and V3)"),
        "{e}"
    );
    let x = load(X86_ID).unwrap();
    assert!(x.select_metrics("topdown").is_err());
    assert!(x.select_metrics("vendor").is_err());
}

#[test]
fn cpu_detection() {
    // Ampere Altra: MIDR 0x413fd0c1.
    let altra = CpuIdentity {
        architecture: Some("aarch64".into()),
        implementer: Some(0x41),
        part: Some(0xd0c),
        variant: Some(3),
        revision: Some(1),
        ..Default::default()
    };
    let m = detect(&altra, None).unwrap();
    assert_eq!(m.catalog, "neoverse-n1");
    assert_eq!(m.how, "MIDR 0x413fd0c1");
    // From sysfs alone.
    let m = detect(&CpuIdentity::default(), Some(0x410fd400)).unwrap();
    assert_eq!(m.catalog, "neoverse-v1");
    // Grace is Neoverse V2, which has its own files now.
    let m = detect(&CpuIdentity::default(), Some(0x410fd4f0)).unwrap();
    assert_eq!(
        (m.catalog.as_str(), m.cpu.as_str()),
        ("neoverse-v2", "Neoverse V2")
    );
    // A core without files (Neoverse E1) is named, not silently mapped to another core's
    // files: the kernel's generic events, said so.
    let m = detect(&CpuIdentity::default(), Some(0x411fd4a0)).unwrap();
    assert_eq!(m.catalog, ARM_GENERIC_ID);
    assert!(m.cpu.contains("Neoverse E1"), "{m:?}");
    assert!(m.how.contains("no vendor metrics for this core"), "{m:?}");
    assert!(
        m.how.contains("Neoverse N1, N2, N3, V1, V2 and V3)"),
        "{m:?}"
    );
    let c = load_match(&m).unwrap();
    assert_eq!(c.arch, Arch::Generic);
    assert_eq!(c.anchors(), ["CYCLES", "INSTRUCTIONS"]);
    assert!(c.event("STALLED_CYCLES_FRONTEND").is_some());
    // QEMU's `max` CPU (implementer 0x00) too.
    let m = detect(&CpuIdentity::default(), Some(0x000f0510)).unwrap();
    assert_eq!(m.catalog, ARM_GENERIC_ID);
    assert!(m.cpu.contains("implementer 0x00"), "{m:?}");
    let amd = CpuIdentity {
        architecture: Some("x86_64".into()),
        vendor: Some("AuthenticAMD".into()),
        family: Some(25),
        model: Some(1),
        ..Default::default()
    };
    let m = detect(&amd, None).unwrap();
    // Zen 3 (family 0x19 model 0x01): its own catalog, without a top-down verdict.
    assert_eq!(m.catalog, "amd-zen3");
    assert!(m.how.contains("no top-down verdict"), "{m:?}");
    assert_eq!(load_match(&m).unwrap().counters, 6);
    assert_eq!(resolve_model("Neoverse N1").unwrap().catalog, "neoverse-n1");
    assert_eq!(
        resolve_model("ampere-altra").unwrap().catalog,
        "neoverse-n1"
    );
    assert_eq!(resolve_model("0x413fd0c1").unwrap().catalog, "neoverse-n1");
    assert_eq!(
        load_match(&resolve_model("intel").unwrap())
            .unwrap()
            .counters,
        4
    );
}

#[test]
fn sysfs_midr() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir
        .path()
        .join("sys/devices/system/cpu/cpu0/regs/identification");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join("midr_el1"), "0x00000000413fd0c1\n").unwrap();
    assert_eq!(midr_from_sysfs(dir.path()), Some(0x413fd0c1));
    assert_eq!(midr_from_sysfs(Path::new("/nonexistent")), None);
}
