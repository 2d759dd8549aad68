//! The inferred floorplan as a picture (experiments.md C1 on an inferred layout): each
//! core's OS id at its inferred stop, targets as circles, tiles left empty hatched, and
//! optionally a heatmap of the measured latency from one CPU or to one target. Drawn with
//! `numalab_chart::Floorplan`, which escapes every string.

use crate::error::LayoutError;
use crate::infer::{Kind, Measured};
use crate::record::InferenceRecord;
use numalab_chart::{CellState, FloorCell, FloorItem, Floorplan, ItemShape};
use std::collections::BTreeMap;

/// Which latencies colour the cores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heat {
    /// From this CPU (OS id) to every other core (core-to-core matrices).
    From(u32),
    /// From every core to this target (core-to-target matrices).
    To(String),
}

impl Heat {
    /// The heatmap asked for: from a CPU (`--heatmap-from`), else to a target
    /// (`--heatmap-to`), else none.
    pub fn from_flags(from: Option<u32>, to: Option<&str>) -> Option<Heat> {
        match (from, to) {
            (Some(c), _) => Some(Heat::From(c)),
            (_, Some(t)) => Some(Heat::To(t.to_string())),
            _ => None,
        }
    }
}

/// Checks that a heatmap fits the matrix (a CPU of a core-to-core matrix, a target of a
/// core x target one), so that a command can refuse it before searching.
pub fn check_heat(heat: &Heat, m: &Measured) -> Result<(), LayoutError> {
    heat_index(heat, m).map(|_| ())
}

/// The heatmap's CPU (position in `m.cpus`) or target (position in `m.targets`).
fn heat_index(heat: &Heat, m: &Measured) -> Result<u32, LayoutError> {
    let i = match heat {
        Heat::From(cpu) => {
            if m.kind != Kind::CoreToCore {
                return Err(LayoutError::Usage(
                    "--heatmap-from needs a core-to-core matrix; use --heatmap-to TARGET for a core x target matrix".into(),
                ));
            }
            m.cpus.iter().position(|c| c == cpu).ok_or_else(|| {
                LayoutError::Usage(format!(
                    "--heatmap-from {cpu}: CPU {cpu} is not in the matrix ({} CPUs)",
                    m.cpus.len()
                ))
            })?
        }
        Heat::To(t) => {
            if m.kind != Kind::CoreToTarget {
                return Err(LayoutError::Usage(
                    "--heatmap-to needs a core x target matrix; use --heatmap-from CPU for a core-to-core matrix".into(),
                ));
            }
            m.targets.iter().position(|x| x == t).ok_or_else(|| {
                LayoutError::Usage(format!(
                    "--heatmap-to {t}: no such target; the matrix has {}",
                    m.targets.join(", ")
                ))
            })?
        }
    };
    Ok(i as u32)
}

/// The floorplan SVG of an inference, with the measured matrix for a heatmap.
pub fn floorplan(
    rec: &InferenceRecord,
    m: &Measured,
    heat: Option<&Heat>,
) -> Result<String, LayoutError> {
    let values: BTreeMap<u32, f64> = match heat {
        None => BTreeMap::new(),
        Some(h @ Heat::From(_)) => {
            let p = heat_index(h, m)?;
            m.obs
                .iter()
                .filter_map(|o| {
                    if o.a == p {
                        Some((m.cpus[o.b as usize], o.y))
                    } else if o.b == p {
                        Some((m.cpus[o.a as usize], o.y))
                    } else {
                        None
                    }
                })
                .collect()
        }
        Some(h @ Heat::To(_)) => {
            let j = heat_index(h, m)?;
            m.obs
                .iter()
                .filter(|o| o.b == j)
                .map(|o| (m.cpus[o.a as usize], o.y))
                .collect()
        }
    };
    let g = &rec.geometry;
    let mut cells: BTreeMap<(u32, u32), FloorCell> = BTreeMap::new();
    let cell = |cells: &mut BTreeMap<(u32, u32), FloorCell>, x: u32, y: u32, state: CellState| {
        cells.entry((x, y)).or_insert_with(|| FloorCell {
            x,
            y,
            state,
            label: format!("({x},{y})"),
            items: Vec::new(),
        });
    };
    for p in &g.no_cores {
        cell(&mut cells, p[0], p[1], CellState::Other);
    }
    for p in &rec.empty_tiles {
        cell(&mut cells, p[0], p[1], CellState::Disabled);
    }
    for c in &rec.cores {
        cell(&mut cells, c.x, c.y, CellState::Tile);
        let value = values.get(&c.cpu).copied();
        let source = matches!(heat, Some(Heat::From(s)) if *s == c.cpu);
        let mut tip = format!(
            "CPU {} at ({},{}): confidence {:.3}",
            c.cpu, c.x, c.y, c.confidence
        );
        if let Some(alt) = c.alternative {
            tip.push_str(&format!(
                " (next best ({},{}), +{:.1} ns^2)",
                alt[0], alt[1], c.delta_sse_ns2
            ));
        }
        if let Some(v) = value {
            tip.push_str(&format!("; {v:.1} ns"));
        }
        if source {
            tip.push_str("; heatmap source");
        }
        let low = c.confidence < 0.9;
        if let Some(cl) = cells.get_mut(&(c.x, c.y)) {
            cl.items.push(FloorItem {
                label: format!("{}{}", c.cpu, if low { "?" } else { "" }),
                value,
                tooltip: tip,
                marked: source,
                shape: ItemShape::Square,
            });
        }
    }
    for t in &rec.targets {
        cell(&mut cells, t.x, t.y, CellState::Tile);
        let marked = matches!(heat, Some(Heat::To(x)) if *x == t.target);
        let short = t.target.rsplit(':').next().unwrap_or(&t.target).to_string();
        if let Some(cl) = cells.get_mut(&(t.x, t.y)) {
            cl.items.push(FloorItem {
                label: short,
                value: None,
                tooltip: format!(
                    "{} at ({},{}): confidence {:.3}{}",
                    t.target,
                    t.x,
                    t.y,
                    t.confidence,
                    if marked { "; heatmap target" } else { "" }
                ),
                marked,
                shape: ItemShape::Circle,
            });
        }
    }
    let consts: Vec<String> = rec
        .constants
        .iter()
        .map(|c| format!("{} {:.2} ns", c.name, c.value_ns))
        .collect();
    let mut notes = vec![
        format!(
            "fit: {}; residual {:.2} ns rms over {} latencies (R^2 {:.3})",
            consts.join(", "),
            rec.residual_rms_ns,
            rec.observations,
            rec.r_squared
        ),
        format!(
            "hatched: tiles left without cores (disabled, as inferred); dashed: stops that hold no core; '?': confidence below 0.9; compared modulo: {}",
            rec.symmetries.join(", ")
        ),
    ];
    // The source's tile mates are much faster than any other core: keep them out of the
    // colour scale so that the mesh distances stay visible.
    let mut range = None;
    if let Some(Heat::From(src)) = heat {
        let stop = rec.cores.iter().find(|c| c.cpu == *src).map(|c| c.stop);
        let others: Vec<f64> = rec
            .cores
            .iter()
            .filter(|c| Some(c.stop) != stop)
            .filter_map(|c| values.get(&c.cpu).copied())
            .collect();
        if !others.is_empty() && others.len() < values.len() {
            range = Some((
                others.iter().copied().fold(f64::INFINITY, f64::min),
                others.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ));
        }
    }
    match heat {
        Some(Heat::From(c)) => notes.push(format!(
            "colour: measured latency from CPU {c} (thick outline){}",
            if range.is_some() {
                "; cores on its own tile are below the scale (see tooltips)"
            } else {
                ""
            }
        )),
        Some(Heat::To(t)) => notes.push(format!("colour: measured latency to {t} (thick circle)")),
        None => {}
    }
    let plan = Floorplan {
        title: format!("Inferred floorplan: {}", rec.input),
        cols: g.cols,
        rows: g.rows,
        cells: cells.into_values().collect(),
        unit: "ns".into(),
        notes,
        range,
    };
    Ok(plan.to_svg())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets() -> Measured {
        Measured::from_targets(
            vec![4, 7],
            vec!["slice:0".into(), "slice:1".into()],
            &[vec![Some(10.0), Some(12.0)], vec![None, Some(11.0)]],
        )
    }

    #[test]
    fn the_heatmap_asked_for() {
        assert_eq!(Heat::from_flags(Some(3), None), Some(Heat::From(3)));
        assert_eq!(
            Heat::from_flags(None, Some("mc:1")),
            Some(Heat::To("mc:1".into()))
        );
        assert_eq!(Heat::from_flags(None, None), None);
    }

    #[test]
    fn a_heatmap_must_fit_the_matrix() {
        let m = targets();
        assert!(check_heat(&Heat::To("slice:1".into()), &m).is_ok());
        assert_eq!(heat_index(&Heat::To("slice:1".into()), &m).unwrap(), 1);
        assert_eq!(
            check_heat(&Heat::To("mc:0".into()), &m)
                .unwrap_err()
                .to_string(),
            "--heatmap-to mc:0: no such target; the matrix has slice:0, slice:1"
        );
        assert!(check_heat(&Heat::From(4), &m)
            .unwrap_err()
            .to_string()
            .starts_with("--heatmap-from needs a core-to-core matrix"));
        let c2c = Measured {
            kind: Kind::CoreToCore,
            targets: Vec::new(),
            ..m
        };
        assert_eq!(heat_index(&Heat::From(7), &c2c).unwrap(), 1);
        assert_eq!(
            check_heat(&Heat::From(5), &c2c).unwrap_err().to_string(),
            "--heatmap-from 5: CPU 5 is not in the matrix (2 CPUs)"
        );
        assert!(check_heat(&Heat::To("slice:0".into()), &c2c)
            .unwrap_err()
            .to_string()
            .starts_with("--heatmap-to needs a core x target matrix"));
    }
}
