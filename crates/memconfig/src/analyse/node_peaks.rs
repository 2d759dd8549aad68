//! Per-node peaks: exact from address ranges where SMBIOS gives them, else from the
//! sockets, else from the single node with memory, else unknown.

use crate::nodes::{merge, overlap, NodeTopology};
use numalab_records::memconfig::{AddressRange, Channel, MemConfig, NodePeak, Peak};

/// A way to find each of a channel's devices' address ranges.
type RangesOf<'a> = &'a dyn Fn(&Channel) -> Vec<Vec<AddressRange>>;

/// Sets the per-node peaks.
pub(super) fn node_peaks(cfg: &mut MemConfig, topo: &NodeTopology) {
    cfg.notes.extend(topo.notes.iter().cloned());
    let mut packages: Vec<u32> = topo
        .nodes
        .iter()
        .flat_map(|n| n.packages.iter().copied())
        .collect();
    packages.sort_unstable();
    packages.dedup();
    let mut out = blank(topo, &packages);
    if !cfg.system.is_known() {
        let why = format!(
            "system peak unknown: {}",
            cfg.system.reason.clone().unwrap_or_default()
        );
        for np in &mut out {
            np.peak = Peak::unknown(why.clone());
        }
        cfg.nodes = out;
        return;
    }

    let mut tried: Vec<String> = Vec::new();
    if from_ranges(cfg, topo, &mut out, &mut tried) {
        no_memory(&mut out, topo);
        cfg.nodes = out;
        return;
    }

    // Socket -> its nodes.
    if !cfg.sockets.is_empty() && packages.len() == cfg.sockets.len() {
        from_sockets(cfg, topo, &mut out);
        no_memory(&mut out, topo);
        cfg.nodes = out;
        return;
    }
    if !cfg.sockets.is_empty() {
        tried.push(format!(
            "SMBIOS attributes the devices to {} socket(s), sysfs shows CPUs on {} package(s)",
            cfg.sockets.len(),
            packages.len()
        ));
    } else {
        tried.push("the devices are not attributed to sockets".into());
    }

    let with_memory: Vec<usize> = (0..out.len())
        .filter(|&k| topo.nodes[k].memory_bytes > 0)
        .collect();
    if let [only] = with_memory.as_slice() {
        out[*only].peak = cfg.system.clone();
        out[*only].channels = Some(cfg.channels.len() as f64);
        out[*only].method = "single_memory_node".into();
        no_memory(&mut out, topo);
        cfg.nodes = out;
        return;
    }
    let why = format!(
        "no way to attribute channels to nodes: {}",
        tried.join("; ")
    );
    for np in &mut out {
        np.peak = Peak::unknown(why.clone());
    }
    no_memory(&mut out, topo);
    cfg.nodes = out;
}

/// One record per node with its socket (the rank of its single package) and memory,
/// its peak not yet derived.
fn blank(topo: &NodeTopology, packages: &[u32]) -> Vec<NodePeak> {
    topo.nodes
        .iter()
        .map(|n| NodePeak {
            node: n.node,
            socket: match n.packages.as_slice() {
                [p] => packages.iter().position(|x| x == p).map(|x| x as u32),
                _ => None,
            },
            memory_bytes: Some(n.memory_bytes),
            channels: None,
            peak: Peak::unknown("not derived"),
            method: "unknown".into(),
        })
        .collect()
}

/// Marks the nodes without memory whose peak is still unknown.
fn no_memory(out: &mut [NodePeak], topo: &NodeTopology) {
    for (np, n) in out.iter_mut().zip(&topo.nodes) {
        if n.memory_bytes == 0 && !np.peak.is_known() {
            np.peak = Peak::unknown("the node has no memory");
        }
    }
}

/// Channel -> node through address ranges (type 20, then type 19). Returns whether it
/// set the peaks; else `tried` says why each way failed.
fn from_ranges(
    cfg: &MemConfig,
    topo: &NodeTopology,
    out: &mut [NodePeak],
    tried: &mut Vec<String>,
) -> bool {
    let dev_ranges = |c: &Channel| -> Vec<Vec<AddressRange>> {
        cfg.devices
            .iter()
            .filter(|d| d.channel.as_deref() == Some(c.id.as_str()))
            .map(|d| d.mappings.iter().map(|m| m.range).collect())
            .collect()
    };
    let array_ranges = |c: &Channel| -> Vec<Vec<AddressRange>> {
        cfg.devices
            .iter()
            .filter(|d| d.channel.as_deref() == Some(c.id.as_str()))
            .map(|d| {
                cfg.arrays
                    .iter()
                    .filter(|a| Some(a.handle) == d.array_handle)
                    .flat_map(|a| a.ranges.iter().copied())
                    .collect()
            })
            .collect()
    };
    let have_ranges = topo.nodes.iter().any(|n| !n.ranges.is_empty());
    for (method, f) in [
        ("device_address_ranges", &dev_ranges as RangesOf<'_>),
        ("array_address_ranges", &array_ranges),
    ] {
        if !have_ranges {
            tried.push("the nodes' address ranges are unknown".into());
            break;
        }
        match by_ranges(cfg, topo, f) {
            Ok(assign) => {
                for (k, np) in out.iter_mut().enumerate() {
                    let mine: Vec<&Channel> = cfg
                        .channels
                        .iter()
                        .zip(&assign)
                        .filter(|(_, a)| **a == Some(k))
                        .map(|(c, _)| c)
                        .collect();
                    if mine.is_empty() {
                        np.peak = Peak::unknown(
                            "no SMBIOS memory device maps into this node's memory (memory-only node: CXL, HBM or persistent memory?)",
                        );
                        continue;
                    }
                    np.channels = Some(mine.len() as f64);
                    np.peak = Peak::of(mine.iter().filter_map(|c| c.peak.bytes_per_s).sum());
                    np.method = method.into();
                }
                return true;
            }
            Err(e) => tried.push(e),
        }
    }
    false
}

/// Each channel's node: the one holding (90 % of) all its devices' ranges, or why none.
fn by_ranges(
    cfg: &MemConfig,
    topo: &NodeTopology,
    ranges_of: RangesOf<'_>,
) -> Result<Vec<Option<usize>>, String> {
    let mut res = Vec::new();
    for c in &cfg.channels {
        let mut node: Option<usize> = None;
        for r in ranges_of(c) {
            let r = merge(r);
            let total: u64 = r.iter().map(AddressRange::len).sum();
            if total == 0 {
                return Err(format!("{} has no mapped address range", c.id));
            }
            let (best, ov) = topo
                .nodes
                .iter()
                .enumerate()
                .map(|(k, n)| (k, overlap(&r, &n.ranges)))
                .max_by_key(|x| x.1)
                .unwrap_or((0, 0));
            if u128::from(ov) * 10 < u128::from(total) * 9 {
                return Err(format!(
                    "{}'s mapped range does not lie within one node",
                    c.id
                ));
            }
            match node {
                Some(x) if x != best => {
                    return Err(format!("{}'s devices map into different nodes", c.id))
                }
                _ => node = Some(best),
            }
        }
        if node.is_none() {
            return Err(format!("{} has no mapped address range", c.id));
        }
        res.push(node);
    }
    Ok(res)
}

/// Each socket's peak split evenly among its nodes with memory (assumed when more than
/// one); nodes left over say why they have none.
fn from_sockets(cfg: &mut MemConfig, topo: &NodeTopology, out: &mut [NodePeak]) {
    for sp in &cfg.sockets {
        let mem_nodes: Vec<usize> = out
            .iter()
            .enumerate()
            .filter(|(k, np)| np.socket == Some(sp.socket) && topo.nodes[*k].memory_bytes > 0)
            .map(|(k, _)| k)
            .collect();
        if mem_nodes.is_empty() {
            cfg.notes.push(format!(
                "socket {}: no NUMA node with its CPUs has memory",
                sp.socket
            ));
            continue;
        }
        let k = mem_nodes.len();
        let ids: Vec<String> = mem_nodes.iter().map(|&x| out[x].node.to_string()).collect();
        if k > 1 {
            cfg.assumptions.push(format!(
                "socket {}'s {} channel(s) split evenly among its nodes {} (sub-NUMA clustering, NPS or quadrant mode): assumed, not read from the hardware{}",
                sp.socket,
                sp.channels,
                ids.join(", "),
                if sp.channels % k != 0 {
                    format!("; {} channels do not divide by {k}", sp.channels)
                } else {
                    String::new()
                }
            ));
        }
        for &x in &mem_nodes {
            out[x].channels = Some(sp.channels as f64 / k as f64);
            out[x].peak = match sp.peak.bytes_per_s {
                Some(b) => Peak::of(b / k as f64),
                None => sp.peak.clone(),
            };
            out[x].method = if k == 1 {
                "socket_single_node".into()
            } else {
                "split_evenly_assumed".into()
            };
        }
    }
    for (k, np) in out.iter_mut().enumerate() {
        if np.method == "unknown" && topo.nodes[k].memory_bytes > 0 {
            np.peak = Peak::unknown(if topo.nodes[k].cpus.is_empty() {
                "memory-only node (no CPUs): its memory is not attributed to a socket's DIMM channels".to_string()
            } else {
                "its CPUs are not on one socket".to_string()
            });
        }
    }
}
