//! Truncated, mutated and random input: the parser and the analysis must return notes
//! and unknown figures, never panic. A deterministic generator stands in for a fuzzer
//! (no proptest); every case is reproducible from its seed.

use numalab_memconfig::{from_table, locator, read, smbios, synth, MemConfig};
use std::fs;

/// xorshift64*: small, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn check(m: &MemConfig) {
    if let Some(p) = m.peak() {
        assert!(p.is_finite() && p > 0.0, "peak {p}");
    } else {
        assert!(m.unknown_reason().is_some());
    }
    for c in &m.channels {
        if let Some(p) = c.peak.bytes_per_s {
            assert!(p.is_finite() && p >= 0.0);
        }
    }
    let _ = m.summary();
    serde_json::to_string(m).unwrap();
}

fn tables() -> Vec<(Vec<u8>, Vec<u8>)> {
    synth::fixtures()
        .into_iter()
        .map(|f| (f.machine.entry_point(), f.machine.table()))
        .collect()
}

#[test]
fn every_truncation_of_every_fixture() {
    for (ep, table) in tables() {
        for n in 0..=table.len() {
            check(&from_table(Some(&ep), &table[..n]));
        }
        for n in 0..=ep.len() {
            let _ = smbios::parse_entry_point(&ep[..n]);
            check(&from_table(Some(&ep[..n]), &table));
        }
    }
}

#[test]
fn truncated_tables_never_claim_a_full_peak() {
    // A table cut anywhere, even between two structures, must not give a smaller
    // figure: the full one or none.
    for f in synth::fixtures() {
        let table = f.machine.table();
        let Some(full) = from_table(None, &table).peak() else {
            continue;
        };
        for n in 0..table.len() {
            if let Some(p) = from_table(None, &table[..n]).peak() {
                assert!(
                    (p - full).abs() < 1.0,
                    "{} cut at {n}: {p} instead of {full} or unknown",
                    f.name
                );
            }
        }
    }
}

#[test]
fn single_byte_mutations() {
    let mut rng = Rng(0x5EED_0001);
    for (ep, table) in tables() {
        for _ in 0..1500 {
            let mut t = table.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(t.len() as u64) as usize;
                t[at] = rng.next() as u8;
            }
            check(&from_table(Some(&ep), &t));
        }
    }
}

#[test]
fn random_bytes() {
    let mut rng = Rng(0x5EED_0002);
    for _ in 0..3000 {
        let n = rng.below(600) as usize;
        let b = rng.bytes(n);
        check(&from_table(None, &b));
        let _ = smbios::parse_structure(&b);
        let _ = smbios::parse_entry_point(&b);
    }
}

#[test]
fn random_structures_with_plausible_headers() {
    let mut rng = Rng(0x5EED_0003);
    let types = [1u8, 4, 16, 17, 19, 20, 127, 0, 200];
    for _ in 0..3000 {
        let mut t = Vec::new();
        for _ in 0..rng.below(12) {
            let ty = types[rng.below(types.len() as u64) as usize];
            let len = rng.below(256) as u8;
            t.push(ty);
            t.push(len);
            t.extend(rng.bytes(2));
            t.extend(rng.bytes(usize::from(len.saturating_sub(4))));
            // A string set: sometimes proper, sometimes not terminated.
            match rng.below(4) {
                0 => t.extend_from_slice(&[0, 0]),
                1 => {
                    let n = rng.below(20) as usize;
                    t.extend(rng.bytes(n).iter().map(|b| b | 1));
                    t.extend_from_slice(&[0, 0]);
                }
                2 => {
                    let n = rng.below(8) as usize;
                    t.extend(rng.bytes(n));
                }
                _ => {}
            }
        }
        check(&from_table(None, &t));
    }
}

#[test]
fn hostile_entries_folder() {
    let mut rng = Rng(0x5EED_0004);
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let e = dir.path().join("sys/firmware/dmi/entries");
        for k in 0..8 {
            let ty = [16u8, 17, 19, 20, 4, 1][(k + round) % 6];
            let d = e.join(format!("{ty}-{k}"));
            fs::create_dir_all(&d).unwrap();
            let n = rng.below(120) as usize;
            let mut b = rng.bytes(n);
            if let Some(x) = b.get_mut(0) {
                *x = ty;
            }
            fs::write(d.join("raw"), b).unwrap();
        }
        // Names that are not T-N entries.
        fs::create_dir_all(e.join("x-y")).unwrap();
        fs::create_dir_all(e.join("17-")).unwrap();
        check(&read(dir.path()));
    }
}

#[test]
fn hostile_node_tree() {
    let f = &synth::fixtures()[2];
    let dir = tempfile::tempdir().unwrap();
    synth::write(f, dir.path()).unwrap();
    let n = dir.path().join("sys/devices/system/node/node0");
    fs::create_dir_all(&n).unwrap();
    fs::write(n.join("cpulist"), "3-1,zz,0-99999999999").unwrap();
    fs::write(n.join("memory18446744073709551615"), "").unwrap();
    fs::create_dir_all(dir.path().join("sys/devices/system/memory")).unwrap();
    fs::write(
        dir.path()
            .join("sys/devices/system/memory/block_size_bytes"),
        "ffffffffffffffff",
    )
    .unwrap();
    fs::create_dir_all(dir.path().join("sys/devices/system/node/nodeX")).unwrap();
    check(&read(dir.path()));
}

#[test]
fn random_locators() {
    let mut rng = Rng(0x5EED_0005);
    let alphabet = b"CPUDIMM_PROCNODE CHANNEL-0123456789ABZ/\x00\xff";
    for _ in 0..5000 {
        let n = rng.below(40) as usize;
        let s: Vec<u8> = (0..n)
            .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
            .collect();
        let s = String::from_utf8_lossy(&s).to_string();
        let _ = locator::parse(&s, &s);
    }
}
