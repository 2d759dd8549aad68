//! The emulated machines ("boots") the rig runs: one driver, two architectures.
//!
//! A boot is an architecture, a QEMU CPU model, whether QEMU counts instructions
//! precisely (`-icount`), the NUMA [`Layout`] and which checks run in it. x86-64 has one
//! boot; the Arm server has three, because no single QEMU mode serves every check:
//!
//! | boot | QEMU | runs |
//! |---|---|---|
//! | `x86` | q35, `-cpu max`, 5 nodes | every generic check |
//! | `n1` | virt, `-cpu neoverse-n1`, 4 nodes in 2 sockets | every generic check and the Arm checks, except counting and SVE |
//! | `n1-icount` | the same with `-icount shift=0` | `profile` counting: with precise instruction counting the emulated PMU's INST_RETIRED is exact, but all vCPUs run in one host thread, so `c2c` and the memory probes crawl |
//! | `sve` | virt, `-cpu max,pmu=off` | the SVE kernels (QEMU's `max` has SVE) and the no-PMU path of `profile` |
//! | `wide` | q35, 2 sockets of many cores, 2 nodes | every command once, timed ([`crate::wide`]) |
//! | `n1-wide` | virt, `-cpu neoverse-n1`, 2 sockets, 4 nodes | the same |
//!
//! The wide boots are not in [`Boot::all`]: they are asked for by name
//! (`--boot wide`, `scripts/test-numa.sh --wide`), with a [`Wide`] size: short (CI: 32
//! vCPUs, small nodes, the commands' quick forms) or long (160 vCPUs in nodes of 1.5 GiB
//! on x86, 64 in 4 nodes of 768 MiB on Arm, every command as a user runs it).

use crate::layout::Layout;
use serde::{Deserialize, Serialize};

/// The guest's instruction set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    /// x86-64 (q35 board).
    X86_64,
    /// AArch64 (QEMU's `virt` board).
    Aarch64,
}

impl Arch {
    /// Parses `x86_64`/`x86-64`/`amd64` or `aarch64`/`arm64`.
    pub fn parse(s: &str) -> Result<Arch, String> {
        match s {
            "x86_64" | "x86-64" | "amd64" => Ok(Arch::X86_64),
            "aarch64" | "arm64" => Ok(Arch::Aarch64),
            _ => Err(format!("architecture {s:?}: use x86_64 or aarch64")),
        }
    }

    /// The Rust/Debian multiarch name.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// The QEMU system emulator and the Debian package that has it.
    pub fn qemu(self) -> (&'static str, &'static str) {
        match self {
            Arch::X86_64 => ("qemu-system-x86_64", "qemu-system-x86"),
            Arch::Aarch64 => ("qemu-system-aarch64", "qemu-system-arm"),
        }
    }

    /// The `strip` programs that can read this architecture's executables, in order of
    /// preference: binutils' cross `strip` (Debian's binutils-aarch64-linux-gnu or
    /// binutils-x86-64-linux-gnu), then the host's own, which reads only the host's
    /// architecture (an x86 `strip` refuses an aarch64 file).
    pub fn strip_tools(self) -> [&'static str; 2] {
        match self {
            Arch::X86_64 => ["x86_64-linux-gnu-strip", "strip"],
            Arch::Aarch64 => ["aarch64-linux-gnu-strip", "strip"],
        }
    }

    /// Where the guest writes its results: a second UART on x86 (q35 has several);
    /// on Arm's `virt` board (one PL011 in QEMU 7.2) a virtio console.
    pub fn results_port(self) -> &'static str {
        match self {
            Arch::X86_64 => "/dev/ttyS1",
            Arch::Aarch64 => "/dev/hvc0",
        }
    }

    /// The kernel console device.
    pub fn console(self) -> &'static str {
        match self {
            Arch::X86_64 => "ttyS0",
            Arch::Aarch64 => "ttyAMA0",
        }
    }
}

/// Which checks a boot runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Suite {
    /// Every generic check (placement, topology, the measuring commands).
    Generic,
    /// The generic checks plus the Arm identity and NEON checks.
    ArmMain,
    /// `profile` under precise instruction counting.
    ArmCounting,
    /// SVE kernels and a CPU without a PMU.
    ArmSve,
    /// Every command once on a wide machine, timed ([`crate::wide`]): their quick
    /// forms (short) or as a user runs them, the full evaluate included (long).
    Wide {
        /// The long mode.
        long: bool,
    },
}

/// The size of the wide boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wide {
    /// CPUs (None: 32 short or 160 long on x86, 64 on Arm).
    pub cpus: Option<u32>,
    /// The long mode (see [`Suite::Wide`]).
    pub long: bool,
}

impl Wide {
    /// CI's short wide guest.
    pub const SHORT: Wide = Wide {
        cpus: None,
        long: false,
    };
}

/// One emulated machine to boot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boot {
    /// Short name (`x86`, `n1`, `n1-icount`, `sve`).
    pub name: String,
    /// Instruction set.
    pub arch: Arch,
    /// QEMU's `-cpu` value under TCG.
    pub cpu: String,
    /// `-icount shift=0`: one instruction per virtual nanosecond, counted exactly.
    pub icount: bool,
    /// Which checks run.
    pub suite: Suite,
    /// The NUMA layout.
    pub layout: Layout,
}

impl Boot {
    /// The x86-64 guest.
    pub fn x86() -> Boot {
        Boot {
            name: "x86".into(),
            arch: Arch::X86_64,
            // No L3 in CPUID: TCG's shared L3 across nodes makes the kernel warn that
            // cache siblings sit on different nodes.
            cpu: "max,l3-cache=off".into(),
            icount: false,
            suite: Suite::Generic,
            layout: Layout::standard(),
        }
    }

    /// The emulated Neoverse N1 server, without precise counting.
    pub fn n1() -> Boot {
        Boot {
            name: "n1".into(),
            arch: Arch::Aarch64,
            cpu: "neoverse-n1".into(),
            icount: false,
            suite: Suite::ArmMain,
            layout: Layout::arm_server(),
        }
    }

    /// The same server with `-icount`: the PMU counts instructions exactly.
    pub fn n1_icount() -> Boot {
        Boot {
            name: "n1-icount".into(),
            icount: true,
            suite: Suite::ArmCounting,
            ..Boot::n1()
        }
    }

    /// QEMU's `max` CPU (SVE) with the PMU switched off.
    pub fn sve() -> Boot {
        Boot {
            name: "sve".into(),
            cpu: "max,pmu=off".into(),
            suite: Suite::ArmSve,
            ..Boot::n1()
        }
    }

    /// The wide server (issue 45): x86 `wide` (2 sockets, one node each: 384 MiB short,
    /// 1.5 GiB long, the memory per core of the emulated N1 server issue 45 first ran
    /// on), Arm `n1-wide` (Neoverse N1, 2 sockets of 2 nodes: 256 or 768 MiB).
    pub fn wide(arch: Arch, size: Wide) -> Result<Boot, String> {
        let suite = Suite::Wide { long: size.long };
        Ok(match arch {
            Arch::X86_64 => Boot {
                name: "wide".into(),
                layout: Layout::wide(
                    size.cpus.unwrap_or(if size.long { 160 } else { 32 }),
                    1,
                    if size.long { 1536 } else { 384 },
                    20,
                )?,
                suite,
                ..Boot::x86()
            },
            Arch::Aarch64 => Boot {
                name: "n1-wide".into(),
                layout: Layout::wide(
                    size.cpus.unwrap_or(64),
                    2,
                    if size.long { 768 } else { 256 },
                    30,
                )?,
                suite,
                ..Boot::n1()
            },
        })
    }

    /// The wide boot's name on an architecture.
    pub fn wide_name(arch: Arch) -> &'static str {
        match arch {
            Arch::X86_64 => "wide",
            Arch::Aarch64 => "n1-wide",
        }
    }

    /// The boots of an architecture, in the order they run.
    pub fn all(arch: Arch) -> Vec<Boot> {
        match arch {
            Arch::X86_64 => vec![Boot::x86()],
            Arch::Aarch64 => vec![Boot::n1(), Boot::n1_icount(), Boot::sve()],
        }
    }

    /// The boots of `arch` named in a comma-separated list (all when None; the wide
    /// boot, of that size, only when named).
    pub fn select(arch: Arch, names: Option<&str>, wide: Wide) -> Result<Vec<Boot>, String> {
        let all = Boot::all(arch);
        let Some(names) = names.filter(|n| !n.trim().is_empty()) else {
            return Ok(all);
        };
        let mut out = Vec::new();
        for n in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if n == Boot::wide_name(arch) {
                out.push(Boot::wide(arch, wide)?);
                continue;
            }
            match all.iter().find(|b| b.name == n) {
                Some(b) => out.push(b.clone()),
                None => {
                    return Err(format!(
                        "no boot {n:?} for {}: the boots are {} and {}",
                        arch.name(),
                        all.iter()
                            .map(|b| b.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        Boot::wide_name(arch)
                    ))
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_has_three_boots_and_x86_one() {
        let names = |a| Boot::all(a).into_iter().map(|b| b.name).collect::<Vec<_>>();
        assert_eq!(names(Arch::X86_64), ["x86"]);
        assert_eq!(names(Arch::Aarch64), ["n1", "n1-icount", "sve"]);
        assert!(Boot::n1_icount().icount && !Boot::n1().icount);
        assert_eq!(Boot::sve().cpu, "max,pmu=off");
        for b in Boot::all(Arch::Aarch64) {
            b.layout.validate().unwrap();
        }
    }

    #[test]
    fn boots_are_selected_by_name_with_a_clear_error() {
        let b = Boot::select(Arch::Aarch64, Some("sve, n1"), Wide::SHORT).unwrap();
        assert_eq!(
            b.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(),
            ["sve", "n1"]
        );
        assert_eq!(
            Boot::select(Arch::Aarch64, None, Wide::SHORT)
                .unwrap()
                .len(),
            3
        );
        let wide = Boot::select(Arch::Aarch64, Some("n1-wide"), Wide::SHORT).unwrap();
        assert_eq!(wide[0].layout.cpu_count(), 64);
        assert_eq!(wide[0].layout.nodes.len(), 4);
        assert_eq!(wide[0].suite, Suite::Wide { long: false });
        assert_eq!(wide[0].cpu, "neoverse-n1");
        let x = Boot::select(Arch::X86_64, Some("wide"), Wide::SHORT).unwrap();
        assert_eq!((x[0].layout.nodes.len(), x[0].layout.cpu_count()), (2, 32));
        assert_eq!(x[0].layout.nodes[0].memory_mib, 384);
        let long = Wide {
            cpus: None,
            long: true,
        };
        let x = Boot::select(Arch::X86_64, Some("wide"), long).unwrap();
        assert_eq!(x[0].layout.cpu_count(), 160);
        assert_eq!(x[0].layout.nodes[1].memory_mib, 1536);
        let odd = Wide {
            cpus: Some(33),
            long: false,
        };
        let e = Boot::select(Arch::X86_64, Some("wide"), odd).unwrap_err();
        assert!(e.contains("multiple of 2"), "{e}");
        let e = Boot::select(Arch::X86_64, Some("n1"), Wide::SHORT).unwrap_err();
        assert!(
            e.contains("no boot \"n1\" for x86_64") && e.contains("x86 and wide"),
            "{e}"
        );
        assert_eq!(Arch::parse("arm64").unwrap(), Arch::Aarch64);
        assert!(Arch::parse("riscv64")
            .unwrap_err()
            .contains("x86_64 or aarch64"));
    }
}
