//! Plausibility: a hardware event that reads exactly 0 where real hardware must count
//! is "not counted here", not a zero.
//!
//! Some events move whenever the core does anything at all, because every program
//! does it from its first instruction (counting starts at `exec`, with cold caches):
//! cycles, instructions, instruction fetches (L1I and its TLB), loads (L1D and its
//! TLB, memory accesses), branches, and stalls (the first fetches and loads of a cold
//! process miss, so both the front end and the back end stall). Over a million cycles
//! of work none of them can be exactly 0 on real hardware; an emulator or a hypervisor
//! that accepts the event but never increments it can make it 0. Events that may
//! legitimately stay 0 (SVE or crypto operations in a scalar loop, remote accesses on
//! one socket, refills of a working set that fits, TLB walks) are not in the list and
//! are never flagged.
//!
//! The list is by event name, for the Arm catalogs (the architecture's common event
//! names) and the x86 generic catalog; it is numalab's judgement from the event
//! definitions, not vendor data.

use crate::metrics::{EventState, EventValue};

/// Events that must move when cycles move (see the module documentation).
pub const MUST_MOVE: &[&str] = &[
    // Arm (common architectural events)
    "CPU_CYCLES",
    "INST_RETIRED",
    "INST_SPEC",
    "STALL_FRONTEND",
    "STALL_BACKEND",
    "L1I_CACHE",
    "L1I_TLB",
    "L1D_CACHE",
    "L1D_TLB",
    "MEM_ACCESS",
    "BR_RETIRED",
    "BR_PRED",
    // x86-64 (kernel generic events)
    "CYCLES",
    "INSTRUCTIONS",
    "BRANCHES",
    "STALLED_CYCLES_FRONTEND",
    "STALLED_CYCLES_BACKEND",
    "L1D_LOADS",
];

/// Work below which a zero is believable: a million cycles (or, when cycles are not
/// known, a millisecond of task clock: a million cycles at 1 GHz).
pub const MIN_CYCLES: f64 = 1.0e6;

/// Events of the cycle count, in catalog order of preference.
const CYCLE_EVENTS: &[&str] = &["CPU_CYCLES", "CYCLES"];

/// Cycles of work the run did: counted cycles when they are non-zero, else the task
/// clock in ns (one cycle per ns, a low estimate for any core numalab runs on).
pub fn work_cycles(events: &[EventValue]) -> Option<(f64, &'static str)> {
    let counted = |n: &str| {
        events
            .iter()
            .find(|e| e.name == n && e.state == EventState::Counted)
            .and_then(|e| e.value)
    };
    for c in CYCLE_EVENTS {
        if let Some(v) = counted(c).filter(|v| *v > 0.0) {
            return Some((v, "cycles"));
        }
    }
    counted("TASK_CLOCK")
        .filter(|v| *v > 0.0)
        .map(|v| (v, "ns of task clock"))
}

/// The names of counted hardware events that read exactly 0 although they must move,
/// with the reason, given the run's events (one value per event).
pub fn implausible(events: &[EventValue]) -> Vec<(String, String)> {
    let Some((work, what)) = work_cycles(events) else {
        return Vec::new();
    };
    events
        .iter()
        .filter(|e| !e.software && e.state == EventState::Counted)
        .filter(|e| MUST_MOVE.contains(&e.name.as_str()))
        .filter(|e| e.raw_count == Some(0) || (e.raw_count.is_none() && e.value == Some(0.0)))
        .filter_map(|e| {
            // Only the part of the run the event was on a counter is evidence.
            let seen = work * e.running_fraction.unwrap_or(1.0);
            (seen >= MIN_CYCLES).then(|| {
                (
                    e.name.clone(),
                    format!(
                        "read 0 over {} {what}: real hardware cannot count 0 here, so it is not counted here",
                        crate::metrics::fmt_count(seen)
                    ),
                )
            })
        })
        .collect()
}

/// Marks the implausible zeros of `events` (and of the same events in `more`)
/// [`EventState::Untrusted`]: no value, raw count kept. Returns their names.
pub fn mark(events: &mut [EventValue], more: &mut [&mut Vec<EventValue>]) -> Vec<String> {
    let bad = implausible(events);
    for (name, why) in &bad {
        let apply = |e: &mut EventValue| {
            let zero = e.raw_count == Some(0) || (e.raw_count.is_none() && e.value == Some(0.0));
            if &e.name == name && e.state == EventState::Counted && zero {
                e.state = EventState::Untrusted;
                e.value = None;
                e.reason = Some(why.clone());
            }
        };
        for e in events.iter_mut() {
            apply(e);
        }
        for list in more.iter_mut() {
            for e in list.iter_mut() {
                apply(e);
            }
        }
    }
    bad.into_iter().map(|(n, _)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, value: u64, fraction: f64, software: bool) -> EventValue {
        EventValue {
            name: name.into(),
            code: None,
            value: Some(value as f64 / fraction),
            raw_count: Some(value),
            running_fraction: Some(fraction),
            time_enabled_ns: None,
            time_running_ns: None,
            supported: true,
            state: EventState::Counted,
            reason: None,
            unit: None,
            software,
            run: None,
            advertised: None,
            uncertainty: None,
        }
    }

    #[test]
    fn zeros_that_must_move_are_flagged_and_legitimate_zeros_are_not() {
        let mut events = vec![
            ev("CPU_CYCLES", 100_000_000, 1.0, false),
            ev("STALL_FRONTEND", 0, 1.0, false),
            ev("BR_RETIRED", 0, 1.0, false),
            ev("ASE_SPEC", 0, 1.0, false), // scalar code: 0 is believable
            ev("REMOTE_ACCESS", 0, 1.0, false), // one socket
            ev("L1D_CACHE_REFILL", 0, 1.0, false),
            ev("CONTEXT_SWITCHES", 0, 1.0, true),
        ];
        let mut group = vec![ev("STALL_FRONTEND", 0, 1.0, false)];
        let bad = mark(&mut events, &mut [&mut group]);
        assert_eq!(bad, ["STALL_FRONTEND", "BR_RETIRED"]);
        assert_eq!(events[1].state, EventState::Untrusted);
        assert_eq!((events[1].value, events[1].raw_count), (None, Some(0)));
        assert_eq!(group[0].state, EventState::Untrusted);
        for e in &events[3..] {
            assert_eq!(e.state, EventState::Counted, "{}", e.name);
        }
    }

    #[test]
    fn too_little_work_proves_nothing() {
        // 500k cycles: a short run may not stall at all.
        let mut short = vec![
            ev("CPU_CYCLES", 500_000, 1.0, false),
            ev("STALL_BACKEND", 0, 1.0, false),
        ];
        assert!(mark(&mut short, &mut []).is_empty());
        // 1e8 cycles but the event was on a counter for 0.5% of them.
        let mut sliver = vec![
            ev("CPU_CYCLES", 100_000_000, 1.0, false),
            ev("STALL_BACKEND", 0, 0.005, false),
        ];
        assert!(mark(&mut sliver, &mut []).is_empty());
        // Cycles themselves 0 over 45 ms of task clock: not counted here.
        let mut dead = vec![
            ev("CPU_CYCLES", 0, 1.0, false),
            ev("TASK_CLOCK", 45_000_000, 1.0, true),
        ];
        assert_eq!(mark(&mut dead, &mut []), ["CPU_CYCLES"]);
        assert!(dead[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("ns of task clock"));
    }
}
