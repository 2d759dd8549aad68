//! The mesh a measured matrix is fitted to: the model's [`Geometry`] (stops, routing, link
//! costs) plus what layout inference needs on top: which stops may hold cores (tiles) and
//! how many, which may hold targets (directory slices, memory controllers), the features
//! of the latency model for every pair of stops, and the mesh's symmetries.
//!
//! Why a separate type: inference evaluates millions of candidate placements, so the
//! per-pair features (hops of each kind on the round trip a -> b -> a, taken from the
//! model's routing, never re-derived) are computed once here and looked up afterwards.
//!
//! The latency model of a pair of stops (a, b) is linear in its features:
//! `latency = base + same_stop * [a == b] + sum_k cost_k * links_k(a, b)`, where
//! `links_k` counts the links of kind k (horizontal or vertical, by link cost) on the
//! round trip. With hop costs given (`HopCosts::Fixed`), the features are the round-trip
//! cycles of the geometry (`path_cycles` both ways) and one scale (ns per cycle) is fitted.

use crate::error::LayoutError;
use numalab_model::geometry::{Dir, Geometry, StopId};
use numalab_model::spec::Routing;
use serde::{Deserialize, Serialize};

/// Most stops a grid may have (the feature table holds stops^2 entries).
pub const MAX_STOPS: u32 = 1024;

pub use numalab_records::layout::HopCosts;

/// A kind of link: its direction and its cost in the geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkClass {
    /// Horizontal (x) or vertical (y).
    pub horizontal: bool,
    /// Cycles of such a link in the geometry.
    pub cycles: u32,
}

impl LinkClass {
    /// "horizontal", "vertical", or with the cost when several costs exist.
    pub fn name(&self, several: bool) -> String {
        let d = if self.horizontal {
            "horizontal"
        } else {
            "vertical"
        };
        if several {
            format!("{d} ({}-cycle)", self.cycles)
        } else {
            d.to_string()
        }
    }
}

/// A symmetry of the grid: a map of stops that leaves every pair's features unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symmetry {
    /// "identity", "mirror east-west", ...
    pub name: String,
    /// Image of each stop.
    pub map: Vec<StopId>,
}

/// The mesh and its slots.
#[derive(Debug, Clone)]
pub struct Grid {
    /// The model geometry (one socket).
    pub geo: Geometry,
    /// Cores a stop (tile) can hold.
    pub capacity: u32,
    /// Stops that may hold cores.
    pub core_slot: Vec<bool>,
    /// Stops that may hold targets.
    pub target_slot: Vec<bool>,
    /// Fixed or fitted hop costs.
    pub hop_costs: HopCosts,
    /// Link kinds of the geometry (fit mode: one coefficient each).
    pub classes: Vec<LinkClass>,
    /// Features per pair, excluding the constant: [same_stop, hop features...].
    nf: usize,
    feat: Vec<f64>,
}

impl Grid {
    /// A grid over a one-socket geometry. All stops may hold cores and targets at first;
    /// see [`Grid::disable`] and [`Grid::no_targets`].
    pub fn new(geo: Geometry, capacity: u32, hop_costs: HopCosts) -> Result<Grid, LayoutError> {
        if geo.sockets != 1 {
            return Err(LayoutError::Unsupported(format!(
                "layout inference fits one mesh; this geometry has {} sockets (fit each socket's matrix on its own)",
                geo.sockets
            )));
        }
        if geo.cols == 0 || geo.rows == 0 || geo.stops() > MAX_STOPS {
            return Err(LayoutError::Usage(format!(
                "a {} x {} mesh: rows and columns must be at least 1 and the mesh at most {MAX_STOPS} stops",
                geo.rows, geo.cols
            )));
        }
        if capacity == 0 {
            return Err(LayoutError::Usage(
                "cores per tile must be at least 1".into(),
            ));
        }
        let n = geo.stops();
        let mut classes: Vec<LinkClass> = Vec::new();
        for l in 0..n * 4 {
            let d = Dir::from_index(l);
            if geo.neighbor(l / 4, d).is_none() {
                continue;
            }
            let c = LinkClass {
                horizontal: d.horizontal(),
                cycles: geo.link_cost(l),
            };
            if !classes.contains(&c) {
                classes.push(c);
            }
        }
        classes.sort_by_key(|c| (!c.horizontal, c.cycles));
        if hop_costs == HopCosts::Fit && classes.len() > 4 {
            return Err(LayoutError::Usage(format!(
                "the geometry has {} kinds of links; fitting their costs needs at most 4: give the hop costs",
                classes.len()
            )));
        }
        let nf = 1 + match hop_costs {
            HopCosts::Fixed => 1,
            HopCosts::Fit => classes.len(),
        };
        let mut feat = vec![0.0; (n * n) as usize * nf];
        for a in 0..n {
            for b in 0..n {
                let base = ((a * n + b) as usize) * nf;
                feat[base] = if a == b { 1.0 } else { 0.0 };
                match hop_costs {
                    HopCosts::Fixed => {
                        feat[base + 1] = f64::from(geo.path_cycles(a, b) + geo.path_cycles(b, a));
                    }
                    HopCosts::Fit => {
                        for l in geo.route(a, b).0.into_iter().chain(geo.route(b, a).0) {
                            let c = LinkClass {
                                horizontal: Dir::from_index(l).horizontal(),
                                cycles: geo.link_cost(l),
                            };
                            let k = classes.iter().position(|x| *x == c).unwrap_or(0);
                            feat[base + 1 + k] += 1.0;
                        }
                    }
                }
            }
        }
        Ok(Grid {
            core_slot: vec![true; n as usize],
            target_slot: vec![true; n as usize],
            geo,
            capacity,
            hop_costs,
            classes,
            nf,
            feat,
        })
    }

    /// A uniform mesh: `rows x cols`, routing, vertical and horizontal hop cycles.
    pub fn uniform(
        rows: u32,
        cols: u32,
        routing: Routing,
        v: u32,
        h: u32,
        capacity: u32,
        hop_costs: HopCosts,
    ) -> Result<Grid, LayoutError> {
        if rows == 0 || cols == 0 || rows * cols > MAX_STOPS {
            return Err(LayoutError::Usage(format!(
                "geometry {rows}x{cols}: rows and columns must be at least 1 and the mesh at most {MAX_STOPS} stops"
            )));
        }
        Grid::new(
            Geometry::uniform(cols, rows, routing, 0, h, v),
            capacity,
            hop_costs,
        )
    }

    /// Number of stops.
    pub fn stops(&self) -> usize {
        self.geo.stops() as usize
    }

    /// Features per pair (without the constant).
    pub fn feature_count(&self) -> usize {
        self.nf
    }

    /// Features of the pair (a, b): `[same_stop, hop features...]`.
    #[inline]
    pub fn features(&self, a: StopId, b: StopId) -> &[f64] {
        let i = (a as usize * self.stops() + b as usize) * self.nf;
        &self.feat[i..i + self.nf]
    }

    /// Names of the fitted coefficients after the constant: `same_stop_ns`, then the
    /// hop costs.
    pub fn coefficient_names(&self) -> Vec<String> {
        let mut v = vec!["same_stop".to_string()];
        match self.hop_costs {
            HopCosts::Fixed => v.push("per_cycle".into()),
            HopCosts::Fit => {
                let several_h = self.classes.iter().filter(|c| c.horizontal).count() > 1;
                let several_v = self.classes.iter().filter(|c| !c.horizontal).count() > 1;
                for c in &self.classes {
                    v.push(c.name(if c.horizontal { several_h } else { several_v }));
                }
            }
        }
        v
    }

    /// Stop id of column x, row y.
    pub fn stop(&self, x: u32, y: u32) -> StopId {
        self.geo.stop(0, x, y)
    }

    /// (x, y) of a stop.
    pub fn xy(&self, s: StopId) -> (u32, u32) {
        let (_, x, y) = self.geo.coords(s);
        (x, y)
    }

    /// Marks stops as holding no cores (disabled tiles, stops that are not tiles).
    pub fn disable(&mut self, stops: &[StopId]) {
        for &s in stops {
            if let Some(v) = self.core_slot.get_mut(s as usize) {
                *v = false;
            }
        }
    }

    /// Marks stops as holding no targets.
    pub fn no_targets(&mut self, stops: &[StopId]) {
        for &s in stops {
            if let Some(v) = self.target_slot.get_mut(s as usize) {
                *v = false;
            }
        }
    }

    /// Stops that may hold cores.
    pub fn core_stops(&self) -> Vec<StopId> {
        (0..self.geo.stops())
            .filter(|&s| self.core_slot[s as usize])
            .collect()
    }

    /// Stops that may hold targets.
    pub fn target_stops(&self) -> Vec<StopId> {
        (0..self.geo.stops())
            .filter(|&s| self.target_slot[s as usize])
            .collect()
    }

    /// Room for cores.
    pub fn core_room(&self) -> usize {
        self.core_stops().len() * self.capacity as usize
    }

    /// Manhattan distance in hops between two stops.
    pub fn manhattan(&self, a: StopId, b: StopId) -> u32 {
        let (ax, ay) = self.xy(a);
        let (bx, by) = self.xy(b);
        ax.abs_diff(bx) + ay.abs_diff(by)
    }

    /// The grid's symmetries: maps among the reflections and rotations of the rectangle
    /// (and transposes on a square grid) that keep every pair's features, identity first.
    pub fn symmetries(&self) -> Vec<Symmetry> {
        let (c, r) = (self.geo.cols, self.geo.rows);
        type Map = fn(u32, u32, u32, u32) -> (u32, u32);
        let mut cands: Vec<(&str, Map)> = vec![
            ("identity", |x, y, _, _| (x, y)),
            ("mirror east-west", |x, y, c, _| (c - 1 - x, y)),
            ("mirror north-south", |x, y, _, r| (x, r - 1 - y)),
            ("rotation 180", |x, y, c, r| (c - 1 - x, r - 1 - y)),
        ];
        if c == r {
            cands.push(("transpose", |x, y, _, _| (y, x)));
            cands.push(("rotation 90", |x, y, c, _| (y, c - 1 - x)));
            cands.push(("rotation 270", |x, y, _, r| (r - 1 - y, x)));
            cands.push(("anti-transpose", |x, y, c, r| (r - 1 - y, c - 1 - x)));
        }
        let n = self.geo.stops();
        let mut out = Vec::new();
        for (name, f) in cands {
            let map: Vec<StopId> = (0..n)
                .map(|s| {
                    let (x, y) = self.xy(s);
                    let (nx, ny) = f(x, y, c, r);
                    self.stop(nx, ny)
                })
                .collect();
            // With fitted hop costs, a map that exchanges kinds of links (a transpose
            // turns horizontal hops into vertical ones) is a symmetry too: the fit
            // exchanges their costs.
            let perms = match self.hop_costs {
                HopCosts::Fixed => vec![(0..self.nf - 1).collect::<Vec<usize>>()],
                HopCosts::Fit => permutations(self.nf - 1),
            };
            let keeps = perms.iter().any(|perm| {
                (0..n).all(|a| {
                    (0..n).all(|b| {
                        let f = self.features(a, b);
                        let g = self.features(map[a as usize], map[b as usize]);
                        f[0] == g[0] && perm.iter().enumerate().all(|(k, &j)| f[1 + k] == g[1 + j])
                    })
                })
            });
            if keeps {
                out.push(Symmetry {
                    name: name.to_string(),
                    map,
                });
            }
        }
        out
    }
}

/// Every permutation of 0..k (k <= 4).
fn permutations(k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for p in permutations(k - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, k - 1);
            out.push(q);
        }
    }
    out
}

/// Parses `x:y` stop coordinates, comma-separated ("0:3,5:3"), on a grid.
pub fn parse_stops(text: &str, cols: u32, rows: u32) -> Result<Vec<(u32, u32)>, LayoutError> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || {
            LayoutError::Usage(format!(
                "--disabled: {part:?} is not a tile; write column:row pairs, e.g. 0:3,5:3 (x 0-{}, y 0-{})",
                cols.saturating_sub(1),
                rows.saturating_sub(1)
            ))
        };
        let (x, y) = part.split_once(':').ok_or_else(bad)?;
        let x: u32 = x.trim().parse().map_err(|_| bad())?;
        let y: u32 = y.trim().parse().map_err(|_| bad())?;
        if x >= cols || y >= rows {
            return Err(bad());
        }
        out.push((x, y));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_count_hops_both_ways() {
        let g = Grid::uniform(3, 4, Routing::Yx, 1, 2, 1, HopCosts::Fit).unwrap();
        assert_eq!(g.classes.len(), 2);
        assert!(g.classes[0].horizontal);
        let a = g.stop(0, 0);
        let b = g.stop(3, 2);
        // Round trip: 3 horizontal + 2 vertical each way.
        assert_eq!(g.features(a, b), &[0.0, 6.0, 4.0]);
        assert_eq!(g.features(a, a), &[1.0, 0.0, 0.0]);
        let f = Grid::uniform(3, 4, Routing::Yx, 1, 2, 1, HopCosts::Fixed).unwrap();
        assert_eq!(f.features(a, b), &[0.0, 2.0 * (3.0 * 2.0 + 2.0)]);
    }

    #[test]
    fn symmetries_follow_the_costs() {
        // Unequal costs on a square: only the rectangle's four.
        let g = Grid::uniform(4, 4, Routing::Xy, 1, 2, 1, HopCosts::Fixed).unwrap();
        assert_eq!(g.symmetries().len(), 4);
        // Equal costs on a square: all eight.
        let g = Grid::uniform(4, 4, Routing::Xy, 1, 1, 1, HopCosts::Fixed).unwrap();
        assert_eq!(g.symmetries().len(), 8);
        // Fitted costs on a square: a transpose exchanges the two costs, all eight.
        let g = Grid::uniform(4, 4, Routing::Xy, 1, 2, 1, HopCosts::Fit).unwrap();
        assert_eq!(g.symmetries().len(), 8);
        // A rectangle: four, even with equal costs.
        let g = Grid::uniform(3, 5, Routing::Xy, 1, 1, 1, HopCosts::Fit).unwrap();
        let s = g.symmetries();
        assert_eq!(s.len(), 4);
        assert_eq!(s[0].name, "identity");
    }

    #[test]
    fn boundary_links_make_their_own_class_and_break_symmetry() {
        let mut geo = Geometry::uniform(4, 4, Routing::Xy, 0, 1, 1);
        // A slow link between columns 0 and 1 only: mirror east-west no longer holds.
        for y in 0..4 {
            let s = geo.stop(0, 0, y);
            geo.link_cycles[(s * 4) as usize] = 3;
            let t = geo.stop(0, 1, y);
            geo.link_cycles[(t * 4 + 1) as usize] = 3;
        }
        let g = Grid::new(geo, 1, HopCosts::Fit).unwrap();
        assert_eq!(g.classes.len(), 3);
        assert_eq!(
            g.coefficient_names(),
            vec![
                "same_stop",
                "horizontal (1-cycle)",
                "horizontal (3-cycle)",
                "vertical"
            ]
        );
        let names: Vec<String> = g.symmetries().into_iter().map(|s| s.name).collect();
        assert_eq!(names, vec!["identity", "mirror north-south"]);
    }

    #[test]
    fn stops_parse_with_clear_errors() {
        assert_eq!(parse_stops("0:3, 5:3", 6, 7).unwrap(), vec![(0, 3), (5, 3)]);
        assert!(parse_stops("6:0", 6, 7)
            .unwrap_err()
            .to_string()
            .contains("column:row"));
        assert!(parse_stops("x", 6, 7).is_err());
    }
}
