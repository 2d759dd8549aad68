//! `numalab doctor` on this machine: the checks with stable values for scripts.

use crate::common::{assert_ok, numalab, stdout};

fn check<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {v}"))
}

#[test]
fn smt_hypervisor_and_pmu_catalog_have_stable_values() {
    let out = numalab(&["doctor", "--json"]);
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let smt = check(&v, "smt");
    let word = smt["value"].as_str().expect("smt value");
    assert!(
        [
            "on",
            "off",
            "forceoff",
            "notsupported",
            "notimplemented",
            "unavailable"
        ]
        .contains(&word)
            || word.parse::<u32>().is_ok(),
        "{smt}"
    );
    let detail = smt["detail"].as_str().unwrap();
    assert!(detail.starts_with("SMT: "), "{smt}");

    let h = check(&v, "hypervisor");
    let id = h["value"].as_str().expect("hypervisor value");
    if id == "none" {
        assert_eq!(h["verdict"], "ok", "{h}");
        assert!(
            h["detail"].as_str().unwrap().starts_with("bare metal"),
            "{h}"
        );
    } else {
        assert_eq!(h["verdict"], "warn", "{h}");
        let d = h["detail"].as_str().unwrap();
        assert!(d.starts_with("virtual machine ("), "{h}");
        assert!(d.contains("timings"), "{h}");
    }

    let c = check(&v, "pmu-catalog");
    let id = c["value"].as_str().expect("pmu-catalog value");
    let d = c["detail"].as_str().unwrap();
    match id {
        "none" => assert!(d.starts_with("no vendor metrics for "), "{c}"),
        "x86-64" => assert!(d.starts_with("PMU catalog: x86-64"), "{c}"),
        i if i.starts_with("intel-") => assert!(d.contains("Intel's perfmon files"), "{c}"),
        i if i.starts_with("amd-") => assert!(d.contains("AMD's Processor Programming"), "{c}"),
        _ => assert!(d.starts_with("PMU catalog: Arm Neoverse"), "{c}"),
    }
    // An x86 host gets an x86 catalog: the generic one or its vendor's for its model.
    #[cfg(target_arch = "x86_64")]
    assert!(
        id == "x86-64" || id.starts_with("intel-") || id.starts_with("amd-"),
        "{c}"
    );

    // numalab's formulas against the installed perf's: compared where perf lists JSON,
    // one info line where it cannot (perf 6.1), never a failure.
    let p = check(&v, "perf-metrics");
    let word = p["value"].as_str().expect("perf-metrics value");
    let d = p["detail"].as_str().unwrap();
    match word {
        "agree" => assert_eq!(p["verdict"], "ok", "{p}"),
        "differ" => {
            assert_eq!(p["verdict"], "warn", "{p}");
            assert!(d.contains(" on the same counts"), "{p}");
            assert!(
                p["remedy"].as_str().unwrap().contains("perf stat -M "),
                "{p}"
            );
        }
        "no-json" => {
            assert_eq!(p["verdict"], "info", "{p}");
            assert!(d.contains("cannot list metrics as JSON"), "{p}");
            assert!(!d.contains('\n'), "{p}");
        }
        _ => {
            assert!(
                [
                    "no-perf",
                    "unreadable",
                    "no-catalog",
                    "no-metrics",
                    "none-shared"
                ]
                .contains(&word),
                "{p}"
            );
            assert_eq!(p["verdict"], "info", "{p}");
        }
    }

    // The text shows the same checks.
    let out = numalab(&["doctor"]);
    assert_ok(&out);
    let text = stdout(&out);
    for name in ["smt", "hypervisor", "pmu-catalog", "perf-metrics"] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().nth(1) == Some(name)),
            "{name}: {text}"
        );
    }
    assert!(text.contains(smt["detail"].as_str().unwrap()), "{text}");
}
