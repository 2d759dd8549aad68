//! `numalab topo`: how Arm machines are named.

use crate::common::{assert_ok, fixture, numalab, stdout};

/// The Kunpeng 920 snapshot, text and JSON: its CPU named from the MIDR table.
#[test]
fn kunpeng_snapshot_is_named() {
    let path = fixture("topology", "128arm-2pa2n8cluster4co.tar.bz2");
    let out = numalab(&["topo", "--input", &path]);
    assert_ok(&out);
    // The whole summary, deliberately: a change here is a change users see.
    assert_eq!(
        stdout(&out),
        "HiSilicon TSV110 / Kunpeng 920 (MIDR 0x481fd010, r1p0), aarch64, Linux 5.15.0-rc1-00005-g4c1b4a4d90b6-dirty, hwloc 2.9.0
2 packages x 64 cores, 1 thread/core (128 PUs)
4 NUMA nodes: 0 = CPUs 0-31 (125.6 GiB), 1 = CPUs 32-63 (126 GiB), 2 = CPUs 64-95 (126 GiB), 3 = CPUs 96-127 (125 GiB)
L1d 64 KiB per core, L1i 64 KiB per core, L2 512 KiB per core, L3 32 MiB per NUMA node
distances (SLIT) 10/16/25/32/33
pages 4 KiB; huge pages 64 KiB (0 reserved), 2 MiB (0 reserved), 32 MiB (0 reserved), 1 GiB (0 reserved)
"
    );
    let out = numalab(&["topo", "--input", &path, "--json"]);
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cpu = &v["cpu"];
    assert_eq!(
        cpu["model_name"],
        "HiSilicon TSV110 / Kunpeng 920 (MIDR 0x481fd010, r1p0)"
    );
    assert_eq!(cpu["vendor"], "HiSilicon");
    assert_eq!(cpu["architecture"], "aarch64");
    assert_eq!(
        (
            &cpu["implementer"],
            &cpu["part"],
            &cpu["variant"],
            &cpu["revision"]
        ),
        (
            &serde_json::json!(0x48),
            &serde_json::json!(0xd01),
            &serde_json::json!(1),
            &serde_json::json!(0)
        )
    );
}
