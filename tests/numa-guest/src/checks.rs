//! The checks that run inside the guest, and the list of them ([`plan`]).
//!
//! Placement checks call the library code numalab itself uses (`numalab_topo::bind`:
//! [`HwlocPlacer`], [`Region`], [`MemPolicy`], `query_page_nodes`, `move_region`) and
//! then ask the kernel where the pages really are, twice: through `move_pages` (as
//! numalab does) and through `/proc/self/numa_maps` (which numalab does not use, so a
//! bug in our query cannot hide a bug in our binding). Expectations come from the
//! [`Layout`] QEMU was started with, never from what the guest reports. CLI checks
//! (the `numalab` binary and its `--json` output) are listed in [`crate::cli_checks`].

use crate::layout::Layout;
use crate::platform::Boot;
use numalab_schema::{cpulist, Machine};
use numalab_topo::bind::{
    base_page_size, query_page_nodes, HwlocPlacer, MemPolicy, PageKind, PagePlacement, Placer,
    Region,
};
use numalab_topo::select::{resolve_nodes, CpuSelection};
use numalab_topo::system::SysRoot;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

/// What a check returns: what it saw (passed) or what went wrong (failed).
pub type CheckResult = Result<String, String>;

/// Pages per test region: 1 MiB of 4 KiB pages; small because TCG is slow.
pub const PAGES: usize = 256;

/// Everything a check may use inside the guest.
pub struct Ctx {
    /// The layout QEMU was started with (the expectations).
    pub layout: Layout,
    /// The machine QEMU emulates.
    pub boot: Boot,
    /// The `numalab` binary in the guest.
    pub numalab: PathBuf,
    placer: OnceLock<Result<HwlocPlacer, String>>,
    machine: OnceLock<Result<Machine, String>>,
    exports: std::sync::Mutex<Vec<(String, Vec<u8>)>>,
}

impl Ctx {
    /// A context for the guest `boot` describes.
    pub fn new(boot: Boot, numalab: PathBuf) -> Ctx {
        Ctx {
            layout: boot.layout.clone(),
            boot,
            numalab,
            placer: OnceLock::new(),
            machine: OnceLock::new(),
            exports: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Hands a file to the host (sent on the results port after the check ends).
    pub fn export(&self, name: &str, content: Vec<u8>) {
        if let Ok(mut v) = self.exports.lock() {
            v.push((name.to_string(), content));
        }
    }

    /// The files exported since the last call.
    pub fn take_exports(&self) -> Vec<(String, Vec<u8>)> {
        self.exports
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }

    /// The hwloc placer (loaded once).
    pub fn placer(&self) -> Result<&HwlocPlacer, String> {
        self.placer
            .get_or_init(|| HwlocPlacer::new().map_err(|e| format!("HwlocPlacer::new: {e}")))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// numalab's description of the live guest (loaded once).
    pub fn machine(&self) -> Result<&Machine, String> {
        self.machine
            .get_or_init(|| numalab_topo::live().map_err(|e| format!("numalab_topo::live: {e}")))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// The body of a check.
pub type CheckFn = Box<dyn Fn(&Ctx) -> CheckResult + Send + Sync>;

/// A named check.
pub struct Check {
    /// Unique name, dotted (`bind.node4`).
    pub name: String,
    /// The check.
    pub run: CheckFn,
}

impl Check {
    /// A check from a closure.
    pub fn new(
        name: impl Into<String>,
        run: impl Fn(&Ctx) -> CheckResult + Send + Sync + 'static,
    ) -> Check {
        Check {
            name: name.into(),
            run: Box::new(run),
        }
    }
}

/// Keeps the checks whose name contains one of the comma-separated patterns (all when
/// `only` is None or empty).
pub fn select(checks: Vec<Check>, only: Option<&str>) -> Vec<Check> {
    let pats: Vec<&str> = only
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if pats.is_empty() {
        return checks;
    }
    checks
        .into_iter()
        .filter(|c| pats.iter().any(|p| c.name.contains(p)))
        .collect()
}

pub(crate) fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// The message of a panic payload.
pub fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".into()
    }
}

/// Runs `f` on a new thread pinned (through the placer) to CPU `pu`, after checking
/// with `sched_getcpu` that it really runs there.
pub fn on_cpu<T: Send>(
    ctx: &Ctx,
    pu: u32,
    f: impl FnOnce(&HwlocPlacer) -> Result<T, String> + Send,
) -> Result<T, String> {
    let placer = ctx.placer()?;
    std::thread::scope(|sc| {
        sc.spawn(|| {
            placer
                .pin_current_thread(pu)
                .map_err(|e| format!("pinning to CPU {pu}: {e}"))?;
            // SAFETY: sched_getcpu has no preconditions.
            let cpu = unsafe { libc::sched_getcpu() };
            if cpu != pu as i32 {
                return Err(format!("pinned to CPU {pu} but running on CPU {cpu}"));
            }
            f(placer)
        })
        .join()
        .map_err(panic_message)?
    })
}

pub(crate) fn new_region(pages: usize) -> Result<Region, String> {
    Region::new(pages * base_page_size(), PageKind::Base).map_err(s)
}

/// Fails unless every page is present and on `node`.
pub fn expect_all_on(nodes: &[Option<u32>], node: u32) -> Result<(), String> {
    let p = PagePlacement::from_page_nodes(nodes);
    if p.not_present == 0 && p.pages_per_node == [(node, nodes.len() as u64)] {
        Ok(())
    } else {
        Err(format!(
            "expected all {} pages on node {node}, the kernel says {}",
            nodes.len(),
            describe_placement(&p)
        ))
    }
}

pub(crate) fn describe_placement(p: &PagePlacement) -> String {
    let mut parts: Vec<String> = p
        .pages_per_node
        .iter()
        .map(|(n, c)| format!("{c} on node {n}"))
        .collect();
    if p.not_present > 0 {
        parts.push(format!("{} not present", p.not_present));
    }
    if parts.is_empty() {
        "no pages".into()
    } else {
        parts.join(", ")
    }
}

/// Checks that pages follow `asked` round-robin (Linux interleaves by page offset, so
/// the first page may start anywhere in the cycle): page i is on
/// `asked[(r + i) % n]` for one rotation r, and counts differ by at most one.
pub fn expect_round_robin(asked: &[u32], nodes: &[Option<u32>]) -> Result<String, String> {
    let mut asked = asked.to_vec();
    asked.sort_unstable();
    asked.dedup();
    let n = asked.len();
    let first = nodes
        .first()
        .copied()
        .flatten()
        .ok_or("the first page is not present")?;
    let r = asked
        .iter()
        .position(|&a| a == first)
        .ok_or_else(|| format!("page 0 is on node {first}, not one of {asked:?}"))?;
    for (i, got) in nodes.iter().enumerate() {
        let want = asked[(r + i) % n];
        if *got != Some(want) {
            let around: Vec<String> = nodes[i.saturating_sub(3)..(i + 3).min(nodes.len())]
                .iter()
                .map(|x| x.map_or("-".into(), |v| v.to_string()))
                .collect();
            return Err(format!(
                "page {i} is on {} but round-robin over {} gives node {want} (pages {}..: {})",
                got.map_or("no node".into(), |v| format!("node {v}")),
                cpulist::format(&asked),
                i.saturating_sub(3),
                around.join(" ")
            ));
        }
    }
    let p = PagePlacement::from_page_nodes(nodes);
    let counts: Vec<u64> = p.pages_per_node.iter().map(|(_, c)| *c).collect();
    let (lo, hi) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    if p.pages_per_node.len() != n || hi - lo > 1 {
        return Err(format!("uneven interleave: {}", describe_placement(&p)));
    }
    Ok(describe_placement(&p))
}

/// One mapping's line of `/proc/PID/numa_maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaMapsEntry {
    /// Policy name ("default", "local", "bind", "interleave", "prefer", "prefer (many)").
    pub policy: String,
    /// Nodes of the policy (empty for "default").
    pub policy_nodes: Vec<u32>,
    /// `N<node>=<pages>` fields.
    pub pages_per_node: BTreeMap<u32, u64>,
}

/// Parses the numa_maps line of the mapping that starts at `addr`.
pub fn parse_numa_maps(text: &str, addr: usize) -> Option<NumaMapsEntry> {
    let prefix = format!("{addr:x} ");
    let line = text.lines().find(|l| l.starts_with(&prefix))?;
    let mut fields = line.split_whitespace().skip(1).peekable();
    let mut policy_field = fields.next()?.to_string();
    // "prefer (many):4" (MPOL_PREFERRED_MANY) is the one policy name with a space.
    if let Some(more) = fields.next_if(|f| f.starts_with('(')) {
        policy_field = format!("{policy_field} {more}");
    }
    let (name, list) = match policy_field.split_once(':') {
        Some((n, l)) => (n, cpulist::parse(l).ok()?),
        None => (policy_field.as_str(), Vec::new()),
    };
    // "bind=static:1" -> "bind" (mode flags are not used by numalab).
    let policy = name.split('=').next().unwrap_or(name).to_string();
    let mut pages_per_node = BTreeMap::new();
    for f in fields {
        if let Some((k, v)) = f.split_once('=') {
            if let (Some(node), Ok(count)) = (k.strip_prefix('N'), v.parse::<u64>()) {
                if let Ok(node) = node.parse::<u32>() {
                    pages_per_node.insert(node, count);
                }
            }
        }
    }
    Some(NumaMapsEntry {
        policy,
        policy_nodes: list,
        pages_per_node,
    })
}

/// The kernel's numa_maps entry for exactly this region (its own mapping).
pub fn numa_maps_of(region: &Region) -> Result<NumaMapsEntry, String> {
    let start = region.as_slice().as_ptr() as usize;
    let end = start + region.len();
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(s)?;
    let vma = maps.lines().find_map(|l| {
        let (range, _) = l.split_once(' ')?;
        let (a, b) = range.split_once('-')?;
        let (a, b) = (
            usize::from_str_radix(a, 16).ok()?,
            usize::from_str_radix(b, 16).ok()?,
        );
        (a <= start && start < b).then_some((a, b))
    });
    match vma {
        Some((a, b)) if a == start && b == end => {}
        Some((a, b)) => {
            return Err(format!(
                "the region {start:x}-{end:x} shares its mapping {a:x}-{b:x} with other memory; numa_maps cannot speak for it alone"
            ))
        }
        None => return Err(format!("no mapping at {start:x} in /proc/self/maps")),
    }
    let text = std::fs::read_to_string("/proc/self/numa_maps").map_err(s)?;
    parse_numa_maps(&text, start).ok_or_else(|| format!("no numa_maps line for {start:x}"))
}

/// Fails unless numa_maps shows one of these policy names over these nodes and the
/// same per-node counts as the move_pages query.
pub fn expect_numa_maps(
    entry: &NumaMapsEntry,
    policies: &[&str],
    policy_nodes: &[u32],
    queried: &[Option<u32>],
) -> Result<String, String> {
    let mut want_nodes = policy_nodes.to_vec();
    want_nodes.sort_unstable();
    if !policies.contains(&entry.policy.as_str()) || entry.policy_nodes != want_nodes {
        return Err(format!(
            "numa_maps shows policy {}:{} where {}:{} was set",
            entry.policy,
            cpulist::format(&entry.policy_nodes),
            policies.join("|"),
            cpulist::format(&want_nodes)
        ));
    }
    let p = PagePlacement::from_page_nodes(queried);
    let from_query: BTreeMap<u32, u64> = p.pages_per_node.iter().copied().collect();
    if from_query != entry.pages_per_node {
        return Err(format!(
            "numa_maps counts {:?} differ from move_pages counts {:?}",
            entry.pages_per_node, from_query
        ));
    }
    let counts: Vec<String> = entry
        .pages_per_node
        .iter()
        .map(|(n, c)| format!("N{n}={c}"))
        .collect();
    Ok(format!(
        "numa_maps {}{} {}",
        entry.policy,
        if want_nodes.is_empty() {
            String::new()
        } else {
            format!(":{}", cpulist::format(&want_nodes))
        },
        counts.join(" ")
    ))
}

pub(crate) fn read_sys(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|t| t.trim().to_string())
        .map_err(|e| format!("{path}: {e}"))
}

/// The guest is what QEMU was asked for (so later failures are numalab's, not QEMU's).
pub(crate) fn check_sysfs(ctx: &Ctx) -> CheckResult {
    let l = &ctx.layout;
    let base = "/sys/devices/system/node";
    let online = cpulist::parse(&read_sys(&format!("{base}/online"))?).map_err(s)?;
    if online != l.node_ids() {
        return Err(format!(
            "online nodes {online:?}, asked for {:?}",
            l.node_ids()
        ));
    }
    for n in &l.nodes {
        let text = read_sys(&format!("{base}/node{}/cpulist", n.id))?;
        let cpus = if text.is_empty() {
            Vec::new()
        } else {
            cpulist::parse(&text).map_err(s)?
        };
        if cpus != n.cpus {
            return Err(format!(
                "node {} has CPUs {cpus:?}, asked for {:?}",
                n.id, n.cpus
            ));
        }
        let row: Vec<u64> = read_sys(&format!("{base}/node{}/distance", n.id))?
            .split_whitespace()
            .map(|v| v.parse().map_err(s))
            .collect::<Result<_, _>>()?;
        if row != l.distances[n.id as usize] {
            return Err(format!(
                "node {} distances {row:?}, asked for {:?}",
                n.id, l.distances[n.id as usize]
            ));
        }
    }
    let has_cpu = cpulist::parse(&read_sys(&format!("{base}/has_cpu"))?).map_err(s)?;
    let want: Vec<u32> = l.cpu_nodes().map(|n| n.id).collect();
    if has_cpu != want {
        return Err(format!("has_cpu {has_cpu:?}, asked for {want:?}"));
    }
    Ok(format!(
        "kernel: nodes {} online, CPUs and SLIT rows as configured, memory-only {:?}",
        cpulist::format(&online),
        l.memory_only_nodes().map(|n| n.id).collect::<Vec<_>>()
    ))
}

/// The CPU node nearest to `node` by distance (lowest id on ties).
pub fn nearest_cpu_node(l: &Layout, node: u32) -> Option<&crate::layout::NodeSpec> {
    l.cpu_nodes().min_by_key(|n| (l.distance(node, n.id), n.id))
}

/// Compares numalab's machine description with the layout: nodes, CPUs, memory-only
/// node, memory sizes (at most what QEMU gave, and at most 15% or 64 MiB less, plus 512 KiB per CPU of the node: the kernel keeps some), PU-to-node
/// map, and the SLIT value by value.
pub fn compare_machine(l: &Layout, m: &Machine) -> CheckResult {
    let ids: Vec<u32> = m.numa_nodes.iter().map(|n| n.os_index).collect();
    if ids != l.node_ids() || m.summary.numa_nodes != l.nodes.len() {
        return Err(format!(
            "nodes {ids:?} (summary says {}), asked for {:?}",
            m.summary.numa_nodes,
            l.node_ids()
        ));
    }
    for (got, want) in m.numa_nodes.iter().zip(&l.nodes) {
        if got.has_cpus == want.cpus.is_empty() {
            return Err(format!(
                "node {}: has_cpus {} (CPUs {:?}), but it was given CPUs {:?}",
                want.id, got.has_cpus, got.cpus, want.cpus
            ));
        }
        // A memory-only node's `cpus` is its locality: hwloc attaches it next to the
        // CPU node nearest by distance (or nowhere: empty).
        let want_cpus = if want.cpus.is_empty() {
            nearest_cpu_node(l, want.id).map_or(Vec::new(), |n| n.cpus.clone())
        } else {
            want.cpus.clone()
        };
        if got.cpus != want_cpus && !(want.cpus.is_empty() && got.cpus.is_empty()) {
            return Err(format!(
                "node {}: CPUs {:?}, expected {want_cpus:?}",
                want.id, got.cpus
            ));
        }
        // The kernel keeps part of a node for itself (on the boot node its image and
        // early allocations, some 50 MiB; on every node the page descriptors, 1.6%, and
        // per-CPU areas for the node's CPUs): what a node reports is at most what it was
        // given and at most 15% or 64 MiB less, whichever is larger, plus 512 KiB per
        // CPU of the node (the wide guest's boot node of 80 CPUs kept 71 of 384 MiB).
        // The layouts' sizes differ by at least 64 MiB where they differ, so a node
        // reported with another's memory still fails.
        let asked = want.memory_mib << 20;
        let slack = (asked * 15 / 100).max(64 << 20) + ((want.cpus.len() as u64) << 19);
        if got.memory_bytes > asked || got.memory_bytes + slack < asked {
            return Err(format!(
                "node {}: {} bytes of memory, {:.0}% of the {} MiB configured (expected at most that, and at most {} MiB less)",
                want.id,
                got.memory_bytes,
                got.memory_bytes as f64 / asked as f64 * 100.0,
                want.memory_mib,
                slack >> 20
            ));
        }
    }
    let summary: Vec<(u32, Vec<u32>)> = m
        .summary
        .numa
        .iter()
        .map(|n| (n.os_index, n.cpus.clone()))
        .collect();
    let want: Vec<(u32, Vec<u32>)> = m
        .numa_nodes
        .iter()
        .map(|n| (n.os_index, n.cpus.clone()))
        .collect();
    if summary != want {
        return Err(format!(
            "summary.numa {summary:?} differs from numa_nodes {want:?}"
        ));
    }
    let cpu_nodes: Vec<u32> = m.cpu_nodes().map(|n| n.os_index).collect();
    let want_cpu_nodes: Vec<u32> = l.cpu_nodes().map(|n| n.id).collect();
    if cpu_nodes != want_cpu_nodes {
        return Err(format!(
            "nodes with CPUs {cpu_nodes:?}, asked for {want_cpu_nodes:?}"
        ));
    }
    for pu in &m.pus {
        let want = l.node_of_cpu(pu.os_index);
        if pu.numa_node != want {
            return Err(format!(
                "PU {} is on node {:?}, asked for {want:?}",
                pu.os_index, pu.numa_node
            ));
        }
    }
    if m.pus.len() != l.cpu_count() {
        return Err(format!("{} PUs, asked for {}", m.pus.len(), l.cpu_count()));
    }
    let slit = m.slit().ok_or("no SLIT (NUMALatency) distance matrix")?;
    for (i, a) in slit.nodes.iter().enumerate() {
        for (j, b) in slit.nodes.iter().enumerate() {
            let got = slit.values[i][j];
            let want = l.distance(*a, *b);
            if got != want {
                return Err(format!(
                    "SLIT {a}->{b} = {got}, configured {want} (matrix nodes {:?})",
                    slit.nodes
                ));
            }
        }
    }
    if slit.nodes != l.node_ids() {
        return Err(format!("SLIT covers nodes {:?}", slit.nodes));
    }
    Ok(format!(
        "{} nodes, CPUs {}, memory-only (has_cpus false) {:?}, {}x{} SLIT equal to the configured one",
        ids.len(),
        cpulist::format(&m.pu_ids()),
        m.numa_nodes
            .iter()
            .filter(|n| !n.has_cpus)
            .map(|n| n.os_index)
            .collect::<Vec<_>>(),
        slit.nodes.len(),
        slit.nodes.len()
    ))
}

/// `--cpus node:N` and `--nodes` resolution on a real multi-node machine.
pub(crate) fn check_select(ctx: &Ctx) -> CheckResult {
    let m = ctx.machine()?;
    let l = &ctx.layout;
    for n in l.cpu_nodes() {
        let got = CpuSelection::parse(&format!("node:{}", n.id))
            .and_then(|c| c.resolve(m))
            .map_err(s)?;
        if got != n.cpus {
            return Err(format!(
                "node:{} resolved to {got:?}, not {:?}",
                n.id, n.cpus
            ));
        }
    }
    let cpu_nodes: Vec<u32> = l.cpu_nodes().map(|n| n.id).collect();
    let text = format!("node:{}", cpulist::format(&cpu_nodes));
    let all = CpuSelection::parse(&text)
        .and_then(|c| c.resolve(m))
        .map_err(s)?;
    if all.len() != l.cpu_count() {
        return Err(format!("{text} resolved to {all:?}"));
    }
    // A memory-only node's CPUs are those near it (as for Xeon Phi MCDRAM).
    for n in l.memory_only_nodes() {
        let want = nearest_cpu_node(l, n.id).map_or(Vec::new(), |c| c.cpus.clone());
        let got = CpuSelection::parse(&format!("node:{}", n.id)).and_then(|c| c.resolve(m));
        if got.as_ref().ok() != Some(&want) {
            return Err(format!(
                "node:{} (memory-only) gave {got:?}, expected the CPUs near it {want:?}",
                n.id
            ));
        }
    }
    let nodes = resolve_nodes("all", m).map_err(s)?;
    if nodes != l.node_ids() {
        return Err(format!("--nodes all resolved to {nodes:?}"));
    }
    let missing = l.nodes.len() as u32 + 2;
    match resolve_nodes(&missing.to_string(), m) {
        Err(e) if e.to_string().contains("does not exist") => {}
        other => return Err(format!("--nodes {missing} gave {other:?}")),
    }
    Ok(format!(
        "node:N resolves to each node's CPU, {text} to {}, memory-only node:N to the CPUs near it, --nodes all = {}",
        cpulist::format(&all),
        cpulist::format(&nodes)
    ))
}

/// Per-node free memory is read from the right node: binding 8 MiB to the last node
/// lowers that node's MemFree and not the others' by as much.
pub(crate) fn check_node_free(ctx: &Ctx) -> CheckResult {
    let l = &ctx.layout;
    let sys = SysRoot::live();
    let free = |n: u32| {
        sys.node_free_bytes(n)
            .ok_or_else(|| format!("no MemFree for node {n}"))
    };
    for n in &l.nodes {
        let f = free(n.id)?;
        if f == 0 || f > n.memory_mib << 20 {
            return Err(format!(
                "node {} reports {f} bytes free of {} MiB",
                n.id, n.memory_mib
            ));
        }
    }
    let target = l.nodes.last().ok_or("no nodes")?.id;
    let from = l.cpu_off_node(target).ok_or("no CPU")?;
    let before: Vec<u64> = l
        .nodes
        .iter()
        .map(|n| free(n.id))
        .collect::<Result<_, _>>()?;
    let (after, _region) = on_cpu(ctx, from, |placer| {
        let mut r = new_region(8 * PAGES)?;
        placer
            .bind_region(&r, &MemPolicy::Bind(vec![target]))
            .map_err(s)?;
        r.touch();
        let after: Vec<u64> = l
            .nodes
            .iter()
            .map(|n| free(n.id))
            .collect::<Result<_, _>>()?;
        Ok((after, r))
    })?;
    let drop: Vec<i64> = before
        .iter()
        .zip(&after)
        .map(|(b, a)| *b as i64 - *a as i64)
        .collect();
    let t = target as usize;
    let others_max = drop
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != t)
        .map(|(_, d)| *d)
        .max()
        .unwrap_or(0);
    if drop[t] < 6 << 20 || drop[t] <= others_max {
        return Err(format!(
            "after binding 8 MiB to node {target}, MemFree fell by {:?} bytes per node",
            drop
        ));
    }
    Ok(format!(
        "every node reports MemFree; 8 MiB bound to node {target} lowered its MemFree by {:.1} MiB (others at most {:.1} MiB)",
        drop[t] as f64 / 1048576.0,
        others_max.max(0) as f64 / 1048576.0
    ))
}

pub(crate) fn check_bind(ctx: &Ctx, node: u32) -> CheckResult {
    // Touch from a CPU elsewhere: binding must beat first touch.
    let from = ctx
        .layout
        .cpu_off_node(node)
        .ok_or("no CPU off this node")?;
    on_cpu(ctx, from, |placer| {
        let mut r = new_region(PAGES)?;
        placer
            .bind_region(&r, &MemPolicy::Bind(vec![node]))
            .map_err(s)?;
        r.touch();
        let nodes = placer.page_nodes(&r).map_err(s)?;
        expect_all_on(&nodes, node)?;
        let maps = expect_numa_maps(&numa_maps_of(&r)?, &["bind"], &[node], &nodes)?;
        Ok(format!(
            "{PAGES}/{PAGES} pages on node {node} though touched from CPU {from}; {maps}"
        ))
    })
}

pub(crate) fn check_preferred(ctx: &Ctx, node: u32) -> CheckResult {
    let from = ctx.layout.cpu_off_node(node).ok_or("no CPU")?;
    on_cpu(ctx, from, |placer| {
        let mut r = new_region(PAGES)?;
        placer
            .bind_region(&r, &MemPolicy::Preferred(node))
            .map_err(s)?;
        r.touch();
        let nodes = placer.page_nodes(&r).map_err(s)?;
        expect_all_on(&nodes, node)?;
        let maps = expect_numa_maps(
            &numa_maps_of(&r)?,
            &["prefer", "prefer (many)"],
            &[node],
            &nodes,
        )?;
        Ok(format!(
            "{PAGES}/{PAGES} pages on node {node} (touched from CPU {from}); {maps}"
        ))
    })
}

pub(crate) fn check_interleave(ctx: &Ctx, asked: &[u32]) -> CheckResult {
    let from = ctx.layout.cpu_nodes().next().ok_or("no CPU")?.cpus[0];
    on_cpu(ctx, from, |placer| {
        let mut r = new_region(2 * PAGES)?;
        placer
            .bind_region(&r, &MemPolicy::Interleave(asked.to_vec()))
            .map_err(s)?;
        r.touch();
        let nodes = query_page_nodes(&r).map_err(s)?;
        let rr = expect_round_robin(asked, &nodes)?;
        let maps = expect_numa_maps(&numa_maps_of(&r)?, &["interleave"], asked, &nodes)?;
        Ok(format!(
            "{} pages round-robin over nodes {}: {rr}; {maps}",
            nodes.len(),
            cpulist::format(asked)
        ))
    })
}

pub(crate) fn check_first_touch(ctx: &Ctx, node: u32) -> CheckResult {
    let spec = ctx
        .layout
        .nodes
        .iter()
        .find(|n| n.id == node)
        .ok_or("no such node")?;
    let pu = spec.cpus[0];
    on_cpu(ctx, pu, |placer| {
        let mut r = new_region(PAGES)?;
        placer.bind_region(&r, &MemPolicy::FirstTouch).map_err(s)?;
        r.touch();
        let nodes = placer.page_nodes(&r).map_err(s)?;
        expect_all_on(&nodes, node)?;
        let maps = expect_numa_maps(&numa_maps_of(&r)?, &["local", "default"], &[], &nodes)?;
        Ok(format!(
            "thread on CPU {pu} (sched_getcpu agrees) touched {PAGES} pages, all on node {node}; {maps}"
        ))
    })
}

pub(crate) fn fill(r: &mut Region) {
    for (i, v) in r.as_mut_typed::<u64>().iter_mut().enumerate() {
        *v = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(crate) fn intact(r: &Region) -> bool {
    r.as_typed::<u64>()
        .iter()
        .enumerate()
        .all(|(i, v)| *v == (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// move_pages moves a region through every node, each node once a source and once a
/// target; statuses, the query and the data must all agree after every step.
pub(crate) fn check_move_cycle(ctx: &Ctx) -> CheckResult {
    let l = &ctx.layout;
    let start = l.cpu_nodes().next().ok_or("no CPU node")?;
    let (home, pu) = (start.id, start.cpus[0]);
    let mut path: Vec<u32> = l
        .node_ids()
        .into_iter()
        .filter(|n| *n != home)
        .rev()
        .collect();
    path.push(home);
    on_cpu(ctx, pu, |placer| {
        let mut r = new_region(PAGES)?;
        placer.bind_region(&r, &MemPolicy::FirstTouch).map_err(s)?;
        fill(&mut r);
        expect_all_on(&placer.page_nodes(&r).map_err(s)?, home)
            .map_err(|e| format!("before moving: {e}"))?;
        let mut at = home;
        for &to in &path {
            let status = placer.move_region(&r, to).map_err(s)?;
            let bad: Vec<String> = status
                .iter()
                .enumerate()
                .filter(|(_, st)| **st != Ok(to))
                .take(3)
                .map(|(i, st)| format!("page {i}: {st:?}"))
                .collect();
            if !bad.is_empty() {
                return Err(format!(
                    "move_pages {at}->{to}: per-page status not node {to}: {}",
                    bad.join(", ")
                ));
            }
            let nodes = placer.page_nodes(&r).map_err(s)?;
            expect_all_on(&nodes, to).map_err(|e| format!("after moving {at}->{to}: {e}"))?;
            let maps = numa_maps_of(&r)?;
            if maps.pages_per_node != BTreeMap::from([(to, PAGES as u64)]) {
                return Err(format!(
                    "after moving {at}->{to}: numa_maps counts {:?}",
                    maps.pages_per_node
                ));
            }
            if !intact(&r) {
                return Err(format!("after moving {at}->{to}: the data changed"));
            }
            at = to;
        }
        let route: Vec<String> = std::iter::once(home)
            .chain(path.iter().copied())
            .map(|n| n.to_string())
            .collect();
        Ok(format!(
            "{PAGES} pages moved {}; after each step all statuses, the query and numa_maps name the target node, data intact",
            route.join("->")
        ))
    })
}

/// Nodes that do not exist: binding is refused before anything happens, and move_pages
/// fails as a whole and leaves the pages where they were.
pub(crate) fn check_bad_node(ctx: &Ctx) -> CheckResult {
    let l = &ctx.layout;
    let missing = l.nodes.len() as u32 + 3;
    let node = l.nodes.get(1).map_or(0, |n| n.id);
    let from = l.cpu_nodes().next().ok_or("no CPU node")?.cpus[0];
    on_cpu(ctx, from, |placer| {
        let mut r = new_region(PAGES)?;
        match placer.bind_region(&r, &MemPolicy::Bind(vec![missing])) {
            Err(e) if e.to_string().contains("does not exist") => {}
            other => return Err(format!("binding to node {missing} gave {other:?}")),
        }
        placer
            .bind_region(&r, &MemPolicy::Bind(vec![node]))
            .map_err(s)?;
        r.touch();
        let moved = placer.move_region(&r, missing);
        let err = match moved {
            Err(e) => e.to_string(),
            Ok(st) if st.iter().all(|x| x.is_err()) => format!("per-page errors {:?}", st[0]),
            Ok(st) => return Err(format!("move to node {missing} succeeded: {:?}", &st[..3])),
        };
        expect_all_on(&placer.page_nodes(&r).map_err(s)?, node)
            .map_err(|e| format!("after a refused move: {e}"))?;
        Ok(format!(
            "bind to node {missing} refused (does not exist); move_pages to it failed ({err}) and all {PAGES} pages stayed on node {node}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::planned_names;

    #[test]
    fn round_robin_accepts_any_rotation_only() {
        let asked = [1, 3, 4];
        let pages: Vec<Option<u32>> = [3, 4, 1, 3, 4, 1, 3].iter().map(|n| Some(*n)).collect();
        let ok = expect_round_robin(&asked, &pages).unwrap();
        assert!(ok.contains("3 on node 3"), "{ok}");
        // Two pages swapped.
        let swapped: Vec<Option<u32>> = [3, 1, 4, 3, 4, 1].iter().map(|n| Some(*n)).collect();
        assert!(expect_round_robin(&asked, &swapped)
            .unwrap_err()
            .contains("page 1"));
        // All on one node (interleave ignored).
        let bound = vec![Some(1); 6];
        assert!(expect_round_robin(&asked, &bound).is_err());
        // A node that was not asked for.
        let stray: Vec<Option<u32>> = [0, 1, 3].iter().map(|n| Some(*n)).collect();
        assert!(expect_round_robin(&asked, &stray)
            .unwrap_err()
            .contains("not one of"));
        // Missing pages.
        let holes = vec![Some(1), None, Some(4)];
        assert!(expect_round_robin(&asked, &holes).is_err());
        // Round robin over a subset only: uneven.
        let subset: Vec<Option<u32>> = [1, 3, 1, 3].iter().map(|n| Some(*n)).collect();
        assert!(expect_round_robin(&asked, &subset).is_err());
    }

    #[test]
    fn all_on_needs_every_page_present_on_the_node() {
        assert!(expect_all_on(&[Some(2), Some(2)], 2).is_ok());
        assert!(expect_all_on(&[Some(2), Some(1)], 2)
            .unwrap_err()
            .contains("1 on node 1"));
        assert!(expect_all_on(&[Some(2), None], 2)
            .unwrap_err()
            .contains("1 not present"));
    }

    #[test]
    fn numa_maps_lines_are_parsed() {
        let text = "\
55d0c8a00000 default file=/bin/numa-guest mapped=10 N0=10 kernelpagesize_kB=4
7f12a4000000 bind:4 anon=256 dirty=256 active=0 N4=256 kernelpagesize_kB=4
7f12a5000000 interleave:1,3-4 anon=6 dirty=6 N1=2 N3=2 N4=2 kernelpagesize_kB=4
7f12a6000000 bind=static:2 anon=1 dirty=1 N2=1 kernelpagesize_kB=4
7f12a7000000 prefer (many):4 anon=3 dirty=3 N4=3 kernelpagesize_kB=4
";
        let e = parse_numa_maps(text, 0x7f12a4000000).unwrap();
        assert_eq!(e.policy, "bind");
        assert_eq!(e.policy_nodes, vec![4]);
        assert_eq!(e.pages_per_node, BTreeMap::from([(4, 256)]));
        let i = parse_numa_maps(text, 0x7f12a5000000).unwrap();
        assert_eq!(i.policy, "interleave");
        assert_eq!(i.policy_nodes, vec![1, 3, 4]);
        assert_eq!(i.pages_per_node.len(), 3);
        assert_eq!(
            parse_numa_maps(text, 0x7f12a6000000).unwrap().policy,
            "bind"
        );
        let p = parse_numa_maps(text, 0x7f12a7000000).unwrap();
        assert_eq!(
            (p.policy.as_str(), p.policy_nodes.as_slice()),
            ("prefer (many)", &[4][..])
        );
        assert_eq!(p.pages_per_node, BTreeMap::from([(4, 3)]));
        assert!(parse_numa_maps(text, 0x1234).is_none());
        let d = parse_numa_maps(text, 0x55d0c8a00000).unwrap();
        assert_eq!(d.policy, "default");
        assert!(d.policy_nodes.is_empty());
    }

    #[test]
    fn numa_maps_must_agree_with_the_query() {
        let e = NumaMapsEntry {
            policy: "interleave".into(),
            policy_nodes: vec![1, 3],
            pages_per_node: BTreeMap::from([(1, 1), (3, 1)]),
        };
        let q = [Some(1), Some(3)];
        assert!(expect_numa_maps(&e, &["interleave"], &[3, 1], &q).is_ok());
        assert!(expect_numa_maps(&e, &["bind"], &[1, 3], &q)
            .unwrap_err()
            .contains("policy"));
        assert!(
            expect_numa_maps(&e, &["interleave"], &[1, 3], &[Some(1), Some(1)])
                .unwrap_err()
                .contains("differ")
        );
    }

    #[test]
    fn the_plan_covers_every_node_and_names_are_unique() {
        let l = Boot::x86();
        let names = planned_names(&l, None);
        for k in 0..5 {
            assert!(names.contains(&format!("bind.node{k}")), "{names:?}");
        }
        for k in 0..4 {
            assert!(names.contains(&format!("first-touch.node{k}")));
        }
        assert!(names.contains(&"preferred.node4".to_string()));
        assert!(names.contains(&"interleave.0-4".to_string()));
        assert!(names.contains(&"interleave.1,3-4".to_string()));
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "duplicate check names");
        assert!(!names.iter().any(|n| n.starts_with("arm.")), "{names:?}");
        for boot in crate::platform::Boot::all(crate::platform::Arch::Aarch64) {
            let names = planned_names(&boot, None);
            let mut sorted = names.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(
                sorted.len(),
                names.len(),
                "{}: duplicate check names",
                boot.name
            );
            assert_eq!(names[0], "guest.sysfs", "{}", boot.name);
            let arm = names.iter().filter(|n| n.starts_with("arm.")).count();
            assert!(arm > 0, "{}: no Arm checks in {names:?}", boot.name);
            // No memory-only node on the Arm server: no check may assume one.
            assert!(
                !names
                    .iter()
                    .any(|n| n.contains("memory-only") || n.starts_with("preferred.")),
                "{}: {names:?}",
                boot.name
            );
        }
        assert_eq!(
            planned_names(&l, Some("bind.,topo.json")),
            vec![
                "bind.node0",
                "bind.node1",
                "bind.node2",
                "bind.node3",
                "bind.node4",
                "topo.json"
            ]
        );
    }

    #[test]
    fn machine_comparison_catches_a_wrong_slit() {
        // This development machine has one node: comparing it with the 5-node layout
        // must fail, naming what differs.
        let m = numalab_topo::live().unwrap();
        let err = compare_machine(&Layout::standard(), &m).unwrap_err();
        assert!(err.contains("nodes"), "{err}");
    }

    #[test]
    fn machine_comparison_accepts_the_layout_it_describes() {
        // Build the description a correct numalab would give of the guest, then spoil
        // one SLIT entry.
        let l = Layout::standard();
        let mut m = numalab_topo::live().unwrap();
        m.numa_nodes = l
            .nodes
            .iter()
            .map(|n| numalab_schema::machine::NumaNode {
                os_index: n.id,
                // As hwloc does: a memory-only node's cpus are its locality, the CPUs
                // of the nearest CPU node (node 0 for node 4).
                cpus: if n.cpus.is_empty() {
                    vec![0]
                } else {
                    n.cpus.clone()
                },
                has_cpus: !n.cpus.is_empty(),
                memory_bytes: (n.memory_mib << 20) * 9 / 10,
                subtype: None,
                package: None,
            })
            .collect();
        let template = m.pus[0].clone();
        m.pus = (0..4)
            .map(|i| numalab_schema::machine::Pu {
                os_index: i,
                numa_node: Some(i),
                ..template.clone()
            })
            .collect();
        m.distances = vec![numalab_schema::machine::DistanceMatrix {
            name: Some("NUMALatency".into()),
            from_os: true,
            means: "latency".into(),
            nodes: l.node_ids(),
            values: l.distances.clone(),
        }];
        m.compute_summary();
        compare_machine(&l, &m).unwrap();
        m.distances[0].values[1][2] = 99;
        assert!(compare_machine(&l, &m).unwrap_err().contains("SLIT 1->2"));
        m.distances[0].values[1][2] = 22;
        m.numa_nodes[4].has_cpus = true;
        assert!(compare_machine(&l, &m)
            .unwrap_err()
            .contains("has_cpus true"));
        m.numa_nodes[4].has_cpus = false;
        m.numa_nodes[4].memory_bytes = 512 << 20;
        assert!(compare_machine(&l, &m).unwrap_err().contains("node 4"));
    }
}
