use numalab_model::traffic::{Pattern, Synthetic};
use numalab_model::{analytic, des, Model};
fn main() {
    for k in [8u32, 16] {
        let m = Model::load("mesh", &[format!("noc.cols={k}"), format!("noc.rows={k}")]).unwrap();
        let sat = 4.0 / f64::from(k);
        for f in [0.1, 0.4, 0.7, 0.85, 0.95, 1.0, 1.05] {
            let t = Synthetic { pattern: Pattern::Uniform, rate: f * sat, flits: 1 };
            let a = analytic::synthetic(&m, &t);
            let t0 = std::time::Instant::now();
            let (d, s) = des::synthetic(&m, &t, &des::DesConfig { seed: 1, warmup_cycles: 2000, measure_cycles: 10000, drain_cycles: 10000 }).unwrap();
            let el = t0.elapsed().as_secs_f64();
            println!("k={k} f={f}: analytic {:.3} des {:.3} diff {:+.2}% hops {:.3}/{:.3} util {:.3}/{:.3} drained {} {:.2e} rc/s",
                a.packet_latency_cycles, d.packet_latency_cycles, 100.0*(d.packet_latency_cycles/a.packet_latency_cycles-1.0), a.mean_hops, d.mean_hops, a.max_link_utilization, d.max_link_utilization, s.drained, (s.cycles*s.routers) as f64/el);
        }
    }
}
