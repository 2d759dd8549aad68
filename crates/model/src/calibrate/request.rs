//! `model calibrate`'s request: the bundles read, the `--save` path checked, the run's
//! configuration and the fitted model.

use crate::error::ModelError;
use crate::model::Model;
use numalab_records::model::Calibration;
use numalab_schema::record::Warning;
use numalab_schema::Bundle;
use std::path::{Path, PathBuf};

/// The bundles at `paths` (output folders, journals or bundle files), each named by its
/// path as given; `warn` hears each bundle's warnings as it is read. The first that
/// cannot be read is an input error saying what to give.
pub fn read_bundles(
    paths: &[PathBuf],
    warn: &mut dyn FnMut(&Warning),
) -> Result<Vec<(String, Bundle)>, ModelError> {
    let mut bundles = Vec::new();
    for path in paths {
        let (b, warnings) = numalab_schema::journal::read_bundle(path).map_err(|e| {
            ModelError::Unreadable(format!("{e}; give a folder numalab wrote with --out (e.g. by `numalab evaluate --out DIR`) or a bundle file"))
        })?;
        warnings.iter().for_each(&mut *warn);
        bundles.push((path.display().to_string(), b));
    }
    Ok(bundles)
}

/// Refuses a `--save` path that is a folder (usage error): the preset is one file.
pub fn check_save(save: Option<&Path>) -> Result<(), ModelError> {
    match save {
        Some(p) if p.is_dir() => Err(ModelError::Usage {
            msg: format!(
                "--save {}: this is a folder; give a file name such as mine.toml",
                p.display()
            ),
        }),
        _ => Ok(()),
    }
}

/// The configuration a calibration records: the preset and overrides as given, the
/// bundles' names and the file the preset is saved to.
pub fn config(
    preset: &str,
    sets: &[String],
    bundles: &[String],
    save: Option<&Path>,
) -> serde_json::Value {
    serde_json::json!({
        "preset": preset,
        "sets": sets,
        "bundles": bundles,
        "save": save,
    })
}

/// The calibrated machine: `preset` with the given overrides `sets`, then the fitted
/// values of `cal` ([`Calibration::calibrated_sets`]).
pub fn fitted_model(preset: &str, sets: &[String], cal: &Calibration) -> Result<Model, ModelError> {
    with_fitted(preset, sets, &cal.calibrated_sets)
}

fn with_fitted(preset: &str, sets: &[String], fitted: &[String]) -> Result<Model, ModelError> {
    let all: Vec<String> = sets.iter().chain(fitted).cloned().collect();
    Model::load(preset, &all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_schema::{Classify, ErrorClass};

    #[test]
    fn an_unreadable_bundle_says_what_to_give() {
        let dir = std::env::temp_dir().join(format!("numalab-cal-req-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut heard = 0;
        let e = read_bundles(std::slice::from_ref(&dir), &mut |_| heard += 1).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Input);
        assert!(e.to_string().ends_with("; give a folder numalab wrote with --out (e.g. by `numalab evaluate --out DIR`) or a bundle file"), "{e}");
        assert_eq!(heard, 0);
        let e = check_save(Some(&dir)).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Usage);
        assert_eq!(
            e.to_string(),
            format!(
                "--save {}: this is a folder; give a file name such as mine.toml",
                dir.display()
            )
        );
        check_save(Some(&dir.join("mine.toml"))).unwrap();
        check_save(None).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_fitted_model_applies_the_fitted_sets_after_the_given_ones() {
        with_fitted("knl-7210", &[], &[]).unwrap();
        let bad = ["no.such.key=1".to_string()];
        assert!(with_fitted("knl-7210", &[], &bad).is_err());
        assert!(with_fitted("knl-7210", &bad, &[]).is_err());
    }

    #[test]
    fn the_config_names_the_preset_bundles_and_save_file() {
        let c = config(
            "mesh",
            &["a=1".into()],
            &["run1".into()],
            Some(Path::new("m.toml")),
        );
        assert_eq!(c["preset"], "mesh");
        assert_eq!(c["sets"][0], "a=1");
        assert_eq!(c["bundles"][0], "run1");
        assert_eq!(c["save"], "m.toml");
        assert!(config("mesh", &[], &[], None)["save"].is_null());
    }
}
