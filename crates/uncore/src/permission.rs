//! Why system-wide counting was refused, and the exact remedy.
//!
//! Uncore events are CPU-wide events (pid = -1): the kernel allows them when
//! `perf_event_paranoid` <= 0, or to a process with CAP_PERFMON (Linux 5.8+) or
//! CAP_SYS_ADMIN (kernel/events/core.c, `perf_allow_cpu`;
//! Documentation/admin-guide/perf-security.rst). numalab never changes the sysctl
//! itself (pmu-methodology.md).

use numalab_records::uncore::{NotOpened, PermissionProblem};
use std::path::Path;

/// Reads `<root>/proc/sys/kernel/perf_event_paranoid`.
pub fn paranoid(root: &Path) -> Option<i32> {
    std::fs::read_to_string(root.join("proc/sys/kernel/perf_event_paranoid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The explanation for the refused events.
pub fn explain(root: &Path, not_opened: &[NotOpened]) -> PermissionProblem {
    let value = paranoid(root);
    let denied: Vec<&NotOpened> = not_opened.iter().filter(|n| n.kind == "denied").collect();
    let mut devices: Vec<&str> = denied.iter().map(|n| n.device.as_str()).collect();
    devices.sort_unstable();
    devices.dedup();
    let first_error = denied.first().map(|n| n.error.clone()).unwrap_or_default();
    let why = match value {
        Some(v) if v > 0 => format!(
            "/proc/sys/kernel/perf_event_paranoid is {v}; counting uncore events (system-wide, on a CPU rather than a task) needs perf_event_paranoid <= 0, or CAP_PERFMON (Linux 5.8+) or CAP_SYS_ADMIN"
        ),
        Some(v) => format!(
            "/proc/sys/kernel/perf_event_paranoid is {v}, which allows system-wide counting, so something else refused it: a seccomp filter or container runtime that blocks perf_event_open, or a security module (SELinux, AppArmor, kernel lockdown)"
        ),
        None => "/proc/sys/kernel/perf_event_paranoid could not be read; counting uncore events (system-wide) needs perf_event_paranoid <= 0, or CAP_PERFMON (Linux 5.8+) or CAP_SYS_ADMIN".to_string(),
    };
    let remedy = match value {
        Some(v) if v <= 0 => "allow perf_event_open in the container or security policy (e.g. docker run --cap-add PERFMON, or a seccomp profile that permits perf_event_open)".to_string(),
        _ => "as root: sysctl kernel.perf_event_paranoid=0 (until the next boot), or give numalab the capability once: setcap cap_perfmon+ep numalab (the path of the binary; cap_sys_admin+ep on kernels before 5.8)".to_string(),
    };
    PermissionProblem {
        paranoid: value,
        message: format!(
            "system-wide counting was refused for {} event(s) on {} ({first_error}): {why}",
            denied.len(),
            devices.join(", ")
        ),
        remedy,
    }
}
