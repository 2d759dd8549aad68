//! Writes the SMBIOS fixtures (`tests/fixtures/smbios/<name>/sys/firmware/dmi/...`) from
//! their descriptions in `numalab_memconfig::synth::fixtures()`.
//!
//! ```sh
//! cargo run -p numalab-memconfig --example gen_fixtures
//! ```
//!
//! The test `fixtures_match_their_generator` fails when the files and the descriptions
//! disagree.

use std::path::Path;

fn main() -> std::io::Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smbios");
    for f in numalab_memconfig::synth::fixtures() {
        let root = dir.join(f.name);
        if root.join("sys").exists() {
            std::fs::remove_dir_all(root.join("sys"))?;
        }
        numalab_memconfig::synth::write(&f, &root)?;
        println!("{:<28} {}", f.name, f.description);
    }
    Ok(())
}
