use numalab_home::groundtruth::{trial, TrialOptions};
use numalab_home::map::Quiet;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut o = TrialOptions::new(&a[1]);
    o.truth.noise_ns = a[2].parse().unwrap();
    o.truth.pages = a[3].parse().unwrap();
    o.map.repeats = a[4].parse().unwrap();
    o.truth.seed = a.get(5).map_or(1, |s| s.parse().unwrap());
    let t = std::time::Instant::now();
    let out = trial(&o, &mut Quiet).unwrap();
    let mut r = out.accuracy.clone();
    r.notes.truncate(5);
    println!("{}", serde_json::to_string_pretty(&r).unwrap());
    let m = &out.mapped.record;
    println!(
        "homes {} ifaces {} noise {:.2} measure {:.1}s infer {:.1}s total {:.1}s",
        m.homes.len(),
        m.interfaces.len(),
        m.noise_ns,
        m.measure_seconds,
        m.infer_seconds,
        t.elapsed().as_secs_f64()
    );
    for n in &m.notes {
        println!("note: {n}");
    }
    if let Some(h) = &m.home_hash {
        println!(
            "hash {} linear {} agreement {:.4} masks {} notes {:?}",
            h.status,
            h.linear,
            h.agreement,
            h.masks.len(),
            h.notes
        );
    }
    if let Some(h) = &m.interface_hash {
        println!(
            "ihash {} linear {} agreement {:.4} masks {}",
            h.status,
            h.linear,
            h.agreement,
            h.masks.len()
        );
    }
}
