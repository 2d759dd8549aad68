//! CPU selections written by users (`--cpus`), parsed in two steps: syntax first (no
//! hardware touched, so `--help` and flag errors are instant), then resolution against
//! a [`Machine`] (which reports CPUs or nodes that do not exist).
//!
//! Syntax: comma-separated items, each one of `N`, `N-M` (OS CPU ids), `node:N[-M]`
//! (the CPUs of NUMA nodes), `package:N[-M]` (by package position), `core:N[-M]` (all
//! PUs of cores, by position), or `all`.

use crate::error::TopoError;
use numalab_schema::cpulist;
use numalab_schema::machine::Machine;
use numalab_schema::memory::MemPolicy;

/// One item of a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// OS CPU ids.
    Cpus(Vec<u32>),
    /// NUMA nodes by OS index.
    Nodes(Vec<u32>),
    /// Packages by position.
    Packages(Vec<u32>),
    /// Cores by position.
    Cores(Vec<u32>),
    /// Every PU.
    All,
}

/// A parsed, unresolved CPU selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSelection {
    /// The text as given.
    pub text: String,
    /// Its items.
    pub items: Vec<Item>,
}

impl std::str::FromStr for CpuSelection {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        CpuSelection::parse(s).map_err(|e| e.to_string())
    }
}

impl CpuSelection {
    /// Checks the syntax.
    pub fn parse(text: &str) -> Result<CpuSelection, TopoError> {
        let err = |why: String| {
            TopoError::Selection(format!(
                "--cpus {text:?}: {why} (use e.g. 0-3,8 or node:1 or package:0 or core:0-7 or all)"
            ))
        };
        let mut items = Vec::new();
        if text.trim().is_empty() {
            return Err(err("the selection is empty".into()));
        }
        for token in text.split(',') {
            let token = token.trim();
            let list = |rest: &str| cpulist::parse(rest).map_err(|e| err(e.reason));
            let item = if token.eq_ignore_ascii_case("all") {
                Item::All
            } else if let Some(rest) = token.strip_prefix("node:") {
                Item::Nodes(list(rest)?)
            } else if let Some(rest) = token.strip_prefix("package:") {
                Item::Packages(list(rest)?)
            } else if let Some(rest) = token.strip_prefix("core:") {
                Item::Cores(list(rest)?)
            } else if token.contains(':') {
                return Err(err(format!("unknown prefix in {token:?}")));
            } else {
                Item::Cpus(list(token)?)
            };
            items.push(item);
        }
        Ok(CpuSelection {
            text: text.to_string(),
            items,
        })
    }

    /// Resolves to sorted OS CPU ids on `machine`.
    pub fn resolve(&self, machine: &Machine) -> Result<Vec<u32>, TopoError> {
        let all = machine.pu_ids();
        let err = |why: String| {
            TopoError::Selection(format!("--cpus {:?}: {why}; see `numalab topo`", self.text))
        };
        let mut out = Vec::new();
        for item in &self.items {
            match item {
                Item::All => out.extend(&all),
                Item::Cpus(ids) => {
                    let missing: Vec<u32> =
                        ids.iter().copied().filter(|i| !all.contains(i)).collect();
                    if !missing.is_empty() {
                        return Err(err(format!(
                            "CPU {} does not exist here (this machine has CPUs {})",
                            cpulist::format(&missing),
                            cpulist::format(&all)
                        )));
                    }
                    out.extend(ids);
                }
                Item::Nodes(nodes) => {
                    for n in nodes {
                        let node = machine.node(*n).ok_or_else(|| {
                            let have: Vec<u32> =
                                machine.numa_nodes.iter().map(|n| n.os_index).collect();
                            err(format!(
                                "NUMA node {n} does not exist (nodes: {})",
                                cpulist::format(&have)
                            ))
                        })?;
                        if node.cpus.is_empty() {
                            return Err(err(format!(
                                "NUMA node {n} has no CPUs (it is a memory-only node)"
                            )));
                        }
                        out.extend(&node.cpus);
                    }
                }
                Item::Packages(pkgs) => {
                    for p in pkgs {
                        let pkg = machine.packages.get(*p as usize).ok_or_else(|| {
                            err(format!(
                                "package {p} does not exist ({} package(s), numbered from 0)",
                                machine.packages.len()
                            ))
                        })?;
                        out.extend(&pkg.cpus);
                    }
                }
                Item::Cores(cores) => {
                    for c in cores {
                        let core = machine.cores.get(*c as usize).ok_or_else(|| {
                            err(format!(
                                "core {c} does not exist ({} cores, numbered from 0)",
                                machine.cores.len()
                            ))
                        })?;
                        out.extend(&core.pus);
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

/// Parses and checks a list of NUMA nodes with memory (`--nodes 0,2` or `all`).
pub fn resolve_nodes(text: &str, machine: &Machine) -> Result<Vec<u32>, TopoError> {
    let with_memory: Vec<u32> = machine
        .numa_nodes
        .iter()
        .filter(|n| n.memory_bytes > 0)
        .map(|n| n.os_index)
        .collect();
    if text.trim().eq_ignore_ascii_case("all") {
        return Ok(with_memory);
    }
    let ids = cpulist::parse(text)
        .map_err(|e| TopoError::Selection(format!("node list {text:?}: {}", e.reason)))?;
    for id in &ids {
        if !with_memory.contains(id) {
            let why = if machine.node(*id).is_some() {
                "has no memory"
            } else {
                "does not exist"
            };
            return Err(TopoError::Selection(format!(
                "NUMA node {id} {why} (nodes with memory: {}); see `numalab topo`",
                cpulist::format(&with_memory)
            )));
        }
    }
    Ok(ids)
}

/// Parses a memory policy (`--policy`) against the machine: `first-touch` (also `local`,
/// `default`), `bind:N`, `interleave:LIST` (or `interleave:all`), `preferred:N`. The
/// error names the text and what is accepted.
pub fn parse_policy(text: &str, machine: &Machine) -> Result<MemPolicy, TopoError> {
    let t = text.trim().to_ascii_lowercase();
    let err = |m: String| TopoError::Selection(format!("--policy {text:?}: {m}"));
    let nodes = |rest: &str| resolve_nodes(rest, machine).map_err(|e| err(e.to_string()));
    let one = |rest: &str| -> Result<u32, TopoError> {
        match nodes(rest)?.as_slice() {
            [n] => Ok(*n),
            _ => Err(err("give exactly one node".into())),
        }
    };
    if t == "first-touch" || t == "local" || t == "default" {
        Ok(MemPolicy::FirstTouch)
    } else if let Some(r) = t.strip_prefix("bind:") {
        Ok(MemPolicy::Bind(vec![one(r)?]))
    } else if let Some(r) = t.strip_prefix("interleave:") {
        Ok(MemPolicy::Interleave(nodes(r)?))
    } else if let Some(r) = t.strip_prefix("preferred:") {
        Ok(MemPolicy::Preferred(one(r)?))
    } else {
        Err(err(
            "use first-touch, bind:N, interleave:LIST (or interleave:all) or preferred:N".into(),
        ))
    }
}
