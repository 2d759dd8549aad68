//! Where each cache line lives: the homes and memory interfaces a map found, the address
//! hash behind them (`home.map`), a model-generated map scored against its truth
//! (`home.accuracy`), and the affinity experiments (`home.bench`).

use super::{opt, table};
use crate::anchors;
use crate::doc::Section;
use crate::load::Loaded;
use crate::table::Cell;
use numalab_records::home::{AccuracyRecord, BenchRecord, HashFit, HomeMapRecord};

/// The home sections of a bundle.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let maps = l.records_of::<HomeMapRecord>();
    let acc = l.records_of::<AccuracyRecord>();
    let bench = l.records_of::<BenchRecord>();
    if maps.is_empty() && acc.is_empty() && bench.is_empty() && !super::home_hash::any(l) {
        return Vec::new();
    }
    let mut s = Section::new(
        &anchors::id(b, "home"),
        &format!("Where each cache line lives{of}"),
    );
    for (i, (_, r)) in maps.iter().enumerate() {
        map(&mut s, b, i, r);
    }
    for (i, (_, r)) in acc.iter().enumerate() {
        accuracy(&mut s, b, i, r);
    }
    for (i, (_, r)) in bench.iter().enumerate() {
        bench_section(&mut s, b, i, r);
    }
    super::home_hash::add(&mut s, b, l);
    vec![s]
}

fn pct(x: f64) -> Cell {
    Cell::num(100.0 * x, 2)
}

fn bits(mask: u64) -> String {
    numalab_records::home::bit_ranges(mask)
}

fn hash_lines(s: &mut Section, b: usize, id: &str, h: &HashFit) {
    s.para(format!(
        "The {} hash: {}, {} syndrome bit(s), {}; it gives the measured id of {:.2}% of the measured lines. Address bits observed: {}.",
        h.what,
        match h.status.as_str() {
            "recovered" => "recovered (the map of any address follows without measuring)",
            "page-offset" => "found within a page only (a new page needs a probe of a few lines for its shift)",
            _ => "not found",
        },
        h.masks.len(),
        if h.linear {
            "linear (one id per syndrome)"
        } else {
            "through a table (several syndromes per id)"
        },
        100.0 * h.agreement,
        bits(h.observed_bits)
    ));
    if !h.masks.is_empty() {
        let mut t = table(
            &anchors::id(b, id),
            &format!(
                "The {} hash: syndrome bit t is the parity of the address bits of mask t",
                h.what
            ),
            &[("bit", None), ("mask", None), ("address bits", None)],
        );
        for (k, m) in h.masks.iter().enumerate() {
            t.push(vec![
                Cell::num(k as f64, 0),
                Cell::text(format!("{m:#x}")),
                Cell::text(bits(*m)),
            ]);
        }
        s.table(t);
    }
    if !h.notes.is_empty() {
        s.list(h.notes.clone());
    }
}

fn map(s: &mut Section, b: usize, i: usize, r: &HomeMapRecord) {
    s.para(format!(
        "Home map ({}, {}): {} lines of a {} MiB buffer on {} KiB pages{}, read {} times each from {} CPU(s) ({} reads{}), noise {:.2} ns per read. {} home(s), {} memory interface(s){}. Measuring took {:.1} s, inference {:.1} s.",
        r.input_origin,
        r.fingerprint.cpu_model,
        r.lines_measured,
        r.buffer_bytes >> 20,
        r.page_bytes >> 10,
        if r.physical_addresses {
            ", physical addresses known"
        } else {
            ", physical addresses unknown"
        },
        r.repeats,
        r.probe_cpus.len(),
        match r.access {
            numalab_records::home::Access::Forwarded => "forwarded",
            numalab_records::home::Access::Flushed => "flushed",
        },
        r.owner_cpu
            .map(|o| format!(" from owner CPU {o}"))
            .unwrap_or_default(),
        r.noise_ns,
        r.homes.len(),
        r.interfaces.len(),
        r.floorplan
            .as_ref()
            .map(|f| format!("; floorplan: {f}"))
            .unwrap_or_default(),
        r.measure_seconds,
        r.infer_seconds
    ));
    let mut t = table(
        &anchors::id(b, &format!("home-homes-{i}")),
        "Homes: lines, mean latency over the probe CPUs, and the place on the floorplan",
        &[
            ("home", None),
            ("lines", None),
            ("mean", Some("ns")),
            ("fastest", Some("ns")),
            ("slowest", Some("ns")),
            ("stop", None),
            ("confidence", Some("%")),
            ("residual", Some("ns")),
        ],
    );
    let nofp = "no floorplan";
    for h in &r.homes {
        let p = &h.profile_ns;
        let mean = p.iter().sum::<f64>() / p.len().max(1) as f64;
        let lo = p.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        t.push(vec![
            Cell::num(f64::from(h.id), 0),
            Cell::num(h.lines as f64, 0),
            Cell::num(mean, 1),
            Cell::num(lo, 1),
            Cell::num(hi, 1),
            h.stop.map_or(Cell::missing(nofp), |[x, y]| {
                Cell::text(format!("({x},{y})"))
            }),
            opt(h.stop_confidence.map(|c| 100.0 * c), 1, nofp),
            opt(h.stop_residual_ns, 2, nofp),
        ]);
    }
    s.table(t);
    if !r.interfaces.is_empty() {
        let mut t = table(
            &anchors::id(b, &format!("home-interfaces-{i}")),
            "Memory interfaces: lines, and the spread of their flushed-minus-forwarded latency over the probe CPUs",
            &[("interface", None), ("lines", None), ("spread", Some("ns"))],
        );
        for f in &r.interfaces {
            let lo = f.shape_ns.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = f.shape_ns.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            t.push(vec![
                Cell::num(f64::from(f.id), 0),
                Cell::num(f.lines as f64, 0),
                Cell::num(hi - lo, 2),
            ]);
        }
        s.table(t);
    }
    if let Some(h) = &r.home_hash {
        hash_lines(s, b, &format!("home-hash-{i}"), h);
    }
    if let Some(h) = &r.slice_hash {
        super::home_hash::slice_hash(s, &anchors::id(b, &format!("home-slices-{i}")), h);
    }
    if let Some(h) = &r.interface_hash {
        hash_lines(s, b, &format!("home-ihash-{i}"), h);
    }
    if !r.notes.is_empty() {
        s.list(r.notes.clone());
    }
}

fn accuracy(s: &mut Section, b: usize, i: usize, r: &AccuracyRecord) {
    let mut t = table(
        &anchors::id(b, &format!("home-accuracy-{i}")),
        &format!(
            "Home map of a model-generated {} (noise {} ns per read, seed {}) against its truth",
            r.preset, r.noise_ns, r.seed
        ),
        &[("measure", None), ("value", None)],
    );
    let row = |t: &mut crate::table::Table, k: &str, v: Cell| t.push(vec![Cell::text(k), v]);
    row(
        &mut t,
        "homes (places) true / found",
        Cell::text(format!(
            "{} ({}) / {}",
            r.homes_true, r.home_places_true, r.homes_found
        )),
    );
    row(
        &mut t,
        "interfaces (places) true / found",
        Cell::text(format!(
            "{} ({}) / {}",
            r.interfaces_true, r.interface_places_true, r.interfaces_found
        )),
    );
    row(
        &mut t,
        "lines right from profiles, %",
        pct(r.line_accuracy_profiles),
    );
    row(
        &mut t,
        "lines right after the hash, %",
        opt(r.line_accuracy_hash.map(|x| 100.0 * x), 2, "no hash"),
    );
    row(
        &mut t,
        "interfaces right, %",
        opt(
            r.interface_accuracy.map(|x| 100.0 * x),
            2,
            "not distinguished",
        ),
    );
    row(
        &mut t,
        "homes at their true stop, %",
        opt(r.homes_located_exact.map(|x| 100.0 * x), 1, "no floorplan"),
    );
    row(
        &mut t,
        "floorplan cores exact, %",
        opt(
            r.floorplan_exact_fraction.map(|x| 100.0 * x),
            1,
            "no floorplan",
        ),
    );
    row(
        &mut t,
        "hash: addresses right / tried",
        Cell::text(format!(
            "{} / {}{}",
            r.hash_addresses_correct,
            r.hash_addresses_tried,
            if r.hash_exact { " (exact)" } else { "" }
        )),
    );
    row(&mut t, "seconds", Cell::num(r.seconds, 1));
    s.table(t);
    if !r.notes.is_empty() {
        s.list(r.notes.clone());
    }
}

fn bench_section(s: &mut Section, b: usize, i: usize, r: &BenchRecord) {
    let mut t = table(
        &anchors::id(b, &format!("home-sweep-{i}")),
        &format!(
            "Reduction kernel versus affinity strength on {} ({}; {} lines per thread)",
            r.machine, r.input_origin, r.lines_per_thread
        ),
        &[
            ("distance", Some("hops")),
            ("latency", Some("ns")),
            ("cycles", None),
            ("distant interfaces", Some("%")),
            ("gain", Some("%")),
            ("gain, true map", Some("%")),
        ],
    );
    for p in &r.sweep {
        t.push(vec![
            p.distance_hops
                .map_or(Cell::text("any"), |d| Cell::num(f64::from(d), 0)),
            Cell::num(p.latency_ns, 1),
            opt(p.cycles, 0, "no counters"),
            opt(p.distant_interface_share.map(|x| 100.0 * x), 1, "unknown"),
            pct(p.gain),
            opt(p.gain_true_map.map(|x| 100.0 * x), 2, "no truth"),
        ]);
    }
    s.table(t);
    if !r.stencil.is_empty() {
        let mut t = table(
            &anchors::id(b, &format!("home-stencil-{i}")),
            "1-D stencil: scatter (thread i on CPU i, any lines) versus co-located (neighbours on neighbouring tiles, lines homed near)",
            &[
                ("threads", None),
                ("placement", None),
                ("read latency", Some("ns")),
                ("step", Some("ns")),
            ],
        );
        for p in &r.stencil {
            t.push(vec![
                Cell::num(p.threads as f64, 0),
                Cell::text(&p.placement),
                Cell::num(p.latency_ns, 1),
                Cell::num(p.step_ns, 1),
            ]);
        }
        s.table(t);
    }
    if !r.notes.is_empty() {
        s.list(r.notes.clone());
    }
}
