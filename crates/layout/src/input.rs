//! Reading the matrices layout inference fits, from the files other commands write.
//!
//! Why: the matrix can come from a measurement (`numalab c2c --out DIR` or `--json`), from a
//! published core-to-core-latency CSV, from the model (`numalab model run ... --experiment
//! latency-heatmap`, one record per target), or from another tool's core x target table.
//! This module turns each into [`Measured`] observations, reusing the c2c crate's matrix
//! type and CSV reader, and says clearly when a file holds none of these.
//!
//! Core x target CSV: a header line `cpu,<target>,<target>,...` (any names), then one line
//! per CPU: its OS id and its latency (ns) to each target; empty cells are unmeasured.

use crate::error::LayoutError;
use crate::infer::Measured;
use numalab_c2c::record::MatrixRecord;
use numalab_c2c::LatencyMatrix;
use numalab_model::records::LatencyHeatmap;
use numalab_schema::journal::read_bundle;
use numalab_schema::Origin;
use std::collections::BTreeMap;
use std::path::Path;

/// A matrix read from a file, with what is worth saying about it.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The observations.
    pub measured: Measured,
    /// The core-to-core matrix, when the input is one (for the c2c structure).
    pub c2c: Option<LatencyMatrix>,
    /// Where the numbers come from: "measured", "imported", "modeled".
    pub origin: String,
    /// Facts about the input, in sentences.
    pub notes: Vec<String>,
}

/// The origin of results derived from an input whose [`Loaded::origin`] (or a layout's
/// `input_origin`) is `text`: measured stays measured, modeled stays modeled, anything
/// else is imported.
pub fn origin_of(text: &str) -> Origin {
    match text {
        "measured" => Origin::Measured,
        "modeled" => Origin::Modeled,
        _ => Origin::Imported,
    }
}

/// Reads a matrix: a results folder, journal or JSON bundle holding a `c2c.matrix` record
/// (the last one) or `model.latency_heatmap` records (one per target), or a CSV file.
pub fn load(path: &Path) -> Result<Loaded, LayoutError> {
    let name = path.display().to_string();
    let is_csv = path.is_file()
        && path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    if is_csv {
        return load_csv(path);
    }
    let (bundle, warnings) = read_bundle(path).map_err(|e| {
        // The error names the path already; the input error names it once.
        let e = e.to_string();
        let e = e.strip_prefix(&format!("{name}: ")).unwrap_or(&e);
        LayoutError::input(
            &name,
            format!("{e}; give a c2c results folder or bundle (numalab c2c --out DIR / --json), model latency heatmaps, or a CSV file"),
        )
    })?;
    let mut notes: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
    let origin = format!("{:?}", bundle.envelope.origin).to_lowercase();
    if let Some((_, r)) = bundle.records_of::<MatrixRecord>().into_iter().last() {
        let m = LatencyMatrix::from_cells(r.cpus, r.matrix_ns);
        notes.push(format!(
            "core-to-core matrix of {} CPUs ({} of {} pairs measured, variant {})",
            m.n(),
            m.measured_pairs(),
            m.total_pairs(),
            r.variant
        ));
        return Ok(Loaded {
            measured: Measured::from_c2c(&m),
            c2c: Some(m),
            origin,
            notes,
        });
    }
    let maps = bundle.records_of::<LatencyHeatmap>();
    if !maps.is_empty() {
        let mut cores: Vec<u32> = maps
            .iter()
            .flat_map(|(_, h)| h.cells.iter().map(|c| c.core as u32))
            .collect();
        cores.sort_unstable();
        cores.dedup();
        let mut by_target: BTreeMap<String, BTreeMap<u32, f64>> = BTreeMap::new();
        for (_, h) in &maps {
            let t = by_target.entry(h.target.clone()).or_default();
            for c in &h.cells {
                t.insert(c.core as u32, c.latency_ns);
            }
        }
        let targets: Vec<String> = by_target.keys().cloned().collect();
        let rows: Vec<Vec<Option<f64>>> = cores
            .iter()
            .map(|c| {
                targets
                    .iter()
                    .map(|t| by_target[t].get(c).copied())
                    .collect()
            })
            .collect();
        notes.push(format!(
            "core x target matrix from {} model latency heatmaps ({} cores)",
            targets.len(),
            cores.len()
        ));
        return Ok(Loaded {
            measured: Measured::from_targets(cores, targets, &rows),
            c2c: None,
            origin,
            notes,
        });
    }
    Err(LayoutError::input(
        &name,
        "holds no c2c.matrix and no model.latency_heatmap record; measure one with `numalab c2c --out DIR` or give a CSV file",
    ))
}

fn load_csv(path: &Path) -> Result<Loaded, LayoutError> {
    let name = numalab_schema::text::path_text(path);
    let text = numalab_schema::input::read_to_string(
        path,
        "a core-to-core CSV matrix",
        numalab_schema::input::C2C_CSV,
    )
    .map_err(|e| LayoutError::input(&name, e.reason))?;
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let head = first.split(',').next().unwrap_or("").trim();
    if head.is_empty() || head.parse::<f64>().is_ok() {
        let import = numalab_c2c::csv::parse(text.as_bytes(), &name)
            .map_err(|e| LayoutError::input(&name, e.to_string()))?;
        let mut notes = import.problems.clone();
        notes.push(
            "imported from core-to-core-latency's CSV: CPU ids are taken as 0..N-1 in row order"
                .into(),
        );
        return Ok(Loaded {
            measured: Measured::from_c2c(&import.matrix),
            c2c: Some(import.matrix),
            origin: "imported".into(),
            notes,
        });
    }
    parse_targets(&text, &name)
}

/// Parses a core x target CSV (header `cpu,<targets>...`).
pub fn parse_targets(text: &str, name: &str) -> Result<Loaded, LayoutError> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .flexible(false)
        .from_reader(text.as_bytes());
    let header = rd
        .headers()
        .map_err(|e| LayoutError::input(name, format!("bad header: {e}")))?
        .clone();
    if header.len() < 2 {
        return Err(LayoutError::input(
            name,
            "a core x target CSV needs a header `cpu,<target>,...` with at least one target",
        ));
    }
    let targets: Vec<String> = header.iter().skip(1).map(str::to_string).collect();
    let mut cpus = Vec::new();
    let mut rows = Vec::new();
    for (k, rec) in rd.records().enumerate() {
        let line = k + 2;
        let rec = rec.map_err(|e| {
            LayoutError::input(
                name,
                format!("line {line}: {e} (every line needs the CPU id and one field per target)"),
            )
        })?;
        let cpu: u32 = rec[0].parse().map_err(|_| {
            LayoutError::input(name, format!("line {line}: {:?} is not a CPU id", &rec[0]))
        })?;
        let mut row = Vec::new();
        for (j, f) in rec.iter().skip(1).enumerate() {
            if f.is_empty() {
                row.push(None);
                continue;
            }
            let v: f64 = f.parse().map_err(|_| {
                LayoutError::input(
                    name,
                    format!("line {line}, target {}: {f:?} is not a number", targets[j]),
                )
            })?;
            if !v.is_finite() || v <= 0.0 {
                return Err(LayoutError::input(
                    name,
                    format!(
                        "line {line}, target {}: {v} is not a positive latency",
                        targets[j]
                    ),
                ));
            }
            row.push(Some(v));
        }
        if cpus.contains(&cpu) {
            return Err(LayoutError::input(
                name,
                format!("line {line}: CPU {cpu} appears twice"),
            ));
        }
        cpus.push(cpu);
        rows.push(row);
    }
    if cpus.is_empty() {
        return Err(LayoutError::input(name, "has a header but no CPU lines"));
    }
    Ok(Loaded {
        measured: Measured::from_targets(cpus.clone(), targets.clone(), &rows),
        c2c: None,
        origin: "imported".into(),
        notes: vec![format!(
            "core x target matrix: {} CPUs x {} targets",
            cpus.len(),
            targets.len()
        )],
    })
}

/// Writes a core x target matrix in the CSV layout [`parse_targets`] reads.
pub fn write_targets(m: &Measured, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let t = m.targets.len();
    let mut grid = vec![vec![None; t]; m.cpus.len()];
    for o in &m.obs {
        grid[o.a as usize][o.b as usize] = Some(o.y);
    }
    let mut w = csv::Writer::from_writer(out);
    let mut head = vec!["cpu".to_string()];
    head.extend(m.targets.iter().cloned());
    w.write_record(&head)?;
    for (i, row) in grid.iter().enumerate() {
        let mut r = vec![m.cpus[i].to_string()];
        r.extend(
            row.iter()
                .map(|v| v.map_or(String::new(), |v| format!("{v:.3}"))),
        );
        w.write_record(&r)?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_results_keep_a_measured_or_modeled_origin() {
        assert_eq!(origin_of("measured"), Origin::Measured);
        assert_eq!(origin_of("modeled"), Origin::Modeled);
        assert_eq!(origin_of("imported"), Origin::Imported);
        assert_eq!(origin_of("anything"), Origin::Imported);
    }

    #[test]
    fn target_csv_round_trip_and_errors() {
        let text = "cpu,slice:0,slice:1\n4,10.5,12\n7,,11\n";
        let l = parse_targets(text, "t.csv").unwrap();
        assert_eq!(l.measured.cpus, vec![4, 7]);
        assert_eq!(l.measured.targets, vec!["slice:0", "slice:1"]);
        assert_eq!(l.measured.obs.len(), 3);
        let mut buf = Vec::new();
        write_targets(&l.measured, &mut buf).unwrap();
        let again = parse_targets(std::str::from_utf8(&buf).unwrap(), "again").unwrap();
        assert_eq!(again.measured, l.measured);
        let e = parse_targets("cpu,a\nx,1\n", "bad.csv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.csv") && e.contains("not a CPU id"), "{e}");
        let e = parse_targets("cpu,a\n1,-2\n", "neg.csv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("positive"), "{e}");
        let e = parse_targets("cpu,a,b\n1,2\n", "short.csv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }
}
