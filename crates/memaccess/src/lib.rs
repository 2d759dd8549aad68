//! Data-address sampling: which data structures the slow and the remote accesses hit,
//! on which node their pages are, and which cache lines are falsely shared, in the
//! spirit of `perf mem` and `perf c2c`.
//!
//! Two sources, one analysis:
//!
//! - [`import`]: `perf script` text of `perf mem record` / `perf c2c record` samples
//!   (recognised by content with [`looks_like`]; fields in [`script`]);
//! - [`record`]: live sampling with the machine's facility ([`detect`]: Arm SPE, Intel
//!   PEBS load latency, AMD IBS op), PEBS and IBS through perf-event2, SPE with its AUX
//!   area mapped here ([`spe`] decodes its packets).
//!
//! Both produce [`Samples`]; [`attribute`](attribute::attribute) places each data
//! address in a mapping (PERF_RECORD_MMAP2), an ELF data symbol of the mapped file
//! (when readable and the same file) or a user-named region; [`node`] asks where the
//! pages are (move_pages on the live process, or a sampled physical address on this
//! machine when the user says the import was recorded here), else keeps only the PMU's
//! remote bit, labelled as such; [`analysis`] computes shares, slow loads, remote
//! fractions, per-node latency histograms and false-sharing lines into a
//! `pmu.memaccess` record ([`MemAccessRecord`]).

#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod analysis;
pub mod attribute;
pub mod datasrc;
pub mod live;
pub mod node;
pub mod sample;
pub mod script;
pub mod spe;
// The system calls and the AUX-area mapping, the modules allowed `unsafe`.
#[allow(unsafe_code)]
mod auxmap;
#[allow(unsafe_code)]
mod sys;

pub use analysis::{AnalysisOptions, ThresholdSpec};
pub use attribute::{parse_regions, NamedRegion};
pub use datasrc::DataSrc;
pub use live::{detect, Facility, FacilityKind, LiveError, LiveOptions, Target, Unsupported};
pub use numalab_records::memaccess::MemAccessRecord;
pub use sample::{Mapping, MemSample, Samples};
pub use script::looks_like;

use numalab_records::memaccess::MemSource;
use numalab_schema::{Classify, ErrorClass};
use std::path::PathBuf;

/// Why an import failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A line is malformed.
    #[error("{path}: line {line}: {message}")]
    Line {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong, and what was expected.
        message: String,
    },
    /// Nothing to import.
    #[error("{path}: {message}")]
    Empty {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl Classify for Error {
    fn class(&self) -> ErrorClass {
        ErrorClass::Input
    }
}

/// How to import.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The file's name, for messages and the record (None: "input").
    pub path: Option<String>,
    /// Threshold, latency unit, line size.
    pub analysis: AnalysisOptions,
    /// User-named regions.
    pub regions: Vec<NamedRegion>,
    /// Read ELF data symbols of mapped files that are readable here and the same file
    /// (inode or build id as recorded). Default true.
    pub read_symbols: bool,
    /// The samples were recorded on this machine (the user says so): sampled physical
    /// addresses are mapped to nodes through this machine's sysfs memory blocks.
    pub same_machine: bool,
    /// The sysfs root (`/sys`).
    pub sysfs_root: PathBuf,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            path: None,
            analysis: AnalysisOptions::default(),
            regions: Vec::new(),
            read_symbols: true,
            same_machine: false,
            sysfs_root: PathBuf::from("/sys"),
        }
    }
}

/// Imports `perf script` text into a `pmu.memaccess` record.
pub fn import(text: &str, opts: &ImportOptions) -> Result<MemAccessRecord, Error> {
    let path = opts.path.clone().unwrap_or_else(|| "input".into());
    let data = script::parse(text).map_err(|e| Error::Line {
        path: path.clone(),
        line: e.line,
        message: e.message,
    })?;
    if data.samples.is_empty() {
        return Err(Error::Empty {
            path,
            message: "no data-address samples (lines with addr, data_src and weight); produce them with `perf mem record` then `perf script -F comm,pid,tid,cpu,time,event,ip,sym,dso,addr,data_src,weight,phys_addr --show-mmap-events`".into(),
        });
    }
    let attribution = attribute::attribute(
        &data,
        &attribute::AttributeOptions {
            read_symbols: opts.read_symbols,
            regions: opts.regions.clone(),
        },
    );
    let mut extra_notes = Vec::new();
    let mut phys = None;
    if opts.same_machine {
        if !data.has_phys_addr {
            extra_notes.push("Recorded on this machine, but without physical addresses (record with --phys-data and print phys_addr): page nodes are not known.".to_string());
        } else {
            match node::PhysAddrSysfs::read(&opts.sysfs_root) {
                Ok(p) => phys = Some(p),
                Err(e) => extra_notes.push(format!("Physical addresses not mapped to nodes: {e}.")),
            }
        }
    }
    let nodes = match phys.as_mut() {
        Some(p) => node::resolve_nodes(&data.samples, &mut [p as &mut dyn node::NodeResolver]),
        None => node::resolve_nodes(&data.samples, &mut []),
    };
    let mut fields = vec!["pid", "cpu", "addr", "data_src", "weight"];
    if data.has_time {
        fields.push("time");
    }
    if data.has_ip {
        fields.push("ip");
    }
    if data.has_phys_addr {
        fields.push("phys_addr");
    }
    if !data.mappings.is_empty() {
        fields.push("--show-mmap-events");
    }
    let source = MemSource {
        kind: "imported".into(),
        path: opts.path.clone(),
        format: Some(format!("perf script ({})", fields.join(","))),
        command: Vec::new(),
        pid: None,
        events: Vec::new(),
    };
    let facility = analysis::facility_of_events(&data.events);
    let mut rec = analysis::analyze(
        &data,
        &attribution,
        &nodes,
        &opts.analysis,
        source,
        facility,
    );
    rec.notes.extend(extra_notes);
    Ok(rec)
}

/// How to record live.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Facility, period, ldlat...
    pub live: LiveOptions,
    /// Threshold, latency unit, line size.
    pub analysis: AnalysisOptions,
    /// User-named regions.
    pub regions: Vec<NamedRegion>,
    /// Read ELF data symbols of the mapped files.
    pub read_symbols: bool,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            live: LiveOptions::default(),
            analysis: AnalysisOptions::default(),
            regions: Vec::new(),
            read_symbols: true,
        }
    }
}

/// A live recording.
#[derive(Debug)]
pub struct Recorded {
    /// The record.
    pub record: MemAccessRecord,
    /// How the command ended (command targets).
    pub outcome: Option<numalab_proc::Outcome>,
}

/// Samples a command or a pid live and analyses the samples.
pub fn record(target: &Target, opts: &RecordOptions) -> Result<Recorded, LiveError> {
    let mut got = live::record(target, &opts.live)?;
    let attribution = attribute::attribute(
        &got.samples,
        &attribute::AttributeOptions {
            read_symbols: opts.read_symbols,
            regions: opts.regions.clone(),
        },
    );
    let mut phys = if got.samples.has_phys_addr {
        node::PhysAddrSysfs::read(&opts.live.sysfs_root).ok()
    } else {
        None
    };
    let nodes = {
        let mut rs: Vec<&mut dyn node::NodeResolver> = vec![&mut got.nodes];
        if let Some(p) = phys.as_mut() {
            rs.push(p);
        }
        node::resolve_nodes(&got.samples.samples, &mut rs)
    };
    let (command, pid) = match target {
        Target::Command(spec) => (spec.argv.clone(), None),
        Target::Pid { pid, .. } => (Vec::new(), Some(*pid as u32)),
    };
    let source = MemSource {
        kind: "measured".into(),
        path: None,
        format: None,
        command,
        pid,
        events: Vec::new(),
    };
    let facility = format!(
        "{} ({}: {})",
        got.facility.kind.name(),
        got.facility.pmu,
        got.events.join(", ")
    );
    let mut rec = analysis::analyze(
        &got.samples,
        &attribution,
        &nodes,
        &opts.analysis,
        source,
        facility,
    );
    rec.notes.extend(got.notes);
    Ok(Recorded {
        record: rec,
        outcome: got.outcome,
    })
}
