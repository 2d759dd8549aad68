//! What to count, in which groups, and the counting session.
//!
//! A *box* is one device on one CPU of its cpumask (an iMC channel of one socket, the
//! data fabric of one socket, one CMN mesh). Each box gets the events of the figures
//! asked for, packed into groups of at most the box's counter budget
//! ([`crate::table::Budgets`]); the events a figure divides (CAS reads and writes,
//! LLC hits and misses) stay in one group; the box's clock, when it has one, leads
//! every group so that a group that never counted is recognised. Boxes with more
//! groups than fit are time-multiplexed by the kernel and every count carries its
//! running fraction.

use crate::backend::{Backend, GroupSpec, OpenError, OpenErrorKind, Opened};
use crate::derive;
use crate::permission;
use crate::sysfs::{Device, Discovery, Encoding, SysfsError};
use crate::table::{known_events, ByGeneration, Class, Role, Source};
pub use crate::what::{Extra, What};
use numalab_records::uncore::{BoxCounts, EventCount, NotOpened, UncoreDevice, UncoreReport};
use std::collections::BTreeMap;

/// Errors in what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UncoreError {
    /// A sysfs file.
    #[error(transparent)]
    Sysfs(#[from] SysfsError),
    /// A device asked for does not exist.
    #[error("no PMU named {0} under /sys/bus/event_source/devices")]
    UnknownDevice(String),
    /// An extra event could not be encoded.
    #[error("{device}/{event}: {problem}")]
    BadEvent {
        /// Device.
        device: String,
        /// Event.
        event: String,
        /// Why.
        problem: String,
    },
}

/// One planned event.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedEvent {
    /// Name.
    pub name: String,
    /// Role (None: an extra event).
    pub role: Option<Role>,
    /// Encoding.
    pub encoding: Encoding,
}

/// One planned group.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedGroup {
    /// Device.
    pub device: String,
    /// Class.
    pub class: Class,
    /// CPU.
    pub cpu: u32,
    /// Socket of that CPU.
    pub socket: Option<u32>,
    /// Index within its box.
    pub group: usize,
    /// Events (the first leads).
    pub events: Vec<PlannedEvent>,
}

/// The plan: groups, and what could not be planned.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// Groups.
    pub groups: Vec<PlannedGroup>,
    /// Events that could not be encoded, per box.
    pub unencodable: Vec<NotOpened>,
    /// Why a figure's event is missing on a device: (device, role key) -> reason.
    pub missing: BTreeMap<(String, String), String>,
    /// Boxes of selected devices that got no event (every event it needs is missing
    /// or does not apply): (device, class, cpu, socket). Their figures are absent with
    /// the reasons in `missing`.
    pub skipped: Vec<(String, Class, u32, Option<u32>)>,
    /// Notes.
    pub notes: Vec<String>,
}

/// Events of a figure that must share a group (a ratio, a read/write split, and the
/// independently counted total beside it).
fn paired(a: Role, b: Role) -> bool {
    matches!(
        (a, b),
        (Role::CasRead, Role::CasWrite)
            | (Role::CasWrite, Role::CasAll)
            | (Role::LlcHit, Role::LlcMiss)
            | (Role::SlcAccess, Role::LlcMiss)
            | (Role::DrdMissLocal, Role::DrdMissRemote)
            | (Role::DrdPrefMissLocal, Role::DrdPrefMissRemote)
            | (Role::DirSnoop, Role::DirNoSnoop)
            | (Role::McReqs, Role::McRetries)
            | (Role::DirSnoopsSent, Role::BrdSnoopsSent)
    )
}

/// The encoding of `name` for the generation whose terms of the kernel's named events
/// `sysfs` encode, through `d`'s format, to what `d` lists for them.
fn same_generation(
    d: &Device,
    name: &str,
    reference: &str,
    sysfs: &[&str],
    choices: &[ByGeneration],
) -> Result<Encoding, String> {
    let mut listed = Vec::new();
    for n in sysfs {
        if !d.events.contains_key(*n) {
            return Err(format!(
                "{} lists no event {n} in events/, which tells numalab the generation whose {name} encoding to use ({reference})",
                d.name
            ));
        }
        listed.push(d.encode_event(n)?);
    }
    for c in choices {
        let theirs: Result<Vec<Encoding>, String> =
            c.identify.iter().map(|t| d.encode_str(t)).collect();
        if theirs.as_ref().is_ok_and(|t| *t == listed) {
            return d.encode_str(c.terms).map_err(|e| {
                format!(
                    "{name} ({}, {}; from {reference}) cannot be encoded on {}: {e}",
                    c.terms, c.generations, d.name
                )
            });
        }
    }
    let shown: Vec<String> = sysfs
        .iter()
        .zip(&listed)
        .map(|(n, e)| format!("{n} config {:#x}", e.config[0]))
        .collect();
    let known: Vec<&str> = choices.iter().map(|c| c.generations).collect();
    Err(format!(
        "{}'s {} match no generation numalab has the {name} encoding of ({}; from {reference}), so it is not counted",
        d.name,
        shown.join(", "),
        known.join("; ")
    ))
}

/// Whether an event that must share a group with others fits one group of its box
/// with them (and the clock that leads every group); a total counted in another
/// group than its parts would be multiplexed apart from them, so it is not counted.
fn fits_beside_its_group(role: Role, name: &str, d: &Device, what: &What) -> Result<(), String> {
    if role != Role::CasAll {
        return Ok(());
    }
    let (budget, source) = what.budgets.get(d.class);
    let need = 4;
    match budget {
        Some(n) if n >= need => Ok(()),
        Some(n) => Err(format!(
            "{} has {n} counter(s) per box ({source}): {name} needs one beside the clock, cas_count_read and cas_count_write ({need} in one group), so it is not counted",
            d.name
        )),
        None => Err(format!(
            "{} has no known counter budget ({source}): each event is opened alone, so {name} could not be counted in one group with cas_count_read and cas_count_write and is not counted",
            d.name
        )),
    }
}

fn cpus_of(d: &Device, discovery: &Discovery) -> Vec<u32> {
    if !d.cpus.is_empty() {
        return d.cpus.clone();
    }
    vec![discovery.packages.keys().next().copied().unwrap_or(0)]
}

/// Plans the groups for `what` on `discovery`.
pub fn plan(discovery: &Discovery, what: &What) -> Result<Plan, UncoreError> {
    let mut out = Plan::default();
    if let Some(devs) = &what.devices {
        for d in devs {
            if discovery.device(d).is_none() {
                return Err(UncoreError::UnknownDevice(d.clone()));
            }
        }
    }
    // Per device: the device, its clock (if any), its units of events.
    type PerDevice<'a> = (&'a Device, Option<PlannedEvent>, Vec<Vec<PlannedEvent>>);
    let mut per_device: Vec<PerDevice> = Vec::new();
    for d in discovery.uncore() {
        if !what.device_selected(&d.name) {
            continue;
        }
        let mut anchor = None;
        let mut events: Vec<PlannedEvent> = Vec::new();
        for k in known_events(d.class) {
            if !what.wants(k.role.topic()) {
                continue;
            }
            if let Some(req) = k.requires {
                let spec = d.formats.get(req.field).map(|f| f.spec.as_str());
                if spec != Some(req.spec) {
                    out.missing.insert(
                        (d.name.clone(), k.role.key()),
                        format!(
                            "{}'s format {} is {}, not {} ({}), which {} is defined for",
                            d.name,
                            req.field,
                            spec.unwrap_or("absent"),
                            req.spec,
                            req.meaning,
                            k.name
                        ),
                    );
                    continue;
                }
            }
            let encoded = match k.source {
                Source::Sysfs(n) => match d.events.get(n) {
                    Some(_) => d.encode_event(n),
                    None => Err(format!(
                        "{} lists no event {n} in events/ (the kernel names it from Linux 6.4 on for Sapphire Rapids; numalab does not guess another generation's encoding)",
                        d.name
                    )),
                },
                Source::Terms(t) => d.encode_str(t).map_err(|e| {
                    format!("{} ({t}, from {}) cannot be encoded on {}: {e}", k.name, k.reference, d.name)
                }),
                Source::SameGenerationAs { sysfs, choices } => {
                    same_generation(d, k.name, k.reference, sysfs, choices)
                }
            };
            let encoded =
                encoded.and_then(|e| fits_beside_its_group(k.role, k.name, d, what).map(|()| e));
            match encoded {
                Ok(encoding) => {
                    if let (Source::Sysfs(n), Role::CasRead | Role::CasWrite) = (k.source, k.role) {
                        let ev = &d.events[n];
                        if let Some(b) =
                            crate::derive::bytes_per_count(ev.scale, ev.unit.as_deref())
                        {
                            if (b - crate::formulas::constant("bytes_per_cas")).abs() > 1e-6 {
                                out.notes.push(format!(
                                    "{}: events/{n}.scale and .unit say {b} bytes per count, not the 64 bytes of a cache line numalab uses",
                                    d.name
                                ));
                            }
                        }
                    }
                    let ev = PlannedEvent {
                        name: k.name.to_string(),
                        role: Some(k.role),
                        encoding,
                    };
                    if k.role == Role::Clock {
                        anchor = Some(ev);
                    } else {
                        events.push(ev);
                    }
                }
                Err(reason) => {
                    if k.role != Role::Clock {
                        for cpu in cpus_of(d, discovery) {
                            out.unencodable.push(NotOpened {
                                device: d.name.clone(),
                                cpu,
                                event: k.name.to_string(),
                                kind: "unencodable".into(),
                                error: reason.clone(),
                            });
                        }
                    }
                    out.missing.insert((d.name.clone(), k.role.key()), reason);
                }
            }
        }
        if events.is_empty() && !what.extra.iter().any(|e| e.device == d.name) {
            // The first event's reason in the table's order (a total's reason follows
            // from its parts'), the clock's last.
            let mut reasons: Vec<&String> = known_events(d.class)
                .filter(|k| k.role != Role::Clock)
                .chain(known_events(d.class).filter(|k| k.role == Role::Clock))
                .filter_map(|k| out.missing.get(&(d.name.clone(), k.role.key())))
                .collect();
            reasons.extend(
                out.missing
                    .iter()
                    .filter(|((dev, _), _)| *dev == d.name)
                    .map(|(_, r)| r),
            );
            if let Some(first) = reasons.first() {
                out.notes
                    .push(format!("{}: nothing counted: {first}", d.name));
                for cpu in cpus_of(d, discovery) {
                    out.skipped
                        .push((d.name.clone(), d.class, cpu, discovery.socket_of(cpu)));
                }
            }
            continue;
        }
        let mut units: Vec<Vec<PlannedEvent>> = Vec::new();
        for ev in events {
            let pair = units.last().and_then(|u| u.last()).is_some_and(|last| {
                paired(
                    last.role.expect("table event"),
                    ev.role.expect("table event"),
                )
            });
            if pair {
                units.last_mut().expect("checked").push(ev);
            } else {
                units.push(vec![ev]);
            }
        }
        per_device.push((d, anchor, units));
    }
    // Extra events, on any device.
    for x in &what.extra {
        let d = discovery
            .device(&x.device)
            .ok_or_else(|| UncoreError::UnknownDevice(x.device.clone()))?;
        let encoding = if d.events.contains_key(&x.event) {
            d.encode_event(&x.event)
        } else {
            d.encode_str(&x.event)
        }
        .map_err(|problem| UncoreError::BadEvent {
            device: x.device.clone(),
            event: x.event.clone(),
            problem,
        })?;
        let ev = PlannedEvent {
            name: x.event.clone(),
            role: None,
            encoding,
        };
        match per_device.iter_mut().find(|(dd, _, _)| dd.name == d.name) {
            Some((_, _, units)) => units.push(vec![ev]),
            None => per_device.push((d, None, vec![vec![ev]])),
        }
    }
    for (d, anchor, units) in per_device {
        let (budget, source) = what.budgets.get(d.class);
        let mut groups: Vec<Vec<PlannedEvent>> = Vec::new();
        match budget {
            None => {
                for u in units {
                    for ev in u {
                        groups.push(vec![ev]);
                    }
                }
            }
            Some(n) => {
                let n = n.max(1) as usize;
                let capacity = if anchor.is_some() && n > 1 { n - 1 } else { n };
                let anchor = if n > 1 { anchor } else { None };
                let mut bins: Vec<Vec<PlannedEvent>> = Vec::new();
                for u in units {
                    let chunks: Vec<Vec<PlannedEvent>> = if u.len() > capacity {
                        u.chunks(capacity).map(|c| c.to_vec()).collect()
                    } else {
                        vec![u]
                    };
                    for c in chunks {
                        match bins.iter_mut().find(|b| b.len() + c.len() <= capacity) {
                            Some(b) => b.extend(c),
                            None => bins.push(c),
                        }
                    }
                }
                for b in bins {
                    let mut g = Vec::new();
                    if let Some(a) = &anchor {
                        g.push(a.clone());
                    }
                    g.extend(b);
                    groups.push(g);
                }
                if groups.len() > 1 {
                    out.notes.push(format!(
                        "{}: {} groups for {} counter(s) per box ({}): the kernel multiplexes them, each on counters about {:.0}% of the time; the running fractions say how much exactly",
                        d.name,
                        groups.len(),
                        n,
                        source,
                        100.0 / groups.len() as f64
                    ));
                }
            }
        }
        for cpu in cpus_of(d, discovery) {
            for (i, g) in groups.iter().enumerate() {
                out.groups.push(PlannedGroup {
                    device: d.name.clone(),
                    class: d.class,
                    cpu,
                    socket: discovery.socket_of(cpu),
                    group: i,
                    events: g.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// A counting session: groups opened and enabled at [`Session::start`], read at
/// [`Session::stop`].
pub struct Session {
    discovery: Discovery,
    what: What,
    plan: Plan,
    opened: Box<dyn Opened + Send>,
    statuses: Vec<Vec<Result<(), OpenError>>>,
    notes: Vec<String>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("groups", &self.plan.groups.len())
            .finish()
    }
}

impl Session {
    /// Plans, opens and enables the counters. Events the kernel refuses do not make
    /// this fail: the report names each, and explains a refusal of system-wide
    /// counting. Only a request naming an unknown device or an unencodable extra
    /// event is an error.
    pub fn start(
        discovery: &Discovery,
        what: &What,
        backend: &mut dyn Backend,
    ) -> Result<Session, UncoreError> {
        let plan = plan(discovery, what)?;
        let specs: Vec<GroupSpec> = plan
            .groups
            .iter()
            .map(|g| GroupSpec {
                device: g.device.clone(),
                cpu: g.cpu,
                events: g
                    .events
                    .iter()
                    .map(|e| crate::backend::EventSpec {
                        name: e.name.clone(),
                        encoding: e.encoding,
                    })
                    .collect(),
            })
            .collect();
        let mut opened = backend.open(&specs);
        let statuses = opened.statuses();
        let mut notes = Vec::new();
        if let Err(e) = opened.enable() {
            notes.push(format!("starting the counters failed: {e}"));
        }
        Ok(Session {
            discovery: discovery.clone(),
            what: what.clone(),
            plan,
            opened,
            statuses,
            notes,
        })
    }

    /// The plan being counted.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Stops and reads the counters, and derives the figures.
    pub fn stop(mut self) -> Result<UncoreReport, UncoreError> {
        if let Err(e) = self.opened.disable() {
            self.notes
                .push(format!("stopping the counters failed: {e}"));
        }
        let readings = self.opened.read();
        let mut report = UncoreReport {
            sysfs_root: self.discovery.root.display().to_string(),
            ..Default::default()
        };
        describe_discovery(&self.discovery, &self.what, &mut report);
        let mut not_opened = self.plan.unencodable.clone();
        for (gi, g) in self.plan.groups.iter().enumerate() {
            let statuses = &self.statuses[gi];
            let reading = &readings[gi];
            let mut events = Vec::new();
            let (enabled, running) = match reading {
                Ok(r) => (Some(r.time_enabled_ns), Some(r.time_running_ns)),
                Err(_) => (None, None),
            };
            let fraction = match (enabled, running) {
                (Some(e), Some(r)) if e > 0 => Some(r as f64 / e as f64),
                _ => None,
            };
            // The box's clock reading 0 means the box is not counting.
            let dead_clock = match reading {
                Ok(r) => g.events.iter().enumerate().find_map(|(i, e)| {
                    (e.role == Some(Role::Clock)
                        && r.time_running_ns > 0
                        && r.counts.get(i).copied().flatten() == Some(0))
                    .then(|| e.name.clone())
                }),
                Err(_) => None,
            };
            for (i, e) in g.events.iter().enumerate() {
                let role = e.role.map(|r| r.key()).unwrap_or_else(|| "extra".into());
                let mut ec = EventCount {
                    name: e.name.clone(),
                    role,
                    encoding: e.encoding.to_string(),
                    raw: None,
                    value: None,
                    state: "counted".into(),
                    reason: None,
                };
                match (&statuses[i], reading) {
                    (Err(err), _) => {
                        ec.state = "not_opened".into();
                        ec.reason = Some(describe_open_error(err));
                        not_opened.push(NotOpened {
                            device: g.device.clone(),
                            cpu: g.cpu,
                            event: e.name.clone(),
                            kind: err.kind.key().into(),
                            error: describe_open_error(err),
                        });
                    }
                    (Ok(()), Err(msg)) => {
                        ec.state = "read_failed".into();
                        ec.reason = Some(msg.clone());
                    }
                    (Ok(()), Ok(r)) => {
                        let raw = r.counts.get(i).copied().flatten();
                        ec.raw = raw;
                        if r.time_running_ns == 0 {
                            ec.state = "not_scheduled".into();
                            ec.reason = Some(
                                "the group was never on a counter (more groups than the box's counters, or another user holds them)".into(),
                            );
                        } else if let Some(clock) = &dead_clock {
                            ec.state = "not_counted_here".into();
                            ec.reason = Some(format!(
                                "the box's clock ({clock}) read 0 where hardware must count: this box does not count here"
                            ));
                        } else if let Some(raw) = raw {
                            ec.value = Some(
                                raw as f64 * r.time_enabled_ns as f64 / r.time_running_ns as f64,
                            );
                        } else {
                            ec.state = "read_failed".into();
                            ec.reason = Some("no value in the group's reading".into());
                        }
                    }
                }
                events.push(ec);
            }
            report.boxes.push(BoxCounts {
                device: g.device.clone(),
                class: g.class.key().into(),
                cpu: g.cpu,
                socket: g.socket,
                group: g.group,
                time_enabled_ns: enabled,
                time_running_ns: running,
                running_fraction: fraction,
                events,
            });
        }
        if not_opened
            .iter()
            .any(|n| n.kind == OpenErrorKind::Denied.key())
        {
            report.permission = Some(permission::explain(&self.discovery.root, &not_opened));
        }
        report.not_opened = not_opened;
        report.seconds = report
            .boxes
            .iter()
            .filter_map(|b| b.time_enabled_ns)
            .max()
            .map(|ns| ns as f64 / 1e9);
        derive::figures(
            &mut report,
            &self.what,
            &self.plan.missing,
            &self.plan.skipped,
        );
        report.notes.extend(self.plan.notes.iter().cloned());
        report.notes.extend(self.notes);
        Ok(report)
    }
}

fn describe_open_error(e: &OpenError) -> String {
    let hint = match e.kind {
        OpenErrorKind::Denied => "system-wide counting refused",
        OpenErrorKind::NotSupported => "the PMU does not have this event",
        OpenErrorKind::Invalid => {
            "the kernel refused the configuration (a field out of range, or a group larger than the box's counters)"
        }
        OpenErrorKind::Busy => "the counters are taken by another user",
        OpenErrorKind::Failed => "failed",
    };
    match e.errno {
        Some(n) => format!("{hint}: {} (errno {n})", e.message),
        None => format!("{hint}: {}", e.message),
    }
}

fn describe_discovery(discovery: &Discovery, what: &What, report: &mut UncoreReport) {
    for d in discovery.uncore() {
        let (counters, source) = what.budgets.get(d.class);
        let mut sockets: Vec<u32> = d
            .cpus
            .iter()
            .filter_map(|c| discovery.socket_of(*c))
            .collect();
        sockets.sort_unstable();
        sockets.dedup();
        report.devices.push(UncoreDevice {
            name: d.name.clone(),
            class: d.class.key().into(),
            pmu_type: d.pmu_type,
            cpus: d.cpus.clone(),
            sockets,
            named_events: d.events.len(),
            counters,
            counters_source: source,
        });
    }
    report.other_pmus = discovery.other_names();
    for p in &discovery.problems {
        report.notes.push(format!("unreadable PMU, left out: {p}"));
    }
    if report.devices.is_empty() {
        report.notes.push(format!(
            "no uncore PMU found under {}: the kernel lists {} (virtual machines and containers usually expose none; memory-controller, LLC and link figures need a bare-metal host)",
            discovery.root.join("sys/bus/event_source/devices").display(),
            if report.other_pmus.is_empty() {
                "no PMU at all".to_string()
            } else {
                report.other_pmus.join(", ")
            }
        ));
    }
}
