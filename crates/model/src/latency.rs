//! Zero-load latency matrices of a modeled machine for a given placement of cores and
//! targets: what a pointer-chase or a core-to-core ping-pong would measure on it. The
//! latency heatmap (C1) uses them, and layout inference (C2: fit measured latencies to a
//! mesh, choose the placement with the least squared error) calls them with candidate
//! placements.
//!
//! A placement says at which stop each OS core number and each target sits, so the same
//! preset can be evaluated under any numbering. Latencies are in NoC cycles; convert with
//! [`Model::ns`].

use crate::geometry::StopId;
use crate::model::{Model, DAT, REQ, SNP};
use serde::{Deserialize, Serialize};

/// Where the cores (by OS number) and the targets (slices or controllers) sit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Stop of core i.
    pub cores: Vec<StopId>,
    /// Stop of target j.
    pub targets: Vec<StopId>,
}

impl Placement {
    /// The preset's own placement: cores in OS order, targets = SLC slices.
    pub fn slices(model: &Model) -> Self {
        Placement {
            cores: model.cores.iter().map(|c| c.stop).collect(),
            targets: model.slices.iter().map(|s| s.stop).collect(),
        }
    }

    /// The preset's own placement with memory controllers as targets.
    pub fn controllers(model: &Model) -> Self {
        Placement {
            cores: model.cores.iter().map(|c| c.stop).collect(),
            targets: model.mcs.iter().map(|m| m.stop).collect(),
        }
    }
}

/// Zero-load cycles for a core at `core` to read a line held at a home at `home`: REQ to
/// the home, the lookup, DAT back (`slc.lookup_cycles` included).
pub fn home_read_cycles(model: &Model, core: StopId, home: StopId) -> f64 {
    let g = &model.geo;
    f64::from(g.packet_cycles(core, home, model.flits[REQ]))
        + f64::from(model.spec.slc.lookup_cycles)
        + f64::from(g.packet_cycles(home, core, model.flits[DAT]))
}

/// Zero-load cycles to read a line from memory controller `mc` whose home is at `home`:
/// REQ core->home, lookup, REQ home->controller, channel and DRAM, DAT controller->core.
pub fn memory_read_cycles(model: &Model, core: StopId, home: StopId, mc: usize) -> f64 {
    let g = &model.geo;
    let m = &model.mcs[mc];
    f64::from(g.packet_cycles(core, home, model.flits[REQ]))
        + f64::from(model.spec.slc.lookup_cycles)
        + f64::from(g.packet_cycles(home, m.stop, model.flits[REQ]))
        + m.service_cycles
        + m.latency_cycles
        + f64::from(g.packet_cycles(m.stop, core, model.flits[DAT]))
}

/// `matrix[i][j]`: zero-load cycles for core i to read a line served at target j (a
/// home that holds the line: SLC hit, or a directory that forwards from its tile).
pub fn core_to_target_matrix(model: &Model, placement: &Placement) -> Vec<Vec<f64>> {
    placement
        .cores
        .iter()
        .map(|&c| {
            placement
                .targets
                .iter()
                .map(|&t| home_read_cycles(model, c, t))
                .collect()
        })
        .collect()
}

/// `matrix[i][j]`: zero-load cycles for core i to get a line that core j holds modified,
/// through the line's home at `home`: REQ i->home, lookup, SNP home->j, DAT j->i (the
/// owner forwards directly). With `home = None` the home sits with core j (the ideal
/// case a core-to-core benchmark approaches when lines are homed near the writer).
pub fn core_to_core_matrix(
    model: &Model,
    placement: &Placement,
    home: Option<StopId>,
) -> Vec<Vec<f64>> {
    let g = &model.geo;
    let lookup = f64::from(model.spec.slc.lookup_cycles);
    placement
        .cores
        .iter()
        .map(|&i| {
            placement
                .cores
                .iter()
                .map(|&j| {
                    let h = home.unwrap_or(j);
                    f64::from(g.packet_cycles(i, h, model.flits[REQ]))
                        + lookup
                        + f64::from(g.packet_cycles(h, j, model.flits[SNP]))
                        + f64::from(g.packet_cycles(j, i, model.flits[DAT]))
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_follow_the_geometry() {
        let m = Model::load("mesh", &["noc.cols=4".into(), "noc.rows=4".into()]).unwrap();
        let p = Placement::slices(&m);
        let t = core_to_target_matrix(&m, &p);
        // Same stop: inject + eject each way, lookup 10: 2 + 10 + 2.
        assert_eq!(t[0][0], 14.0);
        // Opposite corner: 6 hops each way at 2 cycles.
        assert_eq!(t[0][15], 14.0 + 2.0 * 12.0);
        let c = core_to_core_matrix(&m, &p, None);
        // REQ 0->15 (14), lookup (10), SNP to the owner at the home (2), DAT 15->0 (14).
        assert_eq!(c[0][15], 14.0 + 10.0 + 2.0 + 14.0);
        // A permuted placement permutes the matrix.
        let mut q = p.clone();
        q.cores.swap(0, 15);
        let t2 = core_to_target_matrix(&m, &q);
        assert_eq!(t2[15][0], t[0][0]);
        assert_eq!(t2[0][0], t[15][0]);
    }
}
