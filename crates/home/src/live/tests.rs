//! Tests of the live backend: parsers with other machines' text, and measurements on this machine.

use super::affinity::affinity;
use super::*;
use crate::error::HomeError;
use crate::probe::{Access, BufferInfo, HomeProbe, Line};
use numalab_records::home::{
    Fingerprint, FINGERPRINT_RECIPE, FINGERPRINT_RECIPE_V1, MEMORY_BLOCKS, MEMORY_MEMTOTAL,
};
use numalab_topo::bind::base_page_size;
use std::path::Path;
use std::sync::Mutex;

/// Measuring tests share two vCPUs: one at a time.
static MEASURE: Mutex<()> = Mutex::new(());

fn measure_lock() -> std::sync::MutexGuard<'static, ()> {
    MEASURE.lock().unwrap_or_else(|e| e.into_inner())
}

fn small(bytes: u64, huge: HugeChoice) -> LiveProbe {
    LiveProbe::new(LiveOptions {
        bytes,
        huge,
        ..LiveOptions::default()
    })
    .unwrap()
}

/// `n` lines spread over the buffer's pages and offsets.
fn spread(info: &BufferInfo, n: usize) -> Vec<Line> {
    let pages = info.pages();
    let per = info.lines_per_page();
    (0..n)
        .map(|i| Line {
            page: i % pages,
            offset: ((i * 37 + i / pages) % per) as u32,
        })
        .collect()
}

fn has_cap_sys_admin() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps >> 21 & 1 == 1)
}

const X86_CPUINFO: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\nmicrocode\t: 0x2b000461\ncpu MHz\t\t: 2000.000\nflags\t\t: fpu vme de pse tsc clflush\nclflush size\t: 64\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\nflags\t\t: fpu vme de pse tsc clflush\n\n";

const ARM_CPUINFO: &str = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n";

const BIG_LITTLE_CPUINFO: &str = "processor\t: 0\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x2\nCPU part\t: 0xd05\nCPU revision\t: 0\n\nprocessor\t: 4\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd41\nCPU revision\t: 0\n";

#[test]
fn parses_x86_cpuinfo() {
    let c = parse_cpuinfo(X86_CPUINFO);
    assert_eq!(c.cpu.vendor.as_deref(), Some("GenuineIntel"));
    assert_eq!(
        c.cpu.model_name.as_deref(),
        Some("Intel(R) Xeon(R) Platinum 8480+")
    );
    assert_eq!(
        c.cpu.cpu_id.as_deref(),
        Some("family 6 model 143 stepping 8")
    );
    assert_eq!(c.processors, 2);
}

#[test]
fn parses_arm_cpuinfo() {
    // The machine identity's words: the MIDR (variant and revision included) and its name.
    let c = parse_cpuinfo(ARM_CPUINFO);
    assert_eq!(
        c.cpu.model_name.as_deref(),
        Some("Arm Neoverse N1 (MIDR 0x413fd0c1, r3p1)")
    );
    assert_eq!(c.cpu.cpu_id.as_deref(), Some("MIDR 0x413fd0c1"));
    assert_eq!(c.processors, 2);
    let b = parse_cpuinfo(BIG_LITTLE_CPUINFO);
    assert_eq!(
        b.cpu.cpu_id.as_deref(),
        Some("MIDR 0x412fd050 + MIDR 0x411fd410")
    );
    assert_eq!(b.cpu.model_name.unwrap().split(" + ").count(), 2);
    assert_eq!(parse_cpuinfo("").cpu, Default::default());
}

#[test]
fn parses_node_meminfo() {
    let text = "Node 1 MemTotal:       263724032 kB\nNode 1 MemFree:        250000000 kB\nNode 1 MemUsed:         13724032 kB\n";
    // 263724032 kB = 257543 MiB exactly
    assert_eq!(node_mem_total_bytes(text), Some(257_543 << 20));
    // Rounded down to whole MiB.
    assert_eq!(
        node_mem_total_bytes("Node 0 MemTotal: 2049 kB\n"),
        Some(2 << 20)
    );
    assert_eq!(node_mem_total_bytes("Node 0 MemFree: 5 kB\n"), None);
}

#[test]
fn fingerprint_from_another_machine() {
    let t = SystemText {
        cpuinfo: ARM_CPUINFO.into(),
        online: Some("0-159\n".into()),
        meminfo: None,
        nodes: vec![
            NodeText {
                id: 1,
                meminfo: "Node 1 MemTotal: 4194304 kB\n".into(),
                cpulist: "80-159\n".into(),
                memory_blocks: Some(34),
            },
            NodeText {
                id: 0,
                meminfo: "Node 0 MemTotal: 2097152 kB\n".into(),
                cpulist: "0-79\n".into(),
                memory_blocks: Some(17),
            },
            NodeText {
                id: 2,
                meminfo: "Node 2 MemTotal: 1048576 kB\n".into(),
                cpulist: "\n".into(),
                memory_blocks: Some(9),
            },
        ],
        smt_active: Some("0\n".into()),
        memory_block_size: None,
        memory_blocks: Some(60),
    };
    let f = t.fingerprint();
    assert_eq!(f.source, "live");
    assert_eq!(f.cpu_model, "Arm Neoverse N1 (MIDR 0x413fd0c1, r3p1)");
    assert_eq!(f.stepping, "MIDR 0x413fd0c1");
    assert_eq!(f.recipe, FINGERPRINT_RECIPE);
    assert_eq!(f.cpus, 160);
    // No block size in sysfs: the kernel's MemTotal.
    assert_eq!(f.node_memory_bytes, vec![2 << 30, 4 << 30, 1 << 30]);
    assert_eq!(f.memory_basis, MEMORY_MEMTOTAL);
    // With it: the memory present on each node, whatever MemTotal says (a kernel
    // keeps some for itself, and one that fills its memory map lazily after boot
    // shows MemTotal growing for minutes).
    let blocks = SystemText {
        memory_block_size: Some("8000000\n".into()),
        ..t.clone()
    }
    .fingerprint();
    assert_eq!(blocks.node_memory_bytes, vec![17 << 27, 34 << 27, 9 << 27]);
    assert_eq!(blocks.memory_basis, MEMORY_BLOCKS);
    assert_eq!(blocks.modes, f.modes);
    // A node whose folder could not be listed leaves the whole count to MemTotal.
    let mut partial = SystemText {
        memory_block_size: Some("8000000".into()),
        ..t.clone()
    };
    partial.nodes[2].memory_blocks = None;
    assert_eq!(partial.fingerprint().memory_basis, MEMORY_MEMTOTAL);
    // A block size that is not hexadecimal likewise.
    let garbled = SystemText {
        memory_block_size: Some("lots".into()),
        ..t.clone()
    };
    assert_eq!(garbled.fingerprint().memory_basis, MEMORY_MEMTOTAL);
    // Nor does a block size whose product overflows.
    let huge = SystemText {
        memory_block_size: Some("ffffffffffffffff".into()),
        ..t.clone()
    };
    assert_eq!(huge.fingerprint().memory_basis, MEMORY_MEMTOTAL);
    assert_eq!(
        f.modes,
        vec![
            "3 NUMA nodes",
            "node0 cpus 0-79",
            "node1 cpus 80-159",
            "node2 cpus none",
            "SMT off"
        ]
    );
    // Without NUMA nodes in sysfs: one node from /proc/meminfo.
    let flat = SystemText {
        cpuinfo: X86_CPUINFO.into(),
        online: None,
        meminfo: Some("MemTotal: 1048576 kB\nMemAvailable: 1000 kB\n".into()),
        nodes: Vec::new(),
        smt_active: Some("1".into()),
        memory_block_size: None,
        memory_blocks: None,
    }
    .fingerprint();
    assert_eq!(flat.cpus, 2);
    assert_eq!(flat.node_memory_bytes, vec![1 << 30]);
    assert_eq!(flat.modes, vec!["1 NUMA node", "SMT on"]);
    assert_eq!(flat.stepping, "family 6 model 143 stepping 8");
}

/// `t`'s fingerprint as a map made before the recipe field stored it: the CPU words
/// of the first recipe, the rest as now.
fn stored_v1(t: &SystemText, cpu_model: &str, stepping: &str) -> Fingerprint {
    let mut json = serde_json::to_value(t.fingerprint()).unwrap();
    let map = json.as_object_mut().unwrap();
    map.remove("recipe");
    map.insert("cpu_model".into(), cpu_model.into());
    map.insert("stepping".into(), stepping.into());
    let f: Fingerprint = serde_json::from_value(json).unwrap();
    assert_eq!(f.recipe, FINGERPRINT_RECIPE_V1);
    f
}

#[test]
fn a_map_stored_by_the_first_recipe_is_read() {
    let machine = |cpuinfo: &str| SystemText {
        cpuinfo: cpuinfo.into(),
        online: Some("0-1\n".into()),
        meminfo: Some("MemTotal: 1048576 kB\n".into()),
        ..SystemText::default()
    };
    let (arm, x86, big_little) = (
        machine(ARM_CPUINFO),
        machine(X86_CPUINFO),
        machine(BIG_LITTLE_CPUINFO),
    );
    // The words the first recipe wrote for each machine's `/proc/cpuinfo`.
    let old_arm = stored_v1(
        &arm,
        "implementer 0x41 part 0xd0c",
        "variant 0x3 revision 1",
    );
    let old_x86 = stored_v1(
        &x86,
        "Intel(R) Xeon(R) Platinum 8480+",
        "family 6 model 143 stepping 8",
    );
    let old_big_little = stored_v1(
        &big_little,
        "implementer 0x41 part 0xd05 + implementer 0x41 part 0xd41",
        "variant 0x2 revision 0 + variant 0x1 revision 0",
    );
    // A map of this machine is still this machine's...
    assert!(old_arm.differences(&arm.fingerprint()).is_empty());
    assert!(old_x86.differences(&x86.fingerprint()).is_empty());
    assert!(old_big_little
        .differences(&big_little.fingerprint())
        .is_empty());
    assert_eq!(old_arm.current(), arm.fingerprint());
    // ...and one of another machine is refused, naming the CPU.
    let d = old_arm.differences(&x86.fingerprint());
    assert_eq!(
        d,
        vec![
            "CPU model \"Arm Neoverse N1 (MIDR 0x413fd0c1, r3p1)\" vs \"Intel(R) Xeon(R) Platinum 8480+\"".to_string(),
            "stepping \"MIDR 0x413fd0c1\" vs \"family 6 model 143 stepping 8\"".to_string(),
        ]
    );
    assert_eq!(old_x86.differences(&arm.fingerprint()).len(), 2);
    assert!(!old_big_little.differences(&arm.fingerprint()).is_empty());
    let more_cpus = SystemText {
        online: Some("0-3\n".into()),
        ..arm.clone()
    };
    assert_eq!(
        old_arm.differences(&more_cpus.fingerprint())[0],
        "2 vs 4 CPUs"
    );
}

#[test]
fn live_fingerprint_describes_this_machine() {
    let f = live_fingerprint();
    assert_eq!(f.source, "live");
    assert!(f.cpus >= 1);
    assert!(!f.node_memory_bytes.is_empty());
    assert!(f
        .node_memory_bytes
        .iter()
        .all(|b| b.is_multiple_of(1 << 20)));
    assert!(f.modes[0].contains("NUMA node"), "{:?}", f.modes);
    assert_ne!(f.cpu_model, "unknown");
    assert!(f.differences(&live_fingerprint()).is_empty());
    // Where sysfs shows memory blocks, they are what is counted.
    if Path::new("/sys/devices/system/memory/block_size_bytes").exists() {
        assert_eq!(f.memory_basis, MEMORY_BLOCKS);
    }
}

#[test]
fn pagemap_entries() {
    assert_eq!(pagemap_pfn(0), None);
    assert_eq!(pagemap_pfn(1 << 63 | 0x1234), Some(0x1234));
    // Soft-dirty (55) and exclusive (56) bits are not part of the PFN.
    assert_eq!(pagemap_pfn(1 << 63 | 1 << 56 | 1 << 55 | 7), Some(7));
    // Present without CAP_SYS_ADMIN: PFN 0.
    assert_eq!(pagemap_pfn(1 << 63 | 1 << 56), Some(0));
    // Swapped, not present.
    assert_eq!(pagemap_pfn(1 << 62 | 99), None);
}

#[test]
fn size_check_names_the_remedy() {
    assert!(check_buffer_size(1 << 20, 4 << 20, 0.5).is_ok());
    let e = check_buffer_size(3 << 20, 4 << 20, 0.5).unwrap_err();
    assert!(matches!(e, HomeError::Usage(_)));
    let msg = e.to_string();
    assert!(
        msg.contains("--bytes") && msg.contains("3145728") && msg.contains("4194304"),
        "{msg}"
    );
}

#[test]
fn huge_choice_words() {
    assert_eq!(
        "Require".parse::<HugeChoice>().unwrap(),
        HugeChoice::Require
    );
    assert_eq!(HugeChoice::default().to_string(), "auto");
    assert!(matches!(
        "maybe".parse::<HugeChoice>(),
        Err(HomeError::Usage(_))
    ));
}

#[test]
fn refuses_a_buffer_larger_than_free_memory_allows() {
    // 1 PiB is more than half of any machine's available memory.
    let e = LiveProbe::new(LiveOptions::with_bytes(1 << 50)).unwrap_err();
    assert!(matches!(e, HomeError::Usage(_)), "{e}");
    assert!(e.to_string().contains("--bytes"), "{e}");
    // And a small buffer with a tiny allowed share.
    let e = LiveProbe::new(LiveOptions {
        bytes: 4 << 20,
        max_free_fraction: 1e-9,
        ..LiveOptions::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("--bytes"), "{e}");
    assert!(matches!(
        LiveProbe::new(LiveOptions::with_bytes(0)),
        Err(HomeError::Usage(_))
    ));
}

#[test]
fn refuses_bad_reads() {
    let mut p = small(64 << 10, HugeChoice::Never);
    let cpus = p.cpus();
    assert!(!cpus.is_empty());
    let c0 = cpus[0];
    let line = [Line { page: 0, offset: 0 }];
    let unknown = cpus.iter().max().unwrap() + 1000;
    let e = p
        .read_ns(Access::Flushed, unknown, None, &line, 3)
        .unwrap_err();
    assert!(matches!(e, HomeError::Usage(_)), "{e}");
    assert!(e.to_string().contains(&unknown.to_string()), "{e}");
    let e = p
        .read_ns(Access::Forwarded, c0, Some(c0), &line, 3)
        .unwrap_err();
    assert!(matches!(e, HomeError::Usage(_)), "{e}");
    let e = p
        .read_ns(Access::Forwarded, c0, None, &line, 3)
        .unwrap_err();
    assert!(matches!(e, HomeError::Usage(_)), "{e}");
    let pages = p.buffer().pages();
    let per = p.buffer().lines_per_page() as u32;
    for bad in [
        Line {
            page: pages,
            offset: 0,
        },
        Line {
            page: 0,
            offset: per,
        },
    ] {
        let e = p.read_ns(Access::Flushed, c0, None, &[bad], 3).unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
    }
    let e = p.read_ns(Access::Flushed, c0, None, &line, 0).unwrap_err();
    assert!(matches!(e, HomeError::Usage(_)), "{e}");
    assert_eq!(p.noise_ns(), None);
    assert!(p
        .read_ns(Access::Flushed, c0, None, &[], 3)
        .unwrap()
        .is_empty());
}

#[test]
fn base_page_buffer() {
    let p = small(100_000, HugeChoice::Never);
    let b = p.buffer();
    assert_eq!(p.backing(), Backing::Base);
    assert!(!b.huge_pages);
    assert_eq!(b.page_bytes, base_page_size() as u64);
    assert!(b.bytes >= 100_000 && b.bytes.is_multiple_of(b.page_bytes));
    assert_eq!(p.origin(), "measured");
}

#[test]
fn physical_addresses() {
    let p = small(4 << 20, HugeChoice::Auto);
    let b = p.buffer();
    eprintln!("notes: {:#?}", p.notes);
    if has_cap_sys_admin() {
        let phys = b.page_phys.as_ref().expect("root reads pagemap");
        assert_eq!(phys.len(), b.pages());
        assert!(b.phys_note.is_none());
        let mut seen = std::collections::HashSet::new();
        for &a in phys {
            assert!(a > 0 && a.is_multiple_of(b.page_bytes), "{a:#x}");
            assert!(seen.insert(a), "{a:#x} twice");
        }
    } else {
        assert!(b.page_phys.is_none());
        assert_eq!(b.phys_note.as_deref(), Some(PHYS_NEED_ROOT));
    }
    if b.huge_pages {
        assert_eq!(b.page_bytes, HUGE_PAGE_BYTES);
        assert_ne!(p.backing(), Backing::Base);
    } else {
        assert_eq!(b.page_bytes, base_page_size() as u64);
    }
}

#[test]
fn require_gives_huge_pages_or_says_why_not() {
    match LiveProbe::new(LiveOptions {
        bytes: 4 << 20,
        huge: HugeChoice::Require,
        ..LiveOptions::default()
    }) {
        Ok(p) => {
            assert!(p.buffer().huge_pages);
            assert_eq!(p.buffer().page_bytes, HUGE_PAGE_BYTES);
        }
        Err(e) => {
            assert!(matches!(e, HomeError::Unsupported(_)), "{e}");
            assert!(e.to_string().contains("nr_hugepages"), "{e}");
        }
    }
}

#[test]
fn flushed_reads_on_this_machine() {
    let _g = measure_lock();
    let mut p = small(4 << 20, HugeChoice::Auto);
    let lines = spread(p.buffer(), 64);
    let c0 = p.cpus()[0];
    let ns = p.read_ns(Access::Flushed, c0, None, &lines, 9).unwrap();
    assert_eq!(ns.len(), 64);
    assert!(ns.iter().all(|v| v.is_finite() && *v > 0.0), "{ns:?}");
    let noise = p.noise_ns().expect("noise after reads");
    assert!(noise.is_finite() && noise >= 0.0);
    let mut s = ns.clone();
    let (med, sd) = crate::probe::median_and_sigma(&mut s);
    eprintln!(
        "flushed: median over lines {med:.1} ns, spread {sd:.1} ns, min {:.1} max {:.1}, noise {noise:.2} ns, timer overhead {:.1} ns, resolution {:.1} ns, huge {}",
        s[0],
        s[s.len() - 1],
        p.timer_overhead_ns(),
        p.timer_resolution_ns(),
        p.buffer().huge_pages
    );
}

#[test]
fn forwarded_reads_on_this_machine() {
    let _g = measure_lock();
    let mut p = small(4 << 20, HugeChoice::Auto);
    let lines = spread(p.buffer(), 64);
    let cpus = p.cpus();
    let before = affinity(0).unwrap();
    if cpus.len() < 2 {
        let e = p
            .read_ns(Access::Forwarded, cpus[0], Some(cpus[0] + 1), &lines, 9)
            .unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        return;
    }
    let ns = p
        .read_ns(Access::Forwarded, cpus[0], Some(cpus[1]), &lines, 9)
        .unwrap();
    assert_eq!(ns.len(), 64);
    assert!(ns.iter().all(|v| v.is_finite() && *v > 0.0), "{ns:?}");
    let noise = p.noise_ns().expect("noise after reads");
    assert!(noise.is_finite() && noise >= 0.0);
    let mut s = ns.clone();
    let (med, sd) = crate::probe::median_and_sigma(&mut s);
    eprintln!(
        "forwarded: median over lines {med:.1} ns, spread {sd:.1} ns, min {:.1} max {:.1}, noise {noise:.2} ns, timer overhead {:.1} ns",
        s[0],
        s[s.len() - 1],
        p.timer_overhead_ns()
    );
    // The caller's thread keeps its own affinity: it was never pinned.
    assert_eq!(affinity(0).unwrap(), before);
}
