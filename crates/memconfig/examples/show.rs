//! Prints the memory configuration and peaks of the machine under a root folder.
//!
//! ```sh
//! sudo cargo run -p numalab-memconfig --example show            # this machine
//! cargo run -p numalab-memconfig --example show -- tests/fixtures/smbios/genoa-1s-ddr5-4800
//! cargo run -p numalab-memconfig --example show -- / --json
//! ```

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(String::as_str)
        .unwrap_or("/");
    let m = numalab_memconfig::read(std::path::Path::new(root));
    if args.iter().any(|a| a == "--json") {
        println!(
            "{}",
            serde_json::to_string_pretty(&m).expect("serializable")
        );
        return;
    }
    println!("{}", m.summary());
    for c in &m.channels {
        println!(
            "  {:<28} {:<10} {:>5} MT/s x {:>2} bits  {:>6} GB/s  {}",
            c.id,
            c.memory_type,
            c.speed_mts.map_or("?".into(), |s| s.to_string()),
            c.data_width_bits.map_or("?".into(), |w| w.to_string()),
            c.peak.gbps.map_or("?".into(), |g| format!("{g:.1}")),
            c.devices.join(", ")
        );
    }
    for s in &m.sockets {
        let p = s.peak.gbps.map_or_else(
            || format!("unknown ({})", s.peak.reason.clone().unwrap_or_default()),
            |g| format!("{g:.1} GB/s"),
        );
        println!(
            "socket {}: {} channels, {p} [{}]",
            s.socket, s.channels, s.method
        );
    }
    if let Some(r) = &m.sockets_reason {
        println!("sockets: {r}");
    }
    for n in &m.nodes {
        let p = n.peak.gbps.map_or_else(
            || format!("unknown ({})", n.peak.reason.clone().unwrap_or_default()),
            |g| format!("{g:.1} GB/s"),
        );
        println!("node {}: {p} [{}]", n.node, n.method);
    }
    if let Some(r) = &m.nodes_reason {
        println!("nodes: {r}");
    }
    for a in &m.assumptions {
        println!("assumed: {a}");
    }
    for n in &m.notes {
        println!("note: {n}");
    }
}
