//! Floorplan inference, its ground-truth accuracy and affinity advice: the inferred
//! floorplan as a grid (one row per mesh row, top row first) with its fitted constants
//! and confidence, the recovery accuracy by noise level, and the CPUs chosen for
//! cooperating threads with the predicted gain over scatter.

use super::{opt, table};
use crate::anchors;
use crate::doc::Section;
use crate::load::Loaded;
use crate::table::Cell;
use numalab_records::layout::{AffinityRecord, GroundTruthRecord, HopCosts, InferenceRecord, Kind};
use numalab_schema::{cpulist, Origin, Record};

/// Confidence below which a CPU's place is marked '?'.
const LOW_CONFIDENCE: f64 = 0.9;

/// The layout sections of a bundle: every inference, the ground-truth accuracy of each
/// configuration, every affinity advice.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let mut out = Vec::new();
    for (r, rec) in l.records_of::<InferenceRecord>() {
        out.push(inference(b, r, &rec, of));
    }
    out.extend(groundtruth(b, &l.records_of::<GroundTruthRecord>(), of));
    for (r, rec) in l.records_of::<AffinityRecord>() {
        out.push(affinity(b, r, &rec, of));
    }
    out
}

fn hop_costs(h: HopCosts) -> &'static str {
    match h {
        HopCosts::Fixed => "given",
        HopCosts::Fit => "fitted",
    }
}

/// A number with as few decimals as it needs (up to 3): 0, 0.5, 0.25.
fn short(v: f64) -> Cell {
    let digits = (0..3)
        .find(|&d| {
            let k = 10f64.powi(d as i32);
            ((v * k).round() - v * k).abs() < 1e-9
        })
        .unwrap_or(3);
    Cell::num(v, digits)
}

/// The cells of the floorplan grid, `cells[y][x]`: the CPU ids at a stop ('?' after those
/// of low confidence), '-' for a tile left empty, '#' for a stop that holds no core, then
/// the targets at the stop in brackets.
fn floorplan_cells(r: &InferenceRecord) -> Vec<Vec<String>> {
    let g = &r.geometry;
    let (rows, cols) = (g.rows as usize, g.cols as usize);
    let mut cell: Vec<Vec<String>> = vec![vec![String::new(); cols]; rows];
    fn at(cell: &mut [Vec<String>], p: [u32; 2]) -> Option<&mut String> {
        cell.get_mut(p[1] as usize)?.get_mut(p[0] as usize)
    }
    for c in &r.cores {
        if let Some(s) = at(&mut cell, [c.x, c.y]) {
            if !s.is_empty() {
                s.push(',');
            }
            s.push_str(&c.cpu.to_string());
            if c.confidence < LOW_CONFIDENCE {
                s.push('?');
            }
        }
    }
    for (p, mark) in g
        .no_cores
        .iter()
        .map(|p| (p, "#"))
        .chain(r.empty_tiles.iter().map(|p| (p, "-")))
    {
        if let Some(s) = at(&mut cell, *p) {
            if s.is_empty() {
                *s = mark.into();
            }
        }
    }
    let mut targets: Vec<Vec<Vec<&str>>> = vec![vec![Vec::new(); cols]; rows];
    for t in &r.targets {
        if let Some(v) = targets
            .get_mut(t.y as usize)
            .and_then(|row| row.get_mut(t.x as usize))
        {
            v.push(t.target.rsplit(':').next().unwrap_or(&t.target));
        }
    }
    for (y, row) in targets.iter().enumerate() {
        for (x, t) in row.iter().enumerate() {
            if !t.is_empty() {
                let s = &mut cell[y][x];
                if !s.is_empty() {
                    s.push(' ');
                }
                s.push_str(&format!("[{}]", t.join(",")));
            }
        }
    }
    cell
}

fn inference(b: usize, rec: &Record, r: &InferenceRecord, of: &str) -> Section {
    let g = &r.geometry;
    let mut s = Section::new(
        &anchors::id(b, &format!("layout-{}", rec.key)),
        &format!("Inferred floorplan of {}{of}", r.input),
    );
    s.modeled = rec.origin == Origin::Modeled;
    let hop = match g.hop_costs {
        HopCosts::Fixed => format!(
            "hop costs given: vertical {:?}, horizontal {:?} cycles",
            g.hop_cycles_vertical, g.hop_cycles_horizontal
        ),
        HopCosts::Fit => "hop costs fitted".to_string(),
    };
    s.para(format!(
        "{} CPUs{} placed on a {} x {} mesh ({} rows x {} columns{}, {} routing, {hop}, {} cores per tile), from a {} matrix ({}, {} latencies).",
        r.cores.len(),
        if r.targets.is_empty() {
            String::new()
        } else {
            format!(" and {} targets", r.targets.len())
        },
        g.rows,
        g.cols,
        g.rows,
        g.cols,
        g.preset
            .as_ref()
            .map_or(String::new(), |p| format!(", preset {p}")),
        g.routing.to_uppercase(),
        g.cores_per_tile,
        match r.kind {
            Kind::CoreToCore => "core-to-core",
            Kind::CoreToTarget => "core x target",
        },
        r.input_origin,
        r.observations,
    ));
    s.para(format!(
        "Fit: residual {:.2} ns rms over {} latencies (R^2 {:.3}); {} of {} restarts ended at the best placement (seed {}, {} sweeps per restart).",
        r.residual_rms_ns,
        r.observations,
        r.r_squared,
        r.restarts_same_as_best,
        r.restarts.len(),
        r.seed,
        r.sweeps
    ));
    // The floorplan, top row first.
    let cells = floorplan_cells(r);
    let names: Vec<String> = std::iter::once("row".to_string())
        .chain((0..g.cols).map(|x| format!("x={x}")))
        .collect();
    let spec: Vec<(&str, Option<&str>)> = names.iter().map(|n| (n.as_str(), None)).collect();
    let mut t = table(
        &anchors::id(b, &format!("layout-grid-{}", rec.key)),
        "Floorplan, top row first",
        &spec,
    );
    for (y, row) in cells.iter().enumerate().rev() {
        let mut line = vec![Cell::text(format!("y={y}"))];
        line.extend(row.iter().map(Cell::text));
        t.push(line);
    }
    t.notes.push(format!(
        "cells: CPU ids ('?': confidence below {LOW_CONFIDENCE}); '-': tile left empty (disabled, as inferred); '#': holds no core{}",
        if r.targets.is_empty() { "" } else { "; [..]: targets" }
    ));
    s.table(t);
    let mut c = table(
        &anchors::id(b, &format!("layout-constants-{}", rec.key)),
        "Fitted constants",
        &[("constant", None), ("value", None), ("unit", None)],
    );
    for k in &r.constants {
        c.push(vec![
            Cell::text(k.name.replace('_', " ")),
            Cell::num(k.value_ns, 2),
            Cell::text(k.unit()),
        ]);
    }
    s.table(c);
    let mut items = Vec::new();
    if !r.low_confidence_cpus.is_empty() {
        items.push(format!(
            "low confidence: CPUs {} (their best other stop fits almost as well)",
            cpulist::format(&r.low_confidence_cpus)
        ));
    }
    items.extend(r.notes.iter().map(|n| format!("note: {n}")));
    s.list(items);
    s
}

/// One section per ground-truth configuration (preset, matrix, hop costs, disabled
/// tiles known, trials), its noise levels as rows.
fn groundtruth(b: usize, recs: &[(&Record, GroundTruthRecord)], of: &str) -> Vec<Section> {
    type Config = (String, Kind, HopCosts, bool, usize);
    let config = |r: &GroundTruthRecord| -> Config {
        (
            r.preset.clone(),
            r.kind,
            r.hop_costs,
            r.disabled_known,
            r.trials.len(),
        )
    };
    let mut groups: Vec<(Config, Vec<&GroundTruthRecord>)> = Vec::new();
    for (_, r) in recs {
        let c = config(r);
        match groups.iter_mut().find(|(k, _)| *k == c) {
            Some((_, v)) => v.push(r),
            None => groups.push((c, vec![r])),
        }
    }
    let mut out = Vec::new();
    for (i, ((preset, kind, hop, known, trials), rs)) in groups.iter().enumerate() {
        let mut s = Section::new(
            &anchors::id(b, &format!("layout-groundtruth-{i}")),
            &format!("Floorplan recovery on {preset}{of}"),
        );
        s.modeled = true;
        s.para(format!(
            "Recovery accuracy of {} generated by the model of {preset} with a random placement and Gaussian noise ({trials} trials per level, hop costs {}, disabled tiles {}); accuracy modulo {}.",
            match kind {
                Kind::CoreToCore => "core-to-core matrices",
                Kind::CoreToTarget => "core x slice matrices",
            },
            hop_costs(*hop),
            if *known { "given" } else { "unknown" },
            rs[0].symmetries.join(", ")
        ));
        let mut t = table(
            &anchors::id(b, &format!("layout-groundtruth-table-{i}")),
            "Recovery accuracy by noise level",
            &[
                ("noise", Some("ns")),
                ("exact (mean)", Some("%")),
                ("worst", Some("%")),
                ("displacement", Some("hops")),
                ("tile pairs", Some("%")),
                ("search optimal", None),
                ("time", Some("s")),
            ],
        );
        for r in rs {
            t.push(vec![
                short(r.noise_ns),
                Cell::num(100.0 * r.exact_fraction_mean, 1),
                Cell::num(100.0 * r.exact_fraction_min, 1),
                Cell::num(r.mean_displacement_hops, 2),
                opt(
                    r.tile_groups_correct_fraction.map(|f| 100.0 * f),
                    0,
                    "no tiles shared by cores, or a core x slice matrix",
                ),
                Cell::text(format!("{}/{}", r.search_optimal_trials, r.trials.len())),
                Cell::num(r.seconds_median, 2),
            ]);
        }
        t.notes.push("search optimal: trials where the inferred placement fits the noisy matrix at least as well as the true one (the remaining error is the noise's, not the search's)".into());
        s.table(t);
        out.push(s);
    }
    out
}

fn affinity(b: usize, rec: &Record, r: &AffinityRecord, of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, &format!("layout-{}", rec.key)),
        &format!("Cores for {} cooperating threads{of}", r.threads),
    );
    s.modeled = rec.origin == Origin::Modeled;
    s.para(format!(
        "CPUs: {} (latencies from {}; communication {}).",
        r.cpulist,
        match r.source.as_str() {
            "layout" => "an inferred floorplan",
            "c2c" => "a core-to-core matrix",
            other => other,
        },
        r.communication
    ));
    s.para(format!(
        "Mean latency between communicating threads: {:.1} ns here, {:.1} ns with scatter (CPUs {}): predicted gain {:.2}x.",
        r.cost_ns,
        r.scatter_cost_ns,
        cpulist::format(&r.scatter_placement),
        r.predicted_gain
    ));
    // The nearest target of each thread, when the layout has targets.
    let homes = r.nearest_targets.iter().any(Option::is_some);
    let cols: &[(&str, Option<&str>)] = if homes {
        &[("thread", None), ("CPU", None), ("home its data at", None)]
    } else {
        &[("thread", None), ("CPU", None)]
    };
    let mut t = table(
        &anchors::id(b, &format!("layout-affinity-table-{}", rec.key)),
        "Thread placement",
        cols,
    );
    for (i, cpu) in r.placement.iter().enumerate() {
        let mut row = vec![Cell::num(i as f64, 0), Cell::num(f64::from(*cpu), 0)];
        if homes {
            row.push(match r.nearest_targets.get(i).cloned().flatten() {
                Some(target) => Cell::text(target),
                None => Cell::missing("no target nearer than the others"),
            });
        }
        t.push(row);
    }
    s.table(t);
    s.para(format!("e.g. taskset -c {} ./program", r.cpulist));
    s.list(r.notes.iter().map(|n| format!("note: {n}")).collect());
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Format;
    use numalab_records::layout::{
        Accuracy, Constant, CorePlacement, GeometryInfo, MeshGeometry, MeshRouting, Restart,
        TargetPlacement, Trial,
    };
    use numalab_schema::record::{Host, Tool, SCHEMA_VERSION};
    use numalab_schema::{Bundle, Envelope, RecordKind};

    fn core(cpu: u32, x: u32, y: u32, confidence: f64) -> CorePlacement {
        CorePlacement {
            cpu,
            x,
            y,
            stop: y * 3 + x,
            confidence,
            delta_sse_ns2: 1.0,
            alternative: None,
        }
    }

    /// A 2 x 3 mesh: CPUs 0-1 share (0,0), 2 at (1,0) unsure, 3 at (2,1); (1,1) left
    /// empty, (0,1) no tile; targets slice:0 at (0,0) and slice:1 at (0,1).
    fn inference_record() -> InferenceRecord {
        InferenceRecord {
            input: "m.csv".into(),
            kind: Kind::CoreToTarget,
            input_origin: "imported".into(),
            geometry: GeometryInfo {
                rows: 2,
                cols: 3,
                routing: "xy".into(),
                hop_costs: HopCosts::Fit,
                hop_cycles_vertical: vec![1],
                hop_cycles_horizontal: vec![1],
                cores_per_tile: 2,
                preset: None,
                no_cores: vec![[0, 1]],
                no_targets: vec![],
            },
            geo: MeshGeometry {
                cols: 3,
                rows: 2,
                sockets: 1,
                routing: MeshRouting::Xy,
                router_cycles: 0,
                inject_cycles: 1,
                eject_cycles: 1,
                link_cycles: vec![1; 24],
                gateway: None,
                socket_cycles: 0,
            },
            cores: vec![
                core(0, 0, 0, 1.0),
                core(1, 0, 0, 1.0),
                core(2, 1, 0, 0.6),
                core(3, 2, 1, 0.95),
            ],
            targets: vec![
                TargetPlacement {
                    target: "slice:0".into(),
                    x: 0,
                    y: 0,
                    stop: 0,
                    confidence: 1.0,
                    delta_sse_ns2: 1.0,
                    alternative: None,
                },
                TargetPlacement {
                    target: "slice:1".into(),
                    x: 0,
                    y: 1,
                    stop: 3,
                    confidence: 1.0,
                    delta_sse_ns2: 1.0,
                    alternative: None,
                },
            ],
            constants: vec![
                Constant {
                    name: "base".into(),
                    value_ns: 40.0,
                },
                Constant {
                    name: "same_stop".into(),
                    value_ns: -5.0,
                },
                Constant {
                    name: "horizontal".into(),
                    value_ns: 1.5,
                },
            ],
            base_ns: 40.0,
            same_stop_ns: -5.0,
            residual_rms_ns: 0.5,
            sse_ns2: 2.0,
            observations: 8,
            r_squared: 0.99,
            tile_groups: vec![vec![0, 1]],
            empty_tiles: vec![[1, 1]],
            symmetries: vec!["identity".into()],
            restarts: vec![Restart {
                seed: 1,
                sse: 2.0,
                same_as_best: true,
            }],
            restarts_same_as_best: 1,
            seed: 1,
            sweeps: 400,
            low_confidence_cpus: vec![2],
            notes: vec!["a note".into()],
        }
    }

    fn gt(noise: f64, fraction: Option<f64>) -> GroundTruthRecord {
        let t = Trial {
            noise_ns: noise,
            seed: 1,
            accuracy: Accuracy {
                exact_fraction: 1.0,
                mean_displacement_hops: 0.0,
                target_exact_fraction: None,
                symmetry: "identity".into(),
            },
            tile_groups_found: 32,
            tile_groups_correct: 32,
            residual_rms_ns: 0.0,
            truth_sse_ns2: 0.0,
            inferred_sse_ns2: 0.0,
            search_optimal: true,
            seconds: 0.5,
        };
        GroundTruthRecord {
            preset: "knl-7210".into(),
            kind: Kind::CoreToCore,
            hop_costs: HopCosts::Fixed,
            disabled_known: false,
            noise_ns: noise,
            exact_fraction_mean: 0.75,
            exact_fraction_min: 0.5,
            mean_displacement_hops: 0.25,
            tile_groups_correct_fraction: fraction,
            search_optimal_trials: 1,
            seconds_median: 0.5,
            trials: vec![t.clone(), t],
            symmetries: vec!["identity".into(), "rotation 180".into()],
        }
    }

    fn affinity_record() -> AffinityRecord {
        AffinityRecord {
            threads: 2,
            source: "layout".into(),
            communication: "uniform".into(),
            placement: vec![1, 0],
            cpulist: "0-1".into(),
            cost_ns: 35.0,
            scatter_cost_ns: 35.0,
            scatter_placement: vec![0, 1],
            predicted_gain: 1.0,
            nearest_targets: vec![Some("slice:0".into()), None],
            notes: vec!["a caution".into()],
        }
    }

    fn loaded() -> Loaded {
        let mut records = vec![numalab_schema::Record::new(
            "layout/inference/m.csv",
            Origin::Imported,
            &inference_record(),
        )];
        for (i, (n, f)) in [(0.0, Some(1.0)), (0.5, None)].into_iter().enumerate() {
            records.push(numalab_schema::Record::new(
                format!("gt{i}"),
                Origin::Modeled,
                &gt(n, f),
            ));
        }
        records.push(numalab_schema::Record::new(
            "aff",
            Origin::Imported,
            &affinity_record(),
        ));
        Loaded::from_bundle(
            "test",
            Bundle {
                schema_version: SCHEMA_VERSION,
                envelope: Envelope {
                    schema_version: SCHEMA_VERSION,
                    tool: Tool::this("0"),
                    created_utc: "2026-01-01T00:00:00Z".into(),
                    command: vec!["numalab".into(), "layout".into()],
                    config: serde_json::json!({}),
                    origin: Origin::Imported,
                    host: Host::unknown("x"),
                },
                records,
            },
        )
    }

    fn texts() -> Vec<String> {
        sections(0, &loaded(), "")
            .iter()
            .map(|s| s.to_text(Format::Terminal, false))
            .collect()
    }

    #[test]
    fn one_section_per_inference_configuration_and_advice() {
        let s = sections(0, &loaded(), "");
        assert_eq!(s.len(), 3);
        assert!(!s[0].modeled);
        assert!(s[1].modeled);
        assert_eq!(InferenceRecord::KIND, "layout.inference");
    }

    #[test]
    fn the_floorplan_is_a_grid_top_row_first() {
        let s = sections(0, &loaded(), "");
        let grid = s[0].tables().next().unwrap();
        assert_eq!(grid.columns.len(), 4);
        let row = |i: usize| -> Vec<String> { grid.rows[i].iter().map(Cell::display).collect() };
        assert_eq!(row(0), vec!["y=1", "# [1]", "-", "3"]);
        assert_eq!(row(1), vec!["y=0", "0,1 [0]", "2?", ""]);
        assert!(grid.notes[0].contains("[..]: targets"), "{:?}", grid.notes);
        let text = &texts()[0];
        for want in [
            "4 CPUs and 2 targets placed on a 2 x 3 mesh (2 rows x 3 columns, XY routing, hop costs fitted, 2 cores per tile)",
            "residual 0.50 ns rms over 8 latencies (R^2 0.990); 1 of 1 restarts ended at the best placement",
            "same stop",
            "ns per hop",
            "low confidence: CPUs 2",
            "note: a note",
        ] {
            assert!(text.contains(want), "{want:?} not in\n{text}");
        }
    }

    #[test]
    fn groundtruth_levels_are_rows_with_the_search_note() {
        let text = &texts()[1];
        for want in [
            "core-to-core matrices generated by the model of knl-7210",
            "2 trials per level, hop costs given, disabled tiles unknown",
            "accuracy modulo identity, rotation 180",
            "search optimal: trials where",
            "n/a: no tiles shared by cores",
        ] {
            assert!(text.contains(want), "{want:?} not in\n{text}");
        }
        let s = sections(0, &loaded(), "");
        let t = s[1].tables().next().unwrap();
        let row: Vec<String> = t.rows[1].iter().map(Cell::display).collect();
        assert_eq!(
            row,
            vec!["0.5", "75.0", "50.0", "0.25", "n/a", "1/2", "0.50"]
        );
        assert_eq!(t.rows[0][0].display(), "0");
        assert_eq!(t.rows[0][4].display(), "100");
    }

    #[test]
    fn affinity_names_the_cpus_the_gain_and_taskset() {
        let text = &texts()[2];
        for want in [
            "CPUs: 0-1 (latencies from an inferred floorplan; communication uniform)",
            "35.0 ns here, 35.0 ns with scatter (CPUs 0-1): predicted gain 1.00x",
            "slice:0",
            "e.g. taskset -c 0-1 ./program",
            "note: a caution",
        ] {
            assert!(text.contains(want), "{want:?} not in\n{text}");
        }
        let s = sections(0, &loaded(), "");
        let t = s[2].tables().next().unwrap();
        let row: Vec<String> = t.rows[0].iter().map(Cell::display).collect();
        assert_eq!(row, vec!["0", "1", "slice:0"]);
        assert_eq!(t.rows[1][2].display(), "n/a");
        // Without targets the table has no column for them.
        let plain = AffinityRecord {
            nearest_targets: vec![None, None],
            ..affinity_record()
        };
        let rec = numalab_schema::Record::new("aff", Origin::Imported, &plain);
        let s = affinity(0, &rec, &plain, "");
        let t = s.tables().next().unwrap();
        assert_eq!(t.columns.len(), 2);
        assert_eq!(t.rows.len(), 2);
    }
}
