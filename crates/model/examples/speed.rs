use numalab_model::traffic::{Pattern, Synthetic};
use numalab_model::{des, Model};
fn main() {
    let m = Model::load("mesh", &["noc.cols=16".into(), "noc.rows=16".into()]).unwrap();
    let t = Synthetic { pattern: Pattern::Uniform, rate: 0.8 * 0.25, flits: 1 };
    let t0 = std::time::Instant::now();
    let (_d, s) = des::synthetic(&m, &t, &des::DesConfig { seed: 1, warmup_cycles: 2000, measure_cycles: 30000, drain_cycles: 10000 }).unwrap();
    let el = t0.elapsed().as_secs_f64();
    println!("{:.2e} rc/s, {:.2e} ev/s", (s.cycles*s.routers) as f64/el, s.events as f64/el);
}
