//! Prints the summary of a topology input: `cargo run -p numalab-topo --example describe -- PATH|live`.
fn main() {
    for arg in std::env::args().skip(1) {
        let input = if arg == "live" {
            numalab_topo::Input::Live
        } else {
            match numalab_topo::Input::detect(std::path::Path::new(&arg)) {
                Ok(i) => i,
                Err(e) => {
                    println!("== {arg}\nerror: {e}");
                    continue;
                }
            }
        };
        match numalab_topo::machine(&input) {
            Ok(m) => println!(
                "== {arg} [{}]\n{}",
                m.topology_hash(),
                numalab_topo::render::summary(&m)
            ),
            Err(e) => println!("== {arg}\nerror: {e}"),
        }
    }
}
