//! Intel's NUMA read shares (`numa_reads_addressed_to_local_dram` / `_remote_dram`):
//! the CHA encodings numalab's table gives, checked against Intel's own perfmon files
//! (the extract `data/intel/cha-numa.json`, with its provenance), and the shares
//! derived from replayed counts checked against Intel's formulas evaluated on the same
//! counts by the expression engine.

use numalab_expr::Input;
use numalab_uncore::table::{Class, Source, KNOWN_EVENTS};
use numalab_uncore::{discover, packages_from_sysfs, Discovery, ReplayBackend, Session, What};
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
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/intel/cha-numa.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn hex(v: &Value) -> u64 {
    let s = v.as_str().expect("a hex string");
    u64::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16).unwrap()
}

/// The generations whose CHA takes the events as numalab encodes them.
const EXTENDED_UMASK: &[&str] = &["icx", "spr", "emr", "gnr"];

#[test]
fn cha_encodings_are_intels_own() {
    let data = perfmon();
    let d = load(&fixture("spr-2s"));
    let cha = d.device("uncore_cha_0").unwrap();
    for gen in EXTENDED_UMASK {
        let g = &data["generations"][gen];
        let events = g["events"].as_array().unwrap();
        // Every event Intel's two metrics name is in the file and in numalab's table.
        for m in g["metrics"].as_array().unwrap() {
            for e in m["Events"].as_array().unwrap() {
                let name = e["Name"].as_str().unwrap();
                assert!(
                    events.iter().any(|x| x["EventName"] == name),
                    "{gen}: {name}"
                );
            }
        }
        assert_eq!(events.len(), 4, "{gen}");
        for e in events {
            let name = e["EventName"].as_str().unwrap();
            assert_eq!(e["Unit"], "CHA", "{gen} {name}");
            let k = KNOWN_EVENTS
                .iter()
                .find(|k| k.class == Class::IntelCha && k.name == name)
                .unwrap_or_else(|| panic!("{gen}: {name} is not in numalab's table"));
            let Source::Terms(terms) = k.source else {
                panic!("{name}: not encoded from terms")
            };
            // The CHA's control register: event 0-7, umask 8-15, umask_ext from 32
            // (Intel's SPR/ICX uncore guides; the kernel's umask_ext4/5 formats).
            let want = hex(&e["EventCode"]) | hex(&e["UMask"]) << 8 | hex(&e["UMaskExt"]) << 32;
            let got = cha.encode_str(terms).unwrap();
            assert_eq!(got.config[0], want, "{gen} {name}: {terms}");
            assert_eq!(&got.config[1..], &[0, 0, 0], "{gen} {name}");
        }
    }
}

#[test]
fn skylake_and_cascade_lake_count_them_through_filter1_which_numalab_refuses() {
    let data = perfmon();
    for gen in ["skx", "clx"] {
        let g = &data["generations"][gen];
        for m in g["metrics"].as_array().unwrap() {
            for e in m["Events"].as_array().unwrap() {
                let name = e["Name"].as_str().unwrap();
                assert!(
                    name.starts_with("UNC_CHA_TOR_INSERTS.IA_MISS:filter1="),
                    "{gen}: {name}"
                );
            }
        }
        assert!(g["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["Filter"] == "CHAFilter1[31:0]"));
    }
    // A CHA whose umask field is Skylake-SP's (config:8-15) refuses the extended
    // umasks by name rather than truncating them.
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture("spr-2s"), tmp.path());
    let devices = tmp.path().join("sys/bus/event_source/devices");
    for e in std::fs::read_dir(&devices).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("uncore_cha_") {
            std::fs::write(e.path().join("format/umask"), "config:8-15\n").unwrap();
        }
    }
    let d = load(tmp.path());
    let p = numalab_uncore::plan(&d, &What::all()).unwrap();
    for name in [
        "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_LOCAL",
        "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_REMOTE",
        "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_LOCAL",
        "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_REMOTE",
    ] {
        assert!(
            p.unencodable
                .iter()
                .any(|n| n.event == name && n.kind == "unencodable"),
            "{name}"
        );
    }
    let mut b = ReplayBackend::new(1.0);
    b.set_all("uncore_cha_0", "UNC_CHA_CLOCKTICKS", 1_000_000);
    let r = Session::start(&d, &What::all(), &mut b)
        .unwrap()
        .stop()
        .unwrap();
    let s0 = r.socket(0).unwrap();
    assert!(s0.numa_reads_addressed_to_local_dram.value.is_none());
    let why = s0
        .numa_reads_addressed_to_local_dram
        .reason
        .clone()
        .unwrap();
    assert!(why.contains("umask"), "{why}");
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

/// Per CHA (a, b, c, d) = DRD_LOCAL, DRD_PREF_LOCAL, DRD_REMOTE, DRD_PREF_REMOTE, as
/// Intel's metrics name them.
const COUNTS: [(&str, u64); 4] = [
    ("UNC_CHA_TOR_INSERTS.IA_MISS_DRD_LOCAL", 41_000_003),
    ("UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_LOCAL", 7_000_011),
    ("UNC_CHA_TOR_INSERTS.IA_MISS_DRD_REMOTE", 13_000_007),
    ("UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_REMOTE", 2_000_029),
];

fn replay(counts: &[(&str, u64)]) -> ReplayBackend {
    let mut b = ReplayBackend::new(1.0);
    for i in 0..4 {
        let dev = format!("uncore_cha_{i}");
        b.set_all(&dev, "UNC_CHA_CLOCKTICKS", 2_000_000_000);
        for (name, v) in counts {
            b.set_all(&dev, name, *v);
        }
    }
    b
}

#[test]
fn shares_are_intels_formulas_on_the_same_counts() {
    let d = load(&fixture("spr-2s"));
    let r = Session::start(&d, &What::all(), &mut replay(&COUNTS))
        .unwrap()
        .stop()
        .unwrap();
    let data = perfmon();
    let socket = r.socket(0).unwrap();
    for m in data["generations"]["spr"]["metrics"].as_array().unwrap() {
        // Intel's formula over its aliases, each alias the event's count as recorded
        // (scaled for multiplexing), summed over the socket's CHAs (the metric's
        // SOCKET resolution).
        let alias: Vec<(String, f64)> = m["Events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let name = e["Name"].as_str().unwrap();
                let sum: f64 = r
                    .boxes
                    .iter()
                    .filter(|b| b.socket == Some(0))
                    .flat_map(|b| &b.events)
                    .filter(|x| x.name == name)
                    .map(|x| x.value.unwrap())
                    .sum();
                assert!(sum > 0.0, "{name}");
                (e["Alias"].as_str().unwrap().to_string(), sum)
            })
            .collect();
        let f = numalab_expr::parse(m["Formula"].as_str().unwrap()).unwrap();
        let want = f
            .eval(&|v| match alias.iter().find(|(a, _)| a == v) {
                Some((_, x)) => Input::Value(*x),
                None => Input::Missing(v.to_string()),
            })
            .unwrap();
        let got = match m["MetricName"].as_str().unwrap() {
            "numa_reads_addressed_to_local_dram" => &socket.numa_reads_addressed_to_local_dram,
            "numa_reads_addressed_to_remote_dram" => &socket.numa_reads_addressed_to_remote_dram,
            other => panic!("{other}"),
        };
        assert_eq!(m["UnitOfMeasure"], "percent");
        let got = got.value.unwrap();
        assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
    }
    // By hand, from the replayed counts: (41000003 + 7000011) / 63000050 = 76.2%
    // (multiplexed 4 ways, the scaled counts differ from these in the 8th digit).
    let local = socket.numa_reads_addressed_to_local_dram.value.unwrap();
    assert!((local - 100.0 * 48_000_014.0 / 63_000_050.0).abs() < 1e-5);
    assert!(r
        .formulas
        .iter()
        .any(|f| f.figure.starts_with(
            "numa_reads_addressed_to_local_dram / numa_reads_addressed_to_remote_dram"
        ) && f.source.contains("intel/perfmon")));
}

#[test]
fn a_missing_input_makes_both_shares_absent_with_its_reason() {
    let d = load(&fixture("spr-2s"));
    let r = Session::start(&d, &What::all(), &mut replay(&COUNTS[..3]))
        .unwrap()
        .stop()
        .unwrap();
    let s = r.socket(0).unwrap();
    for share in [
        &s.numa_reads_addressed_to_local_dram,
        &s.numa_reads_addressed_to_remote_dram,
    ] {
        assert!(share.value.is_none());
        let why = share.reason.as_deref().unwrap();
        assert!(
            why.contains("UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_REMOTE"),
            "{why}"
        );
    }
    // Nothing counted at all: absent, not 0%.
    let none = [
        ("UNC_CHA_TOR_INSERTS.IA_MISS_DRD_LOCAL", 0),
        ("UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_LOCAL", 0),
        ("UNC_CHA_TOR_INSERTS.IA_MISS_DRD_REMOTE", 0),
        ("UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_REMOTE", 0),
    ];
    let r = Session::start(&d, &What::all(), &mut replay(&none))
        .unwrap()
        .stop()
        .unwrap();
    let s = r.socket(0).unwrap();
    assert!(s.numa_reads_addressed_to_local_dram.value.is_none());
    assert!(s
        .numa_reads_addressed_to_local_dram
        .reason
        .as_deref()
        .unwrap()
        .contains("no LLC read misses"));
}
