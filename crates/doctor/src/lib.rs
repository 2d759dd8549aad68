//! What this machine allows numalab to do (`numalab doctor`, and the first step of
//! `numalab evaluate`): each check with a verdict and a remedy.
//!
//! Facts are gathered first (hwloc, /proc, /sys, perf_event_open, a real binding
//! attempt), then [`assess`] turns them into checks. `assess` is pure, so the verdict
//! logic is tested on facts from other machines.

use numalab_pmu::capability::{self, Capability};
use numalab_pmu::catalog;
use numalab_pmu::catalog::perf::{PerfError, PerfList};
use numalab_schema::{cpulist, units, Machine};
use numalab_sensors::{Sensor, SensorKind};
use numalab_topo::bind::{HwlocPlacer, MemPolicy, PageKind, PagePlacement, Placer, Region};
use numalab_topo::system::{Acceleration, SysRoot};
use serde::{Deserialize, Serialize};

pub use numalab_records::doctor::{Check, DoctorReport, Verdict};

mod perf_metrics;

fn check(name: &str, verdict: Verdict, detail: impl Into<String>, remedy: Option<&str>) -> Check {
    Check {
        name: name.into(),
        verdict,
        value: None,
        detail: detail.into(),
        remedy: remedy.map(str::to_string),
    }
}

/// A check with a stable value for scripts ([`Check::value`]).
fn valued(mut c: Check, value: impl Into<String>) -> Check {
    c.value = Some(value.into());
    c
}

/// What a real binding attempt found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BindingProbe {
    /// hwloc runtime version.
    pub hwloc_version: String,
    /// Pinning this thread to a PU worked (and to which).
    pub cpu_binding: Result<u32, String>,
    /// Binding a small region to a node worked and the kernel placed its pages there.
    pub memory_binding: Result<(u32, f64), String>,
}

/// Tries pinning and memory binding for real.
pub fn probe_binding(machine: &Machine) -> BindingProbe {
    let hwloc_version = numalab_topo::load::runtime_hwloc_version();
    let placer = match HwlocPlacer::new() {
        Ok(p) => p,
        Err(e) => {
            return BindingProbe {
                hwloc_version,
                cpu_binding: Err(e.to_string()),
                memory_binding: Err(e.to_string()),
            }
        }
    };
    let pu = machine.pu_ids().last().copied().unwrap_or(0);
    let node = machine.pu(pu).and_then(|p| p.numa_node).unwrap_or(0);
    // Run in a scratch thread so the caller's affinity is untouched.
    std::thread::scope(|s| {
        s.spawn(|| {
            let cpu_binding = placer
                .pin_current_thread(pu)
                .map(|_| pu)
                .map_err(|e| e.to_string());
            let memory_binding = (|| {
                let region = Region::new(64 * numalab_topo::bind::base_page_size(), PageKind::Base)
                    .map_err(|e| e.to_string())?;
                placer
                    .bind_region(&region, &MemPolicy::Bind(vec![node]))
                    .map_err(|e| e.to_string())?;
                let mut region = region;
                region.touch();
                let nodes = placer.page_nodes(&region).map_err(|e| e.to_string())?;
                let p = PagePlacement::from_page_nodes(&nodes);
                Ok((node, p.fraction_on(&[node])))
            })();
            BindingProbe {
                hwloc_version,
                cpu_binding,
                memory_binding,
            }
        })
        .join()
        .expect("binding probe thread")
    })
}

/// Turns facts into checks (`perf`: the installed perf's `perf list -j`, or why there
/// is none).
pub fn assess(
    machine: &Machine,
    sys: &SysRoot,
    binding: &BindingProbe,
    pmu: &Capability,
    sensors: &[Sensor],
    perf: &Result<PerfList, PerfError>,
) -> Vec<Check> {
    let mut out = Vec::new();
    out.push(binding_check(binding));
    numa_checks(&mut out, machine, sys);
    out.push(perf_paranoid(sys, pmu));
    out.push(pmu_check(pmu));
    out.push(pmu_catalog(machine, sys));
    out.push(perf_metrics::perf_metrics(machine, sys, perf));
    out.push(huge_pages(sys));
    out.push(frequency(machine, sys));
    out.push(smt(machine, sys));

    // Virtualization and containers.
    out.push(hypervisor(sys));
    if let Some(c) = sys.container() {
        out.push(check(
            "container",
            Verdict::Info,
            format!("running in a container ({c})"),
            None,
        ));
    }

    out.push(cgroup(machine, sys));
    out.push(power_sensors(sensors));
    out
}

/// hwloc and binding: whether a thread could be pinned and memory bound to a node.
fn binding_check(binding: &BindingProbe) -> Check {
    match (&binding.cpu_binding, &binding.memory_binding) {
        (Ok(pu), Ok((node, frac))) if *frac >= 0.999 => check(
            "binding",
            Verdict::Ok,
            format!("hwloc {}: pinned a thread to CPU {pu}; memory bound to node {node} landed there ({:.0}% of pages)", binding.hwloc_version, frac * 100.0),
            None,
        ),
        (Ok(pu), Ok((node, frac))) => check(
            "binding",
            Verdict::Warn,
            format!("hwloc {}: pinned to CPU {pu}, but only {:.0}% of pages bound to node {node} landed there", binding.hwloc_version, frac * 100.0),
            Some("memory may be short on that node, or a cgroup cpuset restricts mems; placement results will carry warnings"),
        ),
        (Err(e), _) => check(
            "binding",
            Verdict::Fail,
            format!("hwloc {}: cannot pin threads: {e}", binding.hwloc_version),
            Some("check the CPU affinity and cgroup cpuset of this process; measurements need pinning"),
        ),
        (Ok(pu), Err(e)) => check(
            "binding",
            Verdict::Warn,
            format!("hwloc {}: pinned to CPU {pu}, but memory binding failed: {e}", binding.hwloc_version),
            Some("the kernel may lack NUMA support; node-pair measurements will be skipped"),
        ),
    }
}

/// NUMA nodes: how many, with CPUs or memory only, whether the nodes account for all
/// memory, and whether automatic NUMA balancing moves pages.
fn numa_checks(out: &mut Vec<Check>, machine: &Machine, sys: &SysRoot) {
    let cpu_nodes = machine.cpu_nodes().count();
    let memory_only = machine.numa_nodes.len() - cpu_nodes;
    let node_mem: u64 = machine.numa_nodes.iter().map(|n| n.memory_bytes).sum();
    let mut detail = format!(
        "{} NUMA node(s): {} with CPUs, {} memory-only; {} of node memory",
        machine.numa_nodes.len(),
        cpu_nodes,
        memory_only,
        units::bytes(node_mem)
    );
    if let Some(slit) = machine.slit() {
        let vals: std::collections::BTreeSet<u64> = slit.values.iter().flatten().copied().collect();
        detail.push_str(&format!(
            "; SLIT values {}",
            vals.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("/")
        ));
    }
    if machine.numa_nodes.len() <= 1 {
        out.push(check(
            "numa",
            Verdict::Info,
            detail,
            Some("one node: node-pair matrices are 1x1 and remote effects cannot be measured here; use `numalab model` or the QEMU multi-node test guest (make test-numa)"),
        ));
    } else {
        out.push(check("numa", Verdict::Ok, detail, None));
    }
    if let Some(total) = sys.mem_total_bytes() {
        if node_mem > 0 && (node_mem as f64) < 0.9 * total as f64 {
            out.push(check(
                "numa-memory",
                Verdict::Warn,
                format!(
                    "the NUMA nodes account for {} but the kernel reports {} of memory in all: the rest is outside any node's accounting (hot-plugged or balloon memory)",
                    units::bytes(node_mem),
                    units::bytes(total)
                ),
                Some("per-node free-memory checks use the node figures, so large buffers may be refused; node placement of the remainder cannot be verified"),
            ));
        }
    }
    if sys.numa_balancing() == Some(true) && machine.numa_nodes.len() > 1 {
        out.push(check(
            "numa-balancing",
            Verdict::Warn,
            "automatic NUMA balancing is on: the kernel migrates pages while placement experiments run",
            Some("for placement studies run `sysctl kernel.numa_balancing=0` (as root) and restore it afterwards"),
        ));
    }
}

/// perf_event_paranoid: what unprivileged users may count.
fn perf_paranoid(sys: &SysRoot, pmu: &Capability) -> Check {
    match sys.perf_event_paranoid() {
        Some(p) => {
            let allows = match p {
                i32::MIN..=-1 => "everything, including raw tracepoints",
                0 => "CPU-wide counting and kernel profiling, no raw tracepoints",
                1 => "per-process counting of user and kernel space",
                2 => "per-process counting of user space only",
                _ => "no counting at all for unprivileged users",
            };
            let root = pmu.privileged;
            check(
                "perf-paranoid",
                if p <= 2 || root { Verdict::Ok } else { Verdict::Warn },
                format!("kernel.perf_event_paranoid = {p}: unprivileged users get {allows}{}", if root { " (we run as root, which overrides it)" } else { "" }),
                (p > 2 && !root).then_some("`numalab profile` of your own process needs perf_event_paranoid <= 2; ask the administrator (numalab never changes it)"),
            )
        }
        None => check(
            "perf-paranoid",
            Verdict::Warn,
            "perf_event_paranoid is not readable: the kernel may lack perf events",
            None,
        ),
    }
}

/// The PMU: hardware counters, only software ones, or none.
fn pmu_check(pmu: &Capability) -> Check {
    check(
        "pmu",
        if pmu.hardware_pmu() {
            Verdict::Ok
        } else if pmu.task_clock.works() {
            Verdict::Warn
        } else {
            Verdict::Fail
        },
        pmu.verdict(),
        (!pmu.hardware_pmu()).then_some("profile recorded counts offline with `numalab profile --import`; on a VM ask for PMU passthrough (KVM: -cpu host,pmu=on)"),
    )
}

/// Huge pages: the transparent huge page mode and the hugetlbfs pools.
fn huge_pages(sys: &SysRoot) -> Check {
    let thp = sys.thp_mode();
    let pools = sys.huge_pools();
    let pool_text: Vec<String> = pools
        .iter()
        .map(|p| {
            format!(
                "{}: {} reserved, {} free",
                units::bytes(p.size_bytes),
                p.total,
                p.free
            )
        })
        .collect();
    let thp_text = thp.clone().unwrap_or_else(|| "not available".into());
    check(
        "huge-pages",
        match thp.as_deref() {
            Some("always") | Some("madvise") => Verdict::Ok,
            _ if pools.iter().any(|p| p.free > 0) => Verdict::Ok,
            _ => Verdict::Warn,
        },
        format!(
            "transparent huge pages: {thp_text}{}; hugetlbfs pools: {}",
            sys.thp_defrag().map(|d| format!(" (defrag {d})")).unwrap_or_default(),
            if pool_text.is_empty() { "none".into() } else { pool_text.join(", ") }
        ),
        (thp.as_deref() == Some("never") && !pools.iter().any(|p| p.free > 0))
            .then_some("latency curves without huge pages include TLB misses; enable THP (madvise) or reserve hugetlbfs pages"),
    )
}

/// Frequency: the cpufreq governors and range, or no cpufreq interface.
fn frequency(machine: &Machine, sys: &SysRoot) -> Check {
    let governors = sys.governors();
    if governors.is_empty() {
        check(
            "frequency",
            Verdict::Warn,
            "no cpufreq interface: the clock frequency can neither be read nor controlled (typical of VMs)",
            Some("latencies are reported in ns; figures in cycles need a known frequency"),
        )
    } else {
        let min = machine.frequencies.iter().filter_map(|f| f.min_khz).min();
        let max = machine.frequencies.iter().filter_map(|f| f.max_khz).max();
        let range = match (min, max) {
            (Some(a), Some(b)) => format!(", {:.2}-{:.2} GHz", a as f64 / 1e6, b as f64 / 1e6),
            _ => String::new(),
        };
        let govs: Vec<String> = governors.into_iter().collect();
        let perf = govs.iter().all(|g| g == "performance");
        check(
            "frequency",
            if perf { Verdict::Ok } else { Verdict::Warn },
            format!("cpufreq governor {}{range}", govs.join("/")),
            (!perf).then_some("for stable figures use the performance governor (`cpupower frequency-set -g performance`)"),
        )
    }
}

/// SMT: the kernel's SMT control and the threads per core in the topology.
fn smt(machine: &Machine, sys: &SysRoot) -> Check {
    let smt_pus = machine.cores.iter().map(|c| c.pus.len()).max().unwrap_or(1);
    let threads = if smt_pus == 1 {
        "one thread per core".to_string()
    } else {
        format!("{smt_pus} threads per core")
    };
    match sys.smt_control() {
        Some(c) => valued(
            check(
                "smt",
                Verdict::Info,
                format!(
                    "SMT: {}; {threads} in the topology (smt/control = {})",
                    c.meaning(),
                    c.word()
                ),
                None,
            ),
            c.word(),
        ),
        None => valued(
            check(
                "smt",
                Verdict::Info,
                format!("SMT: this kernel has no SMT control file (/sys/devices/system/cpu/smt/control); {threads} in the topology"),
                None,
            ),
            "unavailable",
        ),
    }
}

/// cgroups: CPU bandwidth, memory and cpuset limits on this process.
fn cgroup(machine: &Machine, sys: &SysRoot) -> Check {
    let cg = sys.cgroup_limits();
    let mut limits = Vec::new();
    if let Some((q, p)) = cg.cpu_max {
        limits.push(format!("CPU bandwidth {:.2} CPUs", q as f64 / p as f64));
    }
    if let Some(m) = cg.memory_max {
        limits.push(format!("memory {}", units::bytes(m)));
    }
    if let Some(c) = &cg.cpus_effective {
        let n = cpulist::parse(c).map(|v| v.len()).unwrap_or(0);
        if n < machine.pus.len() && n > 0 {
            limits.push(format!("cpuset {c}"));
        }
    }
    if limits.is_empty() {
        check(
            "cgroup",
            Verdict::Ok,
            format!(
                "no CPU or memory limits (cgroup {})",
                cg.path.as_deref().unwrap_or("unknown")
            ),
            None,
        )
    } else {
        check(
            "cgroup",
            Verdict::Warn,
            format!("cgroup limits: {}", limits.join(", ")),
            Some("throttling distorts scaling and bandwidth figures; run outside the limited cgroup if possible"),
        )
    }
}

/// Sensors: readable power sensors (and temperature ones), or none.
fn power_sensors(sensors: &[Sensor]) -> Check {
    let power: Vec<&Sensor> = sensors
        .iter()
        .filter(|s| s.kind != SensorKind::Temperature)
        .collect();
    let temps = sensors.len() - power.len();
    if power.is_empty() {
        check(
            "power-sensors",
            Verdict::Info,
            format!(
                "no readable power sensors (no powercap/RAPL, no hwmon power){}",
                if temps > 0 {
                    format!("; {temps} temperature sensor(s)")
                } else {
                    String::new()
                }
            ),
            Some("power and work-per-joule figures will be reported as not available"),
        )
    } else {
        let names: Vec<String> = power.iter().map(|s| s.label.clone()).collect();
        check(
            "power-sensors",
            Verdict::Ok,
            format!(
                "{} power sensor(s): {}; {temps} temperature sensor(s)",
                power.len(),
                names.join(", ")
            ),
            None,
        )
    }
}

/// Whether this is a virtual machine, and what that means for timings.
fn hypervisor(sys: &SysRoot) -> Check {
    let Some(v) = sys.virtualization() else {
        return valued(
            check(
                "hypervisor",
                Verdict::Ok,
                "bare metal (no hypervisor detected: no sign of a virtual machine in DMI, the device tree, /sys/hypervisor or the CPU flags)",
                None,
            ),
            "none",
        );
    };
    let timings = match v.acceleration {
        Acceleration::Kvm => "timings are virtualised: the vCPUs run on real cores under KVM, but may share them with other guests and be descheduled at any time",
        Acceleration::NotKvm => "timings are emulated: QEMU runs without KVM, most likely emulating the CPU in software (TCG), so durations, bandwidths and latencies measure the emulator, not the CPU it imitates",
        Acceleration::Unknown => "timings may be emulated or virtualised: under QEMU's software emulation (TCG) durations, bandwidths and latencies measure the emulator, not the CPU it imitates; under a hardware-assisted hypervisor the vCPUs may share physical cores with other guests",
    };
    let evidence = if v.evidence.is_empty() {
        String::new()
    } else {
        format!(" (seen: {})", v.evidence.join("; "))
    };
    valued(
        check(
            "hypervisor",
            Verdict::Warn,
            format!(
                "virtual machine ({}): {timings}. Counts and placement (events counted, pages per node, CPU and node lists) remain meaningful, for the layout the hypervisor presents{evidence}",
                v.name
            ),
            Some("compare timings only within one run and never as figures of the real CPU; measure absolute numbers on bare metal"),
        ),
        v.id,
    )
}

/// Which event and metric catalog `numalab profile` uses for this CPU.
fn pmu_catalog(machine: &Machine, sys: &SysRoot) -> Check {
    let midr = catalog::midr_from_sysfs(sys.root());
    match catalog::detect(&machine.cpu, midr) {
        Ok(m) if m.catalog == catalog::X86_ID => valued(
            check(
                "pmu-catalog",
                Verdict::Ok,
                format!(
                    "PMU catalog: x86-64 for {} (the kernel's generic hardware and cache events, numalab's metrics; no vendor event files; matched by {})",
                    m.cpu, m.how
                ),
                None,
            ),
            m.catalog,
        ),
        Ok(m) if m.catalog == catalog::ARM_GENERIC_ID => valued(
            check(
                "pmu-catalog",
                Verdict::Info,
                format!(
                    "no vendor metrics for {}: generic events only",
                    machine
                        .cpu
                        .model_name
                        .clone()
                        .or_else(|| machine.cpu.arm_name())
                        .unwrap_or(m.cpu)
                ),
                Some(&format!(
                    "`numalab profile` counts the kernel's generic hardware and cache events here with numalab's metrics; --cpu-model borrows the closest vendor catalog ({}), --events counts raw codes (r11 = CPU_CYCLES, r8 = INST_RETIRED on every Arm core)",
                    catalog::shipped().join(", ")
                )),
            ),
            m.catalog,
        ),
        Ok(m) => valued(
            check(
                "pmu-catalog",
                Verdict::Ok,
                if m.catalog.starts_with("intel-") {
                    format!(
                        "PMU catalog: {} (events and TMA metrics from Intel's perfmon files; matched by {})",
                        m.cpu, m.how
                    )
                } else if m.catalog.starts_with("amd-") {
                    format!(
                        "PMU catalog: {} (events and metrics written from AMD's Processor Programming Reference; matched by {})",
                        m.cpu, m.how
                    )
                } else {
                    format!(
                        "PMU catalog: Arm {} (events and metrics from Arm's telemetry files; matched by {})",
                        m.cpu, m.how
                    )
                },
                None,
            ),
            m.catalog,
        ),
        Err(_) => {
            let cpu = machine
                .cpu
                .model_name
                .clone()
                .or_else(|| machine.cpu.arm_name())
                .or_else(|| machine.cpu.vendor.clone())
                .unwrap_or_else(|| "this CPU".into());
            let remedy = format!(
                "`numalab profile` needs --cpu-model to borrow the closest catalog ({}) or --events with raw codes{}",
                catalog::shipped().join(", "),
                if machine.cpu.implementer.is_some() || midr.is_some() {
                    " (r11 = CPU_CYCLES, r8 = INST_RETIRED on every Arm core)"
                } else {
                    ""
                }
            );
            valued(
                check(
                    "pmu-catalog",
                    Verdict::Info,
                    format!("no vendor metrics for {cpu}: generic events only"),
                    Some(&remedy),
                ),
                "none",
            )
        }
    }
}

/// Gathers the facts of the live machine and assesses them.
pub fn collect(machine: &Machine) -> DoctorReport {
    let sys = SysRoot::live();
    let binding = probe_binding(machine);
    let pmu = capability::probe();
    let sensors = numalab_sensors::discover(std::path::Path::new("/"));
    DoctorReport {
        schema_version: 1,
        hostname: sys.hostname(),
        checks: assess(
            machine,
            &sys,
            &binding,
            &pmu,
            &sensors,
            &catalog::perf::installed_list(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_pmu::capability::EventStatus;
    use std::path::Path;

    use numalab_testkit::write;

    fn fixture_machine(name: &str) -> Machine {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/topology")
            .join(name);
        numalab_topo::machine(&numalab_topo::Input::Xml(p)).unwrap()
    }

    fn pmu(hw: bool) -> Capability {
        let hw_status = if hw {
            EventStatus::Works
        } else {
            EventStatus::NotSupported("ENOENT".into())
        };
        Capability {
            paranoid: Some(2),
            privileged: false,
            cycles: hw_status.clone(),
            instructions: hw_status,
            task_clock: EventStatus::Works,
            page_faults: EventStatus::Works,
            context_switches: EventStatus::Works,
            pmus: vec![],
        }
    }

    fn verdict<'a>(checks: &'a [Check], name: &str) -> &'a Check {
        checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no {name} check"))
    }

    /// The Kunpeng 920 snapshot: an Arm machine with one thread per core.
    fn arm_machine() -> Machine {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/topology/128arm-2pa2n8cluster4co.tar.bz2");
        numalab_topo::machine(&numalab_topo::Input::detect(&p).unwrap()).unwrap()
    }

    /// The CPU identity topo gives the emulated Neoverse N1 (QEMU `-cpu neoverse-n1`).
    fn n1_identity() -> numalab_schema::machine::CpuIdentity {
        let mut cpu = numalab_schema::machine::CpuIdentity {
            architecture: Some("aarch64".into()),
            vendor: Some("Arm".into()),
            implementer: Some(0x41),
            part: Some(0xd0c),
            variant: Some(4),
            revision: Some(1),
            ..Default::default()
        };
        cpu.model_name = cpu.arm_name();
        cpu
    }

    /// A /proc and /sys tree of the emulated Neoverse N1 guest (facts read inside it).
    fn n1_guest_tree(r: &Path) {
        write(
            r,
            "proc/cpuinfo",
            "processor\t: 0\nBogoMIPS\t: 125.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n",
        );
        write(
            r,
            "sys/devices/system/cpu/cpu0/regs/identification/midr_el1",
            "0x00000000414fd0c1\n",
        );
        write(r, "sys/devices/system/cpu/smt/control", "notimplemented\n");
        write(
            r,
            "sys/firmware/devicetree/base/compatible",
            "linux,dummy-virt\0",
        );
        write(r, "sys/firmware/fdt", "");
        write(r, "proc/sys/kernel/perf_event_paranoid", "2\n");
    }

    /// No perf on the machine (the checks other than perf-metrics do not read it).
    fn no_perf() -> Result<PerfList, PerfError> {
        Err(PerfError::NotRun("command not found: \"perf\"".into()))
    }

    fn binding_ok() -> BindingProbe {
        BindingProbe {
            hwloc_version: "2.9.0".into(),
            cpu_binding: Ok(0),
            memory_binding: Ok((0, 1.0)),
        }
    }

    #[test]
    fn an_emulated_neoverse_n1_guest() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        n1_guest_tree(r);
        let mut machine = arm_machine();
        machine.cpu = n1_identity();
        assert_eq!(
            machine.cpu.model_name.as_deref(),
            Some("Arm Neoverse N1 (MIDR 0x414fd0c1, r4p1)")
        );
        let checks = assess(
            &machine,
            &SysRoot::at(r),
            &binding_ok(),
            &pmu(false),
            &[],
            &no_perf(),
        );

        let h = verdict(&checks, "hypervisor");
        assert_eq!(h.verdict, Verdict::Warn);
        assert_eq!(h.value.as_deref(), Some("qemu"));
        assert!(
            h.detail.starts_with(
                "virtual machine (QEMU virt board): timings may be emulated or virtualised"
            ),
            "{}",
            h.detail
        );
        assert!(h.detail.contains("Counts and placement"), "{}", h.detail);
        assert!(h.detail.contains("linux,dummy-virt"), "{}", h.detail);

        let smt = verdict(&checks, "smt");
        assert_eq!(smt.value.as_deref(), Some("notimplemented"));
        assert_eq!(
            smt.detail,
            "SMT: no SMT switch in this kernel for this architecture; one thread per core in the topology (smt/control = notimplemented)"
        );

        let c = verdict(&checks, "pmu-catalog");
        assert_eq!(c.verdict, Verdict::Ok);
        assert_eq!(c.value.as_deref(), Some("neoverse-n1"));
        assert_eq!(
            c.detail,
            "PMU catalog: Arm Neoverse N1 (events and metrics from Arm's telemetry files; matched by MIDR 0x414fd0c1)"
        );

        // Only sysfs knows the MIDR (identity without MIDR fields): the same catalog.
        machine.cpu = numalab_schema::machine::CpuIdentity {
            architecture: Some("aarch64".into()),
            ..Default::default()
        };
        let checks = assess(
            &machine,
            &SysRoot::at(r),
            &binding_ok(),
            &pmu(false),
            &[],
            &no_perf(),
        );
        let c = verdict(&checks, "pmu-catalog");
        assert_eq!(c.value.as_deref(), Some("neoverse-n1"));
    }

    #[test]
    fn an_arm_cpu_without_a_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "sys/devices/system/cpu/smt/control", "notimplemented\n");
        // The Kunpeng 920 snapshot: HiSilicon TSV110, no shipped event files.
        let machine = arm_machine();
        let checks = assess(
            &machine,
            &SysRoot::at(r),
            &binding_ok(),
            &pmu(true),
            &[],
            &no_perf(),
        );
        let c = verdict(&checks, "pmu-catalog");
        assert_eq!(c.verdict, Verdict::Info);
        assert_eq!(c.value.as_deref(), Some("arm-generic"));
        assert_eq!(
            c.detail,
            "no vendor metrics for HiSilicon TSV110 / Kunpeng 920 (MIDR 0x481fd010, r1p0): generic events only"
        );
        let remedy = c.remedy.as_deref().unwrap();
        assert!(remedy.contains("--cpu-model") && remedy.contains("r11 = CPU_CYCLES"));
        // An unknown Arm part, named as such.
        let mut m = arm_machine();
        m.cpu.implementer = Some(0x41);
        m.cpu.part = Some(0xd99);
        m.cpu.model_name = m.cpu.arm_name();
        let checks = assess(
            &m,
            &SysRoot::at(r),
            &binding_ok(),
            &pmu(true),
            &[],
            &no_perf(),
        );
        assert_eq!(
            verdict(&checks, "pmu-catalog").detail,
            "no vendor metrics for Arm part 0xd99 (unknown to numalab; MIDR 0x411fd990, r1p0): generic events only"
        );
    }

    #[test]
    fn arm_virtual_and_bare_metal_machines() {
        let machine = arm_machine();
        let hypervisor = |files: &[(&str, &str)]| -> Check {
            let dir = tempfile::tempdir().unwrap();
            for (rel, content) in files {
                write(dir.path(), rel, content);
            }
            let checks = assess(
                &machine,
                &SysRoot::at(dir.path()),
                &binding_ok(),
                &pmu(true),
                &[],
                &no_perf(),
            );
            verdict(&checks, "hypervisor").clone()
        };
        // QEMU with UEFI/ACPI: DMI says whether KVM runs it.
        let kvm = hypervisor(&[
            ("sys/class/dmi/id/sys_vendor", "QEMU\n"),
            ("sys/class/dmi/id/product_name", "KVM Virtual Machine\n"),
        ]);
        assert_eq!(kvm.value.as_deref(), Some("kvm"));
        assert!(
            kvm.detail
                .starts_with("virtual machine (KVM (QEMU)): timings are virtualised"),
            "{}",
            kvm.detail
        );
        let tcg = hypervisor(&[
            ("sys/class/dmi/id/sys_vendor", "QEMU\n"),
            ("sys/class/dmi/id/product_name", "QEMU Virtual Machine\n"),
        ]);
        assert_eq!(tcg.value.as_deref(), Some("qemu"));
        assert!(
            tcg.detail.contains("timings are emulated"),
            "{}",
            tcg.detail
        );
        // AWS Graviton.
        let ec2 = hypervisor(&[
            ("sys/class/dmi/id/sys_vendor", "Amazon EC2\n"),
            ("sys/class/dmi/id/product_name", "m6g.large\n"),
        ]);
        assert_eq!(ec2.verdict, Verdict::Warn);
        assert_eq!(ec2.value.as_deref(), Some("aws-nitro"));
        assert!(
            ec2.detail
                .starts_with("virtual machine (AWS Nitro (Amazon EC2))"),
            "{}",
            ec2.detail
        );
        // A bare-metal Arm server: no signal at all.
        let metal = hypervisor(&[("sys/devices/system/cpu/smt/control", "notimplemented\n")]);
        assert_eq!(metal.verdict, Verdict::Ok);
        assert_eq!(metal.value.as_deref(), Some("none"));
        assert!(metal.detail.starts_with("bare metal"), "{}", metal.detail);
    }

    #[test]
    fn every_smt_word_in_words() {
        let machine = arm_machine();
        for (word, detail) in [
            ("on", "SMT: enabled (sibling hardware threads are online); one thread per core in the topology (smt/control = on)"),
            ("off", "SMT: disabled by the administrator (sibling threads offline; can be switched back on); one thread per core in the topology (smt/control = off)"),
            ("forceoff", "SMT: disabled for good at boot (nosmt=force; cannot be switched on at run time); one thread per core in the topology (smt/control = forceoff)"),
            ("notsupported", "SMT: not supported by this CPU; one thread per core in the topology (smt/control = notsupported)"),
            ("notimplemented", "SMT: no SMT switch in this kernel for this architecture; one thread per core in the topology (smt/control = notimplemented)"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            write(dir.path(), "sys/devices/system/cpu/smt/control", &format!("{word}\n"));
            let checks = assess(&machine, &SysRoot::at(dir.path()), &binding_ok(), &pmu(true), &[], &no_perf());
            let smt = verdict(&checks, "smt");
            assert_eq!(smt.value.as_deref(), Some(word));
            assert_eq!(smt.detail, detail);
        }
        let dir = tempfile::tempdir().unwrap();
        let checks = assess(
            &machine,
            &SysRoot::at(dir.path()),
            &binding_ok(),
            &pmu(true),
            &[],
            &no_perf(),
        );
        assert_eq!(
            verdict(&checks, "smt").value.as_deref(),
            Some("unavailable")
        );
    }

    #[test]
    fn a_tuned_bare_metal_server() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "proc/sys/kernel/perf_event_paranoid", "1\n");
        write(r, "proc/sys/kernel/numa_balancing", "1\n");
        write(
            r,
            "sys/kernel/mm/transparent_hugepage/enabled",
            "[always] madvise never\n",
        );
        for cpu in 0..2 {
            write(
                r,
                &format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"),
                "performance\n",
            );
        }
        write(r, "proc/self/cgroup", "0::/\n");
        write(r, "proc/cpuinfo", "flags : fpu sse2\n");
        let machine = fixture_machine("llnl-g4dnmetal.xml");
        let binding = BindingProbe {
            hwloc_version: "2.9.0".into(),
            cpu_binding: Ok(3),
            memory_binding: Ok((0, 1.0)),
        };
        let sensors = vec![Sensor {
            id: "powercap:intel-rapl:0".into(),
            kind: SensorKind::Energy,
            label: "package-0".into(),
            covers: "package".into(),
            path: r.join("x"),
            max_energy_uj: None,
        }];
        let checks = assess(
            &machine,
            &SysRoot::at(r),
            &binding,
            &pmu(true),
            &sensors,
            &no_perf(),
        );
        assert_eq!(verdict(&checks, "binding").verdict, Verdict::Ok);
        assert_eq!(verdict(&checks, "numa").verdict, Verdict::Ok);
        assert!(verdict(&checks, "numa")
            .detail
            .contains("SLIT values 10/21"));
        assert_eq!(verdict(&checks, "numa-balancing").verdict, Verdict::Warn);
        assert_eq!(verdict(&checks, "pmu").verdict, Verdict::Ok);
        assert_eq!(verdict(&checks, "frequency").verdict, Verdict::Ok);
        assert_eq!(verdict(&checks, "hypervisor").verdict, Verdict::Ok);
        assert_eq!(
            verdict(&checks, "hypervisor").value.as_deref(),
            Some("none")
        );
        // A Xeon Platinum 8259CL: family 6 model 85 stepping 7 is Cascade Lake, which
        // has Intel's TMA catalog.
        assert_eq!(
            verdict(&checks, "pmu-catalog").value.as_deref(),
            Some("intel-clx")
        );
        assert_eq!(verdict(&checks, "power-sensors").verdict, Verdict::Ok);
        assert_eq!(verdict(&checks, "cgroup").verdict, Verdict::Ok);
    }

    #[test]
    fn a_limited_vm() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "proc/sys/kernel/perf_event_paranoid", "3\n");
        write(
            r,
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always madvise [never]\n",
        );
        write(r, "proc/cpuinfo", "flags : fpu hypervisor\n");
        write(r, "sys/class/dmi/id/sys_vendor", "QEMU\n");
        write(r, "proc/self/cgroup", "0::/limited\n");
        write(r, "sys/fs/cgroup/limited/cpu.max", "50000 100000\n");
        write(r, "proc/meminfo", "MemTotal:       99999999 kB\n");
        let machine = fixture_machine("cxlmem+dax.v3.xml");
        let binding = BindingProbe {
            hwloc_version: "2.9.0".into(),
            cpu_binding: Err("Operation not permitted".into()),
            memory_binding: Err("Operation not permitted".into()),
        };
        let checks = assess(
            &machine,
            &SysRoot::at(r),
            &binding,
            &pmu(false),
            &[],
            &no_perf(),
        );
        assert_eq!(verdict(&checks, "binding").verdict, Verdict::Fail);
        assert_eq!(verdict(&checks, "numa").verdict, Verdict::Info);
        assert_eq!(verdict(&checks, "numa-memory").verdict, Verdict::Warn);
        assert_eq!(verdict(&checks, "perf-paranoid").verdict, Verdict::Warn);
        assert!(verdict(&checks, "perf-paranoid")
            .remedy
            .as_deref()
            .unwrap()
            .contains("<= 2"));
        assert_eq!(verdict(&checks, "pmu").verdict, Verdict::Warn);
        assert!(verdict(&checks, "pmu").remedy.is_some());
        assert_eq!(verdict(&checks, "huge-pages").verdict, Verdict::Warn);
        assert_eq!(verdict(&checks, "frequency").verdict, Verdict::Warn);
        assert_eq!(verdict(&checks, "hypervisor").verdict, Verdict::Warn);
        assert!(verdict(&checks, "hypervisor").detail.contains("QEMU"));
        assert_eq!(verdict(&checks, "cgroup").verdict, Verdict::Warn);
        assert!(verdict(&checks, "cgroup").detail.contains("0.50 CPUs"));
        assert_eq!(verdict(&checks, "power-sensors").verdict, Verdict::Info);
    }
}
