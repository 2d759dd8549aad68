//! Mesh geometry as the model uses it: [`Geometry`] (the grid, stop numbering,
//! dimension-order routing and hop costs) lives in `numalab_records::mesh`, one
//! definition shared with the records that hold a mesh, and is re-exported here under
//! its old paths; this module adds the closed-form mesh figures of machines.md.

pub use numalab_records::mesh::{Dir, Geometry, Hop, LinkId, StopId};

/// Mean hop count of uniform random traffic (self-traffic included) on a k x k mesh
/// with dimension-order routing: `2 (k^2 - 1) / (3 k)` (machines.md, mesh models).
pub fn mean_hops_formula(k: u32) -> f64 {
    let k = f64::from(k);
    2.0 * (k * k - 1.0) / (3.0 * k)
}

/// Uniform-traffic saturation of a k x k mesh, in flits per node per cycle: `4 / k`
/// (bisection bound; machines.md, mesh models).
pub fn saturation_formula(k: u32) -> f64 {
    4.0 / f64::from(k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Routing;

    #[test]
    fn exhaustive_mean_hops_match_formula() {
        for k in [2, 3, 8] {
            let g = Geometry::uniform(k, k, Routing::Xy, 1, 1, 1);
            let n = g.stops();
            let total: u32 = (0..n)
                .flat_map(|a| (0..n).map(move |b| (a, b)))
                .map(|(a, b)| g.hops(a, b))
                .sum();
            let mean = f64::from(total) / f64::from(n * n);
            assert!((mean - mean_hops_formula(k)).abs() < 1e-12, "k={k}");
        }
    }
}
