//! Prints the inferred structure of every published matrix in tests/fixtures/c2c (or of
//! the CSV files given as arguments): levels, separations, notes, and the time taken.
//!
//! Run: `cargo run --release -p numalab-c2c --example structure_dump [FILE.csv...]`

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let args: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    let files = if args.is_empty() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/c2c");
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("fixture folder")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("csv"))
            .collect();
        v.sort();
        v
    } else {
        args
    };
    for f in files {
        let m = match numalab_c2c::csv::read(&f) {
            Ok(i) => i.matrix,
            Err(e) => {
                println!("{}: {e}", f.display());
                continue;
            }
        };
        let t = Instant::now();
        let s = numalab_c2c::infer(&m);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        println!(
            "== {} ({} CPUs, {ms:.0} ms)",
            f.file_name().unwrap().to_string_lossy(),
            m.n()
        );
        for l in &s.levels {
            let eg: Vec<String> = l
                .groups
                .iter()
                .take(4)
                .map(|g| format!("{:?}", g.cpus))
                .collect();
            println!(
                "  [{}] {:?} sep {:.3} intra {:.1} inter {:.1}  {}",
                l.shape(),
                l.evidence,
                l.separation,
                l.intra_ns.unwrap_or(f64::NAN),
                l.inter_ns.unwrap_or(f64::NAN),
                eg.join(" ")
            );
        }
        for n in &s.notes {
            println!("  note: {n}");
        }
    }
}
