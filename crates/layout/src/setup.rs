//! The mesh an inference searches: the [`Grid`] built from a model preset or a plain
//! `ROWSxCOLS` geometry, with the routing, hop costs, cores per tile and disabled tiles
//! asked for, and the groups of CPUs kept on one tile (the c2c structure's finest level).
//! `numalab layout infer` turns its flags into a [`Setup`] ([`crate::flags`]) and calls
//! [`prepare`] before searching; the errors name the flag at fault, as the command line
//! reports them (a request that does not fit is [`LayoutError::Usage`], a matrix that
//! does not fit the geometry [`LayoutError::Input`]).

use crate::error::LayoutError;
use crate::grid::{parse_stops, Grid, HopCosts};
use crate::groundtruth::preset_grid;
use crate::infer::tile_groups;
use crate::input::Loaded;
use numalab_model::geometry::Geometry;
use numalab_model::spec::Routing;
use numalab_model::Model;

/// Hop costs asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HopCost {
    /// Nothing said: the preset's costs (given), or with a plain geometry fitted.
    #[default]
    Default,
    /// Fit one cost per kind of link.
    Fit,
    /// These costs in cycles, given.
    Cycles {
        /// A vertical hop.
        vertical: u32,
        /// A horizontal hop.
        horizontal: u32,
    },
}

/// What the mesh is, as asked for (`numalab layout infer`'s geometry flags). The
/// default is the command's: nothing given (a geometry or a preset must be set) and tile
/// groups kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    /// The matrix's name (a path), for messages.
    pub input: String,
    /// A model preset (`NAME[:VARIANT,...]`) giving the mesh; wins over `geometry`.
    pub preset: Option<String>,
    /// Rows and columns of a plain mesh (used without a preset).
    pub geometry: Option<(u32, u32)>,
    /// Dimension-order routing (default: the preset's, else XY).
    pub routing: Option<Routing>,
    /// Hop costs.
    pub hop_cost: HopCost,
    /// Cores a tile holds (default: the preset's; with a geometry 1, or the size of the
    /// c2c structure's finest groups when the matrix has more CPUs than stops).
    pub cores_per_tile: Option<u32>,
    /// Tiles known to be disabled, as `column:row` pairs ("2:0,3:0").
    pub disabled: Option<String>,
    /// Keep the c2c structure's finest groups (the cores of a tile) together.
    pub tile_groups: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            input: String::new(),
            preset: None,
            geometry: None,
            routing: None,
            hop_cost: HopCost::Default,
            cores_per_tile: None,
            disabled: None,
            tile_groups: true,
        }
    }
}

/// The mesh to search and what was decided on the way.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The grid.
    pub grid: Grid,
    /// The preset's label, when the mesh came from one.
    pub preset: Option<String>,
    /// Groups of CPUs (positions in the matrix) kept on one tile each.
    pub groups: Vec<Vec<u32>>,
    /// Facts about the input (its own notes first), then about the mesh, in sentences.
    pub notes: Vec<String>,
}

/// Builds the grid for a matrix: from the preset (its routing and hop costs unless
/// others are asked for; the matrix must have one CPU per core of the preset) or from the
/// plain geometry, then disables the tiles given and groups the CPUs that share a tile.
pub fn prepare(setup: &Setup, loaded: &Loaded) -> Result<Prepared, LayoutError> {
    let m = &loaded.measured;
    let n = m.cpus.len();
    let mut notes = loaded.notes.clone();
    let hop_costs = match setup.hop_cost {
        HopCost::Fit => HopCosts::Fit,
        HopCost::Cycles { .. } => HopCosts::Fixed,
        HopCost::Default if setup.preset.is_some() => HopCosts::Fixed,
        HopCost::Default => HopCosts::Fit,
    };
    let mut inferred = None;
    let (mut grid, preset) = if let Some(p) = &setup.preset {
        let mut model = Model::load(p, &[])?;
        if model.geo.sockets != 1 {
            return Err(LayoutError::Usage(format!(
                "--preset {p}: {} sockets; layout inference fits one mesh (fit each socket's matrix with a one-socket preset)",
                model.geo.sockets
            )));
        }
        if let Some(r) = setup.routing {
            model.geo.routing = r;
        }
        if let HopCost::Cycles {
            vertical,
            horizontal,
        } = setup.hop_cost
        {
            let mut g = Geometry::uniform(
                model.geo.cols,
                model.geo.rows,
                model.geo.routing,
                0,
                horizontal,
                vertical,
            );
            g.inject_cycles = model.geo.inject_cycles;
            g.eject_cycles = model.geo.eject_cycles;
            model.geo = g;
        }
        let mut grid = preset_grid(&model, hop_costs)?;
        if let Some(c) = setup.cores_per_tile {
            grid.capacity = c;
        }
        // Both kinds of matrix have one row per core.
        let cores = model.cores.len();
        if n != cores {
            return Err(LayoutError::input(
                &setup.input,
                format!(
                    "the matrix has {n} CPUs but {} has {cores} cores: the matrix size does not match the geometry; give one CPU per core (measure with --cpus) or use --geometry ROWSxCOLS",
                    model.label
                ),
            ));
        }
        (grid, Some(model.label.clone()))
    } else {
        let (rows, cols) = setup
            .geometry
            .ok_or_else(|| LayoutError::Usage("give --geometry ROWSxCOLS or --preset".into()))?;
        let (v, h) = match setup.hop_cost {
            HopCost::Cycles {
                vertical,
                horizontal,
            } => (vertical, horizontal),
            _ => (1, 1),
        };
        let routing = setup.routing.unwrap_or(Routing::Xy);
        let slots = rows as usize * cols as usize;
        let capacity = match setup.cores_per_tile {
            Some(c) => c,
            None if n > slots => {
                // The matrix needs shared tiles: take the size of the finest c2c groups.
                let k = structure(&mut inferred, loaded)?
                    .and_then(|s| s.levels.first())
                    .map(|l| l.groups.iter().map(|g| g.cpus.len()).max().unwrap_or(1))
                    .unwrap_or(1) as u32;
                if k > 1 && n <= slots * k as usize {
                    notes.push(format!(
                        "{n} CPUs on {slots} stops: {k} cores per tile, the size of the finest groups of the c2c structure"
                    ));
                    k
                } else {
                    1
                }
            }
            None => 1,
        };
        (
            Grid::uniform(rows, cols, routing, v, h, capacity, hop_costs)?,
            None,
        )
    };
    if let Some(d) = &setup.disabled {
        let tiles = parse_stops(d, grid.geo.cols, grid.geo.rows)?;
        let stops: Vec<u32> = tiles.iter().map(|&(x, y)| grid.stop(x, y)).collect();
        grid.disable(&stops);
        notes.push(format!("{} tiles given as disabled", stops.len()));
    }
    let groups = if setup.tile_groups && grid.capacity > 1 {
        match structure(&mut inferred, loaded)? {
            Some(s) => tile_groups(s, &m.cpus, grid.capacity),
            None => Vec::new(),
        }
    } else {
        Vec::new()
    };
    if !groups.is_empty() {
        notes.push(format!(
            "{} groups of CPUs kept on one tile each (the c2c structure's finest level)",
            groups.len()
        ));
    }
    Ok(Prepared {
        grid,
        preset,
        groups,
        notes,
    })
}

/// The c2c structure of the loaded matrix (`None` without one), inferred on first need
/// only (seconds at 2,000 CPUs) and kept in `cache`; Ctrl-C or SIGTERM during it is
/// [`LayoutError::Stopped`] (exit 130).
fn structure<'a>(
    cache: &'a mut Option<Option<numalab_c2c::Structure>>,
    loaded: &Loaded,
) -> Result<Option<&'a numalab_c2c::Structure>, LayoutError> {
    if cache.is_none() {
        *cache = Some(
            loaded
                .c2c
                .as_ref()
                .map(numalab_c2c::try_infer)
                .transpose()?,
        );
    }
    Ok(cache.as_ref().and_then(Option::as_ref))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::{Kind, Measured};
    use numalab_c2c::LatencyMatrix;
    use numalab_schema::{Classify, ErrorClass};

    /// A core-to-core matrix of `n` CPUs where CPUs 2k and 2k+1 share a tile (10 ns) and
    /// every other pair is 50 ns apart.
    fn paired(n: u32) -> Loaded {
        let mut m = LatencyMatrix::new((0..n).collect());
        for i in 0..n as usize {
            for j in 0..i {
                m.set(i, j, if i / 2 == j / 2 { 10.0 } else { 50.0 });
            }
        }
        Loaded {
            measured: Measured::from_c2c(&m),
            c2c: Some(m),
            origin: "imported".into(),
            notes: vec!["from a test".into()],
        }
    }

    fn setup() -> Setup {
        Setup {
            input: "test.csv".into(),
            ..Setup::default()
        }
    }

    #[test]
    fn a_plain_geometry_fits_hop_costs_and_a_preset_gives_them() {
        let p = prepare(
            &Setup {
                geometry: Some((2, 3)),
                ..setup()
            },
            &paired(6),
        )
        .unwrap();
        assert_eq!((p.grid.geo.rows, p.grid.geo.cols), (2, 3));
        assert_eq!(p.grid.geo.routing, Routing::Xy);
        assert_eq!(p.grid.hop_costs, HopCosts::Fit);
        assert_eq!(p.grid.capacity, 1);
        assert_eq!(p.preset, None);
        assert!(p.groups.is_empty());
        assert_eq!(p.notes, vec!["from a test".to_string()]);

        // The generic mesh preset is 8 x 8 with one core per stop: 64 CPUs.
        let p = prepare(
            &Setup {
                preset: Some("mesh".into()),
                geometry: Some((2, 3)),
                ..setup()
            },
            &paired(64),
        )
        .unwrap();
        assert_eq!((p.grid.geo.rows, p.grid.geo.cols), (8, 8));
        assert_eq!(p.grid.hop_costs, HopCosts::Fixed);
        assert_eq!(p.preset.as_deref(), Some("mesh"));
        assert_eq!(p.grid.core_stops().len(), 64);
    }

    #[test]
    fn given_costs_and_routing_replace_the_presets() {
        let p = prepare(
            &Setup {
                preset: Some("mesh".into()),
                routing: Some(Routing::Yx),
                hop_cost: HopCost::Cycles {
                    vertical: 3,
                    horizontal: 2,
                },
                ..setup()
            },
            &paired(64),
        )
        .unwrap();
        assert_eq!(p.grid.geo.routing, Routing::Yx);
        assert_eq!(p.grid.hop_costs, HopCosts::Fixed);
        // Link 0 leaves stop 0 eastwards (horizontal), link 2 northwards (vertical).
        assert_eq!(p.grid.geo.link_cycles[0], 2);
        assert_eq!(p.grid.geo.link_cycles[2], 3);
        let fit = prepare(
            &Setup {
                preset: Some("mesh".into()),
                hop_cost: HopCost::Fit,
                ..setup()
            },
            &paired(64),
        )
        .unwrap();
        assert_eq!(fit.grid.hop_costs, HopCosts::Fit);
    }

    #[test]
    fn more_cpus_than_stops_share_tiles_as_the_c2c_groups_say() {
        let p = prepare(
            &Setup {
                geometry: Some((2, 2)),
                ..setup()
            },
            &paired(8),
        )
        .unwrap();
        assert_eq!(p.grid.capacity, 2);
        assert_eq!(p.groups.len(), 4);
        for g in &p.groups {
            assert_eq!(g.len(), 2);
            assert_eq!(g[0] / 2, g[1] / 2, "{g:?}");
        }
        assert_eq!(
            p.notes,
            vec![
                "from a test".to_string(),
                "8 CPUs on 4 stops: 2 cores per tile, the size of the finest groups of the c2c structure".into(),
                "4 groups of CPUs kept on one tile each (the c2c structure's finest level)".into(),
            ]
        );
        // Without tile groups the capacity is still 2, but nothing is kept together.
        let p = prepare(
            &Setup {
                geometry: Some((2, 2)),
                tile_groups: false,
                ..setup()
            },
            &paired(8),
        )
        .unwrap();
        assert_eq!(p.grid.capacity, 2);
        assert!(p.groups.is_empty());
        // Cores per tile given: taken as is.
        let p = prepare(
            &Setup {
                geometry: Some((2, 2)),
                cores_per_tile: Some(3),
                ..setup()
            },
            &paired(8),
        )
        .unwrap();
        assert_eq!(p.grid.capacity, 3);
    }

    #[test]
    fn disabled_tiles_hold_no_cores() {
        let p = prepare(
            &Setup {
                geometry: Some((2, 3)),
                disabled: Some("1:0, 2:1".into()),
                ..setup()
            },
            &paired(4),
        )
        .unwrap();
        let stops = p.grid.core_stops();
        assert_eq!(stops.len(), 4);
        assert!(!stops.contains(&p.grid.stop(1, 0)));
        assert!(!stops.contains(&p.grid.stop(2, 1)));
        assert_eq!(p.notes.last().unwrap(), "2 tiles given as disabled");
        let e = prepare(
            &Setup {
                geometry: Some((2, 3)),
                disabled: Some("9:9".into()),
                ..setup()
            },
            &paired(4),
        )
        .unwrap_err();
        assert_eq!(e.class(), ErrorClass::Usage);
        assert!(e.to_string().contains("column:row"), "{e}");
    }

    #[test]
    fn a_matrix_of_the_wrong_size_for_the_preset_is_an_input_error() {
        let e = prepare(
            &Setup {
                preset: Some("knl-7210".into()),
                ..setup()
            },
            &paired(8),
        )
        .unwrap_err();
        assert_eq!(e.class(), ErrorClass::Input);
        assert_eq!(
            e.to_string(),
            "test.csv: the matrix has 8 CPUs but knl-7210 has 64 cores: the matrix size does not match the geometry; give one CPU per core (measure with --cpus) or use --geometry ROWSxCOLS"
        );
    }

    #[test]
    fn requests_that_do_not_fit_are_usage_errors() {
        let two = prepare(
            &Setup {
                preset: Some("altra-q80-2s".into()),
                ..setup()
            },
            &paired(8),
        )
        .unwrap_err();
        assert_eq!(two.class(), ErrorClass::Usage);
        assert!(two.to_string().contains("2 sockets"), "{two}");
        let none = prepare(&setup(), &paired(8)).unwrap_err();
        assert_eq!(none.class(), ErrorClass::Usage);
        assert_eq!(none.to_string(), "give --geometry ROWSxCOLS or --preset");
        let unknown = prepare(
            &Setup {
                preset: Some("no-such-preset".into()),
                ..setup()
            },
            &paired(8),
        )
        .unwrap_err();
        assert_eq!(unknown.class(), ErrorClass::Input);
        // A core x target matrix on a preset is checked the same way.
        let mut t = paired(8);
        t.measured.kind = Kind::CoreToTarget;
        let e = prepare(
            &Setup {
                preset: Some("mesh".into()),
                ..setup()
            },
            &t,
        )
        .unwrap_err();
        assert_eq!(e.class(), ErrorClass::Input);
    }
}
