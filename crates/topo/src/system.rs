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

    /// SMT control state ("on", "off", "forceoff", "notsupported", "notimplemented").
    pub fn smt(&self) -> Option<String> {
        self.read("sys/devices/system/cpu/smt/control")
    }

    /// The hypervisor we run under, if any (None on bare metal).
    pub fn hypervisor(&self) -> Option<String> {
        let flagged = self
            .read("proc/cpuinfo")
            .map(|c| {
                c.lines().any(|l| {
                    l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor")
                })
            })
            .unwrap_or(false);
        let xen = self.read("sys/hypervisor/type");
        let vendor = self.read("sys/class/dmi/id/sys_vendor").unwrap_or_default();
        let product = self
            .read("sys/class/dmi/id/product_name")
            .unwrap_or_default();
        let dmi = format!("{vendor} {product}").to_ascii_lowercase();
        let known = [
            ("kvm", "KVM"),
            ("qemu", "QEMU"),
            ("vmware", "VMware"),
            ("virtualbox", "VirtualBox"),
            ("microsoft corporation virtual", "Hyper-V"),
            ("amazon ec2", "AWS Nitro"),
            ("google compute engine", "Google Compute Engine"),
            ("xen", "Xen"),
        ];
        let named = known
            .iter()
            .find(|(k, _)| dmi.contains(k))
            .map(|(_, n)| n.to_string());
        match (xen, named, flagged) {
            (Some(x), _, _) => Some(x),
            (None, Some(n), _) => Some(n),
            (None, None, true) => Some("unknown hypervisor".into()),
            (None, None, false) => None,
        }
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

/// The envelope's host section for the live machine.
pub fn host(machine: &Machine) -> Host {
    let sys = SysRoot::live();
    let governors = sys.governors();
    Host {
        hostname: sys.hostname().or_else(|| machine.software.hostname.clone()),
        cpu_model: machine.cpu.model_name.clone(),
        kernel: sys
            .kernel_release()
            .or_else(|| machine.software.kernel.clone()),
        governor: Some(if governors.is_empty() {
            "none (no cpufreq)".to_string()
        } else {
            governors.into_iter().collect::<Vec<_>>().join(",")
        }),
        smt: sys.smt(),
        hypervisor: sys.hypervisor(),
        container: sys.container(),
        topology_hash: machine.topology_hash(),
        topology: Some(machine.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, content: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

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
