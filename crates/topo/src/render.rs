//! Human renderings of a [`Machine`]: the short summary `numalab topo` prints first,
//! and the condensed tree of `--tree` (identical siblings folded into "N x ...").

use numalab_schema::cpulist;
use numalab_schema::machine::{CacheKind, Machine};
use numalab_schema::units;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The short summary: a few lines a person reads first.
pub fn summary(m: &Machine) -> String {
    let mut out = String::new();
    // Identity line.
    let mut id = Vec::new();
    if let Some(name) = &m.cpu.model_name {
        id.push(name.clone());
    } else if let (Some(v), Some(p)) = (&m.cpu.vendor, m.cpu.part) {
        id.push(format!("{v} part 0x{p:03x}"));
    } else if let Some(v) = &m.cpu.vendor {
        id.push(v.clone());
    }
    if let Some(a) = &m.cpu.architecture {
        id.push(a.clone());
    }
    if let Some(k) = &m.software.kernel {
        id.push(format!(
            "{} {k}",
            m.software.os_name.as_deref().unwrap_or("kernel")
        ));
    }
    if let Some(h) = &m.software.hwloc {
        id.push(format!("hwloc {h}"));
    }
    let _ = writeln!(
        out,
        "{}",
        if id.is_empty() {
            "Unknown CPU".to_string()
        } else {
            id.join(", ")
        }
    );

    let _ = writeln!(out, "{}", cores_line(m));
    let _ = writeln!(out, "{}", numa_line(m));
    if let Some(c) = caches_line(m) {
        let _ = writeln!(out, "{c}");
    }
    if let Some(slit) = m.slit() {
        let vals: BTreeSet<u64> = slit.values.iter().flatten().copied().collect();
        let vals: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
        let _ = writeln!(out, "distances (SLIT) {}", vals.join("/"));
    }
    if !m.memory_attributes.is_empty() {
        let names: Vec<&str> = m
            .memory_attributes
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        let _ = writeln!(out, "memory attributes (HMAT): {}", names.join(", "));
    }
    if let Some(f) = freq_line(m) {
        let _ = writeln!(out, "{f}");
    }
    let huge: Vec<String> = m
        .page_sizes
        .iter()
        .skip(1)
        .map(|p| match p.pool_pages {
            Some(n) => format!("{} ({n} reserved)", units::bytes(p.size_bytes)),
            None => units::bytes(p.size_bytes),
        })
        .collect();
    if let Some(base) = m.page_sizes.first() {
        let _ = writeln!(
            out,
            "pages {}{}",
            units::bytes(base.size_bytes),
            if huge.is_empty() {
                String::new()
            } else {
                format!("; huge pages {}", huge.join(", "))
            }
        );
    }
    out
}

fn cores_line(m: &Machine) -> String {
    let pkgs = m.packages.len().max(1);
    let mut per_pkg: Vec<usize> = (0..pkgs)
        .map(|p| {
            m.cores
                .iter()
                .filter(|c| c.package == Some(p) || m.packages.is_empty())
                .count()
        })
        .collect();
    per_pkg.dedup();
    let tpc: BTreeSet<usize> = m.cores.iter().map(|c| c.pus.len()).collect();
    let tpc: Vec<String> = tpc.iter().map(|t| t.to_string()).collect();
    let threads = format!(
        "{} thread{}/core",
        tpc.join("-"),
        if tpc == ["1"] { "" } else { "s" }
    );
    let body = if per_pkg.len() == 1 {
        format!(
            "{} package{} x {} cores",
            m.packages.len(),
            if m.packages.len() == 1 { "" } else { "s" },
            per_pkg[0]
        )
    } else {
        format!("{} packages, {} cores", m.packages.len(), m.cores.len())
    };
    let mut line = format!("{body}, {threads} ({} PUs)", m.pus.len());
    if m.cpu_kinds.len() > 1 {
        let kinds: Vec<String> = m
            .cpu_kinds
            .iter()
            .map(|k| {
                let name = k.infos.get("CoreType").cloned().unwrap_or_else(|| {
                    format!(
                        "efficiency {}",
                        k.efficiency.map_or("?".into(), |e| e.to_string())
                    )
                });
                format!("{name} CPUs {}", cpulist::format(&k.cpus))
            })
            .collect();
        let _ = write!(
            line,
            "; {} CPU kinds: {}",
            m.cpu_kinds.len(),
            kinds.join(", ")
        );
    }
    line
}

/// "256 GiB", "16 GiB MCDRAM", or "memory size unknown".
fn node_memory(n: &numalab_schema::machine::NumaNode) -> String {
    let size = if n.memory_bytes == 0 {
        "memory size unknown".to_string()
    } else {
        units::bytes(n.memory_bytes)
    };
    match &n.subtype {
        Some(s) => format!("{size} {s}"),
        None => size,
    }
}

fn numa_line(m: &Machine) -> String {
    let parts: Vec<String> = m
        .numa_nodes
        .iter()
        .map(|n| {
            let cpus = if n.cpus.is_empty() {
                "no CPUs".to_string()
            } else if !n.has_cpus {
                format!("no CPUs, near CPUs {}", cpulist::format(&n.cpus))
            } else {
                format!("CPUs {}", cpulist::format(&n.cpus))
            };
            format!("{} = {cpus} ({})", n.os_index, node_memory(n))
        })
        .collect();
    format!(
        "{} NUMA node{}: {}",
        m.numa_nodes.len(),
        if m.numa_nodes.len() == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

/// Names how many PUs share a cache in terms of the machine's units.
fn sharing(m: &Machine, cpus: &[u32]) -> String {
    let set: BTreeSet<u32> = cpus.iter().copied().collect();
    if m.cores
        .iter()
        .any(|c| c.pus.iter().copied().collect::<BTreeSet<_>>() == set)
    {
        return "per core".into();
    }
    if m.packages
        .iter()
        .any(|p| p.cpus.iter().copied().collect::<BTreeSet<_>>() == set)
    {
        return "per package".into();
    }
    if m.numa_nodes
        .iter()
        .any(|n| !n.cpus.is_empty() && n.cpus.iter().copied().collect::<BTreeSet<_>>() == set)
    {
        return "per NUMA node".into();
    }
    let cores = m
        .cores
        .iter()
        .filter(|c| c.pus.iter().any(|p| set.contains(p)))
        .count();
    format!("per {cores} cores")
}

fn caches_line(m: &Machine) -> Option<String> {
    let mut levels: Vec<(u32, CacheKind)> = m.caches.iter().map(|c| (c.level, c.kind)).collect();
    levels.sort_by_key(|(l, k)| (*k == CacheKind::MemorySide, *l, *k as u8));
    levels.dedup();
    if levels.is_empty() {
        return None;
    }
    let parts: Vec<String> = levels
        .iter()
        .map(|&(level, kind)| {
            let of: Vec<_> = m
                .caches
                .iter()
                .filter(|c| c.level == level && c.kind == kind)
                .collect();
            let name = match kind {
                CacheKind::Data => format!("L{level}d"),
                CacheKind::Instruction => format!("L{level}i"),
                CacheKind::Unified => format!("L{level}"),
                CacheKind::MemorySide => "memory-side cache".into(),
            };
            let sizes: BTreeSet<u64> = of.iter().filter_map(|c| c.size_bytes).collect();
            let size = match (sizes.first(), sizes.last()) {
                (Some(a), Some(b)) if a == b => units::bytes(*a),
                (Some(a), Some(b)) => format!("{}-{}", units::bytes(*a), units::bytes(*b)),
                _ => "(size not reported)".into(),
            };
            let shares: BTreeSet<String> = of.iter().map(|c| sharing(m, &c.cpus)).collect();
            let shares: Vec<String> = shares.into_iter().collect();
            format!("{name} {size} {}", shares.join("/"))
        })
        .collect();
    Some(parts.join(", "))
}

fn freq_line(m: &Machine) -> Option<String> {
    if m.frequencies.is_empty() {
        return None;
    }
    let min = m.frequencies.iter().filter_map(|f| f.min_khz).min();
    let max = m.frequencies.iter().filter_map(|f| f.max_khz).max();
    let govs: BTreeSet<&str> = m
        .frequencies
        .iter()
        .filter_map(|f| f.governor.as_deref())
        .collect();
    let ghz = |k: u64| format!("{:.2}", k as f64 / 1e6);
    let range = match (min, max) {
        (Some(a), Some(b)) => format!("{}-{} GHz", ghz(a), ghz(b)),
        (None, Some(b)) => format!("up to {} GHz", ghz(b)),
        _ => return None,
    };
    let govs: Vec<&str> = govs.into_iter().collect();
    Some(if govs.is_empty() {
        format!("frequency {range} ({})", m.frequencies[0].origin)
    } else {
        format!("frequency {range}, governor {}", govs.join("/"))
    })
}

/// A node of the condensed tree.
struct TreeNode {
    rank: u8,
    label: String,
    cpus: Vec<u32>,
    memory: Vec<String>,
    children: Vec<TreeNode>,
}

impl TreeNode {
    fn covers(&self, cpus: &[u32]) -> bool {
        cpus.iter().all(|c| self.cpus.binary_search(c).is_ok())
    }

    fn insert(&mut self, node: TreeNode) {
        for child in &mut self.children {
            let same = child.cpus == node.cpus;
            if child.covers(&node.cpus) && (!same || child.rank < node.rank) {
                child.insert(node);
                return;
            }
        }
        self.children.push(node);
    }

    fn signature(&self) -> String {
        let mut s = self.label.clone();
        s.push('{');
        for m in &self.memory {
            s.push_str(m);
        }
        for c in &self.children {
            s.push_str(&c.signature());
            s.push(';');
        }
        s.push('}');
        s
    }
}

/// The condensed tree (`numalab topo --tree`).
pub fn tree(m: &Machine) -> String {
    let mut all: Vec<u32> = m.pu_ids();
    all.sort_unstable();
    let total_mem: u64 = m.numa_nodes.iter().map(|n| n.memory_bytes).sum();
    let mut root = TreeNode {
        rank: 0,
        label: format!("Machine ({} memory)", units::bytes(total_mem)),
        cpus: all,
        memory: Vec::new(),
        children: Vec::new(),
    };
    let mut items: Vec<TreeNode> = Vec::new();
    let sorted = |v: &[u32]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v
    };
    for p in &m.packages {
        items.push(TreeNode {
            rank: 1,
            label: "Package".into(),
            cpus: sorted(&p.cpus),
            memory: vec![],
            children: vec![],
        });
    }
    for d in &m.dies {
        items.push(TreeNode {
            rank: 2,
            label: "Die".into(),
            cpus: sorted(&d.cpus),
            memory: vec![],
            children: vec![],
        });
    }
    for g in &m.groups {
        let label = match &g.subtype {
            Some(s) => format!("Group({s})"),
            None => "Group".into(),
        };
        items.push(TreeNode {
            rank: 3 + g.level.min(3) as u8,
            label,
            cpus: sorted(&g.cpus),
            memory: vec![],
            children: vec![],
        });
    }
    for c in &m.caches {
        if c.kind == CacheKind::MemorySide {
            continue;
        }
        let name = match c.kind {
            CacheKind::Data => format!("L{}d", c.level),
            CacheKind::Instruction => format!("L{}i", c.level),
            _ => format!("L{}", c.level),
        };
        let size = c.size_bytes.map(units::bytes).unwrap_or_else(|| "?".into());
        // Instruction caches sort after data caches of the same level.
        let rank = 20 - (c.level.min(9) as u8) * 2 + u8::from(c.kind == CacheKind::Instruction);
        items.push(TreeNode {
            rank,
            label: format!("{name} {size}"),
            cpus: sorted(&c.cpus),
            memory: vec![],
            children: vec![],
        });
    }
    for c in &m.cores {
        let label = if c.pus.len() == 1 {
            "Core + PU".to_string()
        } else {
            format!("Core ({} PUs)", c.pus.len())
        };
        items.push(TreeNode {
            rank: 30,
            label,
            cpus: sorted(&c.pus),
            memory: vec![],
            children: vec![],
        });
    }
    // Larger sets first, then by rank, so parents are inserted before children.
    items.sort_by(|a, b| {
        b.cpus
            .len()
            .cmp(&a.cpus.len())
            .then(a.rank.cmp(&b.rank))
            .then(a.cpus.cmp(&b.cpus))
    });
    for item in items {
        root.insert(item);
    }
    // Attach NUMA nodes as memory of the smallest node covering their CPUs.
    for n in &m.numa_nodes {
        let mut desc = format!("NUMA {} ({})", n.os_index, node_memory(n));
        if !n.has_cpus {
            desc.push_str(" (no CPUs)");
        }
        if n.cpus.is_empty() {
            root.memory.push(desc);
            continue;
        }
        let cpus = sorted(&n.cpus);
        attach_memory(&mut root, &cpus, desc);
    }
    let mut out = String::new();
    render_node(&root, 0, 1, &mut out);
    out
}

fn attach_memory(node: &mut TreeNode, cpus: &[u32], desc: String) {
    for child in &mut node.children {
        if child.covers(cpus) && child.cpus.len() > 1 && child.cpus.len() >= cpus.len() {
            // Stop at the highest node whose cpus equal the NUMA node's.
            if child.cpus == cpus {
                child.memory.push(desc);
                return;
            }
            attach_memory(child, cpus, desc);
            return;
        }
    }
    node.memory.push(desc);
}

fn render_node(node: &TreeNode, indent: usize, count: usize, out: &mut String) {
    // Fold chains of single children with the same CPUs: "L2 1 MiB + L1d 64 KiB + Core".
    let mut label = node.label.clone();
    let mut cur = node;
    while cur.children.len() == 1
        && cur.children[0].cpus == cur.cpus
        && cur.children[0].memory.is_empty()
    {
        cur = &cur.children[0];
        label.push_str(" + ");
        label.push_str(&cur.label);
    }
    let pad = "  ".repeat(indent);
    let cpus = if count == 1 {
        format!("  [CPUs {}]", cpulist::format(&node.cpus))
    } else {
        format!("  [each {} CPUs]", node.cpus.len())
    };
    let prefix = if count > 1 {
        format!("{count} x ")
    } else {
        String::new()
    };
    let _ = writeln!(out, "{pad}{prefix}{label}{cpus}");
    for mem in &node.memory {
        let _ = writeln!(out, "{pad}  {mem}");
    }
    if std::ptr::eq(cur, node) || !cur.memory.is_empty() {
        for mem in &cur.memory {
            if !std::ptr::eq(cur, node) {
                let _ = writeln!(out, "{pad}  {mem}");
            }
        }
    }
    // Fold consecutive identical siblings.
    let kids = &cur.children;
    let mut i = 0;
    while i < kids.len() {
        let sig = kids[i].signature();
        let mut j = i + 1;
        while j < kids.len() && kids[j].signature() == sig {
            j += 1;
        }
        render_node(&kids[i], indent + 1, j - i, out);
        i = j;
    }
}
