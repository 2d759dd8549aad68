//! The fallbacks and odd values, on variants of the fixture machines built in memory.

use numalab_memconfig::{from_table, synth, MemConfig};

fn cfg(m: &synth::Machine) -> MemConfig {
    from_table(Some(&m.entry_point()), &m.table())
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-6 * b)
}

#[test]
fn rated_speed_when_configured_is_unknown() {
    let mut m = synth::genoa_1s();
    for d in &mut m.dimms {
        d.configured = 0;
    }
    let c = cfg(&m);
    assert!(close(c.peak(), 12.0 * 4800e6 * 8.0));
    assert!(c.channels.iter().all(|ch| ch.speed_source == "rated"));
    assert!(
        c.assumptions
            .iter()
            .any(|a| a.contains("rated speed is used")),
        "{:?}",
        c.assumptions
    );
}

#[test]
fn half_clock_in_mhz_is_recognized() {
    // Old firmware: "Configured Clock Speed: 1333" for a DDR4-2666 DIMM.
    let mut m = synth::ws_2dpc();
    for d in &mut m.dimms {
        d.speed = 2666;
        d.configured = 1333;
    }
    let c = cfg(&m);
    assert!(close(c.peak(), 4.0 * 2666e6 * 8.0));
    assert!(c.assumptions.iter().any(|a| a.contains("clock in MHz")));
}

#[test]
fn extended_speed_fields() {
    let mut m = synth::genoa_1s();
    for d in &mut m.dimms {
        d.speed = 70_000;
        d.configured = 70_000;
    }
    let c = cfg(&m);
    assert_eq!(c.devices[0].configured_speed_mts, Some(70_000));
    assert!(close(c.peak(), 12.0 * 70_000e6 * 8.0));
}

#[test]
fn data_width_with_ecc_counted_and_unknown_width() {
    let mut m = synth::genoa_1s();
    for d in &mut m.dimms {
        d.data_width = 80; // = total width: the ECC bits counted
    }
    m.dimms[0].data_width = 0xFFFF; // unknown: DDR5, 64 assumed
    let c = cfg(&m);
    assert!(close(c.peak(), 12.0 * 4800e6 * 8.0));
    assert!(c.notes.iter().any(|n| n.contains("ECC bits were counted")));
    assert!(c.assumptions.iter().any(|a| a.contains("64 bits assumed")));
}

#[test]
fn ddr5_device_reporting_one_subchannel_is_taken_as_reported() {
    let mut m = synth::genoa_1s();
    for d in &mut m.dimms {
        d.data_width = 32;
        d.total_width = 40;
    }
    let c = cfg(&m);
    assert!(close(c.peak(), 12.0 * 4800e6 * 4.0));
    assert!(c.notes.iter().any(|n| n.contains("one subchannel")));
}

#[test]
fn dell_and_hpe_locators_give_sockets_not_channels() {
    let mut m = synth::intel_2s_half();
    let mut hpe = m.clone();
    for d in &mut m.dimms {
        // P1-DIMMA1 -> A1 ..., P2-... -> B1 ...: Dell names sockets A, B and numbers slots.
        let s = if d.locator.starts_with("P1") {
            'A'
        } else {
            'B'
        };
        let n = (d.handle - 0x0040) % 8 + 1;
        d.locator = format!("{s}{n}");
        d.bank = "Not Specified".into();
    }
    let c = cfg(&m);
    assert_eq!(c.sockets.len(), 2);
    assert_eq!(c.sockets[1].label.as_deref(), Some("B"));
    assert!(c.channels.iter().all(|ch| ch.assumed));
    // 8 DIMMs, one channel each assumed: overstated if two share one, and said.
    assert!(close(c.peak(), 8.0 * 2933e6 * 8.0));
    assert!(c
        .assumptions
        .iter()
        .any(|a| a.contains("one DIMM per channel")));

    for d in &mut hpe.dimms {
        let s = if d.locator.starts_with("P1") { 1 } else { 2 };
        let n = (d.handle - 0x0040) % 8 + 1;
        d.locator = format!("PROC {s} DIMM {n}");
        d.bank = String::new();
    }
    let c = cfg(&hpe);
    assert_eq!(c.sockets.len(), 2);
    assert_eq!(c.sockets[0].label.as_deref(), Some("PROC 1"));
    assert_eq!(c.sockets[0].populated, 4);
}

#[test]
fn non_system_arrays_and_ecc_only_devices_do_not_count() {
    let mut m = synth::genoa_1s();
    m.arrays.push(synth::Array {
        handle: 0x0031,
        location: 0x03,
        usage: 0x07, // cache memory
        ecc: 0x03,
        max_capacity: 1 << 30,
        slots: 1,
    });
    let mut cache = m.dimms[0].clone();
    cache.handle = 0x00F0;
    cache.array = 0x0031;
    cache.locator = "CACHE".into();
    m.dimms.push(cache);
    m.dimms[11].data_width = 0;
    m.dimms[11].total_width = 8;
    let c = cfg(&m);
    assert!(close(c.peak(), 11.0 * 4800e6 * 8.0));
    assert_eq!(c.slots, 12);
    assert!(c
        .notes
        .iter()
        .any(|n| n.contains("not used as system memory")));
    assert!(c
        .notes
        .iter()
        .any(|n| n.contains("error-correction bits only")));
}

#[test]
fn no_populated_device() {
    let mut m = synth::altra_1s();
    m.dimms.retain(|d| d.size_mib == 0);
    let c = cfg(&m);
    assert_eq!(c.peak(), None);
    assert!(c
        .unknown_reason()
        .unwrap()
        .contains("no populated memory device"));
    assert_eq!(
        c.summary(),
        format!("peak unknown: {}", c.unknown_reason().unwrap())
    );
}

#[test]
fn legacy_21_entry_point() {
    let m = synth::ws_2dpc();
    let c = cfg(&m);
    assert_eq!(c.source.entry_point.as_deref(), Some("SMBIOS 2.1 32-bit"));
    assert_eq!(c.source.version.as_deref(), Some("2.8.0"));
    assert!(
        !c.notes.iter().any(|n| n.contains("checksum")),
        "{:?}",
        c.notes
    );
}
