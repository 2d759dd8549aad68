//! Replayed counts: a [`Backend`] that gives given counts (tests, and machines without
//! a PMU in other crates' tests), with the kernel's ways of refusing an event.

use super::*;

/// One event's replayed behaviour.
#[derive(Debug, Clone, PartialEq)]
pub enum Replay {
    /// Counted: the full-run count and the share of time its group is on a counter.
    Count {
        /// Count over the whole run (before any multiplexing).
        value: u64,
        /// time_running / time_enabled of any group holding it.
        fraction: f64,
    },
    /// The PMU does not implement it.
    NotSupported,
    /// Denied when kernel-mode counting is asked for (perf_event_paranoid 2, not root),
    /// counted as `value` in user space only.
    DeniedWithKernel {
        /// User-space count.
        value: u64,
    },
    /// Always denied (perf_event_paranoid 3, or a seccomp filter).
    Denied,
}

/// Replays given counts (tests, and machines without a PMU in other crates' tests).
/// Run `k` multiplies every hardware count by `run_factors[k]` (default 1), to model
/// run-to-run variation in `--exact` mode.
#[derive(Debug, Clone, Default)]
pub struct ReplayBackend {
    /// Behaviour per event name.
    pub events: HashMap<String, Replay>,
    /// Per-run factor on hardware counts.
    pub run_factors: Vec<f64>,
    /// Runs opened so far.
    pub opened: usize,
    /// The groups asked for, per run (to check plans).
    pub asked: Vec<Vec<Vec<String>>>,
    /// The raw-event PMU type asked for, per run.
    pub raw_types: Vec<Option<u32>>,
    /// What each run was opened on.
    pub targets: Vec<Target>,
    /// Reads until the whole count is reached (interval mode): read `k` of `n` gives
    /// `k/n` of every count and of the times, later reads the whole; 0 or 1: the whole
    /// count from the first read.
    pub reads_to_full: usize,
    /// Pairs of events the replayed kernel will not schedule in one group (a counter
    /// constraint: x86 refuses such a member at open with EINVAL): the later member of
    /// a group holding both fails to open; apart, both count.
    pub apart: Vec<(String, String)>,
    /// The groups [`Backend::probe`] was asked about, per probe.
    pub probed: Vec<Vec<Vec<String>>>,
}

impl ReplayBackend {
    /// A backend replaying `pairs` of (event, count), all fully counted.
    pub fn with_counts(pairs: &[(&str, u64)]) -> Self {
        ReplayBackend {
            events: pairs
                .iter()
                .map(|(n, v)| {
                    (
                        n.to_string(),
                        Replay::Count {
                            value: *v,
                            fraction: 1.0,
                        },
                    )
                })
                .collect(),
            ..Default::default()
        }
    }
}

struct ReplaySession {
    statuses: Vec<Vec<OpenStatus>>,
    readings: Vec<Result<GroupReading, String>>,
    reads: usize,
    reads_to_full: usize,
}

impl ReplayBackend {
    /// Each member's status when `g` is opened as one group.
    fn group_statuses(&self, g: &[EventRef], opts: OpenOptions) -> Vec<OpenStatus> {
        let mut out: Vec<OpenStatus> = Vec::new();
        for (i, e) in g.iter().enumerate() {
            let clash = g[..i].iter().zip(&out).find(|(o, st)| {
                st.works()
                    && self.apart.iter().any(|(a, b)| {
                        (*a == o.name && *b == e.name) || (*a == e.name && *b == o.name)
                    })
            });
            out.push(match (clash, self.events.get(&e.name)) {
                (Some((o, _)), _) => EventStatus::NotSupported(format!(
                    "replay: cannot be scheduled in one group with {}",
                    o.name
                )),
                (None, Some(Replay::Count { .. })) => EventStatus::Works,
                (None, Some(Replay::DeniedWithKernel { .. })) if !opts.include_kernel => {
                    EventStatus::Works
                }
                (None, Some(Replay::DeniedWithKernel { .. }) | Some(Replay::Denied)) => {
                    EventStatus::Denied("replay: permission denied".into())
                }
                (None, Some(Replay::NotSupported) | None) => {
                    EventStatus::NotSupported("replay: not supported".into())
                }
            });
        }
        out
    }
}

impl Backend for ReplayBackend {
    fn probe(&mut self, groups: &[Vec<EventRef>], _raw_type: Option<u32>) -> Vec<Vec<OpenStatus>> {
        self.probed.push(
            groups
                .iter()
                .map(|g| g.iter().map(|e| e.name.clone()).collect())
                .collect(),
        );
        let opts = OpenOptions {
            include_kernel: false,
            raw_type: None,
        };
        groups
            .iter()
            .map(|g| self.group_statuses(g, opts))
            .collect()
    }

    fn open(
        &mut self,
        target: &Target,
        groups: &[Vec<EventRef>],
        opts: OpenOptions,
    ) -> Box<dyn Session> {
        let factor = self.run_factors.get(self.opened).copied().unwrap_or(1.0);
        self.opened += 1;
        self.raw_types.push(opts.raw_type);
        self.targets.push(target.clone());
        self.asked.push(
            groups
                .iter()
                .map(|g| g.iter().map(|e| e.name.clone()).collect())
                .collect(),
        );
        let enabled: u64 = 1_000_000_000;
        let mut statuses = Vec::new();
        let mut readings = Vec::new();
        for g in groups {
            let st = self.group_statuses(g, opts);
            let opened = |name: &str| g.iter().zip(&st).any(|(e, s)| e.name == name && s.works());
            let fraction = g
                .iter()
                .filter(|e| opened(&e.name))
                .filter_map(|e| match self.events.get(&e.name) {
                    Some(Replay::Count { fraction, .. }) => Some(*fraction),
                    _ => None,
                })
                .fold(1.0f64, f64::min);
            let running = (enabled as f64 * fraction).round() as u64;
            let counts = g
                .iter()
                .map(|e| {
                    let f = if e.encoding.is_software() {
                        1.0
                    } else {
                        factor
                    };
                    if !opened(&e.name) {
                        return None;
                    }
                    let value = match self.events.get(&e.name) {
                        Some(Replay::Count { value, .. }) => *value,
                        Some(Replay::DeniedWithKernel { value }) if !opts.include_kernel => *value,
                        _ => return None,
                    };
                    Some((value as f64 * f * fraction).round() as u64)
                })
                .collect();
            if st.iter().any(|s| s.works()) {
                readings.push(Ok(GroupReading {
                    time_enabled_ns: enabled,
                    time_running_ns: running,
                    counts,
                }));
            } else {
                readings.push(Err("no event of the group could be opened".into()));
            }
            statuses.push(st);
        }
        Box::new(ReplaySession {
            statuses,
            readings,
            reads: 0,
            reads_to_full: self.reads_to_full,
        })
    }
}

impl Session for ReplaySession {
    fn statuses(&self) -> Vec<Vec<OpenStatus>> {
        self.statuses.clone()
    }

    fn read(&mut self) -> Vec<Result<GroupReading, String>> {
        self.reads += 1;
        let n = self.reads_to_full.max(1);
        if self.reads >= n {
            return self.readings.clone();
        }
        let (k, n) = (self.reads as u64, n as u64);
        self.readings
            .iter()
            .map(|r| {
                r.clone().map(|r| GroupReading {
                    time_enabled_ns: r.time_enabled_ns * k / n,
                    time_running_ns: r.time_running_ns * k / n,
                    counts: r.counts.iter().map(|c| c.map(|c| c * k / n)).collect(),
                })
            })
            .collect()
    }
}
