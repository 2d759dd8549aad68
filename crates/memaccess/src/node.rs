//! On which NUMA node each sampled page was: asked, never assumed.
//!
//! - [`MovePages`]: `move_pages(pid, n, pages, NULL, status, 0)` asks the kernel where
//!   the pages of a live process are (no page moves when `nodes` is NULL). Only while
//!   the process lives; the live sampler asks as samples arrive.
//! - [`PhysAddrSysfs`]: a sampled physical address, mapped to a node through the memory
//!   blocks sysfs lists under `/sys/devices/system/node/node*/memory*`; valid only for
//!   an import made on the machine that recorded it, which the user must say.
//! - otherwise only what the PMU said: its remote bit gives "remote per the PMU" or
//!   "local per the PMU", no node.
//!
//! Every answer says how it was obtained ([`NodeHow`]).

use crate::sample::MemSample;
use std::collections::HashMap;
use std::path::Path;

/// How a node was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeHow {
    /// move_pages on the live process.
    MovePages,
    /// phys_addr and this machine's sysfs memory blocks.
    PhysAddrSysfs,
    /// Only the PMU's remote indication.
    PmuRemoteBit,
    /// Nothing known.
    Unknown,
}

impl NodeHow {
    /// Name for records.
    pub fn name(self) -> &'static str {
        match self {
            NodeHow::MovePages => "move_pages",
            NodeHow::PhysAddrSysfs => "phys_addr + sysfs memory blocks",
            NodeHow::PmuRemoteBit => "PMU remote bit",
            NodeHow::Unknown => "unknown",
        }
    }
}

/// Where a sample's page was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeOf {
    /// On this node.
    Node(u32),
    /// The PMU said the access was served from another node.
    RemotePerPmu,
    /// The PMU said it was served locally.
    LocalPerPmu,
    /// Not known.
    Unknown,
}

impl NodeOf {
    /// Label for tables.
    pub fn label(self) -> String {
        match self {
            NodeOf::Node(n) => format!("node {n}"),
            NodeOf::RemotePerPmu => "remote per the PMU".into(),
            NodeOf::LocalPerPmu => "local per the PMU".into(),
            NodeOf::Unknown => "unknown".into(),
        }
    }
}

/// A node and how it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeAnswer {
    /// The node.
    pub node: NodeOf,
    /// How.
    pub how: NodeHow,
}

/// Something that can tell the node of sampled pages.
pub trait NodeResolver {
    /// How its answers are obtained.
    fn how(&self) -> NodeHow;
    /// The node of each sample's page (None: this resolver does not know).
    fn resolve(&mut self, samples: &[MemSample]) -> Vec<Option<u32>>;
}

/// Asks each resolver in turn; what none knows comes from the PMU's remote bit when it
/// said anything about locality, else is unknown.
pub fn resolve_nodes(
    samples: &[MemSample],
    resolvers: &mut [&mut dyn NodeResolver],
) -> Vec<NodeAnswer> {
    let mut out: Vec<Option<NodeAnswer>> = vec![None; samples.len()];
    for r in resolvers.iter_mut() {
        let how = r.how();
        let todo: Vec<usize> = (0..samples.len()).filter(|&i| out[i].is_none()).collect();
        if todo.is_empty() {
            break;
        }
        let subset: Vec<MemSample> = todo.iter().map(|&i| samples[i].clone()).collect();
        for (k, v) in r.resolve(&subset).into_iter().enumerate() {
            if let (Some(n), Some(&i)) = (v, todo.get(k)) {
                out[i] = Some(NodeAnswer {
                    node: NodeOf::Node(n),
                    how,
                });
            }
        }
    }
    out.into_iter()
        .zip(samples)
        .map(|(a, s)| {
            a.unwrap_or_else(|| {
                if s.data_src.has_level() {
                    NodeAnswer {
                        node: if s.data_src.remote_node() {
                            NodeOf::RemotePerPmu
                        } else {
                            NodeOf::LocalPerPmu
                        },
                        how: NodeHow::PmuRemoteBit,
                    }
                } else {
                    NodeAnswer {
                        node: NodeOf::Unknown,
                        how: NodeHow::Unknown,
                    }
                }
            })
        })
        .collect()
}

/// The base page size.
pub fn page_size() -> u64 {
    let p = crate::sys::sysconf_page_size();
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// move_pages(2) in query mode on another process.
pub fn query_pages(pid: u32, pages: &[u64]) -> std::io::Result<Vec<Option<u32>>> {
    let mut status = vec![0 as libc::c_int; pages.len()];
    let ptrs: Vec<*mut libc::c_void> = pages.iter().map(|&p| p as *mut libc::c_void).collect();
    for (chunk_p, chunk_s) in ptrs.chunks(4096).zip(status.chunks_mut(4096)) {
        let rc = crate::sys::move_pages_query(pid, chunk_p, chunk_s);
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(status
        .into_iter()
        .map(|s| (s >= 0).then_some(s as u32))
        .collect())
}

/// Nodes from move_pages, cached per page: the live sampler calls [`MovePages::query`]
/// as samples arrive; [`NodeResolver::resolve`] answers from the cache and asks for
/// pages not yet asked while the process still exists.
#[derive(Debug, Clone)]
pub struct MovePages {
    page: u64,
    cache: HashMap<(u32, u64), Option<u32>>,
    /// Why a query failed (first failure), if one did.
    pub error: Option<String>,
}

impl Default for MovePages {
    fn default() -> Self {
        MovePages {
            page: page_size(),
            cache: HashMap::new(),
            error: None,
        }
    }
}

impl MovePages {
    /// A resolver with an empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for the pages of these samples not yet asked.
    pub fn query(&mut self, samples: &[MemSample]) {
        let mut by_pid: HashMap<u32, Vec<u64>> = HashMap::new();
        for s in samples {
            let page = s.addr & !(self.page - 1);
            if !self.cache.contains_key(&(s.pid, page)) {
                let v = by_pid.entry(s.pid).or_default();
                if !v.contains(&page) {
                    v.push(page);
                }
            }
        }
        for (pid, pages) in by_pid {
            match query_pages(pid, &pages) {
                Ok(nodes) => {
                    for (p, n) in pages.into_iter().zip(nodes) {
                        self.cache.insert((pid, p), n);
                    }
                }
                Err(e) => {
                    if self.error.is_none() {
                        self.error = Some(format!("move_pages on pid {pid}: {e}"));
                    }
                    for p in pages {
                        self.cache.insert((pid, p), None);
                    }
                }
            }
        }
    }

    /// Pages answered with a node.
    pub fn answered(&self) -> usize {
        self.cache.values().filter(|v| v.is_some()).count()
    }
}

impl NodeResolver for MovePages {
    fn how(&self) -> NodeHow {
        NodeHow::MovePages
    }
    fn resolve(&mut self, samples: &[MemSample]) -> Vec<Option<u32>> {
        self.query(samples);
        samples
            .iter()
            .map(|s| {
                self.cache
                    .get(&(s.pid, s.addr & !(self.page - 1)))
                    .copied()
                    .flatten()
            })
            .collect()
    }
}

/// Nodes of physical addresses from sysfs memory blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct PhysAddrSysfs {
    /// Memory block size, bytes.
    pub block_bytes: u64,
    /// Block number -> node.
    pub blocks: HashMap<u64, u32>,
}

impl PhysAddrSysfs {
    /// Reads `ROOT/devices/system/memory/block_size_bytes` (hex) and the `memoryN`
    /// entries of `ROOT/devices/system/node/nodeM/` (ROOT is normally `/sys`).
    pub fn read(root: &Path) -> Result<PhysAddrSysfs, String> {
        let bs_path = root.join("devices/system/memory/block_size_bytes");
        let bs =
            std::fs::read_to_string(&bs_path).map_err(|e| format!("{}: {e}", bs_path.display()))?;
        let t = bs.trim();
        let block_bytes = u64::from_str_radix(t.trim_start_matches("0x"), 16)
            .map_err(|_| format!("{}: {t:?} is not hex", bs_path.display()))?;
        if block_bytes == 0 {
            return Err(format!("{}: block size 0", bs_path.display()));
        }
        let node_dir = root.join("devices/system/node");
        let mut blocks = HashMap::new();
        let entries =
            std::fs::read_dir(&node_dir).map_err(|e| format!("{}: {e}", node_dir.display()))?;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(node) = name
                .strip_prefix("node")
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(inner) = std::fs::read_dir(e.path()) else {
                continue;
            };
            for m in inner.flatten() {
                let mname = m.file_name().to_string_lossy().into_owned();
                if let Some(b) = mname
                    .strip_prefix("memory")
                    .and_then(|b| b.parse::<u64>().ok())
                {
                    blocks.insert(b, node);
                }
            }
        }
        if blocks.is_empty() {
            return Err(format!(
                "{}: no memory blocks listed under node*/ (memory hot-plug sysfs absent)",
                node_dir.display()
            ));
        }
        Ok(PhysAddrSysfs {
            block_bytes,
            blocks,
        })
    }

    /// The node of a physical address.
    pub fn node_of(&self, phys: u64) -> Option<u32> {
        self.blocks.get(&(phys / self.block_bytes)).copied()
    }
}

impl NodeResolver for PhysAddrSysfs {
    fn how(&self) -> NodeHow {
        NodeHow::PhysAddrSysfs
    }
    fn resolve(&mut self, samples: &[MemSample]) -> Vec<Option<u32>> {
        samples
            .iter()
            .map(|s| {
                s.phys_addr
                    .filter(|&p| p != 0)
                    .and_then(|p| self.node_of(p))
            })
            .collect()
    }
}
