//! ELF data symbols: `perf script` text written for this very test process (its real
//! mappings from /proc/self/maps, with their inodes) and samples on two statics, one in
//! `.bss` and one in `.data`, are attributed to the statics by name.

use numalab_memaccess::{import, ImportOptions, ThresholdSpec};

#[no_mangle]
static mut MEMACCESS_TEST_BSS: [u64; 1024] = [0; 1024];
#[no_mangle]
static mut MEMACCESS_TEST_DATA: [u64; 64] = [7; 64];

fn mmap_lines() -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let pid = std::process::id();
    let mut out = String::new();
    for l in maps.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (range, perms, off, dev, ino) = (f[0], f[1], f[2], f[3], f[4]);
        let path = if f.len() > 5 {
            f[5..].join(" ")
        } else {
            "//anon".into()
        };
        let (s, e) = range.split_once('-').unwrap();
        let s = u64::from_str_radix(s, 16).unwrap();
        let e = u64::from_str_radix(e, 16).unwrap();
        let off = u64::from_str_radix(off, 16).unwrap();
        let off = if off == 0 {
            "0".to_string()
        } else {
            format!("{off:#x}")
        };
        out.push_str(&format!(
            "            test {pid:5}/{pid:<5} [000]   100.000001: PERF_RECORD_MMAP2 {pid}/{pid}: [{s:#x}({:#x}) @ {off} {dev} {ino} 0]: {perms} {path}\n",
            e - s
        ));
    }
    out
}

fn sample(pid: u32, cpu: u32, addr: u64, weight: u64) -> String {
    format!(
        "            test {pid:5}/{pid:<5} [{cpu:03}]   100.000100: cpu/mem-loads,ldlat=30/P: {addr:16x}     10229100142 |OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A {weight:16}     555555555120 main (/x)\n"
    )
}

#[test]
fn samples_on_statics_are_attributed_to_their_symbols() {
    let pid = std::process::id();
    let bss = std::ptr::addr_of!(MEMACCESS_TEST_BSS) as u64;
    let data = std::ptr::addr_of!(MEMACCESS_TEST_DATA) as u64;
    // Touch them so they are not optimised away.
    unsafe {
        std::ptr::write_volatile(std::ptr::addr_of_mut!(MEMACCESS_TEST_BSS[3]), 1);
        std::ptr::write_volatile(std::ptr::addr_of_mut!(MEMACCESS_TEST_DATA[3]), 1);
    }
    let mut text = mmap_lines();
    for i in 0..6 {
        text.push_str(&sample(
            pid,
            i % 2,
            bss + 8 * (100 + i as u64),
            300 + i as u64,
        ));
    }
    for i in 0..2 {
        text.push_str(&sample(pid, 0, data + 8 * i as u64, 40));
    }
    let rec = import(
        &text,
        &ImportOptions {
            analysis: numalab_memaccess::AnalysisOptions {
                threshold: ThresholdSpec::Value(300.0),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .unwrap();
    let find = |n: &str| {
        rec.symbols
            .iter()
            .find(|r| r.name == n)
            .unwrap_or_else(|| panic!("no {n} in {:#?}\nnotes {:?}", rec.symbols, rec.notes))
    };
    let b = find("MEMACCESS_TEST_BSS");
    assert_eq!((b.samples, b.slow_loads, b.kind.as_str()), (6, 6, "symbol"));
    assert_eq!(b.section.as_deref(), Some(".bss"));
    assert_eq!(b.size_bytes, Some(8 * 1024));
    assert_eq!(b.start, Some(format!("0x{bss:x}")));
    let d = find("MEMACCESS_TEST_DATA");
    assert_eq!((d.samples, d.slow_loads), (2, 0));
    assert_eq!(d.section.as_deref(), Some(".data"));
    assert!(
        rec.findings[0].contains("hit MEMACCESS_TEST_BSS"),
        "{:?}",
        rec.findings
    );
}
