//! Thread pinning and NUMA memory placement, behind the [`Placer`] trait.
//!
//! The real backend ([`HwlocPlacer`]) binds through hwloc and asks the kernel where
//! pages really are (`move_pages` with no target). The fake backend ([`FakePlacer`])
//! follows the same contract in memory, so plans for a 160-core, 8-node machine can be
//! tested on a 2-core VM. Memory itself is always real: a [`Region`] is an anonymous
//! mapping, optionally backed by transparent or hugetlbfs huge pages.

use crate::error::TopoError;
use crate::sys::move_pages_syscall;
use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::binding::{MemoryBindingFlags, MemoryBindingPolicy};
use hwlocality::memory::nodeset::NodeSet;
use hwlocality::Topology;
use std::collections::HashMap;
use std::sync::Mutex;

pub use numalab_schema::memory::{MemPolicy, PageKind, PagePlacement};

pub use crate::sys::{base_page_size, bytemuck_like, Region};

/// Pinning and memory placement.
pub trait Placer: Send + Sync {
    /// Pins the calling thread to one PU (OS index).
    fn pin_current_thread(&self, pu: u32) -> Result<(), TopoError>;
    /// Pins the calling thread to a set of PUs.
    fn pin_current_thread_to_set(&self, pus: &[u32]) -> Result<(), TopoError>;
    /// Sets the policy of an untouched region; pages are placed when first written.
    fn bind_region(&self, region: &Region, policy: &MemPolicy) -> Result<(), TopoError>;
    /// The node of every page of the region (None: not allocated yet).
    fn page_nodes(&self, region: &Region) -> Result<Vec<Option<u32>>, TopoError>;
    /// Moves every page of the region to `node` (move_pages); returns the per-page result
    /// (Ok(node) or Err(errno)).
    fn move_region(&self, region: &Region, node: u32) -> Result<Vec<Result<u32, i32>>, TopoError>;
    /// A name for records ("hwloc" or "fake").
    fn backend(&self) -> &'static str;
}

/// The real backend: hwloc on the live machine.
pub struct HwlocPlacer {
    topology: Topology,
}

impl std::fmt::Debug for HwlocPlacer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HwlocPlacer")
    }
}

impl HwlocPlacer {
    /// Loads the live topology for binding.
    pub fn new() -> Result<Self, TopoError> {
        let loaded = crate::load::load(&crate::load::Input::Live)?;
        Ok(Self::from_loaded(loaded))
    }

    /// The backend on a topology already loaded from the live machine
    /// ([`crate::live_with_placer`]).
    pub(crate) fn from_loaded(loaded: crate::load::Loaded) -> Self {
        HwlocPlacer {
            topology: loaded.topology,
        }
    }

    fn cpuset(&self, pus: &[u32]) -> Result<CpuSet, TopoError> {
        let mut set = CpuSet::new();
        for &p in pus {
            if !self.topology.cpuset().is_set(p as usize) {
                return Err(TopoError::Selection(format!("CPU {p} is not available to this process (offline, or outside its cgroup/affinity)")));
            }
            set.set(p as usize);
        }
        Ok(set)
    }
}

/// Asks the kernel for the node of each page (move_pages with no target nodes).
pub fn query_page_nodes(region: &Region) -> Result<Vec<Option<u32>>, TopoError> {
    let pages = region.page_addresses();
    let mut status = vec![0 as libc::c_int; pages.len()];
    move_pages_syscall(&pages, None, &mut status).map_err(|e| TopoError::Binding {
        call: "move_pages(query)".into(),
        detail: numalab_schema::text::io_reason(&e),
        remedy: "the kernel was built without NUMA support or seccomp forbids move_pages".into(),
        unsupported: true,
    })?;
    Ok(status
        .into_iter()
        .map(|s| (s >= 0).then_some(s as u32))
        .collect())
}

impl Placer for HwlocPlacer {
    fn pin_current_thread(&self, pu: u32) -> Result<(), TopoError> {
        self.pin_current_thread_to_set(&[pu])
    }

    fn pin_current_thread_to_set(&self, pus: &[u32]) -> Result<(), TopoError> {
        let set = self.cpuset(pus)?;
        self.topology
            .bind_cpu(&set, CpuBindingFlags::THREAD | CpuBindingFlags::STRICT)
            .map_err(|e| TopoError::Binding {
                call: format!(
                    "hwloc_set_cpubind(thread, CPUs {})",
                    numalab_schema::cpulist::format(pus)
                ),
                detail: e.to_string(),
                remedy: "check the process's CPU affinity and cgroup (`numalab doctor`)".into(),
                unsupported: false,
            })
    }

    fn bind_region(&self, region: &Region, policy: &MemPolicy) -> Result<(), TopoError> {
        let (nodes, hw_policy, strict) = match policy {
            MemPolicy::FirstTouch => (Vec::new(), MemoryBindingPolicy::FirstTouch, false),
            MemPolicy::Bind(n) => (n.clone(), MemoryBindingPolicy::Bind, true),
            MemPolicy::Interleave(n) => (n.clone(), MemoryBindingPolicy::Interleave, false),
            // hwloc's Bind without STRICT is Linux's MPOL_PREFERRED.
            MemPolicy::Preferred(n) => (vec![*n], MemoryBindingPolicy::Bind, false),
        };
        let mut set = NodeSet::new();
        if nodes.is_empty() {
            for n in self.topology.nodeset().iter_set() {
                set.set(usize::from(n));
            }
        }
        for n in &nodes {
            if !self.topology.nodeset().is_set(*n as usize) {
                return Err(TopoError::Selection(format!(
                    "NUMA node {n} does not exist or is not allowed here; see `numalab topo`"
                )));
            }
            set.set(*n as usize);
        }
        let mut flags = MemoryBindingFlags::BY_NODE_SET;
        if strict {
            flags |= MemoryBindingFlags::STRICT;
        }
        self.topology
            .bind_memory_area(region.as_slice(), &set, hw_policy, flags)
            .map_err(|e| TopoError::Binding {
                call: format!("hwloc_set_area_membind({policy})"),
                detail: e.to_string(),
                remedy: "the kernel may lack NUMA support (CONFIG_NUMA) or the node is outside this process's cpuset".into(),
                unsupported: false,
            })
    }

    fn page_nodes(&self, region: &Region) -> Result<Vec<Option<u32>>, TopoError> {
        query_page_nodes(region)
    }

    fn move_region(&self, region: &Region, node: u32) -> Result<Vec<Result<u32, i32>>, TopoError> {
        let pages = region.page_addresses();
        let nodes = vec![node as libc::c_int; pages.len()];
        let mut status = vec![0 as libc::c_int; pages.len()];
        move_pages_syscall(&pages, Some(&nodes), &mut status).map_err(|e| TopoError::Binding {
            call: format!("move_pages(to node {node})"),
            detail: numalab_schema::text::io_reason(&e),
            remedy: "check that the node exists and has free memory (`numalab topo`)".into(),
            unsupported: e.raw_os_error() == Some(libc::ENOSYS),
        })?;
        Ok(status
            .into_iter()
            .map(|s| if s >= 0 { Ok(s as u32) } else { Err(-s) })
            .collect())
    }

    fn backend(&self) -> &'static str {
        "hwloc"
    }
}

/// A fake backend for tests of plans on machines we do not have: it records pinning
/// and placement requests and answers page queries as a well-behaved kernel would.
#[derive(Debug, Default)]
pub struct FakePlacer {
    /// Node of each PU (for first-touch placement).
    pu_node: HashMap<u32, u32>,
    /// Every NUMA node of the machine, with or without CPUs (memory-only nodes such as
    /// HBM or CXL can be bound to).
    nodes: Vec<u32>,
    /// Every pin request, in order: (thread name or id, PUs).
    pub pins: Mutex<Vec<(String, Vec<u32>)>>,
    policies: Mutex<HashMap<usize, MemPolicy>>,
    moved: Mutex<HashMap<usize, u32>>,
}

impl FakePlacer {
    /// A fake machine whose PU -> node map comes from a description.
    pub fn for_machine(m: &numalab_schema::Machine) -> Self {
        FakePlacer {
            pu_node: m
                .pus
                .iter()
                .filter_map(|p| Some((p.os_index, p.numa_node?)))
                .collect(),
            nodes: m.numa_nodes.iter().map(|n| n.os_index).collect(),
            ..Default::default()
        }
    }

    fn thread_name() -> String {
        let t = std::thread::current();
        t.name()
            .map(str::to_string)
            .unwrap_or_else(|| format!("{:?}", t.id()))
    }
}

thread_local! {
    static FAKE_PINNED: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Placer for FakePlacer {
    fn pin_current_thread(&self, pu: u32) -> Result<(), TopoError> {
        self.pin_current_thread_to_set(&[pu])
    }

    fn pin_current_thread_to_set(&self, pus: &[u32]) -> Result<(), TopoError> {
        if let Some(bad) = pus.iter().find(|p| !self.pu_node.contains_key(p)) {
            return Err(TopoError::Selection(format!(
                "CPU {bad} does not exist on the fake machine"
            )));
        }
        FAKE_PINNED.with(|p| *p.borrow_mut() = pus.to_vec());
        self.pins
            .lock()
            .unwrap()
            .push((Self::thread_name(), pus.to_vec()));
        Ok(())
    }

    fn bind_region(&self, region: &Region, policy: &MemPolicy) -> Result<(), TopoError> {
        let mut nodes: Vec<u32> = self.pu_node.values().copied().collect();
        nodes.extend(&self.nodes);
        let check = |n: &u32| {
            if nodes.contains(n) {
                Ok(())
            } else {
                Err(TopoError::Selection(format!(
                    "NUMA node {n} does not exist on the fake machine"
                )))
            }
        };
        match policy {
            MemPolicy::Bind(ns) | MemPolicy::Interleave(ns) => ns.iter().try_for_each(check)?,
            MemPolicy::Preferred(n) => check(n)?,
            MemPolicy::FirstTouch => {}
        }
        let mut p = self.policies.lock().unwrap();
        p.insert(region.addr(), policy.clone());
        // A new region may reuse the address of an earlier, moved one.
        self.moved.lock().unwrap().remove(&(region.addr()));
        Ok(())
    }

    fn page_nodes(&self, region: &Region) -> Result<Vec<Option<u32>>, TopoError> {
        if let Some(n) = self.moved.lock().unwrap().get(&(region.addr())) {
            return Ok(vec![Some(*n); region.pages()]);
        }
        let policy = self
            .policies
            .lock()
            .unwrap()
            .get(&(region.addr()))
            .cloned()
            .unwrap_or(MemPolicy::FirstTouch);
        let pages = region.pages();
        Ok(match policy {
            MemPolicy::Bind(ns) => (0..pages).map(|_| ns.first().copied()).collect(),
            MemPolicy::Preferred(n) => vec![Some(n); pages],
            MemPolicy::Interleave(ns) => (0..pages).map(|i| Some(ns[i % ns.len()])).collect(),
            MemPolicy::FirstTouch => {
                let pinned = FAKE_PINNED.with(|p| p.borrow().first().copied());
                let node = pinned.and_then(|pu| self.pu_node.get(&pu).copied());
                vec![node; pages]
            }
        })
    }

    fn move_region(&self, region: &Region, node: u32) -> Result<Vec<Result<u32, i32>>, TopoError> {
        self.moved.lock().unwrap().insert(region.addr(), node);
        Ok(vec![Ok(node); region.pages()])
    }

    fn backend(&self) -> &'static str {
        "fake"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_is_aligned_and_touchable() {
        let mut r = Region::new(10_000, PageKind::Base).unwrap();
        assert_eq!(r.len() % base_page_size(), 0);
        assert!(r.len() >= 10_000);
        assert_eq!(r.as_slice().as_ptr() as usize % base_page_size(), 0);
        r.touch();
        let v = r.as_mut_typed::<u64>();
        v[3] = 42;
        assert_eq!(r.as_typed::<u64>()[3], 42);
    }

    #[test]
    fn transparent_region_is_2mib_aligned() {
        let r = Region::new(4 << 20, PageKind::Transparent).unwrap();
        assert_eq!(r.as_slice().as_ptr() as usize % (2 << 20), 0);
    }

    #[test]
    fn kernel_reports_touched_pages_only() {
        // Real move_pages query on this machine: untouched pages are not present,
        // touched ones are on some node that exists.
        let mut r = Region::new(16 * base_page_size(), PageKind::Base).unwrap();
        let before = query_page_nodes(&r).unwrap();
        assert!(before.iter().all(|n| n.is_none()), "{before:?}");
        r.touch();
        let after = query_page_nodes(&r).unwrap();
        assert!(after.iter().all(|n| n.is_some()), "{after:?}");
        let p = PagePlacement::from_page_nodes(&after);
        assert_eq!(p.pages_per_node.iter().map(|(_, c)| c).sum::<u64>(), 16);
    }

    #[test]
    fn placement_fractions() {
        let p = PagePlacement::from_page_nodes(&[Some(0), Some(1), Some(1), None]);
        assert_eq!(p.pages_per_node, vec![(0, 1), (1, 2)]);
        assert_eq!(p.not_present, 1);
        assert!((p.fraction_on(&[1]) - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn policy_display() {
        assert_eq!(
            MemPolicy::Interleave(vec![0, 1, 2, 3]).to_string(),
            "interleave:0-3"
        );
        assert_eq!(MemPolicy::Preferred(2).to_string(), "preferred:2");
    }
}
