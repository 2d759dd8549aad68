//! The checks only the emulated Arm server runs (docs/numa-guest.md, "The Arm server").
//!
//! Expectations come from what QEMU was asked for (the [`Layout`], `-cpu neoverse-n1`,
//! `-icount`, `-cpu max`) and from what the guest kernel itself reports (`/proc/cpuinfo`,
//! the PMU's event list in sysfs), never from numalab: a timing means nothing under
//! emulation, so no check asserts one. Three groups, one per boot
//! ([`crate::platform::Boot`]):
//!
//! - [`main`]: the kernel sees a Neoverse N1 in 2 sockets; `topo` and `doctor` name it
//!   and say the machine is virtual; the NEON bandwidth kernels run, verified, on
//!   256 MiB nodes; `c2c` measures the 6 pairs of the 4 vCPUs;
//! - [`counting`] (`-icount`): `profile` counts the instructions of a loop of known
//!   length within 1%, counts cycles, and names what the emulated PMU does not count;
//! - [`sve`] (`-cpu max,pmu=off`): the SVE kernels at the kernel's vector length,
//!   verified, and `profile` on a CPU without a PMU.

use crate::checks::{Check, CheckResult};
use crate::cli_asserts::{at, str_at, u64_at};
use crate::cli_checks::{expect, records, CliCheck};
use crate::layout::Layout;
use serde_json::Value;
use std::time::Duration;

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

/// The value of a `/proc/cpuinfo` field on the first CPU that has it.
pub fn cpuinfo_field<'a>(cpuinfo: &'a str, field: &str) -> Option<&'a str> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == field).then(|| v.trim())
    })
}

/// The events a PMU lists in sysfs (`/sys/bus/event_source/devices/PMU/events`).
fn pmu_events(pmu: &str) -> Result<Vec<String>, String> {
    let dir = format!("/sys/bus/event_source/devices/{pmu}/events");
    let mut v: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{dir}: {e}"))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    Ok(v)
}

/// The kernel's own view: a Neoverse N1 (MIDR part 0xd0c, implementer 0x41) with the
/// PMU QEMU emulates, CPUs in the sockets asked for.
fn check_cpu(ctx: &crate::checks::Ctx) -> CheckResult {
    let cpuinfo = read("/proc/cpuinfo")?;
    let part = cpuinfo_field(&cpuinfo, "CPU part").unwrap_or("?");
    let implementer = cpuinfo_field(&cpuinfo, "CPU implementer").unwrap_or("?");
    expect(
        part == "0xd0c" && implementer == "0x41",
        format!("CPU part 0xd0c by implementer 0x41 (Arm Neoverse N1), cpuinfo says part {part} implementer {implementer}"),
    )?;
    let midr = read("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1")?;
    expect(
        midr.trim().ends_with("d0c1") || midr.contains("fd0c"),
        format!("MIDR_EL1 of a Neoverse N1, got {}", midr.trim()),
    )?;
    for cpu in 0..ctx.layout.cpu_count() as u32 {
        let p = read(&format!(
            "/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"
        ))?;
        let want = ctx.layout.socket_of_cpu(cpu);
        expect(
            p.trim() == want.to_string(),
            format!("CPU {cpu} in socket {want}, the kernel says {}", p.trim()),
        )?;
    }
    let events = pmu_events("armv8_pmuv3")?;
    expect(
        events.iter().any(|e| e == "cpu_cycles"),
        format!("the PMU lists cpu_cycles: {events:?}"),
    )?;
    Ok(format!(
        "MIDR {}, sockets as configured, armv8_pmuv3 lists {}",
        midr.trim(),
        events.join(",")
    ))
}

/// The kernels of `mem bandwidth --json` output, each checked: run with `isa` at
/// `bits`-bit vectors, its result verified against the closed form (the checksum equal
/// to the expected one), a finite positive bandwidth.
fn verified_kernels(v: &Value, isa: &str, bits: u64) -> Result<Vec<String>, String> {
    let recs = records(v, "mem.bandwidth")?;
    expect(!recs.is_empty(), "bandwidth records")?;
    let mut kernels = Vec::new();
    for d in &recs {
        let kernel = str_at(d, "kernel")?;
        let ran = str_at(d, "isa")?;
        expect(ran == isa, format!("{kernel}: isa {isa}, got {ran}"))?;
        let recorded = u64_at(d, "vector_bits")?;
        expect(
            recorded == bits,
            format!("{kernel}: {bits}-bit vectors, recorded {recorded}"),
        )?;
        expect(
            at(d, "verified")? == &Value::Bool(true)
                && at(d, "verification.checksum")? == at(d, "verification.expected_checksum")?,
            format!("{kernel}: result verified, checksum equal to the closed form: {d}"),
        )?;
        let gbps = at(d, "bandwidth_gbps.median")?.as_f64().unwrap_or(f64::NAN);
        expect(
            gbps.is_finite() && gbps > 0.0,
            format!("{kernel}: a bandwidth"),
        )?;
        kernels.push(kernel.to_string());
    }
    Ok(kernels)
}

/// The checks of the `n1` boot, after the generic ones.
pub fn main(layout: &Layout) -> Vec<Check> {
    let sockets = layout.sockets.unwrap_or(1) as usize;
    let mut v = vec![Check::new("arm.cpu", check_cpu)];
    let cli = vec![
        CliCheck::json("arm.topo", ["topo", "--json"], move |l, v| {
            let packages = u64_at(v, "summary.packages")? as usize;
            expect(
                packages == sockets,
                format!("{sockets} packages, got {packages}"),
            )?;
            let cores = u64_at(v, "summary.cores")? as usize;
            expect(
                cores == l.cpu_count(),
                format!("{} cores (one thread each), got {cores}", l.cpu_count()),
            )?;
            for pu in at(v, "pus")?.as_array().ok_or("pus is not a list")? {
                let cpu = u64_at(pu, "os_index")? as u32;
                let pkg = u64_at(pu, "package")? as u32;
                expect(
                    pkg == l.socket_of_cpu(cpu),
                    format!("CPU {cpu} in package {}, got {pkg}", l.socket_of_cpu(cpu)),
                )?;
            }
            let part = u64_at(v, "cpu.part")?;
            expect(part == 0xd0c, format!("cpu.part 0xd0c, got {part:#x}"))?;
            let name = str_at(v, "cpu.model_name")?;
            expect(
                name.starts_with("Arm Neoverse N1 (MIDR 0x414fd0c1"),
                format!("the CPU named Arm Neoverse N1 with its MIDR, got {name:?}"),
            )?;
            Ok(format!("{packages} packages, {cores} cores, CPU {name:?}"))
        }),
        CliCheck::text("arm.topo.text", ["topo"], |_, out| {
            let first = out.lines().next().unwrap_or("");
            expect(
                first.contains("Neoverse N1") && !first.contains("part 0xd0c"),
                format!("the first line names a Neoverse N1: {first:?}"),
            )?;
            expect(
                out.contains("2 packages x 2 cores"),
                format!("\"2 packages x 2 cores\" in:\n{out}"),
            )?;
            Ok(first.to_string())
        }),
        CliCheck::json("arm.doctor", ["doctor", "--json"], |_, v| {
            let checks = at(v, "checks")?.as_array().ok_or("checks is not a list")?;
            let find = |name: &str| {
                checks
                    .iter()
                    .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
                    .ok_or_else(|| format!("no {name:?} check in {checks:?}"))
            };
            let hv = find("hypervisor")?;
            let detail = str_at(hv, "detail")?;
            expect(
                str_at(hv, "verdict")? != "ok" && !detail.contains("bare metal"),
                format!("the guest is called virtual, got {hv}"),
            )?;
            expect(
                detail.contains("QEMU") && detail.contains("timing"),
                format!("the hypervisor named (QEMU) with what it means for timings: {detail:?}"),
            )?;
            expect(
                str_at(hv, "value")? == "qemu",
                format!("the stable value \"qemu\" for scripts, got {hv}"),
            )?;
            let smt = find("smt")?;
            expect(
                str_at(smt, "detail")?.starts_with("SMT: ")
                    && str_at(smt, "value")? == "notimplemented",
                format!("SMT described in words, the kernel's word kept as the value: {smt}"),
            )?;
            let all = v.to_string();
            expect(
                !all.contains("SMT notimplemented"),
                "no raw sysfs word for SMT",
            )?;
            let pmu = find("pmu-catalog")?;
            let pdetail = str_at(pmu, "detail")?;
            expect(
                pdetail.contains("Neoverse N1") && str_at(pmu, "value")? == "neoverse-n1",
                format!("the Neoverse N1 event and metric catalog chosen: {pmu}"),
            )?;
            Ok(format!("hypervisor: {detail}; catalog: {pdetail}"))
        }),
        // The default quick sizes must fit 256 MiB nodes; NEON is the best ISA an N1
        // has, and every kernel's result is verified.
        CliCheck::json(
            "arm.mem.bandwidth.neon",
            ["mem", "bandwidth", "--quick", "--threads", "1", "--json"],
            |_, v| {
                let kernels = verified_kernels(v, "neon", 128)?;
                let notes = at(v, "envelope.config.notes")?.to_string();
                expect(
                    notes.contains("working set reduced"),
                    format!("the quick size fitted to the 256 MiB nodes, with a note: {notes}"),
                )?;
                Ok(format!(
                    "{} NEON kernels verified: {}; size fitted to the nodes",
                    kernels.len(),
                    kernels.join(",")
                ))
            },
        )
        .timeout(Duration::from_secs(240)),
        CliCheck::json("arm.c2c.pairs", ["c2c", "--json"], |l, v| {
            let pairs = records(v, "c2c.pair")?;
            let n = l.cpu_count();
            expect(
                pairs.len() == n * (n - 1) / 2,
                format!(
                    "{} pairs of {n} vCPUs, got {}",
                    n * (n - 1) / 2,
                    pairs.len()
                ),
            )?;
            for p in &pairs {
                let lat = at(p, "latency_ns")?.as_f64().unwrap_or(f64::NAN);
                expect(lat.is_finite() && lat > 0.0, format!("a latency in {p}"))?;
            }
            Ok(format!("{} pairs measured", pairs.len()))
        }),
        // Issue 46 item 4: QEMU's N1 has PMUv3 but no SPE. Memory sampling is refused
        // with the reason (exit 4, "cannot do here") and the counts are still recorded.
        CliCheck::text(
            "arm.profile.no-spe",
            ["profile", "--memory-samples", "--", "true"],
            |_, out| {
                expect(
                    out.contains("exposes no arm_spe PMU"),
                    format!("the missing SPE named with its causes: {out}"),
                )?;
                expect(
                    out.contains("the counts were recorded"),
                    format!("the counts kept beside the refusal: {out}"),
                )?;
                Ok("exit 4: no arm_spe PMU, the counts recorded".into())
            },
        )
        .exit(4),
    ];
    v.extend(cli.into_iter().map(CliCheck::into_check));
    v
}

/// The iterations of the counted loop: 10^9 instructions, so the program's start-up
/// (the dynamic loader, the Rust runtime, argument parsing: about 3.3 x 10^6
/// instructions, measured apart by a run of 0 iterations) is a third of the 1% allowed.
pub const SPIN_ITERATIONS: u64 = 500_000_000;

/// Counted instructions of `profile --json` output, with the event's status.
fn counted(v: &Value, event: &str) -> Result<f64, String> {
    let profile = records(v, "pmu.profile")?[0];
    let events = at(profile, "events")?
        .as_array()
        .ok_or("events is not a list")?;
    let e = events
        .iter()
        .find(|e| {
            e.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.eq_ignore_ascii_case(event))
        })
        .ok_or_else(|| format!("no {event} in the counted events"))?;
    at(e, "value")?
        .as_f64()
        .ok_or_else(|| format!("{event} has no value: {e}"))
}

/// What the emulated PMU does not count is named, never a zero, and no verdict is
/// drawn from it: events the PMU does not list (BR_RETIRED, L1D_CACHE) are unsupported
/// and were not opened; raw events went to the core PMU's own type (from sysfs); the
/// stall events it lists but does not count (a constant 0 over 10^8 cycles) are
/// untrusted; the decision tree gives no verdict.
fn pmu_honesty(v: &Value) -> Result<String, String> {
    let p = records(v, "pmu.profile")?[0];
    let cov = at(p, "coverage")?;
    let pmu = str_at(cov, "core_pmu.name")?;
    expect(
        pmu == "armv8_pmuv3",
        format!("core PMU armv8_pmuv3, got {pmu}"),
    )?;
    let ty = read("/sys/bus/event_source/devices/armv8_pmuv3/type")?;
    let raw_type = u64_at(cov, "raw_type")?;
    expect(
        raw_type.to_string() == ty.trim(),
        format!(
            "raw events opened with the PMU's type {} (sysfs), got {raw_type}",
            ty.trim()
        ),
    )?;
    let names = |key: &str| -> Result<Vec<String>, String> {
        Ok(at(cov, key)?
            .as_array()
            .ok_or_else(|| format!("coverage.{key} is not a list"))?
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect())
    };
    let unsupported = names("unsupported")?;
    for e in ["BR_RETIRED", "L1D_CACHE"] {
        expect(
            unsupported.iter().any(|u| u == e),
            format!("{e} named unsupported (the PMU does not list it): {unsupported:?}"),
        )?;
    }
    let events = at(p, "events")?.as_array().ok_or("events is not a list")?;
    for e in events {
        let name = str_at(e, "name").unwrap_or("?");
        if unsupported.iter().any(|u| u == name) {
            expect(
                e.get("value").is_none_or(Value::is_null),
                format!("an unsupported event has no value: {e}"),
            )?;
        }
    }
    let mut stalls = Vec::new();
    for name in ["STALL_FRONTEND", "STALL_BACKEND"] {
        let e = events
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
            .ok_or_else(|| format!("no {name} in the events"))?;
        let state = str_at(e, "state")?;
        let raw = e.get("raw_count").and_then(Value::as_f64);
        // QEMU lists the stall events but (7.2) does not count them: a 0 over 10^8
        // cycles must be untrusted; were it ever counted, a positive value is fine.
        expect(
            (state == "untrusted" && raw == Some(0.0) && e["value"].is_null())
                || (state == "counted" && raw.is_some_and(|r| r > 0.0)),
            format!("{name}: untrusted with raw 0 and no value, or counted: {e}"),
        )?;
        stalls.push(format!("{name} {state}"));
    }
    let tree = at(p, "tree")?;
    let verdict = str_at(tree, "verdict")?;
    if stalls.iter().any(|s| s.ends_with("untrusted")) {
        expect(
            !tree["no_verdict"].is_null() && verdict.starts_with("no verdict"),
            format!("no verdict from untrusted stall counts, got {verdict:?}"),
        )?;
    }
    Ok(format!(
        "{} unsupported (e.g. BR_RETIRED), {}, raw type {raw_type}, verdict {verdict:?}",
        unsupported.len(),
        stalls.join(", ")
    ))
}

/// The checks of the `n1-icount` boot.
pub fn counting(_layout: &Layout) -> Vec<Check> {
    let mut v = vec![Check::new("arm.pmu.icount-events", |_ctx| {
        let events = pmu_events("armv8_pmuv3")?;
        expect(
            events.iter().any(|e| e == "inst_retired"),
            format!("with -icount the PMU lists inst_retired: {events:?}"),
        )?;
        Ok(format!("armv8_pmuv3 lists {}", events.join(",")))
    })];
    let profile = |iterations: u64| {
        vec![
            "profile".to_string(),
            "--json".into(),
            "--".into(),
            "numa-guest".into(),
            "spin".into(),
            "--iterations".into(),
            iterations.to_string(),
        ]
    };
    let base_file = "/tmp/profile-spin-0.json";
    let cli = vec![CliCheck::json(
        "arm.profile.instructions",
        profile(SPIN_ITERATIONS),
        move |_, v| {
            let base: Value = serde_json::from_str(&read(base_file)?)
                .map_err(|e| format!("{base_file}: {e}"))?;
            let start_up = counted(&base, "INST_RETIRED")?;
            let inst = counted(v, "INST_RETIRED")?;
            let want = 2.0 * SPIN_ITERATIONS as f64;
            let loop_only = inst - start_up;
            let err = (loop_only - want).abs() / want;
            expect(
                err < 0.01,
                format!("the loop's {want:.0} instructions within 1%: counted {inst:.0} - start-up {start_up:.0} = {loop_only:.0} ({:.3}% off)", err * 100.0),
            )?;
            let total_err = (inst - want).abs() / want;
            expect(
                total_err < 0.01,
                format!("the whole run within 1% of the loop ({inst:.0} vs {want:.0})"),
            )?;
            let cycles = counted(v, "CPU_CYCLES")?;
            expect(cycles > 0.0, format!("cycles counted: {cycles}"))?;
            let honesty = pmu_honesty(v)?;
            Ok(format!(
                "INST_RETIRED {inst:.0} (start-up {start_up:.0}, loop {loop_only:.0}, {:.4}% off 2 x {SPIN_ITERATIONS}), CPU_CYCLES {cycles:.0}; {honesty}",
                err * 100.0
            ))
        },
    )
    .save(profile(0), base_file)
    .timeout(Duration::from_secs(300)),
    // Interval mode on a PMU that counts: with one group (cycles and instructions, no
    // multiplexing) the timeline's instructions add up to the whole run's, each
    // interval being a difference of cumulative reads. (With multiplexed groups each
    // interval is extrapolated from its own time on the counters, and the sum of the
    // intervals differed from the whole run's by up to 10% in CI.)
    CliCheck::json(
        "arm.profile.interval",
        [
            "profile", "--json", "--metrics", "ipc", "--interval", "100ms", "--", "numa-guest",
            "spin", "--iterations", "200000000",
        ],
        |_, v| {
            let whole = counted(v, "INST_RETIRED")?;
            let p = records(v, "pmu.profile")?[0];
            let t = at(p, "timeline")?.as_array().ok_or("timeline is not a list")?;
            expect(t.len() >= 2, format!("at least 2 intervals, got {}", t.len()))?;
            let sum: f64 = t
                .iter()
                .filter_map(|pt| pt["counts"]["INST_RETIRED"].as_f64())
                .sum();
            let off = (sum - whole).abs() / whole;
            expect(
                off < 1e-3,
                format!("the intervals' INST_RETIRED ({sum:.0}) within 0.1% of the whole run's ({whole:.0})"),
            )?;
            let fractions: Vec<f64> = t
                .iter()
                .filter_map(|pt| pt["running_fraction"].as_f64())
                .collect();
            expect(
                fractions.iter().all(|f| (f - 1.0).abs() < 1e-9),
                format!("one group, always on the counters: running fractions {fractions:?}"),
            )?;
            let with_ipc = t.iter().filter(|pt| pt["metrics"]["ipc"].is_number()).count();
            expect(with_ipc > 0, "IPC in some interval")?;
            Ok(format!(
                "{} intervals, INST_RETIRED {sum:.0} over the intervals vs {whole:.0} whole ({:.3}% off), IPC in {with_ipc}",
                t.len(),
                off * 100.0
            ))
        },
    )
    .timeout(Duration::from_secs(300)),
    // System-wide on every vCPU: a counter set per CPU, cycles counted.
    CliCheck::json(
        "arm.profile.all-cpus",
        ["profile", "--json", "--all-cpus", "--duration", "500ms"],
        |l, v| {
            let p = records(v, "pmu.profile")?[0];
            let cpus = at(p, "attach.cpus")?.as_array().map_or(0, Vec::len);
            expect(
                cpus == l.cpu_count(),
                format!("{} CPUs counted, got {cpus}", l.cpu_count()),
            )?;
            expect(
                str_at(p, "attach.stopped_by")? == "duration",
                "stopped by the duration",
            )?;
            let cycles = counted(v, "CPU_CYCLES")?;
            expect(cycles > 0.0, format!("cycles counted: {cycles}"))?;
            Ok(format!("{cpus} CPUs for 500 ms: CPU_CYCLES {cycles:.0}"))
        },
    )
    .timeout(Duration::from_secs(120))];
    v.extend(cli.into_iter().map(CliCheck::into_check));
    v
}

/// The checks of the `sve` boot.
pub fn sve(_layout: &Layout) -> Vec<Check> {
    let mut v = vec![Check::new("arm.sve.cpu", |_ctx| {
        let cpuinfo = read("/proc/cpuinfo")?;
        let features = cpuinfo_field(&cpuinfo, "Features").unwrap_or("");
        expect(
            features.split_whitespace().any(|f| f == "sve"),
            format!("the sve feature in /proc/cpuinfo: {features}"),
        )?;
        let vl = read("/proc/sys/abi/sve_default_vector_length")?;
        Ok(format!(
            "sve present, default vector length {} bytes",
            vl.trim()
        ))
    })];
    let cli = vec![
        CliCheck::json(
            "arm.sve.bandwidth",
            [
                "mem",
                "bandwidth",
                "--isa",
                "sve",
                "--threads",
                "1",
                "--size",
                "16MiB",
                "--reps",
                "2",
                "--json",
            ],
            |_, v| {
                let vl_bytes: u64 = read("/proc/sys/abi/sve_default_vector_length")?
                    .trim()
                    .parse()
                    .map_err(|e| format!("sve_default_vector_length: {e}"))?;
                let kernels = verified_kernels(v, "sve", vl_bytes * 8)?;
                Ok(format!(
                    "{} SVE kernels at {} bits verified: {}",
                    kernels.len(),
                    vl_bytes * 8,
                    kernels.join(",")
                ))
            },
        )
        .timeout(Duration::from_secs(240)),
        // No PMU at all (pmu=off): the documented "not measurable here" path.
        CliCheck::text("arm.profile.no-pmu", ["profile", "--", "true"], |_, out| {
            expect(
                out.contains("no hardware"),
                format!("a CPU without a PMU said so: {out}"),
            )?;
            Ok("exit 4, no hardware counters".into())
        })
        .exit(4),
    ];
    v.extend(cli.into_iter().map(CliCheck::into_check));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_fields_are_read_from_the_first_cpu() {
        let c = "processor\t: 0\nFeatures\t: fp asimd sve\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n\nprocessor\t: 1\nCPU part\t: 0xd40\n";
        assert_eq!(cpuinfo_field(c, "CPU part"), Some("0xd0c"));
        assert_eq!(cpuinfo_field(c, "Features"), Some("fp asimd sve"));
        assert_eq!(cpuinfo_field(c, "BogoMIPS"), None);
    }

    #[test]
    fn the_counting_check_reads_counts_by_name() {
        let v = serde_json::json!({"records": [{"kind": "pmu.profile", "data": {"events": [
            {"name": "INST_RETIRED", "value": 200000123.0},
            {"name": "CPU_CYCLES", "value": 5.0}
        ]}}]});
        assert_eq!(counted(&v, "inst_retired").unwrap(), 200000123.0);
        assert!(counted(&v, "STALL_FRONTEND")
            .unwrap_err()
            .contains("no STALL_FRONTEND"));
    }
}
