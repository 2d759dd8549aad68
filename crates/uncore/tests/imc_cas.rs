//! The iMC's CAS commands counted three ways (`UNC_M_CAS_COUNT.RD`, `.WR`, `.ALL`) so
//! that read + write = total is a check that can fail: ALL's encodings in numalab's
//! table checked against Intel's own perfmon files (the extract
//! `data/intel/imc-cas.json`, with its provenance), the generation chosen by the
//! kernel's `cas_count_read` / `cas_count_write`, the counter budget, and the shares
//! derived from replayed counts that keep and that break the rule.

use numalab_uncore::table::{Class, Role, Source, KNOWN_EVENTS};
use numalab_uncore::{
    discover, packages_from_sysfs, plan, Discovery, ReplayBackend, Session, What,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load(root: &Path) -> Discovery {
    discover(root, &packages_from_sysfs(root)).expect("fixture discovers")
}

fn perfmon() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/intel/imc-cas.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn hex(v: &Value) -> u64 {
    let s = v.as_str().expect("a hex string");
    u64::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16).unwrap()
}

/// The table's ALL event and its per-generation choices.
fn all_event() -> (
    &'static [&'static str],
    &'static [numalab_uncore::table::ByGeneration],
) {
    let k = KNOWN_EVENTS
        .iter()
        .find(|k| k.class == Class::IntelImc && k.role == Role::CasAll)
        .expect("the iMC's ALL is in the table");
    assert_eq!(k.name, "UNC_M_CAS_COUNT.ALL");
    match k.source {
        Source::SameGenerationAs { sysfs, choices } => (sysfs, choices),
        other => panic!("ALL is not chosen by generation: {other:?}"),
    }
}

/// Which of numalab's choices each generation of Intel's files is, and the prefix of
/// its event names (Granite Rapids: sub-channel 0, whose RD and WR the kernel named
/// cas_count_read / cas_count_write before it named both sub-channels).
const GENERATIONS: &[(&str, &str, &str)] = &[
    ("skx", "Skylake-SP", "UNC_M_CAS_COUNT"),
    ("clx", "Cascade Lake", "UNC_M_CAS_COUNT"),
    ("icx", "Ice Lake-SP", "UNC_M_CAS_COUNT"),
    ("spr", "Sapphire Rapids", "UNC_M_CAS_COUNT"),
    ("emr", "Emerald Rapids", "UNC_M_CAS_COUNT"),
    (
        "gnr",
        "Granite Rapids sub-channel 0",
        "UNC_M_CAS_COUNT_SCH0",
    ),
];

#[test]
fn cas_encodings_are_intels_own_and_all_is_read_or_write() {
    let data = perfmon();
    let d = load(&fixture("spr-2s"));
    let imc = d.device("uncore_imc_0").unwrap();
    let (sysfs, choices) = all_event();
    assert_eq!(sysfs, ["cas_count_read", "cas_count_write"]);
    for (gen, label, prefix) in GENERATIONS {
        let g = &data["generations"][gen];
        let events = g["events"].as_array().unwrap();
        let find = |suffix: &str| {
            let name = format!("{prefix}.{suffix}");
            events
                .iter()
                .find(|e| e["EventName"] == name.as_str())
                .unwrap_or_else(|| panic!("{gen}: no {name} in Intel's file"))
        };
        let (rd, wr, all) = (find("RD"), find("WR"), find("ALL"));
        // The iMC's control register: event 0-7, umask 8-15 (the kernel's formats).
        let code = |e: &Value| hex(&e["EventCode"]) | hex(&e["UMask"]) << 8;
        for e in [rd, wr, all] {
            assert!(
                e["Unit"].as_str().unwrap().eq_ignore_ascii_case("imc"),
                "{gen}"
            );
            assert_eq!(e["Deprecated"], "0", "{gen}");
        }
        // ALL counts what RD or WR counts: the same event, and its umask the union of
        // theirs (their type bits differ: 0x3 / 0xC, 0x0f / 0x30, and on SPR 0x0f /
        // 0x30 under the bits 0xc0 both set).
        assert_eq!(rd["EventCode"], all["EventCode"], "{gen}");
        assert_eq!(wr["EventCode"], all["EventCode"], "{gen}");
        assert_eq!(
            hex(&rd["UMask"]) | hex(&wr["UMask"]),
            hex(&all["UMask"]),
            "{gen}"
        );
        let c = choices
            .iter()
            .find(|c| c.generations.contains(label))
            .unwrap_or_else(|| panic!("{gen}: no choice for {label}"));
        let enc = |t: &str| imc.encode_str(t).unwrap().config;
        assert_eq!(enc(c.identify[0]), [code(rd), 0, 0, 0], "{gen} RD");
        assert_eq!(enc(c.identify[1]), [code(wr), 0, 0, 0], "{gen} WR");
        assert_eq!(enc(c.terms), [code(all), 0, 0, 0], "{gen} ALL");
    }
    // Granite Rapids' sub-channel 1 is another event code (0x06): not counted by
    // numalab (docs/uncore.md, Limits).
    let gnr = data["generations"]["gnr"]["events"].as_array().unwrap();
    let sch1 = gnr
        .iter()
        .find(|e| e["EventName"] == "UNC_M_CAS_COUNT_SCH1.ALL")
        .unwrap();
    assert_eq!(hex(&sch1["EventCode"]), 0x06);
}

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

/// The SPR tree with the kernel's cas_count_read / _write of another generation.
fn tree_with(read: &str, write: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture("spr-2s"), tmp.path());
    for i in 0..8 {
        let ev = tmp.path().join(format!(
            "sys/bus/event_source/devices/uncore_imc_{i}/events"
        ));
        std::fs::write(ev.join("cas_count_read"), format!("{read}\n")).unwrap();
        std::fs::write(ev.join("cas_count_write"), format!("{write}\n")).unwrap();
    }
    tmp
}

/// The events planned on uncore_imc_0's first box, in group order.
fn imc_groups(p: &numalab_uncore::session::Plan) -> Vec<Vec<(String, u64)>> {
    p.groups
        .iter()
        .filter(|g| g.device == "uncore_imc_0" && g.cpu == 0)
        .map(|g| {
            g.events
                .iter()
                .map(|e| (e.name.clone(), e.encoding.config[0]))
                .collect()
        })
        .collect()
}

#[test]
fn all_is_encoded_for_the_generation_the_kernel_names_in_one_group_with_read_and_write() {
    let cases = [
        ("event=0x04,umask=0x03", "event=0x04,umask=0x0c", 0x0f04), // SKX, CLX
        ("event=0x04,umask=0x0f", "event=0x04,umask=0x30", 0x3f04), // ICX
        ("event=0x05,umask=0xcf", "event=0x05,umask=0xf0", 0xff05), // SPR, EMR
    ];
    for (read, write, all) in cases {
        let tmp = tree_with(read, write);
        let p = plan(&load(tmp.path()), &What::memory()).unwrap();
        let groups = imc_groups(&p);
        // One group: the clock, RD, WR, ALL on the iMC's 4 general counters.
        assert_eq!(groups.len(), 1, "{read}: {groups:?}");
        let names: Vec<&str> = groups[0].iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "clockticks",
                "cas_count_read",
                "cas_count_write",
                "UNC_M_CAS_COUNT.ALL"
            ]
        );
        assert_eq!(groups[0][3].1, all, "{read}");
        assert!(
            !p.notes.iter().any(|n| n.contains("multiplexes")),
            "{:?}",
            p.notes
        );
    }
}

#[test]
fn an_unknown_generation_or_too_few_counters_leave_all_uncounted_with_the_reason() {
    // RD of SPR, WR of ICX: no generation of Intel's files.
    let tmp = tree_with("event=0x05,umask=0xcf", "event=0x04,umask=0x30");
    let p = plan(&load(tmp.path()), &What::memory()).unwrap();
    let names: Vec<String> = imc_groups(&p)
        .concat()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["clockticks", "cas_count_read", "cas_count_write"]);
    let why = &p.missing[&("uncore_imc_0".to_string(), "cas_all".to_string())];
    assert!(why.contains("match no generation"), "{why}");
    assert!(why.contains("cas_count_write config 0x3004"), "{why}");

    // Three counters per box: the clock, RD and WR fit; ALL does not beside them.
    let mut what = What::memory();
    what.budgets
        .overrides
        .push((Class::IntelImc, Some(3), "a test's budget".into()));
    let p = plan(&load(&fixture("spr-2s")), &what).unwrap();
    let groups = imc_groups(&p);
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert!(!groups[0].iter().any(|(n, _)| n == "UNC_M_CAS_COUNT.ALL"));
    let why = &p.missing[&("uncore_imc_0".to_string(), "cas_all".to_string())];
    assert!(
        why.contains("3 counter(s)") && why.contains("not counted"),
        "{why}"
    );
}

fn replay(all_of_read_and_write: f64) -> ReplayBackend {
    let mut b = ReplayBackend::new(2.0);
    for i in 0..8 {
        let dev = format!("uncore_imc_{i}");
        b.set_all(&dev, "clockticks", 4_000_000_000);
        b.set_all(&dev, "cas_count_read", 187_500_000);
        b.set_all(&dev, "cas_count_write", 62_500_000);
        let all = (250_000_000.0 * all_of_read_and_write).round() as u64;
        b.set_all(&dev, "UNC_M_CAS_COUNT.ALL", all);
    }
    b
}

#[test]
fn replayed_counts_give_shares_of_the_counted_total_never_normalised() {
    let d = load(&fixture("spr-2s"));
    // ALL = RD + WR: 75% + 25%.
    let s = Session::start(&d, &What::memory(), &mut replay(1.0)).unwrap();
    let r = s.stop().unwrap();
    for n in [0, 1] {
        let so = r.socket(n).unwrap();
        assert_eq!(so.read_percent_of_all_cas.value, Some(75.0));
        assert_eq!(so.write_percent_of_all_cas.value, Some(25.0));
        assert_eq!(so.all_cas_bytes.value, Some(8.0 * 250_000_000.0 * 64.0));
    }
    // RD + WR = 1.2 x ALL: 90% + 30% of the counted total, as counted.
    let s = Session::start(&d, &What::memory(), &mut replay(1.0 / 1.2)).unwrap();
    let r = s.stop().unwrap();
    let so = r.socket(0).unwrap();
    let sum =
        so.read_percent_of_all_cas.value.unwrap() + so.write_percent_of_all_cas.value.unwrap();
    assert!((sum - 120.0).abs() < 1e-6, "{sum}");
    // ALL refused: the shares are absent with the refusal.
    let mut b = replay(1.0);
    for i in 0..8 {
        b.fail(
            &format!("uncore_imc_{i}"),
            "UNC_M_CAS_COUNT.ALL",
            libc_enoent(),
        );
    }
    let r = Session::start(&d, &What::memory(), &mut b)
        .unwrap()
        .stop()
        .unwrap();
    let so = r.socket(0).unwrap();
    assert!(so.read_bytes.value.is_some());
    let why = so.read_percent_of_all_cas.reason.as_deref().unwrap();
    assert!(
        why.contains("UNC_M_CAS_COUNT.ALL") && why.contains("not opened"),
        "{why}"
    );
}

/// ENOENT, the errno the kernel gives an event the PMU does not know.
fn libc_enoent() -> i32 {
    2
}
