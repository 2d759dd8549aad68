//! Counting without (or besides) a command numalab starts: a running process by pid,
//! every CPU, and interval mode's timeline.
//!
//! A running process is counted thread by thread (`/proc/PID/task`): the kernel counts
//! a pid's events in that thread only, with `inherit` following the threads and
//! children created after attaching; the threads are summed. System-wide counting
//! opens one counter set per online CPU. In interval mode the counters are read every
//! interval while counting runs; a point of the timeline is the difference of two
//! reads, scaled for multiplexing over that interval alone, and its metrics are
//! derived exactly as the whole run's are.

use super::values::{group_record, summarize_events, values_of};
use super::{evaluate_live, expand, ProfileError, Subject};
use crate::capability::{Capability, EventStatus};
use crate::catalog::{Catalog, EventRef};
use crate::count::{self, GroupReading};
use crate::metrics::{EventState, EventValue};
use numalab_records::pmu::{GroupRecord, IntervalPoint, Profile};
use std::collections::BTreeMap;
use std::path::Path;

/// Readings of one run, or why a group has none.
pub(super) type Readings = [Result<GroupReading, String>];

/// The threads of process `pid` now.
pub(super) fn threads_of(pid: i32) -> Result<Vec<i32>, ProfileError> {
    let dir = format!("/proc/{pid}/task");
    let mut tids: Vec<i32> = std::fs::read_dir(&dir)
        .map_err(|e| {
            ProfileError::NoProcess(format!(
                "--pid {pid}: cannot list its threads ({dir}: {e}); has it exited?"
            ))
        })?
        .filter_map(|d| d.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    if tids.is_empty() {
        return Err(ProfileError::NoProcess(format!(
            "--pid {pid}: the process has no threads left (it has exited)"
        )));
    }
    Ok(tids)
}

/// Whether `pid` still runs (exists and is not a zombie).
pub(super) fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses, which may hold spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// `/proc/PID/comm`.
pub(super) fn comm_of(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The real uid owning `pid`.
fn uid_of(pid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A CPU list as sysfs writes it ("0-3,8,10-11"), sorted ([`numalab_schema::cpulist::parse`]).
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    numalab_schema::cpulist::parse(text)
        .ok()
        .map(|v| v.into_iter().map(|c| c as usize).collect())
}

/// The online CPUs under `sysroot` (else every CPU the process may know of).
pub(super) fn online_cpus(sysroot: &Path) -> Vec<usize> {
    numalab_schema::cpulist::online(sysroot)
}

/// Why every counter was refused, and what would allow it.
pub(super) fn denied_text(subject: &Subject, cap: &Capability) -> String {
    let paranoid = cap
        .paranoid
        .map_or("unknown".into(), |p: i32| p.to_string());
    match subject {
        Subject::Command(_) => format!(
            "perf_event_paranoid = {paranoid} forbids counting: counting your own processes in user space needs perf_event_paranoid <= 2, kernel-mode counting <= 1, system-wide <= 0 (or CAP_PERFMON); numalab never changes it (as root: sysctl kernel.perf_event_paranoid=2)"
        ),
        Subject::Pid(pid) => {
            let me = crate::sys::uid();
            let owner = uid_of(*pid);
            let whose = match owner {
                Some(u) if u != me => format!(
                    "it belongs to uid {u}, you are uid {me}: counting another user's process needs CAP_PERFMON and CAP_SYS_PTRACE (run as root, or setcap cap_perfmon,cap_sys_ptrace+ep $(command -v numalab))"
                ),
                _ => format!(
                    "counting your own process needs perf_event_paranoid <= 2 (it is {paranoid}) or CAP_PERFMON"
                ),
            };
            format!(
                "attaching to process {pid} ({}) was refused: {whose}",
                comm_of(*pid).unwrap_or_else(|| "?".into())
            )
        }
        Subject::AllCpus(_) => format!(
            "system-wide counting (--all-cpus) was refused: it needs perf_event_paranoid <= 0 (it is {paranoid}) or CAP_PERFMON; as root: sysctl kernel.perf_event_paranoid=0, or setcap cap_perfmon+ep $(command -v numalab)"
        ),
    }
}

/// DURATION_TIME for `seconds` of counting without a command.
pub(super) fn wall_of(seconds: f64, run: usize) -> EventValue {
    let ns = (seconds * 1e9).round() as u64;
    EventValue {
        name: "DURATION_TIME".into(),
        code: None,
        value: Some(ns as f64),
        raw_count: Some(ns),
        running_fraction: Some(1.0),
        time_enabled_ns: Some(ns),
        time_running_ns: Some(ns),
        supported: true,
        state: EventState::Counted,
        reason: None,
        unit: Some("ns".into()),
        software: true,
        run: Some(run),
        advertised: None,
        uncertainty: None,
    }
}

/// One run's group records and software values from its readings.
#[allow(clippy::too_many_arguments)]
pub(super) fn assemble(
    run_groups: &[(usize, &count::PlanGroup)],
    opened_hw: &[usize],
    readings: &Readings,
    statuses: &[Vec<EventStatus>],
    hardware: bool,
    blocked: &dyn Fn(&EventRef) -> Option<String>,
    sw_counted: &[&EventRef],
    hw_opened: usize,
    hw_reason: &str,
    run: usize,
) -> (Vec<GroupRecord>, Vec<EventValue>) {
    let mut recs = Vec::new();
    for (k, (gi, g)) in run_groups.iter().enumerate() {
        let (reading, st) = if hardware {
            let opened = opened_hw
                .iter()
                .position(|x| *x == k)
                .map(|i| (&readings[i], &statuses[i]));
            let (r, s) = expand(&g.events, opened, blocked);
            (Some(r), Some(s))
        } else {
            (None, None)
        };
        recs.push(group_record(
            *gi,
            g,
            reading.as_ref(),
            st.as_ref(),
            hw_reason,
            run,
        ));
    }
    let mut sw_values = Vec::new();
    for (k, e) in sw_counted.iter().enumerate() {
        let idx = hw_opened + k;
        sw_values.append(&mut values_of(
            std::slice::from_ref(e),
            Some(&readings[idx]),
            Some(&statuses[idx]),
            hw_reason,
            run,
        ));
    }
    for v in &mut sw_values {
        v.software = true;
    }
    (recs, sw_values)
}

/// What was counted between two reads (`before` None: since the start).
pub(super) fn since(
    now: &Readings,
    before: Option<&Readings>,
) -> Vec<Result<GroupReading, String>> {
    now.iter()
        .enumerate()
        .map(|(i, r)| match (r, before.and_then(|b| b.get(i))) {
            (Ok(a), Some(Ok(b))) => Ok(a.since(b)),
            (Ok(a), _) => Ok(a.clone()),
            (Err(e), _) => Err(e.clone()),
        })
        .collect()
}

/// One interval's group records and software values (with its wall time), and its span.
pub(super) type RawPoint = (f64, f64, Vec<GroupRecord>, Vec<EventValue>);

/// One interval: the difference of two reads, assembled like a run.
#[allow(clippy::too_many_arguments)]
pub(super) fn interval_of(
    run_groups: &[(usize, &count::PlanGroup)],
    opened_hw: &[usize],
    now: &Readings,
    before: Option<&Readings>,
    statuses: &[Vec<EventStatus>],
    hardware: bool,
    blocked: &dyn Fn(&EventRef) -> Option<String>,
    sw_counted: &[&EventRef],
    hw_opened: usize,
    hw_reason: &str,
    (t0, t1): (f64, f64),
) -> RawPoint {
    let delta = since(now, before);
    let (recs, mut sw) = assemble(
        run_groups, opened_hw, &delta, statuses, hardware, blocked, sw_counted, hw_opened,
        hw_reason, 0,
    );
    sw.push(wall_of(t1 - t0, 0));
    (t0, t1, recs, sw)
}

/// The timeline: each interval's counts and metrics, derived as the whole run's are;
/// events the whole run found untrusted have no value in any interval either. Each
/// interval also lists the consistency rules its metrics violate.
pub(super) fn timeline(
    catalog: &Catalog,
    names: &[String],
    whole: &Profile,
    raw: Vec<RawPoint>,
) -> Vec<IntervalPoint> {
    let untrusted: Vec<&str> = whole
        .events
        .iter()
        .filter(|e| e.state == EventState::Untrusted)
        .map(|e| e.name.as_str())
        .collect();
    let distrust = |v: &mut EventValue| {
        if untrusted.contains(&v.name.as_str()) {
            v.value = None;
            v.state = EventState::Untrusted;
        }
    };
    // A rules file that does not load is said once, by the whole profile's check.
    let rules = crate::consistency::rules_for(catalog).unwrap_or_default();
    raw.into_iter()
        .map(|(t0, t1, mut groups, mut sw)| {
            for g in &mut groups {
                g.values.iter_mut().for_each(distrust);
            }
            sw.iter_mut().for_each(distrust);
            let running_fraction = groups
                .iter()
                .filter(|g| g.values.iter().any(|v| !v.software))
                .filter_map(|g| g.running_fraction)
                .reduce(f64::min);
            let mut p = Profile {
                events: Vec::new(),
                groups,
                metrics: Vec::new(),
                spread: Vec::new(),
                timeline: Vec::new(),
                ..whole.clone()
            };
            p.events = summarize_events(&p.groups, &sw);
            let metrics = evaluate_live(catalog, names, &p, false);
            let counting = crate::consistency::Counting {
                groups: &p.groups,
                exact: false,
            };
            let inconsistent = crate::consistency::check(&rules, &metrics, &counting)
                .into_iter()
                .filter(|c| c.violated())
                .map(|c| c.rule)
                .collect();
            IntervalPoint {
                start_s: t0,
                end_s: t1,
                running_fraction,
                counts: p
                    .events
                    .iter()
                    .filter_map(|e| Some((e.name.clone(), e.value?)))
                    .collect::<BTreeMap<_, _>>(),
                metrics: metrics
                    .iter()
                    .filter_map(|m| Some((m.name.clone(), m.value?)))
                    .collect(),
                inconsistent,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_as_sysfs_writes_them() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a-b"), None);
    }

    #[test]
    fn this_process_is_alive_and_has_threads() {
        let me = std::process::id() as i32;
        assert!(alive(me));
        assert!(threads_of(me).unwrap().contains(&me));
        assert!(!alive(i32::MAX));
        assert!(matches!(
            threads_of(i32::MAX),
            Err(ProfileError::NoProcess(_))
        ));
    }
}
