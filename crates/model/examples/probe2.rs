use numalab_model::traffic::{App, Data, Op};
use numalab_model::{analytic, des, Model};
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let m = Model::load(&args[0], &args[1..]).unwrap();
    let cores = m.nodes[0].cores.clone();
    for node in 0..m.cpu_nodes().count() as u32 {
        let app = App { cores: cores.clone(), data: Data::Node { node }, mix: vec![Op::Read, Op::Read, Op::Write], slc_hit: 0.0, msc_hit: 0.0, snoop: 0.0, outstanding: m.spec.cores.max_outstanding, think_cycles: 0 };
        let t = std::time::Instant::now();
        let a = analytic::app(&m, &app);
        let ta = t.elapsed().as_secs_f64()*1e3;
        let (d, _) = des::app(&m, &app, &des::DesConfig::default()).unwrap();
        let bw = |f: &numalab_model::traffic::Figures| f.requests_per_cycle * 64.0 * m.spec.noc.clock_ghz;
        println!("node {node}: peak {:.1} GB/s; bw analytic {:.1} des {:.1}; req lat {:.1}/{:.1}; pkt lat {:.2}/{:.2}; reqQ {:.3}/{:.3} datQ {:.3}/{:.3} mcutil {:.2}/{:.2} ({ta:.1} ms)",
          m.node_peak_gbps(node), bw(&a), bw(&d), a.request_latency_cycles, d.request_latency_cycles, a.packet_latency_cycles, d.packet_latency_cycles,
          a.vns[0].queueing_cycles, d.vns[0].queueing_cycles, a.vns[3].queueing_cycles, d.vns[3].queueing_cycles,
          a.mc_utilization.iter().cloned().fold(0.0,f64::max), d.mc_utilization.iter().cloned().fold(0.0,f64::max));
    }
}
