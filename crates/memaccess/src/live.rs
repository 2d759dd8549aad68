//! Live data-address sampling.
//!
//! [`detect`] finds a facility in sysfs (`ROOT/bus/event_source/devices`): Arm SPE
//! (`arm_spe_*`, with its format fields), Intel PEBS load latency (the core PMU `cpu`
//! or `cpu_core` with `events/mem-loads` and a `format/ldlat` field, and
//! `events/mem-stores`), AMD IBS op (`ibs_op`). [`record`] opens the event per CPU
//! with perf-event2 (sample_type IP|TID|TIME|ADDR|CPU|WEIGHT|DATA_SRC, with PHYS_ADDR
//! when the kernel allows it), data mappings on, for a child command (created gated,
//! sampling from its exec, like `numalab_pmu::sample`) or the threads a running pid
//! has when sampling starts (per thread, any CPU), and asks
//! move_pages for the node of every sampled page while the process lives.
//!
//! Kernel records are parsed by perf-event-data ([`records`]; [`parse_sample_record`]
//! and [`parse_mmap2_record`] take a record's body) into the same [`MemSample`] /
//! [`Mapping`](crate::sample::Mapping) the importer makes, so the analysis is shared and the parsing is tested
//! without hardware.
//!
//! Arm SPE ([`spe`]) is opened per CPU for a command with its AUX area, whose packets
//! [`crate::spe`] decodes into the same samples. Where the kernel needs the
//! `mem-loads-aux` event as the group leader of PEBS load latency (Sapphire Rapids and
//! later Intel P-cores: the core PMU publishes `events/mem-loads-aux` then), the
//! load sampler is opened as its member.

use crate::sample::{MemSample, Samples};
use numalab_perfopen as perfopen;
use std::path::{Path, PathBuf};

/// The kind of facility.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FacilityKind {
    /// Arm Statistical Profiling Extension.
    ArmSpe,
    /// Intel PEBS load latency (mem-loads with ldlat) and mem-stores.
    IntelPebs,
    /// AMD Instruction-Based Sampling, op.
    AmdIbsOp,
}

impl FacilityKind {
    /// Name for records.
    pub fn name(self) -> &'static str {
        match self {
            FacilityKind::ArmSpe => "Arm SPE",
            FacilityKind::IntelPebs => "Intel PEBS load latency",
            FacilityKind::AmdIbsOp => "AMD IBS op",
        }
    }
}

/// A data-address sampling facility found in sysfs.
#[derive(Debug, Clone, PartialEq)]
pub struct Facility {
    /// Kind.
    pub kind: FacilityKind,
    /// The PMU's sysfs name (`arm_spe_0`, `cpu`, `cpu_core`, `ibs_op`).
    pub pmu: String,
    /// Its perf type (`type` file).
    pub pmu_type: u32,
    /// Its format fields: (name, spec such as `config1:0-15`).
    pub formats: Vec<(String, String)>,
    /// The load event's terms (PEBS: `events/mem-loads`).
    pub loads_event: Option<String>,
    /// The store event's terms (PEBS: `events/mem-stores`).
    pub stores_event: Option<String>,
    /// The auxiliary event the load event needs as its group leader (PEBS:
    /// `events/mem-loads-aux`, published where the kernel requires it).
    pub loads_aux_event: Option<String>,
    /// The CPUs the PMU covers (its `cpus` or `cpumask` file), when it says.
    pub cpus: Option<Vec<u32>>,
}

/// No facility: what was looked for and what there is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no data-address sampling facility in {devices}: looked for {}; this machine has {}.{} Record with `perf mem record` (or `perf c2c record`) on a machine that has one and import `perf script -F comm,pid,tid,cpu,time,event,ip,sym,dso,addr,data_src,weight,phys_addr --show-mmap-events` output", looked_for.join("; "), if found.is_empty() { "no event sources".to_string() } else { found.join(", ") }, hint.as_deref().map(|h| format!(" {h}")).unwrap_or_default())]
pub struct Unsupported {
    /// The directory searched.
    pub devices: String,
    /// What was looked for.
    pub looked_for: Vec<String>,
    /// The event sources present.
    pub found: Vec<String>,
    /// What the event sources present suggest (an Arm machine without `arm_spe`).
    pub hint: Option<String>,
}

/// The hint for an Arm machine (an `armv8_*`/`armv9_*` core PMU) without `arm_spe`.
pub const ARM_WITHOUT_SPE: &str = "This Arm machine exposes no arm_spe PMU: its CPUs lack the Statistical Profiling Extension (QEMU's emulated CPUs have none; Neoverse N1, N2, V1 and V2 have it), or the kernel lacks CONFIG_ARM_SPE_PMU or the firmware's SPE interrupt description, or a hypervisor does not pass SPE through.";

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn formats(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir.join("format"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    read_trim(&e.path()).map(|v| (name, v))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Finds a facility under `root` (a sysfs root, normally `/sys`). Arm SPE first, then
/// Intel PEBS load latency, then AMD IBS op.
pub fn detect(root: &Path) -> Result<Facility, Unsupported> {
    let devices = root.join("bus/event_source/devices");
    let mut found: Vec<String> = std::fs::read_dir(&devices)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    let facility = |kind, name: &str| -> Option<Facility> {
        let dir = devices.join(name);
        let pmu_type = read_trim(&dir.join("type"))?.parse().ok()?;
        let formats = formats(&dir);
        let (loads_event, stores_event, loads_aux_event) = if kind == FacilityKind::IntelPebs {
            (
                read_trim(&dir.join("events/mem-loads")),
                read_trim(&dir.join("events/mem-stores")),
                read_trim(&dir.join("events/mem-loads-aux")),
            )
        } else {
            (None, None, None)
        };
        let cpus = ["cpus", "cpumask"].iter().find_map(|f| {
            read_trim(&dir.join(f)).and_then(|t| numalab_schema::cpulist::parse(&t).ok())
        });
        Some(Facility {
            kind,
            pmu: name.to_string(),
            pmu_type,
            formats,
            loads_event,
            stores_event,
            loads_aux_event,
            cpus,
        })
    };
    if let Some(f) = found
        .iter()
        .filter(|n| n.starts_with("arm_spe_"))
        .find_map(|n| facility(FacilityKind::ArmSpe, n))
    {
        return Ok(f);
    }
    for core in ["cpu", "cpu_core"] {
        let dir = devices.join(core);
        if dir.join("events/mem-loads").is_file() && dir.join("format/ldlat").is_file() {
            if let Some(f) = facility(FacilityKind::IntelPebs, core) {
                return Ok(f);
            }
        }
    }
    if let Some(f) = found
        .iter()
        .filter(|n| *n == "ibs_op")
        .find_map(|n| facility(FacilityKind::AmdIbsOp, n))
    {
        return Ok(f);
    }
    Err(Unsupported {
        devices: devices.display().to_string(),
        looked_for: vec![
            "Arm SPE (arm_spe_*)".into(),
            "Intel PEBS load latency (cpu or cpu_core with events/mem-loads and format/ldlat)"
                .into(),
            "AMD IBS op (ibs_op)".into(),
        ],
        hint: found
            .iter()
            .any(|n| n.starts_with("armv8") || n.starts_with("armv9"))
            .then(|| ARM_WITHOUT_SPE.to_string()),
        found,
    })
}

/// Encodes event terms (`event=0xcd,umask=0x1,ldlat=3`) with a PMU's format fields
/// (`event` = `config:0-7`, `ldlat` = `config1:0-15`...) into (config, config1,
/// config2). A term without a value is 1; `overrides` replace or add terms.
pub fn encode_terms(
    terms: &str,
    formats: &[(String, String)],
    overrides: &[(&str, u64)],
) -> Result<[u64; 3], String> {
    let mut pairs: Vec<(String, u64)> = Vec::new();
    for t in terms.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (k, v) = match t.split_once('=') {
            Some((k, v)) => {
                let v = v.trim();
                let n = match v.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => v.parse::<u64>(),
                }
                .map_err(|_| format!("term {t:?}: value is not a number"))?;
                (k.trim().to_string(), n)
            }
            None => (t.to_string(), 1),
        };
        pairs.push((k, v));
    }
    for (k, v) in overrides {
        match pairs.iter_mut().find(|(n, _)| n == k) {
            Some(p) => p.1 = *v,
            None => pairs.push((k.to_string(), *v)),
        }
    }
    let mut cfg = [0u64; 3];
    for (k, v) in pairs {
        let spec = formats
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, s)| s.as_str())
            .ok_or_else(|| format!("the PMU has no format field {k:?}"))?;
        let (reg, ranges) = spec
            .split_once(':')
            .ok_or_else(|| format!("format {k}: {spec:?} is not `configN:lo-hi`"))?;
        let idx = match reg {
            "config" => 0,
            "config1" => 1,
            "config2" => 2,
            _ => return Err(format!("format {k}: register {reg:?} not supported")),
        };
        let mut value = v;
        for r in ranges.split(',') {
            let (lo, hi) = match r.split_once('-') {
                Some((a, b)) => (a.parse::<u32>(), b.parse::<u32>()),
                None => (r.parse::<u32>(), r.parse::<u32>()),
            };
            let (Ok(lo), Ok(hi)) = (lo, hi) else {
                return Err(format!("format {k}: bad bit range {r:?}"));
            };
            if hi < lo || hi > 63 {
                return Err(format!("format {k}: bad bit range {r:?}"));
            }
            let width = hi - lo + 1;
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            cfg[idx] |= (value & mask) << lo;
            value = if width == 64 { 0 } else { value >> width };
        }
        if value != 0 {
            return Err(format!("term {k}={v} does not fit its format {spec}"));
        }
    }
    Ok(cfg)
}

mod records;
pub mod spe;

pub use records::{parse_mmap2_record, parse_sample_record, SAMPLE_TYPE, SAMPLE_TYPE_PHYS};
use records::{Decoded, S_PHYS_ADDR};

/// What to sample.
#[derive(Debug, Clone)]
pub enum Target {
    /// Run this command and sample it from its exec to its end.
    Command(numalab_proc::Spec),
    /// Sample this running process for a while.
    Pid {
        /// The process.
        pid: i32,
        /// For how long.
        duration: std::time::Duration,
    },
}

/// Live sampling options.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// The sysfs root (`/sys`).
    pub sysfs_root: PathBuf,
    /// Events per sample (PEBS: loads above ldlat per sample; IBS: ops, a multiple of 16).
    pub period: u64,
    /// PEBS load-latency threshold, cycles (the kernel's `ldlat`; perf mem uses 30).
    pub ldlat: u64,
    /// Also sample stores (PEBS mem-stores).
    pub stores: bool,
    /// Include kernel samples (IBS cannot exclude them; they are dropped unless asked).
    pub include_kernel: bool,
    /// Ask for physical addresses (needs privileges; dropped silently when refused).
    pub phys_addr: bool,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            sysfs_root: PathBuf::from("/sys"),
            period: 4000,
            ldlat: 30,
            stores: true,
            include_kernel: false,
            phys_addr: true,
        }
    }
}

/// Why live sampling failed.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// No facility.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// A target the facility cannot sample (Arm SPE and a running process).
    #[error("{0}")]
    NotImplemented(String),
    /// The command could not be started.
    #[error(transparent)]
    Proc(#[from] numalab_proc::ProcError),
    /// The event could not be opened.
    #[error("cannot open {event}: {detail}")]
    Open {
        /// The event.
        event: String,
        /// Why.
        detail: String,
    },
}

impl numalab_schema::Classify for LiveError {
    fn class(&self) -> numalab_schema::ErrorClass {
        use numalab_schema::ErrorClass;
        match self {
            LiveError::Unsupported(_) | LiveError::NotImplemented(_) | LiveError::Open { .. } => {
                ErrorClass::Unsupported
            }
            LiveError::Proc(e) => e.class(),
        }
    }
}

/// What a live run collected.
#[derive(Debug)]
pub struct Collected {
    /// The facility used.
    pub facility: Facility,
    /// The events opened (as perf would name them).
    pub events: Vec<String>,
    /// Samples and mappings.
    pub samples: Samples,
    /// Nodes of the sampled pages, asked while the process lived.
    pub nodes: crate::node::MovePages,
    /// How the command ended (command target).
    pub outcome: Option<numalab_proc::Outcome>,
    /// Caveats.
    pub notes: Vec<String>,
}

struct EventSpec {
    name: String,
    ty: u32,
    config: [u64; 3],
    precise: bool,
    exclude_kernel: bool,
    /// The group leader the event needs (PEBS mem-loads-aux): its name and config.
    leader: Option<(String, [u64; 3])>,
}

fn event_specs(f: &Facility, opts: &LiveOptions) -> Result<Vec<EventSpec>, LiveError> {
    match f.kind {
        FacilityKind::ArmSpe => Ok(vec![EventSpec {
            name: format!("{}//", f.pmu),
            ty: f.pmu_type,
            config: [0, 0, 0],
            precise: false,
            exclude_kernel: !opts.include_kernel,
            leader: None,
        }]),
        FacilityKind::IntelPebs => {
            let loads = f.loads_event.as_deref().unwrap_or_default();
            let cfg =
                encode_terms(loads, &f.formats, &[("ldlat", opts.ldlat)]).map_err(|detail| {
                    LiveError::Open {
                        event: format!("{}/mem-loads/", f.pmu),
                        detail,
                    }
                })?;
            // Sapphire Rapids and later P-cores: the kernel refuses the load event
            // (ENODATA) unless mem-loads-aux leads its group.
            let leader = match &f.loads_aux_event {
                Some(aux) => Some((
                    format!("{}/mem-loads-aux/", f.pmu),
                    encode_terms(aux, &f.formats, &[]).map_err(|detail| LiveError::Open {
                        event: format!("{}/mem-loads-aux/", f.pmu),
                        detail,
                    })?,
                )),
                None => None,
            };
            let mut v = vec![EventSpec {
                name: format!("{}/mem-loads,ldlat={}/P", f.pmu, opts.ldlat),
                ty: f.pmu_type,
                config: cfg,
                precise: true,
                exclude_kernel: !opts.include_kernel,
                leader,
            }];
            if opts.stores {
                if let Some(st) = &f.stores_event {
                    let cfg =
                        encode_terms(st, &f.formats, &[]).map_err(|detail| LiveError::Open {
                            event: format!("{}/mem-stores/", f.pmu),
                            detail,
                        })?;
                    v.push(EventSpec {
                        name: format!("{}/mem-stores/P", f.pmu),
                        ty: f.pmu_type,
                        config: cfg,
                        precise: true,
                        exclude_kernel: !opts.include_kernel,
                        leader: None,
                    });
                }
            }
            Ok(v)
        }
        FacilityKind::AmdIbsOp => Ok(vec![EventSpec {
            name: "ibs_op//".into(),
            ty: f.pmu_type,
            config: [0, 0, 0],
            precise: false,
            // IBS cannot filter by privilege level (the kernel refuses any exclude_*
            // flag); kernel samples are dropped later.
            exclude_kernel: false,
            leader: None,
        }]),
    }
}

/// The builders of `e` on `scope` with `skid`: its group leader's where it needs one
/// (a counting event, leading, started as `start` says for a leader) and its sampler's
/// (leading itself when alone). The attributes come from `numalab-perfopen`; the
/// sampling options are this crate's.
fn builders(
    e: &EventSpec,
    scope: perfopen::Target,
    period: u64,
    start: perfopen::Start,
    skid: perf_event::SampleSkid,
    sample_type: u64,
) -> (
    Option<perf_event::Builder<'static>>,
    perf_event::Builder<'static>,
) {
    use perf_event::SampleFlag;
    // The hypervisor is excluded with the kernel (IBS refuses any exclusion bit).
    let exclude = perfopen::Exclude {
        kernel: e.exclude_kernel,
        hv: e.exclude_kernel,
    };
    let leader = e.leader.as_ref().map(|(_, config)| {
        let encoding = perfopen::Encoding {
            pmu_type: e.ty,
            config: [config[0], config[1], config[2], 0],
        };
        let mut l = perfopen::builder(&encoding, scope, exclude);
        perfopen::set_start(&mut l, start, true);
        l
    });
    let encoding = perfopen::Encoding {
        pmu_type: e.ty,
        config: [e.config[0], e.config[1], e.config[2], 0],
    };
    let mut b = perfopen::builder(&encoding, scope, exclude);
    perfopen::set_start(&mut b, start, leader.is_none());
    b.precise_ip(skid)
        .mmap(true)
        .mmap2(true)
        .mmap_data(true)
        .comm(true)
        .sample_id_all(true)
        .sample_period(period)
        .sample(SampleFlag::from_bits_retain(sample_type));
    (leader, b)
}

/// Opens one sampler of `e` where `scope` says (a gated command's task on one CPU with
/// inherit, or one thread of a running process on any CPU), starting at the command's
/// exec when `gated`, else at once, in the group of its leader where it needs one
/// (returned with it, to keep open). Precise events try zero skid, then requested
/// zero skid, then constant skid while the kernel refuses the level (EINVAL,
/// EOPNOTSUPP).
fn open_one(
    e: &EventSpec,
    scope: perfopen::Target,
    period: u64,
    gated: bool,
    sample_type: u64,
) -> std::io::Result<(perf_event::Sampler, Option<perf_event::Counter>)> {
    use perf_event::SampleSkid;
    let mut last = None;
    let skids: &[SampleSkid] = if e.precise {
        &[
            SampleSkid::RequireZero,
            SampleSkid::RequestZero,
            SampleSkid::Constant,
        ]
    } else {
        &[SampleSkid::Arbitrary]
    };
    let start = if gated {
        perfopen::Start::AtExec
    } else {
        perfopen::Start::Now
    };
    let mut leader = match builders(e, scope, period, start, skids[0], sample_type).0 {
        Some(l) => Some(l.build()?),
        None => None,
    };
    for &skid in skids {
        let (_, b) = builders(e, scope, period, start, skid, sample_type);
        let built = match leader.as_mut() {
            Some(l) => b.build_with_group(l),
            None => b.build(),
        };
        match built.and_then(|c| c.sampled(512 * 1024)) {
            Ok(s) => return Ok((s, leader)),
            Err(err) => {
                let retry = matches!(
                    err.raw_os_error(),
                    Some(libc::EINVAL) | Some(libc::EOPNOTSUPP)
                );
                last = Some(err);
                if !retry {
                    break;
                }
            }
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no attempt")))
}

/// What a live run gathers while it samples: the samplers (with their event
/// indices), the samples and mappings so far, and the page nodes asked.
struct Collector {
    samplers: Vec<(perf_event::Sampler, u16)>,
    /// The group leaders the samplers need (PEBS mem-loads-aux), kept open.
    _leaders: Vec<perf_event::Counter>,
    /// Arm SPE events with their AUX areas, and what they said besides samples.
    spe: Vec<(spe::SpeRing, u16)>,
    spe_tally: spe::SpeTally,
    sample_type: u64,
    include_kernel: bool,
    data: Samples,
    seq: u64,
    /// Samples drained since the page nodes were last asked.
    fresh: Vec<MemSample>,
    nodes: crate::node::MovePages,
}

impl Collector {
    /// Moves every record the samplers hold into the samples: samples (kernel ones
    /// dropped unless asked, a physical address of 0 as none) numbered in arrival order
    /// with their event and also kept in `fresh` for the page-node queries, MMAP2
    /// mappings, lost counts.
    fn drain(&mut self) {
        self.drain_spe(false);
        for (s, ev) in self.samplers.iter_mut() {
            while let Some(rec) = s.next_record() {
                let Ok(parsed) = rec.parse_record() else {
                    continue;
                };
                match records::decode(&parsed, self.sample_type) {
                    Some(Decoded::Sample(mut smp)) => {
                        if !self.include_kernel && smp.addr >= 0xffff_0000_0000_0000 {
                            continue;
                        }
                        if smp.phys_addr == Some(0) {
                            smp.phys_addr = None;
                        }
                        smp.seq = self.seq;
                        smp.event = *ev;
                        self.seq += 1;
                        self.fresh.push(smp.clone());
                        self.data.samples.push(smp);
                    }
                    Some(Decoded::Mapping(mut m)) => {
                        m.seq = self.seq;
                        self.seq += 1;
                        self.data.mappings.push(m);
                    }
                    Some(Decoded::Lost(n)) => self.data.lost += n,
                    None => {}
                }
            }
        }
    }

    /// Moves the SPE rings' mappings and decoded samples into the samples (`last`: the
    /// final read).
    fn drain_spe(&mut self, last: bool) {
        for (r, _) in self.spe.iter_mut() {
            r.drain_ring(&mut self.data, &mut self.seq, &mut self.spe_tally);
        }
        for (r, ev) in self.spe.iter_mut() {
            r.drain_aux(
                *ev,
                self.include_kernel,
                &mut self.data,
                &mut self.seq,
                &mut self.fresh,
                &mut self.spe_tally,
                last,
            );
        }
    }

    /// Drains, asks the nodes of the fresh samples' pages, and waits a little.
    fn drain_and_ask(&mut self) {
        self.drain();
        self.nodes.query(&self.fresh);
        self.fresh.clear();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }

    /// Lets the gated command run and samples it until it ends; samples drained after
    /// it ended get a note, as their pages can no longer be asked.
    fn while_command_runs(
        &mut self,
        mut r: numalab_proc::Running,
        notes: &mut Vec<String>,
    ) -> Result<Option<numalab_proc::Outcome>, LiveError> {
        r.release()?;
        let waiter = std::thread::spawn(move || r.wait());
        while !waiter.is_finished() {
            self.drain_and_ask();
        }
        self.drain_spe(true);
        self.drain();
        // The process is gone: its pages cannot be asked any more.
        let left = self.fresh.len();
        self.fresh.clear();
        if left > 0 {
            notes.push(format!(
                "{left} samples arrived after the process ended; their page nodes could not be asked"
            ));
        }
        Ok(waiter.join().ok())
    }

    /// Samples a running process for `duration`.
    fn for_duration(&mut self, duration: std::time::Duration) {
        for (s, _) in self.samplers.iter_mut() {
            let _ = s.enable();
        }
        for (r, _) in self.spe.iter_mut() {
            r.enable();
        }
        let until = std::time::Instant::now() + duration;
        while std::time::Instant::now() < until {
            self.drain_and_ask();
        }
        for (s, _) in self.samplers.iter_mut() {
            let _ = s.disable();
        }
        for (r, _) in self.spe.iter_mut() {
            r.disable();
        }
        self.drain_spe(true);
        self.drain();
        self.nodes.query(&self.fresh);
    }
}

/// Starts a command gated (sampling begins at its exec), or names the running
/// process: (the child, the pid, whether gated).
fn start_target(target: &Target) -> Result<(Option<numalab_proc::Running>, i32, bool), LiveError> {
    Ok(match target {
        Target::Command(spec) => {
            let mut child = spec.clone();
            child.gated = true;
            let r = numalab_proc::spawn(&child)?;
            let pid = r.pid();
            (Some(r), pid, true)
        }
        Target::Pid { pid, .. } => (None, *pid, false),
    })
}

/// The CPUs to sample on: the online ones the PMU covers. A PMU that covers only some
/// CPUs (hybrid cores, IBS) says which; a per-task event on the others would fail, and
/// the task runs on them unsampled (a note says so).
fn sampled_cpus(facility: &Facility, notes: &mut Vec<String>) -> Vec<usize> {
    match &facility.cpus {
        Some(c) if !c.is_empty() => {
            let online = numalab_schema::cpulist::online(std::path::Path::new("/"));
            let covered: Vec<usize> = c
                .iter()
                .map(|&x| x as usize)
                .filter(|x| online.contains(x))
                .collect();
            if covered.len() < online.len() {
                notes.push(format!(
                    "{} covers {} of {} online CPUs; the program is not sampled on the others",
                    facility.pmu,
                    covered.len(),
                    online.len()
                ));
            }
            covered
        }
        _ => numalab_schema::cpulist::online(std::path::Path::new("/")),
    }
}

/// Where the samplers look. A command: every CPU the PMU covers, inherited by its
/// threads and children. A running process: each of its threads now (threads it
/// starts later are not seen; a note says how many).
/// (The kernel refuses inherited per-task ring buffers on any CPU: a command is
/// sampled per CPU.)
fn scopes(gated: bool, pid: i32, cpus: &[usize], notes: &mut Vec<String>) -> Vec<perfopen::Target> {
    if gated {
        return cpus
            .iter()
            .map(|&cpu| perfopen::Target::TaskOnCpu { pid, cpu })
            .collect();
    }
    let mut tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    tids.sort_unstable();
    if tids.is_empty() {
        tids.push(pid);
    }
    notes.push(format!(
        "process {pid} sampled in its {} thread(s) present when sampling started",
        tids.len()
    ));
    tids.into_iter().map(perfopen::Target::Thread).collect()
}

/// Samplers with their event index (every event in every scope), and the group
/// leaders they need.
type Opened = (Vec<(perf_event::Sampler, u16)>, Vec<perf_event::Counter>);

/// Opens every event in every scope, with physical addresses when asked; when they
/// need more privilege (or are not supported), again without, with a note. Returns
/// the samplers and the sample_type they use, or the event that failed and why.
fn open_samplers(
    specs: &[EventSpec],
    ids: &[u16],
    scopes: &[perfopen::Target],
    opts: &LiveOptions,
    gated: bool,
    notes: &mut Vec<String>,
) -> Result<(Opened, u64), (String, std::io::Error)> {
    let open_all = |sample_type: u64| -> Result<Opened, (String, std::io::Error)> {
        let (mut v, mut leaders) = (Vec::new(), Vec::new());
        for (e, &ev) in specs.iter().zip(ids) {
            for &scope in scopes {
                let (s, leader) = open_one(e, scope, opts.period, gated, sample_type)
                    .map_err(|err| (e.name.clone(), err))?;
                v.push((s, ev));
                leaders.extend(leader);
            }
        }
        Ok((v, leaders))
    };
    let mut sample_type = if opts.phys_addr {
        SAMPLE_TYPE_PHYS
    } else {
        SAMPLE_TYPE
    };
    let mut opened = open_all(sample_type);
    if let Err((_, err)) = &opened {
        if sample_type == SAMPLE_TYPE_PHYS
            && matches!(
                err.raw_os_error(),
                Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EINVAL)
            )
        {
            // Physical addresses need more privilege (or are not supported): without.
            notes.push(format!("physical addresses not sampled ({err})"));
            sample_type = SAMPLE_TYPE;
            opened = open_all(sample_type);
        }
    }
    opened.map(|v| (v, sample_type))
}

/// Why Arm SPE does not sample a running process.
pub const SPE_PID: &str = "Arm SPE samples a command numalab starts (`profile --memory-samples -- CMD`), one AUX area per CPU; sampling a running process with it is not supported (its records carry no CPU, and an area per thread and CPU would exceed the locked-memory limit); record with `perf mem record -p PID` and import `perf script -F comm,pid,tid,cpu,time,event,ip,sym,dso,addr,data_src,weight,phys_addr --show-mmap-events` output";

/// Why `event` could not be opened, with what would allow it.
fn open_error(event: String, e: std::io::Error) -> LiveError {
    let detail = match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "permission denied ({e}): sampling needs perf_event_paranoid <= 2 for your own processes, <= 1 with kernel samples, or CAP_PERFMON"
        ),
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) | Some(libc::EINVAL) => {
            format!("the PMU refused the event ({e})")
        }
        _ => e.to_string(),
    };
    LiveError::Open { event, detail }
}

/// Samples the target with the facility found under `opts.sysfs_root`.
pub fn record(target: &Target, opts: &LiveOptions) -> Result<Collected, LiveError> {
    let facility = detect(&opts.sysfs_root)?;
    let specs = event_specs(&facility, opts)?;
    let is_spe = facility.kind == FacilityKind::ArmSpe;
    if is_spe && matches!(target, Target::Pid { .. }) {
        return Err(LiveError::NotImplemented(SPE_PID.to_string()));
    }
    let mut notes = Vec::new();
    let (mut running, pid, gated) = start_target(target)?;
    let mut data = Samples::default();
    let ids: Vec<u16> = specs.iter().map(|e| data.event_index(&e.name)).collect();
    let cpus = sampled_cpus(&facility, &mut notes);
    let scopes = scopes(gated, pid, &cpus, &mut notes);
    let opened = if is_spe {
        let start = perfopen::Start::AtExec;
        spe::open(&facility, pid, &scopes, opts, start, &mut notes)
            .map(|(rings, phys)| ((Vec::new(), Vec::new()), rings, phys, SAMPLE_TYPE))
    } else {
        open_samplers(&specs, &ids, &scopes, opts, gated, &mut notes)
            .map(|(v, st)| (v, Vec::new(), st & S_PHYS_ADDR != 0, st))
            .map_err(|(event, e)| open_error(event, e))
    };
    let ((samplers, leaders), rings, phys, sample_type) = match opened {
        Ok(v) => v,
        Err(e) => {
            if let Some(mut r) = running.take() {
                let _ = r.release();
                let _ = r.wait();
            }
            return Err(e);
        }
    };
    let mut c = Collector {
        samplers,
        _leaders: leaders,
        spe: rings.into_iter().map(|r| (r, ids[0])).collect(),
        spe_tally: spe::SpeTally::default(),
        sample_type,
        include_kernel: opts.include_kernel,
        data,
        seq: 0,
        fresh: Vec::new(),
        nodes: crate::node::MovePages::new(),
    };
    let outcome = match running.take() {
        Some(r) => c.while_command_runs(r, &mut notes)?,
        None => {
            let Target::Pid { duration, .. } = target else {
                unreachable!("a command target has a running child")
            };
            c.for_duration(*duration);
            None
        }
    };
    if is_spe {
        notes.extend(c.spe_tally.notes(phys));
    }
    let (mut data, nodes) = (c.data, c.nodes);
    data.has_ip = true;
    // SPE's time stamps count the generic timer, not perf's clock: left out.
    data.has_time = !is_spe;
    data.drop_non_memory();
    data.has_phys_addr = phys;
    if let Some(e) = &nodes.error {
        notes.push(format!("page nodes: {e}"));
    }
    Ok(Collected {
        events: specs.iter().map(|e| e.name.clone()).collect(),
        facility,
        samples: data,
        nodes,
        outcome,
        notes,
    })
}

#[cfg(test)]
mod tests;
