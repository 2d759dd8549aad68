//! Topology: what the machine is made of, and how to place threads and memory on it.
//!
//! Facts come from hwloc (through `hwlocality`), loaded from the live machine, from an
//! hwloc XML file or from a sysfs snapshot of another machine, and are turned into the
//! serializable [`numalab_schema::Machine`]. This crate also parses CPU selections
//! (`--cpus`), pins threads and binds memory ([`bind::Placer`]), and reads the host
//! facts that `doctor` and every results envelope need ([`system`]).
//!
//! `unsafe` lives in two modules: `sys` (the anonymous mapping [`bind::Region`] and the
//! memory system calls) and `hwloc_ffi` (hwloc's C API, for memory attributes).

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod bind;
pub mod cpuinfo;
pub mod describe;
pub mod error;
mod hwloc_ffi;
pub mod isolate;
pub mod load;
pub mod memattrs;
pub mod render;
pub mod select;
mod sys;
pub mod system;
pub mod zoneinfo;

pub use error::TopoError;
pub use load::Input;

use numalab_schema::Machine;

/// Loads and describes a machine in one step.
pub fn machine(input: &Input) -> Result<Machine, TopoError> {
    let loaded = load::load(input)?;
    Ok(describe::describe(&loaded))
}

/// Called first thing in a binary's `main` (see [`isolate`]): in a child started to check
/// a topology file, loads and describes it, then exits; otherwise enables the check.
pub fn child_entry() {
    isolate::child_entry_with(|kind, path| {
        let input = match kind {
            isolate::Kind::Xml => Input::Xml(path),
            isolate::Kind::SnapshotDir => Input::SnapshotDir(path),
        };
        if let Ok(loaded) = load::load_in_process(&input) {
            let _ = describe::describe(&loaded);
        }
    });
}

/// Describes the live machine.
pub fn live() -> Result<Machine, TopoError> {
    machine(&Input::Live)
}

/// Describes the live machine and returns the binding backend built on the same hwloc
/// topology: one discovery instead of two (hwloc's discovery is most of a short
/// command's start-up, about 10 ms on a 2-CPU machine).
pub fn live_with_placer() -> Result<(Machine, bind::HwlocPlacer), TopoError> {
    let loaded = load::load(&Input::Live)?;
    let machine = describe::describe(&loaded);
    Ok((machine, bind::HwlocPlacer::from_loaded(loaded)))
}

/// Describes a machine from an hwloc synthetic description such as
/// `"pack:2 numa:1 core:80 pu:1"` (see [`load::load_synthetic`]).
pub fn synthetic(description: &str) -> Result<Machine, TopoError> {
    let loaded = load::load_synthetic(description)?;
    Ok(describe::describe(&loaded))
}

/// Writes the live machine's topology as hwloc XML (for `numalab topo --input` elsewhere).
pub fn export_live_xml(path: &std::path::Path) -> Result<(), TopoError> {
    let loaded = load::load(&Input::Live)?;
    let xml = loaded
        .topology
        .export_xml(hwlocality::topology::export::xml::XMLExportFlags::empty())
        .map_err(|e| TopoError::Hwloc {
            what: "this machine".into(),
            detail: e.to_string(),
            remedy: "report this as a bug".into(),
        })?;
    // An output like any other: a missing folder or a full disk is a failed write
    // (exit 1) with the remedy, never "cannot read" bad input.
    let what = "this machine's topology";
    numalab_schema::output::write_file(path, xml.as_str().as_bytes(), what, "--export-xml")?;
    Ok(())
}
