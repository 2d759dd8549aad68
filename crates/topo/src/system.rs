//! Host facts that hwloc does not report: kernel settings, virtualization, cgroups,
//! huge pages, governors. Read from `/proc` and `/sys` under a root folder, so tests
//! can point them at fixture trees.

use numalab_schema::record::Host;
use numalab_schema::Machine;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A filesystem root holding `proc/` and `sys/` (normally `/`).
#[derive(Debug, Clone)]
pub struct SysRoot {
    root: PathBuf,
}

/// A hugetlbfs pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HugePool {
    /// Page size in bytes.
    pub size_bytes: u64,
    /// Pages reserved.
    pub total: u64,
    /// Pages free.
    pub free: u64,
}

/// cgroup limits that constrain measurements.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupLimits {
    /// The cgroup path of this process (cgroup v2), if found.
    pub path: Option<String>,
    /// CPU bandwidth limit as (quota_us, period_us); None = unlimited.
    pub cpu_max: Option<(u64, u64)>,
    /// Effective CPUs of the cgroup's cpuset.
    pub cpus_effective: Option<String>,
    /// Memory limit in bytes; None = unlimited.
    pub memory_max: Option<u64>,
}

/// `/sys/devices/system/cpu/smt/control`, as documented in the kernel's
/// `Documentation/ABI/testing/sysfs-devices-system-cpu`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SmtControl {
    /// "on": SMT enabled.
    On,
    /// "off": SMT disabled (sibling threads offline), can be turned back on.
    Off,
    /// "forceoff": SMT disabled for good (`nosmt=force`), cannot be changed.
    ForceOff,
    /// "notsupported": the CPU has no SMT.
    NotSupported,
    /// "notimplemented": the kernel has no SMT control on this architecture (e.g.
    /// arm64 before `HOTPLUG_SMT`); says nothing about the CPU.
    NotImplemented,
    /// A number: SMT on with this many threads per core enabled (kernels that can
    /// enable part of the threads).
    Threads(u32),
    /// A word this numalab does not know.
    Other(String),
}

impl SmtControl {
    /// Parses the file's content.
    pub fn parse(word: &str) -> SmtControl {
        match word.trim() {
            "on" => SmtControl::On,
            "off" => SmtControl::Off,
            "forceoff" => SmtControl::ForceOff,
            "notsupported" => SmtControl::NotSupported,
            "notimplemented" => SmtControl::NotImplemented,
            w => match w.parse::<u32>() {
                Ok(n) => SmtControl::Threads(n),
                Err(_) => SmtControl::Other(w.to_string()),
            },
        }
    }

    /// The kernel's word (stable; what scripts compare).
    pub fn word(&self) -> String {
        match self {
            SmtControl::On => "on".into(),
            SmtControl::Off => "off".into(),
            SmtControl::ForceOff => "forceoff".into(),
            SmtControl::NotSupported => "notsupported".into(),
            SmtControl::NotImplemented => "notimplemented".into(),
            SmtControl::Threads(n) => n.to_string(),
            SmtControl::Other(w) => w.clone(),
        }
    }

    /// What it means, in words for people.
    pub fn meaning(&self) -> String {
        match self {
            SmtControl::On => "enabled (sibling hardware threads are online)".into(),
            SmtControl::Off => {
                "disabled by the administrator (sibling threads offline; can be switched back on)"
                    .into()
            }
            SmtControl::ForceOff => {
                "disabled for good at boot (nosmt=force; cannot be switched on at run time)".into()
            }
            SmtControl::NotSupported => "not supported by this CPU".into(),
            SmtControl::NotImplemented => {
                "no SMT switch in this kernel for this architecture".into()
            }
            SmtControl::Threads(n) => format!("enabled with {n} thread(s) per core"),
            SmtControl::Other(w) => format!("state {w:?}, unknown to numalab"),
        }
    }
}

/// Whether a virtual machine's CPU is accelerated by KVM, as far as the guest can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Acceleration {
    /// KVM runs the vCPUs on real cores (a `kvm-clock`, `KVM virtual PTP` or DMI
    /// "KVM Virtual Machine" says so).
    Kvm,
    /// QEMU says it runs without KVM (DMI "QEMU Virtual Machine" of the `virt` board):
    /// software emulation (TCG), or another accelerator such as HVF.
    NotKvm,
    /// Nothing tells (QEMU's software emulation and KVM look alike from inside a
    /// device-tree guest).
    Unknown,
}

/// A virtual machine, as seen from inside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Virtualization {
    /// Stable id: "qemu", "kvm", "xen", "vmware", "hyper-v", "aws-nitro", "gce",
    /// "virtualbox", "openstack", "alibaba", the word of `/sys/hypervisor/type`, or
    /// "unknown".
    pub id: String,
    /// Name for people ("QEMU virt board", "KVM (QEMU)", "AWS Nitro (Amazon EC2)").
    pub name: String,
    /// KVM acceleration, if known.
    pub acceleration: Acceleration,
    /// The signals found.
    pub evidence: Vec<String>,
}

impl SysRoot {
    /// The running system.
    pub fn live() -> Self {
        SysRoot {
            root: PathBuf::from("/"),
        }
    }

    /// A fixture tree.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        SysRoot { root: root.into() }
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Reads a file under the root, trimmed; None if missing or empty.
    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// Kernel release.
    pub fn kernel_release(&self) -> Option<String> {
        self.read("proc/sys/kernel/osrelease")
    }

    /// Host name.
    pub fn hostname(&self) -> Option<String> {
        self.read("proc/sys/kernel/hostname")
    }

    /// `kernel.perf_event_paranoid`.
    pub fn perf_event_paranoid(&self) -> Option<i32> {
        self.read("proc/sys/kernel/perf_event_paranoid")?
            .parse()
            .ok()
    }

    /// Automatic NUMA balancing (`kernel.numa_balancing`): it migrates pages behind
    /// our back and must be known when interpreting placement results.
    pub fn numa_balancing(&self) -> Option<bool> {
        self.read("proc/sys/kernel/numa_balancing")
            .map(|v| v != "0")
    }

    /// Transparent huge pages mode: the bracketed word of `enabled` ("always",
    /// "madvise", "never").
    pub fn thp_mode(&self) -> Option<String> {
        bracketed(&self.read("sys/kernel/mm/transparent_hugepage/enabled")?)
    }

    /// THP defrag setting.
    pub fn thp_defrag(&self) -> Option<String> {
        bracketed(&self.read("sys/kernel/mm/transparent_hugepage/defrag")?)
    }

    /// hugetlbfs pools.
    pub fn huge_pools(&self) -> Vec<HugePool> {
        let dir = self.root.join("sys/kernel/mm/hugepages");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut out: Vec<HugePool> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                let kb: u64 = name
                    .strip_prefix("hugepages-")?
                    .strip_suffix("kB")?
                    .parse()
                    .ok()?;
                let num = |f: &str| -> u64 {
                    std::fs::read_to_string(e.path().join(f))
                        .ok()
                        .and_then(|s| s.trim().parse().ok())
                        .unwrap_or(0)
                };
                Some(HugePool {
                    size_bytes: kb * 1024,
                    total: num("nr_hugepages"),
                    free: num("free_hugepages"),
                })
            })
            .collect();
        out.sort_by_key(|p| p.size_bytes);
        out
    }

    /// cpufreq governors in use (empty without cpufreq).
    pub fn governors(&self) -> BTreeSet<String> {
        let dir = self.root.join("sys/devices/system/cpu");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return BTreeSet::new();
        };
        entries
            .filter_map(|e| e.ok())
            .filter(|e| {
                let n = e.file_name().to_string_lossy().to_string();
                n.starts_with("cpu") && n[3..].chars().all(|c| c.is_ascii_digit()) && n.len() > 3
            })
            .filter_map(|e| {
                std::fs::read_to_string(e.path().join("cpufreq/scaling_governor"))
                    .ok()
                    .map(|s| s.trim().to_string())
            })
            .collect()
    }

    /// SMT control state as the kernel words it ("on", "off", "forceoff",
    /// "notsupported", "notimplemented", or a thread count); see [`SmtControl`].
    pub fn smt(&self) -> Option<String> {
        self.read("sys/devices/system/cpu/smt/control")
    }

    /// SMT control state, parsed.
    pub fn smt_control(&self) -> Option<SmtControl> {
        self.smt().map(|w| SmtControl::parse(&w))
    }

    /// The hypervisor we run under, if any (None on bare metal): the name of
    /// [`SysRoot::virtualization`].
    pub fn hypervisor(&self) -> Option<String> {
        self.virtualization().map(|v| v.name)
    }

    /// The strings of a device-tree property (NUL-separated), empty if absent.
    fn dt_strings(&self, rel: &str) -> Vec<String> {
        let base = ["sys/firmware/devicetree/base", "proc/device-tree"];
        base.iter()
            .find_map(|b| std::fs::read(self.root.join(b).join(rel)).ok())
            .map(|bytes| {
                String::from_utf8_lossy(&bytes)
                    .split('\0')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether we run in a virtual machine, and which, from every signal Linux gives on
    /// x86-64 and AArch64 alike (read the same way on every architecture):
    /// - `/sys/hypervisor/type` (Xen, and hypervisors that register there);
    /// - the device tree (device-tree boots, typical of Arm): a `hypervisor` node with
    ///   `compatible = "xen,xen"` (Xen's guest binding), and the root `compatible`
    ///   `"linux,dummy-virt"` of QEMU's `virt` board;
    /// - DMI/SMBIOS vendor and product (`/sys/class/dmi/id`, UEFI/ACPI boots and x86):
    ///   QEMU ("KVM Virtual Machine" when QEMU's `virt` board runs with KVM, "QEMU
    ///   Virtual Machine" without), KVM, Amazon EC2 (but not `*.metal` instances), Google
    ///   Compute Engine, VMware, Microsoft Hyper-V, Xen, VirtualBox, OpenStack, Alibaba;
    /// - the x86 CPUID `hypervisor` flag in `/proc/cpuinfo` (Arm has no such flag);
    /// - hints of KVM acceleration: the `kvm-clock` clock source (x86) and the
    ///   "KVM virtual PTP" clock (`ptp_kvm`, Arm and x86).
    pub fn virtualization(&self) -> Option<Virtualization> {
        let mut evidence = Vec::new();
        // /sys/hypervisor/type and the device tree's hypervisor node.
        let sys_type = self.read("sys/hypervisor/type");
        if let Some(t) = &sys_type {
            evidence.push(format!("/sys/hypervisor/type = {t}"));
        }
        let dt_xen = self
            .dt_strings("hypervisor/compatible")
            .iter()
            .any(|c| c.starts_with("xen,"));
        if dt_xen {
            evidence.push("device tree node hypervisor compatible \"xen,xen\"".into());
        }
        // The device tree's board.
        let dummy_virt = self
            .dt_strings("compatible")
            .iter()
            .any(|c| c == "linux,dummy-virt");
        if dummy_virt {
            evidence.push("device tree compatible \"linux,dummy-virt\"".into());
        }
        // DMI.
        let vendor = self.read("sys/class/dmi/id/sys_vendor").unwrap_or_default();
        let product = self
            .read("sys/class/dmi/id/product_name")
            .unwrap_or_default();
        if !vendor.is_empty() || !product.is_empty() {
            evidence.push(format!("DMI vendor {vendor:?} product {product:?}"));
        }
        let dmi = format!("{vendor} {product}").to_ascii_lowercase();
        let metal = product.to_ascii_lowercase().ends_with(".metal");
        const KNOWN: &[(&str, &str, &str)] = &[
            ("kvm virtual machine", "kvm", "KVM (QEMU)"),
            ("qemu virtual machine", "qemu", "QEMU"),
            ("qemu", "qemu", "QEMU"),
            ("kvm", "kvm", "KVM"),
            ("vmware", "vmware", "VMware"),
            ("virtualbox", "virtualbox", "VirtualBox"),
            ("innotek", "virtualbox", "VirtualBox"),
            (
                "microsoft corporation virtual",
                "hyper-v",
                "Microsoft Hyper-V",
            ),
            ("amazon ec2", "aws-nitro", "AWS Nitro (Amazon EC2)"),
            ("google compute engine", "gce", "Google Compute Engine"),
            ("openstack", "openstack", "OpenStack"),
            ("alibaba cloud ecs", "alibaba", "Alibaba Cloud ECS"),
            ("xen", "xen", "Xen"),
        ];
        let named = KNOWN
            .iter()
            .find(|(k, _, _)| dmi.contains(k))
            .filter(|_| !metal);
        // x86's CPUID hypervisor bit.
        let flagged = self
            .read("proc/cpuinfo")
            .map(|c| crate::cpuinfo::blocks(&c).any(|b| b.flags().any(|w| w == "hypervisor")))
            .unwrap_or(false);
        if flagged {
            evidence.push("CPU flag \"hypervisor\"".into());
        }
        // Hints of KVM acceleration.
        let kvm_clock = self
            .read("sys/devices/system/clocksource/clocksource0/available_clocksource")
            .is_some_and(|c| c.split_whitespace().any(|w| w == "kvm-clock"));
        if kvm_clock {
            evidence.push("clock source kvm-clock".into());
        }
        let kvm_ptp = std::fs::read_dir(self.root.join("sys/class/ptp"))
            .map(|d| {
                d.filter_map(|e| e.ok()).any(|e| {
                    std::fs::read_to_string(e.path().join("clock_name"))
                        .is_ok_and(|n| n.trim() == "KVM virtual PTP")
                })
            })
            .unwrap_or(false);
        if kvm_ptp {
            evidence.push("PTP clock \"KVM virtual PTP\"".into());
        }
        let kvm_hint = kvm_clock || kvm_ptp || dmi.contains("kvm virtual machine");

        let (id, name): (String, String) = if dt_xen
            || sys_type
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case("xen"))
        {
            ("xen".into(), "Xen".into())
        } else if let Some(t) = &sys_type {
            (t.to_ascii_lowercase(), t.clone())
        } else if let Some((_, id, name)) = named {
            let name = if *id == "qemu" && dummy_virt {
                "QEMU virt board".to_string()
            } else {
                name.to_string()
            };
            (id.to_string(), name)
        } else if dummy_virt {
            ("qemu".into(), "QEMU virt board".into())
        } else if flagged || kvm_clock || kvm_ptp {
            if kvm_hint {
                ("kvm".into(), "KVM".into())
            } else {
                ("unknown".into(), "unknown hypervisor".into())
            }
        } else {
            return None;
        };
        let acceleration = if kvm_hint {
            Acceleration::Kvm
        } else if id == "qemu" && dmi.contains("qemu virtual machine") {
            Acceleration::NotKvm
        } else {
            Acceleration::Unknown
        };
        Some(Virtualization {
            id,
            name,
            acceleration,
            evidence,
        })
    }

    /// The container runtime we run in, if any.
    pub fn container(&self) -> Option<String> {
        if self.root.join(".dockerenv").exists() {
            return Some("docker".into());
        }
        if self.root.join("run/.containerenv").exists() {
            return Some("podman".into());
        }
        if let Some(c) = self.read("proc/1/environ") {
            for var in c.split('\0') {
                if let Some(v) = var.strip_prefix("container=") {
                    return Some(v.to_string());
                }
            }
        }
        let cg = self.read("proc/self/cgroup").unwrap_or_default();
        for (needle, name) in [
            ("docker", "docker"),
            ("kubepods", "kubernetes"),
            ("lxc", "lxc"),
            ("containerd", "containerd"),
        ] {
            if cg.contains(needle) {
                return Some(name.into());
            }
        }
        None
    }

    /// cgroup v2 limits of this process.
    pub fn cgroup_limits(&self) -> CgroupLimits {
        let Some(cg) = self.read("proc/self/cgroup") else {
            return CgroupLimits::default();
        };
        let Some(path) = cg.lines().find_map(|l| l.strip_prefix("0::")) else {
            return CgroupLimits::default();
        };
        let base = format!("sys/fs/cgroup{}", if path == "/" { "" } else { path });
        let cpu_max = self.read(&format!("{base}/cpu.max")).and_then(|v| {
            let mut it = v.split_whitespace();
            let quota = it.next()?;
            let period: u64 = it.next()?.parse().ok()?;
            (quota != "max")
                .then(|| Some((quota.parse().ok()?, period)))
                .flatten()
        });
        let memory_max = self.read(&format!("{base}/memory.max")).and_then(|v| {
            if v == "max" {
                None
            } else {
                v.parse().ok()
            }
        });
        CgroupLimits {
            path: Some(path.to_string()),
            cpu_max,
            cpus_effective: self.read(&format!("{base}/cpuset.cpus.effective")),
            memory_max,
        }
    }

    /// Free memory of a NUMA node in bytes, from its `meminfo`.
    pub fn node_free_bytes(&self, node: u32) -> Option<u64> {
        let text = self.read(&format!("sys/devices/system/node/node{node}/meminfo"))?;
        meminfo_bytes(&text, "MemFree")
    }

    /// Memory of a NUMA node the kernel can reclaim without swapping, in bytes: its
    /// page cache on the LRU lists (`Active(file)` + `Inactive(file)`; shared memory is
    /// not there) and its reclaimable slab (`SReclaimable`). None when the node's
    /// `meminfo` has none of them.
    pub fn node_reclaimable_bytes(&self, node: u32) -> Option<u64> {
        let text = self.read(&format!("sys/devices/system/node/node{node}/meminfo"))?;
        let parts: Vec<u64> = ["Active(file)", "Inactive(file)", "SReclaimable"]
            .iter()
            .filter_map(|f| meminfo_bytes(&text, f))
            .collect();
        (!parts.is_empty()).then(|| parts.iter().sum())
    }

    /// Free memory of a NUMA node that the kernel keeps from allocations (watermarks,
    /// lower-zone reserves, room in the per-CPU page lists), in pages of the system that
    /// wrote `/proc/zoneinfo` ([`crate::zoneinfo`]). None when unreadable.
    pub fn node_reserved_pages(&self, node: u32) -> Option<u64> {
        crate::zoneinfo::node_reserved_pages(&self.read("proc/zoneinfo")?, node)
    }

    /// Available memory of the whole system in bytes (`MemAvailable`).
    pub fn mem_available_bytes(&self) -> Option<u64> {
        meminfo_bytes(&self.read("proc/meminfo")?, "MemAvailable")
    }

    /// Memory of the whole system in bytes (`MemTotal`), nodes or not.
    pub fn mem_total_bytes(&self) -> Option<u64> {
        meminfo_bytes(&self.read("proc/meminfo")?, "MemTotal")
    }
}

/// Bytes of a meminfo-style value (`  2048 kB`; the kernel's kB are KiB).
pub fn kb_bytes(value: &str) -> Option<u64> {
    let kb: u64 = value.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// The first readable `Name: N kB` field called `name` in a meminfo-style text
/// (`/proc/meminfo`, `smaps`, or a node's `meminfo`, whose lines start with `Node N `),
/// in bytes.
pub fn meminfo_bytes(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (field, value) = l.split_once(':')?;
        if field.split_whitespace().last() != Some(name) {
            return None;
        }
        kb_bytes(value)
    })
}

fn bracketed(s: &str) -> Option<String> {
    let start = s.find('[')? + 1;
    let end = s[start..].find(']')? + start;
    Some(s[start..end].to_string())
}

/// What the envelope's host section reads from `/proc` and `/sys` besides the topology:
/// independent of hwloc's discovery, so a command can read it in a thread beside it
/// ([`host_facts`], then [`host_from`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFacts {
    hostname: Option<String>,
    kernel: Option<String>,
    governor: String,
    smt: Option<String>,
    hypervisor: Option<String>,
    container: Option<String>,
}

/// Reads [`HostFacts`] from the live machine's `/proc` and `/sys`.
pub fn host_facts() -> HostFacts {
    host_facts_at(&SysRoot::live())
}

fn host_facts_at(sys: &SysRoot) -> HostFacts {
    let governors = sys.governors();
    HostFacts {
        hostname: sys.hostname(),
        kernel: sys.kernel_release(),
        governor: if governors.is_empty() {
            "none (no cpufreq)".to_string()
        } else {
            governors.into_iter().collect::<Vec<_>>().join(",")
        },
        smt: sys.smt(),
        hypervisor: sys.hypervisor(),
        container: sys.container(),
    }
}

/// The envelope's host section from facts read by [`host_facts`] and the machine's
/// topology (where `/proc` gave no hostname or kernel, hwloc's are used).
pub fn host_from(machine: &Machine, facts: HostFacts) -> Host {
    Host {
        hostname: facts.hostname.or_else(|| machine.software.hostname.clone()),
        cpu_model: machine.cpu.model_name.clone(),
        kernel: facts.kernel.or_else(|| machine.software.kernel.clone()),
        governor: Some(facts.governor),
        smt: facts.smt,
        hypervisor: facts.hypervisor,
        container: facts.container,
        topology_hash: machine.topology_hash(),
        topology: Some(machine.clone()),
    }
}

/// The envelope's host section for the live machine.
pub fn host(machine: &Machine) -> Host {
    host_from(machine, host_facts())
}

#[cfg(test)]
mod tests {
    use super::*;

    use numalab_testkit::write;

    #[test]
    fn meminfo_fields_in_bytes() {
        let proc = "MemTotal:       24576000 kB\nMemFree:             100 kB\nMemAvailable:   23068672 kB\nHugePages_Total:       0\n";
        assert_eq!(meminfo_bytes(proc, "MemTotal"), Some(24576000 * 1024));
        assert_eq!(meminfo_bytes(proc, "MemAvailable"), Some(23068672 * 1024));
        assert_eq!(
            meminfo_bytes(proc, "Total"),
            None,
            "a whole name, not a part"
        );
        assert_eq!(meminfo_bytes(proc, "SwapFree"), None);
        let node = "Node 1 MemTotal:  100 kB\nNode 1 MemFree:    64 kB\n";
        assert_eq!(meminfo_bytes(node, "MemFree"), Some(64 * 1024));
        let smaps = "Rss:                2048 kB\nAnonHugePages:      2048 kB\n";
        assert_eq!(meminfo_bytes(smaps, "AnonHugePages"), Some(2 << 20));
        // The first readable one.
        assert_eq!(
            meminfo_bytes("MemFree: lots kB\nMemFree: 2 kB\n", "MemFree"),
            Some(2048)
        );
        assert_eq!(kb_bytes(" 2048 kB"), Some(2 << 20));
        assert_eq!(kb_bytes("kB"), None);
    }

    /// A tree with only the given files.
    fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, content) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        dir
    }

    const N1_CPUINFO: &[u8] = b"processor\t: 0\nBogoMIPS\t: 125.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n";

    #[test]
    fn qemu_virt_device_tree_guest() {
        // The emulated Neoverse N1 guest: device-tree boot, no DMI, no CPU flag.
        let d = tree(&[
            ("proc/cpuinfo", N1_CPUINFO),
            (
                "sys/firmware/devicetree/base/compatible",
                b"linux,dummy-virt\0",
            ),
            ("sys/firmware/fdt", b"\xd0\x0d\xfe\xed"),
            ("sys/devices/system/cpu/smt/control", b"notimplemented\n"),
        ]);
        let s = SysRoot::at(d.path());
        let v = s.virtualization().expect("QEMU virt is a VM");
        assert_eq!(v.id, "qemu");
        assert_eq!(v.name, "QEMU virt board");
        assert_eq!(v.acceleration, Acceleration::Unknown);
        assert!(v.evidence[0].contains("linux,dummy-virt"), "{v:?}");
        assert_eq!(s.hypervisor().as_deref(), Some("QEMU virt board"));
        assert_eq!(s.smt_control(), Some(SmtControl::NotImplemented));
    }

    #[test]
    fn dmi_names_the_hypervisor() {
        let cases: &[(&str, &str, &str, Acceleration)] = &[
            ("QEMU", "KVM Virtual Machine", "kvm", Acceleration::Kvm),
            ("QEMU", "QEMU Virtual Machine", "qemu", Acceleration::NotKvm),
            (
                "QEMU",
                "Standard PC (Q35 + ICH9, 2009)",
                "qemu",
                Acceleration::Unknown,
            ),
            (
                "Amazon EC2",
                "c6g.large",
                "aws-nitro",
                Acceleration::Unknown,
            ),
            (
                "VMware, Inc.",
                "VMware Virtual Platform",
                "vmware",
                Acceleration::Unknown,
            ),
            (
                "Microsoft Corporation",
                "Virtual Machine",
                "hyper-v",
                Acceleration::Unknown,
            ),
            ("Xen", "HVM domU", "xen", Acceleration::Unknown),
            (
                "Google",
                "Google Compute Engine",
                "gce",
                Acceleration::Unknown,
            ),
        ];
        for (vendor, product, id, acc) in cases {
            let d = tree(&[
                (
                    "sys/class/dmi/id/sys_vendor",
                    format!("{vendor}\n").as_bytes(),
                ),
                (
                    "sys/class/dmi/id/product_name",
                    format!("{product}\n").as_bytes(),
                ),
            ]);
            let v = SysRoot::at(d.path())
                .virtualization()
                .unwrap_or_else(|| panic!("{vendor} {product}: no VM found"));
            assert_eq!(
                (v.id.as_str(), v.acceleration),
                (*id, *acc),
                "{vendor} {product}"
            );
        }
        // An EC2 bare-metal instance is not a VM.
        let d = tree(&[
            ("sys/class/dmi/id/sys_vendor", b"Amazon EC2\n"),
            ("sys/class/dmi/id/product_name", b"c6g.metal\n"),
        ]);
        assert_eq!(SysRoot::at(d.path()).virtualization(), None);
        // Amazon EC2 on Graviton: the name.
        let d = tree(&[
            ("sys/class/dmi/id/sys_vendor", b"Amazon EC2\n"),
            ("sys/class/dmi/id/product_name", b"m7g.xlarge\n"),
            ("proc/cpuinfo", N1_CPUINFO),
        ]);
        assert_eq!(
            SysRoot::at(d.path()).hypervisor().as_deref(),
            Some("AWS Nitro (Amazon EC2)")
        );
    }

    #[test]
    fn xen_and_kvm_hints() {
        let d = tree(&[("sys/hypervisor/type", b"xen\n")]);
        assert_eq!(SysRoot::at(d.path()).virtualization().unwrap().id, "xen");
        let d = tree(&[(
            "proc/device-tree/hypervisor/compatible",
            b"xen,xen-4.17\0xen,xen\0",
        )]);
        assert_eq!(SysRoot::at(d.path()).hypervisor().as_deref(), Some("Xen"));
        // KVM's PTP clock on a device-tree Arm guest tells KVM from emulation.
        let d = tree(&[
            (
                "sys/firmware/devicetree/base/compatible",
                b"linux,dummy-virt\0",
            ),
            ("sys/class/ptp/ptp0/clock_name", b"KVM virtual PTP\n"),
        ]);
        let v = SysRoot::at(d.path()).virtualization().unwrap();
        assert_eq!((v.id.as_str(), v.acceleration), ("qemu", Acceleration::Kvm));
        // x86: the CPU flag alone, then with kvm-clock.
        let d = tree(&[("proc/cpuinfo", b"flags : fpu hypervisor\n")]);
        assert_eq!(
            SysRoot::at(d.path()).virtualization().unwrap().id,
            "unknown"
        );
        let d = tree(&[
            ("proc/cpuinfo", b"flags : fpu hypervisor\n"),
            (
                "sys/devices/system/clocksource/clocksource0/available_clocksource",
                b"kvm-clock tsc acpi_pm\n",
            ),
        ]);
        assert_eq!(SysRoot::at(d.path()).virtualization().unwrap().id, "kvm");
    }

    #[test]
    fn bare_metal_arm_has_no_hypervisor() {
        // An Ampere Altra server booted with ACPI: DMI names the maker, no VM signal.
        let d = tree(&[
            ("proc/cpuinfo", N1_CPUINFO),
            ("sys/class/dmi/id/sys_vendor", b"WIWYNN\n"),
            (
                "sys/class/dmi/id/product_name",
                b"Mt.Jade Server System B81.03001\n",
            ),
            ("sys/devices/system/cpu/smt/control", b"notimplemented\n"),
        ]);
        assert_eq!(SysRoot::at(d.path()).virtualization(), None);
        // Nothing at all.
        let d = tree(&[]);
        assert_eq!(SysRoot::at(d.path()).virtualization(), None);
        assert_eq!(SysRoot::at(d.path()).smt_control(), None);
    }

    #[test]
    fn every_smt_word_is_explained() {
        for (word, parsed) in [
            ("on", SmtControl::On),
            ("off", SmtControl::Off),
            ("forceoff", SmtControl::ForceOff),
            ("notsupported", SmtControl::NotSupported),
            ("notimplemented", SmtControl::NotImplemented),
            ("2", SmtControl::Threads(2)),
            ("sideways", SmtControl::Other("sideways".into())),
        ] {
            let p = SmtControl::parse(&format!("{word}\n"));
            assert_eq!(p, parsed);
            assert_eq!(p.word(), word);
            assert!(!p.meaning().is_empty());
        }
        assert!(SmtControl::NotImplemented
            .meaning()
            .contains("no SMT switch"));
        assert!(SmtControl::NotSupported
            .meaning()
            .contains("not supported by this CPU"));
    }

    #[test]
    fn host_facts_read_apart_from_the_topology_make_the_same_host() {
        // The facts a command reads in a thread beside hwloc's discovery, joined to the
        // machine afterwards: /proc and /sys where they answer, hwloc where they do not.
        let xml = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/topology/Intel-CascadeLake-2xXeon6230.xml");
        let machine = crate::machine(&crate::Input::Xml(xml)).unwrap();
        let d = tree(&[
            ("proc/sys/kernel/hostname", b"node17\n"),
            ("proc/sys/kernel/osrelease", b"6.1.0-test\n"),
            (
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                b"performance\n",
            ),
            (
                "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
                b"powersave\n",
            ),
            ("sys/devices/system/cpu/smt/control", b"on\n"),
            ("sys/class/dmi/id/sys_vendor", b"QEMU\n"),
            ("sys/class/dmi/id/product_name", b"KVM Virtual Machine\n"),
        ]);
        let facts = host_facts_at(&SysRoot::at(d.path()));
        let h = host_from(&machine, facts);
        assert_eq!(h.hostname.as_deref(), Some("node17"));
        assert_eq!(h.kernel.as_deref(), Some("6.1.0-test"));
        assert_eq!(h.governor.as_deref(), Some("performance,powersave"));
        assert_eq!(h.smt.as_deref(), Some("on"));
        assert!(h.hypervisor.is_some(), "{h:?}");
        assert_eq!(h.cpu_model, machine.cpu.model_name);
        assert_eq!(h.topology_hash, machine.topology_hash());
        assert_eq!(h.topology.as_ref(), Some(&machine));

        // Nothing readable: hwloc's hostname and kernel, and no cpufreq said so.
        let empty = tempfile::tempdir().unwrap();
        let h = host_from(&machine, host_facts_at(&SysRoot::at(empty.path())));
        assert_eq!(h.hostname, machine.software.hostname);
        assert_eq!(h.kernel, machine.software.kernel);
        assert_eq!(h.governor.as_deref(), Some("none (no cpufreq)"));
        assert_eq!(h.hypervisor, None);
    }

    #[test]
    fn reads_a_fixture_tree() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(
            r,
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always [madvise] never\n",
        );
        write(
            r,
            "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
            "16\n",
        );
        write(
            r,
            "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
            "10\n",
        );
        write(
            r,
            "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
            "0\n",
        );
        write(r, "proc/sys/kernel/perf_event_paranoid", "2\n");
        write(
            r,
            "proc/cpuinfo",
            "processor : 0\nflags : fpu sse2 hypervisor avx\n",
        );
        write(r, "sys/class/dmi/id/sys_vendor", "QEMU\n");
        write(
            r,
            "sys/class/dmi/id/product_name",
            "Standard PC (Q35 + ICH9, 2009)\n",
        );
        write(r, "proc/self/cgroup", "0::/user.slice/test\n");
        write(
            r,
            "sys/fs/cgroup/user.slice/test/cpu.max",
            "200000 100000\n",
        );
        write(r, "sys/fs/cgroup/user.slice/test/memory.max", "max\n");
        write(
            r,
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "performance\n",
        );
        write(
            r,
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemTotal: 100 kB\nNode 0 MemFree:  64 kB\n",
        );
        let s = SysRoot::at(r);
        assert_eq!(s.thp_mode().as_deref(), Some("madvise"));
        assert_eq!(
            s.huge_pools(),
            vec![
                HugePool {
                    size_bytes: 2 << 20,
                    total: 16,
                    free: 10
                },
                HugePool {
                    size_bytes: 1 << 30,
                    total: 0,
                    free: 0
                }
            ]
        );
        assert_eq!(s.perf_event_paranoid(), Some(2));
        assert_eq!(s.hypervisor().as_deref(), Some("QEMU"));
        let cg = s.cgroup_limits();
        assert_eq!(cg.cpu_max, Some((200000, 100000)));
        assert_eq!(cg.memory_max, None);
        assert_eq!(
            s.governors().into_iter().collect::<Vec<_>>(),
            vec!["performance"]
        );
        assert_eq!(s.node_free_bytes(0), Some(64 * 1024));
        assert_eq!(s.container(), None);
    }
}
