//! A calibration as it is recorded and read: its record key, and its tables as text.

use numalab_records::model::Calibration;
use std::fmt::Write as _;

/// The key of a `model.calibration` record:
/// `model/calibration/PRESET[/SET...]/from/BUNDLE[+BUNDLE...]`.
pub fn record_key(preset: &str, sets: &[String], bundles: &[String]) -> String {
    format!(
        "model/calibration/{}{}/from/{}",
        preset,
        sets.iter().map(|s| format!("/{s}")).collect::<String>(),
        bundles.join("+")
    )
}

/// The text of `model calibrate`: a title (the preset through `emphasize`), the
/// parameters (start, fitted, standard error, saved value, status), every figure
/// measured against modeled before and after, the RMS residual per kind, the notes, and
/// where the preset was saved or how to get it.
pub fn render(c: &Calibration, emphasize: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  calibrated to {} ({} figures)\n",
        emphasize(&c.preset),
        c.bundles.join(", "),
        c.figures.len()
    );
    let _ = writeln!(
        out,
        "{:<28} {:>10} {:>10} {:>9} {:>8}  status",
        "parameter", "start", "fitted", "+- s.e.", "saved"
    );
    for p in &c.parameters {
        let se = p.std_error.map_or("-".to_string(), |s| format!("{s:.3}"));
        // A parameter the configured engines do not use has no fitted value to show.
        let fitted = if p.status == "not-used" {
            "-".to_string()
        } else {
            format!("{:.3}", p.value)
        };
        let _ = writeln!(
            out,
            "{:<28} {:>10} {:>10} {:>9} {:>8}  {} ({})",
            p.key,
            format!("{}", p.start),
            fitted,
            se,
            format!("{}", p.saved),
            p.status,
            p.unit
        );
        if let Some(n) = &p.note {
            let _ = writeln!(out, "    {n}");
        }
    }
    let _ = writeln!(
        out,
        "\n{:<26} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "figure", "measured", "before", "calibrated", "residual", "%"
    );
    for f in &c.figures {
        let what = match f.kind.as_str() {
            "c2c" => format!("c2c {}<->{} {}", f.cpu_node, f.mem_node, f.unit),
            k => format!("{k} {}->{} {}", f.cpu_node, f.mem_node, f.unit),
        };
        let _ = writeln!(
            out,
            "{:<26} {:>10.2} {:>10.2} {:>10.2} {:>+10.2} {:>+8.1}",
            what, f.measured, f.modeled_before, f.modeled, f.residual, f.residual_percent
        );
    }
    let _ = writeln!(out);
    for r in &c.rms {
        let _ = writeln!(
            out,
            "RMS residual {:<13} {:>3} figures: {:.2} {} ({:.1}%), {:.2} {} before",
            r.kind, r.figures, r.rms, r.unit, r.rms_percent, r.rms_before, r.unit
        );
    }
    for n in &c.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let _ = match &c.preset_file {
        Some(p) => writeln!(
            out,
            "\nsaved the calibrated preset to {p}: `numalab model show {p}`, `numalab model run {p} --experiment ...`"
        ),
        None => writeln!(
            out,
            "\n(--save FILE.toml writes the calibrated preset; the same as --preset {} --set {})",
            c.preset,
            c.calibrated_sets.join(" --set ")
        ),
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_records::model::{CalibratedParameter, CalibrationFigure, CalibrationRms};

    fn calibration() -> Calibration {
        Calibration {
            preset: "mesh".into(),
            sets: vec![],
            bundles: vec!["run1".into(), "run2".into()],
            parameters: vec![CalibratedParameter {
                key: "noc.router_cycles".into(),
                unit: "cycles".into(),
                meaning: "per hop".into(),
                start: 2.0,
                value: 2.5,
                std_error: None,
                saved: 3.0,
                status: "fitted".into(),
                note: Some("rounded".into()),
            }],
            figures: vec![CalibrationFigure {
                kind: "c2c".into(),
                cpu_node: 0,
                mem_node: 1,
                unit: "ns".into(),
                measured: 50.0,
                modeled_before: 40.0,
                modeled: 49.0,
                residual: -1.0,
                residual_percent: -2.0,
                sources: vec![],
            }],
            rms: vec![CalibrationRms {
                kind: "c2c".into(),
                unit: "ns".into(),
                figures: 1,
                rms_before: 10.0,
                rms: 1.0,
                rms_percent: 2.0,
            }],
            calibrated_sets: vec!["noc.router_cycles=3".into(), "slc.lookup_cycles=9".into()],
            notes: vec!["node 0 is node 0".into()],
            preset_file: None,
        }
    }

    #[test]
    fn the_key_names_preset_sets_and_bundles() {
        assert_eq!(
            record_key(
                "mesh",
                &["a=1".into(), "b=2".into()],
                &["x".into(), "y".into()]
            ),
            "model/calibration/mesh/a=1/b=2/from/x+y"
        );
        assert_eq!(
            record_key("mesh", &[], &["x".into()]),
            "model/calibration/mesh/from/x"
        );
    }

    #[test]
    fn renders_parameters_figures_and_the_way_to_save() {
        let mut c = calibration();
        let text = render(&c, &|t| format!("*{t}*"));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "*mesh*  calibrated to run1, run2 (1 figures)");
        assert_eq!(lines[1], "");
        assert!(lines[3].starts_with("noc.router_cycles "));
        assert!(lines[3].ends_with("  fitted (cycles)"));
        assert!(lines[3].contains("      2.500         -        3"));
        assert_eq!(lines[4], "    rounded");
        assert!(text.contains("\nc2c 0<->1 ns "));
        assert!(text
            .contains("RMS residual c2c             1 figures: 1.00 ns (2.0%), 10.00 ns before\n"));
        assert!(text.contains("note: node 0 is node 0\n"));
        assert!(text.ends_with(
            "the same as --preset mesh --set noc.router_cycles=3 --set slc.lookup_cycles=9)\n"
        ));
        c.preset_file = Some("mine.toml".into());
        assert!(render(&c, &|t| t.to_string())
            .ends_with("`numalab model run mine.toml --experiment ...`\n"));
    }
}
