use numalab_c2c::matrix::LatencyMatrix;
fn main() {
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path).unwrap();
        let rows: Vec<Vec<Option<f64>>> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.split(',').map(|c| c.trim().parse::<f64>().ok()).collect())
            .collect();
        let n = rows.len();
        let m = LatencyMatrix::from_rows((0..n as u32).collect(), &rows);
        let t = std::time::Instant::now();
        let s = numalab_c2c::structure::infer(&m);
        println!("{} ({n} CPUs, {:?})", path.rsplit('/').next().unwrap(), t.elapsed());
        for l in &s.levels {
            let show: Vec<String> = l.groups.iter().take(4).map(|g| numalab_schema::cpulist::format(&g.cpus)).collect();
            println!("  {:?} sep {:.2} [{}] intra {:.1} inter {:.1}: {}", l.evidence, l.separation, l.shape(), l.intra_ns.unwrap_or(f64::NAN), l.inter_ns.unwrap_or(f64::NAN), show.join(" | "));
        }
    }
}
