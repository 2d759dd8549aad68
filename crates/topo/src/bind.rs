//! Thread pinning and NUMA memory placement, behind the [`Placer`] trait.
//!
//! The real backend ([`HwlocPlacer`]) binds through hwloc and asks the kernel where
//! pages really are (`move_pages` with no target). The fake backend ([`FakePlacer`])
//! follows the same contract in memory, so plans for a 160-core, 8-node machine can be
//! tested on a 2-core VM. Memory itself is always real: a [`Region`] is an anonymous
//! mapping, optionally backed by transparent or hugetlbfs huge pages.

use crate::error::TopoError;
use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::binding::{MemoryBindingFlags, MemoryBindingPolicy};
use hwlocality::memory::nodeset::NodeSet;
use hwlocality::Topology;
use std::collections::HashMap;
use std::sync::Mutex;

pub use numalab_schema::memory::{MemPolicy, PageKind, PagePlacement};

/// An anonymous memory mapping, page aligned, unmapped on drop.
#[derive(Debug)]
pub struct Region {
    ptr: *mut u8,
    len: usize,
    page_kind: PageKind,
    page_bytes: usize,
}

// SAFETY: the mapping is owned by the Region; access goes through &/&mut borrows.
unsafe impl Send for Region {}
// SAFETY: shared access is read-only through &[u8].
unsafe impl Sync for Region {}

fn os_err(call: &str, remedy: &str) -> TopoError {
    let e = std::io::Error::last_os_error();
    TopoError::Binding {
        call: call.into(),
        detail: e.to_string(),
        remedy: remedy.into(),
        unsupported: matches!(
            e.raw_os_error(),
            Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::EOPNOTSUPP)
        ),
    }
}

/// The base page size of this system.
pub fn base_page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as usize
    } else {
        4096
    }
}

impl Region {
    /// Maps `len` bytes (rounded up to whole pages). Nothing is touched yet, so a
    /// policy set with [`Placer::bind_region`] before the first write decides placement.
    pub fn new(len: usize, page_kind: PageKind) -> Result<Region, TopoError> {
        if len == 0 {
            return Err(TopoError::Selection(
                "a memory region of 0 bytes was asked for".into(),
            ));
        }
        let base = base_page_size();
        let (page_bytes, extra_flags) = match page_kind {
            PageKind::Base | PageKind::Transparent => (base, 0),
            PageKind::HugeTlb(size) => {
                if !size.is_power_of_two() || size < base as u64 {
                    return Err(TopoError::Selection(format!(
                        "{size} is not a huge page size"
                    )));
                }
                let shift = size.trailing_zeros() as libc::c_int;
                (
                    size as usize,
                    libc::MAP_HUGETLB | (shift << libc::MAP_HUGE_SHIFT),
                )
            }
        };
        // THP needs 2 MiB alignment to be useful: over-map and trim.
        let align = if page_kind == PageKind::Transparent {
            2 << 20
        } else {
            page_bytes
        };
        let len = len.div_ceil(page_bytes) * page_bytes;
        let map_len = if align > page_bytes { len + align } else { len };
        // SAFETY: anonymous private mapping; the result is checked below.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | extra_flags,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            let remedy = match page_kind {
                PageKind::HugeTlb(size) => format!(
                    "reserve huge pages first, e.g. `echo N > /sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages`, or use transparent huge pages",
                    size / 1024
                ),
                _ => "free some memory or ask for a smaller size".into(),
            };
            return Err(os_err(&format!("mmap({len} bytes)"), &remedy));
        }
        let mut ptr = raw.cast::<u8>();
        if map_len > len {
            let addr = ptr as usize;
            let aligned = addr.div_ceil(align) * align;
            let head = aligned - addr;
            let tail = map_len - head - len;
            // SAFETY: trimming parts of our own fresh mapping.
            unsafe {
                if head > 0 {
                    libc::munmap(raw, head);
                }
                if tail > 0 {
                    libc::munmap((aligned + len) as *mut libc::c_void, tail);
                }
            }
            ptr = aligned as *mut u8;
        }
        let advice = match page_kind {
            PageKind::Transparent => Some(libc::MADV_HUGEPAGE),
            PageKind::Base => Some(libc::MADV_NOHUGEPAGE),
            PageKind::HugeTlb(_) => None,
        };
        if let Some(advice) = advice {
            // SAFETY: advising our own mapping; failure only means no THP control.
            unsafe {
                libc::madvise(ptr.cast(), len, advice);
            }
        }
        Ok(Region {
            ptr,
            len,
            page_kind,
            page_bytes,
        })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty (never: regions have at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The kind of pages asked for.
    pub fn page_kind(&self) -> PageKind {
        self.page_kind
    }

    /// The size of the pages the region is managed in (base page size unless hugetlbfs).
    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    /// Number of pages.
    pub fn pages(&self) -> usize {
        self.len / self.page_bytes
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr/len describe our live mapping.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr/len describe our live mapping, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// A typed view (the region is page aligned, so any primitive type fits).
    pub fn as_mut_typed<T: bytemuck_like::Plain>(&mut self) -> &mut [T] {
        let n = self.len / std::mem::size_of::<T>();
        // SAFETY: page alignment satisfies T's alignment; T is plain old data for
        // which every bit pattern (including zero pages) is valid.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<T>(), n) }
    }

    /// A typed read-only view.
    pub fn as_typed<T: bytemuck_like::Plain>(&self) -> &[T] {
        let n = self.len / std::mem::size_of::<T>();
        // SAFETY: as for as_mut_typed.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<T>(), n) }
    }

    /// Writes one byte per page so that every page is allocated now, by this thread.
    pub fn touch(&mut self) {
        let step = self.page_bytes;
        let s = self.as_mut_slice();
        let mut i = 0;
        while i < s.len() {
            // SAFETY: i < len; volatile so the touch is not optimised away.
            unsafe { std::ptr::write_volatile(s.as_mut_ptr().add(i), 0) };
            i += step;
        }
    }

    /// Bytes of the region backed by transparent huge pages, from `/proc/self/smaps`.
    pub fn thp_bytes(&self) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let start = self.ptr as usize;
        let end = start + self.len;
        let mut total = 0u64;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((a, b)) = range.split_once('-') {
                    if let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                    {
                        inside = a < end && b > start;
                        continue;
                    }
                }
            }
            if inside {
                if let Some(rest) = line.strip_prefix("AnonHugePages:") {
                    total += crate::system::kb_bytes(rest)?;
                }
            }
        }
        Some(total)
    }

    fn page_addresses(&self) -> Vec<*mut libc::c_void> {
        (0..self.pages())
            .map(|i| self.ptr.wrapping_add(i * self.page_bytes).cast())
            .collect()
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly our mapping.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// Marker for plain-old-data element types of typed region views.
pub mod bytemuck_like {
    /// Types for which every bit pattern is valid and that need no drop.
    ///
    /// # Safety
    /// Implement only for such types.
    pub unsafe trait Plain: Copy + 'static {}
    // SAFETY: primitive numbers accept every bit pattern.
    unsafe impl Plain for u8 {}
    // SAFETY: as above.
    unsafe impl Plain for u32 {}
    // SAFETY: as above.
    unsafe impl Plain for u64 {}
    // SAFETY: as above.
    unsafe impl Plain for usize {}
    // SAFETY: as above.
    unsafe impl Plain for f32 {}
    // SAFETY: as above.
    unsafe impl Plain for f64 {}
}

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

fn move_pages_syscall(
    pages: &[*mut libc::c_void],
    nodes: Option<&[libc::c_int]>,
    status: &mut [libc::c_int],
) -> Result<(), std::io::Error> {
    // SAFETY: pages/status have the same length; nodes is null or the same length;
    // pid 0 is this process.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::c_long,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            nodes.map_or(std::ptr::null(), |n| n.as_ptr()),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Asks the kernel for the node of each page (move_pages with no target nodes).
pub fn query_page_nodes(region: &Region) -> Result<Vec<Option<u32>>, TopoError> {
    let pages = region.page_addresses();
    let mut status = vec![0 as libc::c_int; pages.len()];
    move_pages_syscall(&pages, None, &mut status).map_err(|e| TopoError::Binding {
        call: "move_pages(query)".into(),
        detail: e.to_string(),
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
            detail: e.to_string(),
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
        p.insert(region.ptr as usize, policy.clone());
        // A new region may reuse the address of an earlier, moved one.
        self.moved.lock().unwrap().remove(&(region.ptr as usize));
        Ok(())
    }

    fn page_nodes(&self, region: &Region) -> Result<Vec<Option<u32>>, TopoError> {
        if let Some(n) = self.moved.lock().unwrap().get(&(region.ptr as usize)) {
            return Ok(vec![Some(*n); region.pages()]);
        }
        let policy = self
            .policies
            .lock()
            .unwrap()
            .get(&(region.ptr as usize))
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
        self.moved.lock().unwrap().insert(region.ptr as usize, node);
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
