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

    /// The boots of an architecture, in the order they run.
    pub fn all(arch: Arch) -> Vec<Boot> {
        match arch {
            Arch::X86_64 => vec![Boot::x86()],
            Arch::Aarch64 => vec![Boot::n1(), Boot::n1_icount(), Boot::sve()],
        }
    }

    /// The boots of `arch` named in a comma-separated list (all when None).
    pub fn select(arch: Arch, names: Option<&str>) -> Result<Vec<Boot>, String> {
        let all = Boot::all(arch);
        let Some(names) = names.filter(|n| !n.trim().is_empty()) else {
            return Ok(all);
        };
        let mut out = Vec::new();
        for n in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match all.iter().find(|b| b.name == n) {
                Some(b) => out.push(b.clone()),
                None => {
                    return Err(format!(
                        "no boot {n:?} for {}: the boots are {}",
                        arch.name(),
                        all.iter()
                            .map(|b| b.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
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
        let b = Boot::select(Arch::Aarch64, Some("sve, n1")).unwrap();
        assert_eq!(
            b.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(),
            ["sve", "n1"]
        );
        assert_eq!(Boot::select(Arch::Aarch64, None).unwrap().len(), 3);
        let e = Boot::select(Arch::X86_64, Some("n1")).unwrap_err();
        assert!(
            e.contains("no boot \"n1\" for x86_64") && e.contains("x86"),
            "{e}"
        );
        assert_eq!(Arch::parse("arm64").unwrap(), Arch::Aarch64);
        assert!(Arch::parse("riscv64")
            .unwrap_err()
            .contains("x86_64 or aarch64"));
    }
}
