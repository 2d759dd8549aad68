use numalab_home::groundtruth::{trial, TrialOptions};
use numalab_home::map::Quiet;
fn main() {
    let mut t = TrialOptions::new("knl-7210");
    t.truth.noise_ns = 4.0;
    let seed: u64 = std::env::args().nth(1).map_or(4, |a| a.parse().unwrap());
    t.truth.seed = seed;
    t.truth.pages = 64;
    t.map.seed = seed;
    let out = trial(&t, &mut Quiet).unwrap();
    let m = &out.machine;
    let r = &out.mapped.record;
    let g = &m.model.geo;
    let fp = out.mapped.floorplan.as_ref().unwrap();
    let wrong: Vec<_> = (0..64u32)
        .filter(|&c| fp.cpu_stop[&c] != m.layout.core_stop[c as usize])
        .map(|c| {
            (
                c,
                g.coords(fp.cpu_stop[&c]),
                g.coords(m.layout.core_stop[c as usize]),
            )
        })
        .collect();
    println!("cores wrong (identity): {}", wrong.len());
    let rot = |s: u32| {
        let (_, x, y) = g.coords(s);
        g.stop(0, 5 - x, 6 - y)
    };
    let wr: Vec<_> = (0..64u32)
        .filter(|&c| rot(fp.cpu_stop[&c]) != m.layout.core_stop[c as usize])
        .collect();
    println!("cores wrong (rot180): {:?}", wr);
    println!("readers {:?} owner {:?}", r.probe_cpus, r.owner_cpu);
    for sym in m.grid.symmetries() {
        let cores = (0..64u32)
            .filter(|&c| sym.map[fp.cpu_stop[&c] as usize] == m.layout.core_stop[c as usize])
            .count();
        let mut homes_ok = 0;
        for h in &r.homes {
            let mut cnt = std::collections::HashMap::new();
            for (i, &id) in out.mapped.home.iter().enumerate() {
                if id == h.id {
                    *cnt.entry(m.home_place_of(out.mapped.lines[i])).or_insert(0) += 1;
                }
            }
            let (&tp, _) = cnt.iter().max_by_key(|x| x.1).unwrap();
            if let Some([x, y]) = h.stop {
                if sym.map[g.stop(0, x, y) as usize] == m.home_places[tp as usize] {
                    homes_ok += 1;
                }
            }
        }
        println!("sym {}: cores {cores} homes {homes_ok}", sym.name);
    }
    // homes: majority true place per found id
    for h in &r.homes {
        let mut cnt = std::collections::HashMap::new();
        for (i, &id) in out.mapped.home.iter().enumerate() {
            if id == h.id {
                *cnt.entry(m.home_place_of(out.mapped.lines[i])).or_insert(0) += 1;
            }
        }
        let (&tp, _) = cnt.iter().max_by_key(|x| x.1).unwrap();
        let ts = g.coords(m.home_places[tp as usize]);
        if h.stop.map(|s| (s[0], s[1])) != Some((ts.1, ts.2)) {
            println!(
                "home {} located {:?} conf {:?} resid {:?} true {:?}",
                h.id, h.stop, h.stop_confidence, h.stop_residual_ns, ts
            );
        }
    }
    for n in &r.notes {
        println!("{n}");
    }
    let prof: Vec<Vec<f64>> = (0..m.home_stops.len() as u8)
        .map(|h| {
            r.probe_cpus
                .iter()
                .map(|&c| {
                    m.latency_ns(numalab_home::probe::Access::Forwarded, c, r.owner_cpu, h, 0)
                })
                .collect()
        })
        .collect();
    let mut ds = vec![];
    for i in 0..prof.len() {
        for j in 0..i {
            let d: f64 = prof[i]
                .iter()
                .zip(&prof[j])
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt();
            ds.push((d, g.coords(m.home_stops[i]), g.coords(m.home_stops[j])));
        }
    }
    ds.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!("closest true profiles: {:?}", &ds[..6]);
    println!(
        "homes found {} sizes {:?}",
        r.homes.len(),
        r.homes.iter().map(|h| h.lines).collect::<Vec<_>>()
    );
}
