//! The guest machine's NUMA layout: nodes, their CPUs and memory, and the SLIT.
//!
//! One value is the single source of truth: the host turns it into QEMU's `-numa`
//! options and writes it into the initramfs, and the checks inside the guest compare
//! what the kernel, hwloc and numalab report against it. Changing the layout here
//! changes both sides at once.

use serde::{Deserialize, Serialize};

/// One emulated NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSpec {
    /// Node id (QEMU `nodeid`, the kernel's node number).
    pub id: u32,
    /// CPUs of the node (empty: a memory-only node, like CXL or HBM expanders).
    pub cpus: Vec<u32>,
    /// Memory of the node in MiB.
    pub memory_mib: u64,
}

/// The whole guest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Nodes, ascending by id, ids 0..n without holes (QEMU numbers them so).
    pub nodes: Vec<NodeSpec>,
    /// SLIT: `distances[i][j]` from `nodes[i]` to `nodes[j]`; 10 on the diagonal.
    pub distances: Vec<Vec<u64>>,
    /// Sockets (packages) the CPUs are split into, in CPU order, one thread per core
    /// (`-smp N,sockets=S,cores=N/S,threads=1`); None leaves QEMU's default (one socket
    /// per CPU on x86's q35).
    #[serde(default)]
    pub sockets: Option<u32>,
}

impl Layout {
    /// The standard guest: two "sockets" of two single-CPU nodes each (0-1 and 2-3) and
    /// a memory-only node 4 far from all. Every off-diagonal distance is different, so a
    /// transposed, shifted or relabelled matrix or node cannot pass the checks; node
    /// memory sizes differ too (320/256/256/256/192 MiB) for the same reason. The sizes are
    /// small on purpose: the default working sets of the memory probes are fitted to the
    /// nodes' free memory, and under TCG their run time grows with them (the guests' whole
    /// kernel, initramfs and suite need less than 200 MiB).
    pub fn standard() -> Layout {
        let node = |id: u32, cpus: &[u32], memory_mib: u64| NodeSpec {
            id,
            cpus: cpus.to_vec(),
            memory_mib,
        };
        Layout {
            nodes: vec![
                node(0, &[0], 320),
                node(1, &[1], 256),
                node(2, &[2], 256),
                node(3, &[3], 256),
                node(4, &[], 192),
            ],
            distances: vec![
                vec![10, 12, 21, 23, 31],
                vec![12, 10, 22, 24, 32],
                vec![21, 22, 10, 13, 33],
                vec![23, 24, 13, 10, 34],
                vec![31, 32, 33, 34, 10],
            ],
            sockets: None,
        }
    }

    /// The emulated Arm server: 4 CPUs as 2 sockets x 2 cores, one CPU and 256 MiB per
    /// NUMA node (small for the reason given at [`Layout::standard`]), and the SLIT of a dual-socket machine with two nodes per socket: 10
    /// local, 20 to the other node of the same socket, 30 across sockets. (Sizes are
    /// equal, as on a real server's balanced DIMMs; the x86 layout is the one whose
    /// every value differs.)
    pub fn arm_server() -> Layout {
        let node = |id: u32| NodeSpec {
            id,
            cpus: vec![id],
            memory_mib: 256,
        };
        let dist = |a: u32, b: u32| match (a == b, a / 2 == b / 2) {
            (true, _) => 10,
            (false, true) => 20,
            (false, false) => 30,
        };
        Layout {
            nodes: (0..4).map(node).collect(),
            distances: (0..4)
                .map(|a| (0..4).map(|b| dist(a, b)).collect())
                .collect(),
            sockets: Some(2),
        }
    }

    /// A wide server (issue 45): `cpus` CPUs in 2 sockets, `nodes_per_socket` NUMA
    /// nodes per socket (CPUs in order, an even share each), `node_mib` of memory per
    /// node, and a SLIT of 10 local, 20 within a socket, `across` between sockets. The
    /// x86 one is 2 x 80 cores in 2 nodes of 1.5 GiB (the emulated N1 server issue 45
    /// first ran on: modest memory per core); the Arm one has 4 nodes, 2 per socket.
    /// Refused when the nodes cannot share the CPUs evenly.
    pub fn wide(
        cpus: u32,
        nodes_per_socket: u32,
        node_mib: u64,
        across: u64,
    ) -> Result<Layout, String> {
        let nodes = 2 * nodes_per_socket.max(1);
        if cpus == 0 || !cpus.is_multiple_of(nodes) {
            return Err(format!(
                "{cpus} CPUs cannot be shared evenly by {nodes} NUMA nodes in 2 sockets: use a multiple of {nodes}"
            ));
        }
        let per = cpus / nodes;
        let socket = |n: u32| n / nodes_per_socket.max(1);
        Ok(Layout {
            nodes: (0..nodes)
                .map(|id| NodeSpec {
                    id,
                    cpus: (id * per..(id + 1) * per).collect(),
                    memory_mib: node_mib,
                })
                .collect(),
            distances: (0..nodes)
                .map(|a| {
                    (0..nodes)
                        .map(|b| match (a == b, socket(a) == socket(b)) {
                            (true, _) => 10,
                            (false, true) => 20,
                            (false, false) => across,
                        })
                        .collect()
                })
                .collect(),
            sockets: Some(2),
        })
    }

    /// The socket of a CPU (CPUs split evenly over the sockets in order; 0 without
    /// sockets).
    pub fn socket_of_cpu(&self, cpu: u32) -> u32 {
        match self.sockets {
            Some(s) if s > 0 => cpu / (self.cpu_count() as u32 / s).max(1),
            _ => 0,
        }
    }

    /// Checks that QEMU and the kernel can represent this layout.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.nodes.len();
        if n < 2 {
            return Err("a NUMA guest needs at least 2 nodes".into());
        }
        for (i, node) in self.nodes.iter().enumerate() {
            if node.id as usize != i {
                return Err(format!(
                    "node ids must be 0..{n} in order; found {} at position {i}",
                    node.id
                ));
            }
            if node.memory_mib == 0 {
                return Err(format!(
                    "node {} has no memory (memory-less nodes are not supported by this guest)",
                    node.id
                ));
            }
        }
        let mut cpus: Vec<u32> = self.nodes.iter().flat_map(|n| n.cpus.clone()).collect();
        cpus.sort_unstable();
        if cpus.is_empty() || cpus != (0..cpus.len() as u32).collect::<Vec<_>>() {
            return Err(format!(
                "CPUs must be numbered 0..N without holes or repeats; got {cpus:?}"
            ));
        }
        if let Some(s) = self.sockets {
            if s == 0 || !cpus.len().is_multiple_of(s as usize) {
                return Err(format!(
                    "{} CPUs cannot be split evenly into {s} sockets",
                    cpus.len()
                ));
            }
        }
        if self.distances.len() != n || self.distances.iter().any(|r| r.len() != n) {
            return Err(format!("the distance matrix must be {n} x {n}"));
        }
        for (i, row) in self.distances.iter().enumerate() {
            for (j, &d) in row.iter().enumerate() {
                let ok = if i == j {
                    d == 10
                } else {
                    (11..=254).contains(&d)
                };
                if !ok {
                    return Err(format!(
                        "distance {i}->{j} = {d}: SLIT needs 10 on the diagonal and 11..254 elsewhere"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Number of CPUs.
    pub fn cpu_count(&self) -> usize {
        self.nodes.iter().map(|n| n.cpus.len()).sum()
    }

    /// Total memory in MiB.
    pub fn memory_mib(&self) -> u64 {
        self.nodes.iter().map(|n| n.memory_mib).sum()
    }

    /// All node ids.
    pub fn node_ids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    /// Nodes with CPUs.
    pub fn cpu_nodes(&self) -> impl Iterator<Item = &NodeSpec> {
        self.nodes.iter().filter(|n| !n.cpus.is_empty())
    }

    /// Memory-only nodes.
    pub fn memory_only_nodes(&self) -> impl Iterator<Item = &NodeSpec> {
        self.nodes.iter().filter(|n| n.cpus.is_empty())
    }

    /// The node a CPU belongs to.
    pub fn node_of_cpu(&self, cpu: u32) -> Option<u32> {
        self.nodes
            .iter()
            .find(|n| n.cpus.contains(&cpu))
            .map(|n| n.id)
    }

    /// A CPU that is not on `node` (to touch memory from elsewhere), if any.
    pub fn cpu_off_node(&self, node: u32) -> Option<u32> {
        self.cpu_nodes()
            .find(|n| n.id != node)
            .and_then(|n| n.cpus.first().copied())
    }

    /// The distance between two nodes.
    pub fn distance(&self, a: u32, b: u32) -> u64 {
        self.distances[a as usize][b as usize]
    }

    /// The node pairs (a != b) nearest and farthest by distance (first found on ties).
    pub fn nearest_and_farthest(&self) -> ((u32, u32), (u32, u32)) {
        let mut pairs = Vec::new();
        for a in self.node_ids() {
            for b in self.node_ids() {
                if a != b {
                    pairs.push((self.distance(a, b), a, b));
                }
            }
        }
        // min_by_key keeps the first minimum; for the maximum keep the first too.
        let near = pairs.iter().min_by_key(|p| p.0).expect("at least 2 nodes");
        let far = pairs
            .iter()
            .min_by_key(|p| std::cmp::Reverse(p.0))
            .expect("at least 2 nodes");
        ((near.1, near.2), (far.1, far.2))
    }

    /// QEMU options for the CPUs, memory and NUMA layout (to add to machine options).
    pub fn qemu_args(&self) -> Vec<String> {
        let n = self.cpu_count();
        let smp = match self.sockets {
            Some(s) => format!("{n},sockets={s},cores={},threads=1", n / s as usize),
            None => n.to_string(),
        };
        let mut a = vec![
            "-smp".to_string(),
            smp,
            "-m".to_string(),
            format!("{}M", self.memory_mib()),
        ];
        for n in &self.nodes {
            a.push("-object".into());
            a.push(format!(
                "memory-backend-ram,id=m{},size={}M",
                n.id, n.memory_mib
            ));
        }
        for n in &self.nodes {
            a.push("-numa".into());
            let mut spec = format!("node,nodeid={}", n.id);
            // QEMU's cpus= takes one range per option: give each CPU on its own.
            for c in &n.cpus {
                spec.push_str(&format!(",cpus={c}"));
            }
            spec.push_str(&format!(",memdev=m{}", n.id));
            a.push(spec);
        }
        // QEMU needs every pair once any distance is given; both directions make
        // asymmetric matrices work too.
        for (i, row) in self.distances.iter().enumerate() {
            for (j, d) in row.iter().enumerate() {
                if i != j {
                    a.push("-numa".into());
                    a.push(format!("dist,src={i},dst={j},val={d}"));
                }
            }
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_layout_is_valid_and_has_a_memory_only_node() {
        let l = Layout::standard();
        l.validate().unwrap();
        assert_eq!(l.cpu_count(), 4);
        assert_eq!(l.memory_mib(), 1280);
        assert_eq!(
            l.memory_only_nodes().map(|n| n.id).collect::<Vec<_>>(),
            vec![4]
        );
        assert_eq!(l.node_of_cpu(2), Some(2));
        assert_eq!(l.cpu_off_node(0), Some(1));
        assert_eq!(l.cpu_off_node(4), Some(0));
        assert_eq!(l.nearest_and_farthest(), ((0, 1), (3, 4)));
    }

    #[test]
    fn standard_slit_distances_are_symmetric_and_all_different() {
        let l = Layout::standard();
        let mut seen = std::collections::BTreeSet::new();
        for a in 0..5u32 {
            for b in 0..5u32 {
                assert_eq!(l.distance(a, b), l.distance(b, a));
                if a < b {
                    assert!(seen.insert(l.distance(a, b)), "{a}-{b} repeats a distance");
                }
            }
        }
    }

    #[test]
    fn qemu_args_describe_every_node_and_pair() {
        let a = Layout::standard().qemu_args();
        let joined = a.join(" ");
        assert!(joined.starts_with("-smp 4 -m 1280M"), "{joined}");
        assert!(joined.contains("memory-backend-ram,id=m4,size=192M"));
        assert!(joined.contains("node,nodeid=2,cpus=2,memdev=m2"));
        assert!(joined.contains("node,nodeid=4,memdev=m4"));
        assert!(joined.contains("dist,src=3,dst=4,val=34"));
        assert!(joined.contains("dist,src=4,dst=3,val=34"));
        assert_eq!(a.iter().filter(|s| s.starts_with("dist,")).count(), 20);
    }

    #[test]
    fn the_arm_server_is_two_sockets_of_two_nodes() {
        let l = Layout::arm_server();
        l.validate().unwrap();
        assert_eq!(l.cpu_count(), 4);
        assert_eq!(l.memory_mib(), 1024);
        assert_eq!(l.memory_only_nodes().count(), 0);
        assert_eq!(l.distances[0], vec![10, 20, 30, 30]);
        assert_eq!(l.distances[3], vec![30, 30, 20, 10]);
        assert_eq!(
            (0..4).map(|c| l.socket_of_cpu(c)).collect::<Vec<_>>(),
            vec![0, 0, 1, 1]
        );
        let j = l.qemu_args().join(" ");
        assert!(
            j.starts_with("-smp 4,sockets=2,cores=2,threads=1 -m 1024M"),
            "{j}"
        );
        assert!(j.contains("dist,src=1,dst=2,val=30"), "{j}");
        assert!(j.contains("dist,src=2,dst=3,val=20"), "{j}");
        let mut bad = Layout::arm_server();
        bad.sockets = Some(3);
        assert!(bad.validate().unwrap_err().contains("3 sockets"));
    }

    #[test]
    fn wide_layouts_split_cpus_evenly_over_sockets_and_nodes() {
        let l = Layout::wide(160, 1, 1536, 20).unwrap();
        l.validate().unwrap();
        assert_eq!(l.cpu_count(), 160);
        assert_eq!(l.nodes[1].cpus.first(), Some(&80));
        assert_eq!(l.distances, vec![vec![10, 20], vec![20, 10]]);
        assert_eq!((l.socket_of_cpu(79), l.socket_of_cpu(80)), (0, 1));
        assert!(l
            .qemu_args()
            .join(" ")
            .starts_with("-smp 160,sockets=2,cores=80,threads=1 -m 3072M"));
        let arm = Layout::wide(64, 2, 768, 30).unwrap();
        arm.validate().unwrap();
        assert_eq!(arm.nodes.len(), 4);
        assert_eq!(arm.nodes[2].cpus, (32..48).collect::<Vec<_>>());
        assert_eq!(arm.distances[0], vec![10, 20, 30, 30]);
        assert_eq!(arm.distances[3], vec![30, 30, 20, 10]);
        // A CPU count the nodes cannot share evenly is refused, naming the remedy.
        let e = Layout::wide(6, 2, 64, 30).unwrap_err();
        assert!(e.contains("multiple of 4"), "{e}");
        assert_eq!(Layout::wide(2, 1, 64, 20).unwrap().nodes[1].cpus, vec![1]);
    }

    #[test]
    fn invalid_layouts_are_refused_with_a_reason() {
        let mut l = Layout::standard();
        l.distances[1][2] = 10;
        assert!(l.validate().unwrap_err().contains("1->2"));
        let mut l = Layout::standard();
        l.nodes[3].cpus = vec![5];
        assert!(l.validate().unwrap_err().contains("without holes"));
        let mut l = Layout::standard();
        l.distances.pop();
        assert!(l.validate().unwrap_err().contains("5 x 5"));
        let mut l = Layout::standard();
        l.nodes[4].memory_mib = 0;
        assert!(l.validate().unwrap_err().contains("no memory"));
    }
}
