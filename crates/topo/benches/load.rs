//! Prints how long it takes to load and describe the largest topology fixture and the
//! live machine (issue: foundation, "Performance"). Run: `cargo bench -p numalab-topo`.

use numalab_topo::{machine, Input};
use std::path::PathBuf;
use std::time::Instant;

fn time(label: &str, input: &Input, reps: usize) {
    let mut times = Vec::new();
    let mut pus = 0;
    for _ in 0..reps {
        let t = Instant::now();
        let m = machine(input).expect("fixture loads");
        times.push(t.elapsed().as_secs_f64() * 1e3);
        pus = m.pus.len();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{label:<48} {pus:>4} PUs  median {:>8.2} ms  min {:>8.2} ms  ({reps} runs)",
        times[reps / 2],
        times[0]
    );
}

fn main() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/topology");
    // The largest fixture by file size, whatever it is.
    let mut largest: Option<(u64, PathBuf)> = None;
    for e in std::fs::read_dir(&fixtures)
        .expect("fixtures folder")
        .flatten()
    {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "xml") && !p.to_string_lossy().contains("hwloc3") {
            let size = e.metadata().map(|m| m.len()).unwrap_or(0);
            if largest.as_ref().is_none_or(|(s, _)| size > *s) {
                largest = Some((size, p));
            }
        }
    }
    let (_, path) = largest.expect("an XML fixture");
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    time(&format!("xml {name}"), &Input::Xml(path), 20);
    let snap = fixtures.join("128arm-2pa2n8cluster4co.tar.bz2");
    time(
        "snapshot 128arm-2pa2n8cluster4co.tar.bz2",
        &Input::SnapshotArchive(snap),
        10,
    );
    time("live machine", &Input::Live, 20);
}
