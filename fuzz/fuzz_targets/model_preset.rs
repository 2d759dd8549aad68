//! Model presets from files and `--set` overrides (`numalab model run FILE --set K=V`):
//! the first line of the input is a list of overrides (`;`-separated), the rest a preset
//! file; whatever loads is built into a model.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let sets: Vec<String> = first
        .split(';')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let mut f = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
    f.write_all(rest.as_bytes()).unwrap();
    let path = f.path().to_str().unwrap().to_string();
    for what in [path.as_str(), "mesh"] {
        if let Ok(loaded) = numalab_model::spec::load(what, &sets) {
            // Keep the built models small enough to build quickly.
            let _ = numalab_model::model::Model::from_loaded(loaded);
        }
    }
});
