//! The report of a 160-CPU machine stays readable and small (issue 45): the recorded
//! evaluation of tests/fixtures/bundles/vm-evaluate widened to a two-socket server of
//! 160 CPUs (80 cores, SMT siblings i and i+80), with what `evaluate --quick` measures
//! there: the core-to-core step's sampled plan (every pair inside each package, one
//! between them: 6,321 pairs of 100 samples, an 8 MB journal) and the workload's clients
//! on every CPU. Before aggregation this page was 4.3 MB, 2.8 MB of it one heatmap.

use numalab_records::c2c::{
    Confidence, Evidence, GroupJson, LevelJson, MatrixRecord, PairRecord, Selection, SquareMatrix,
};
use numalab_report::load::{load, Loaded};
use numalab_report::sections::document;
use numalab_report::table::Format;
use numalab_schema::{Machine, Origin, Record};
use numalab_stats::Summary;
use serde_json::json;
use std::path::Path;

const N: u32 = 160;

fn fixture(name: &str) -> Loaded {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bundles")
        .join(name);
    load(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn package(cpu: u32) -> u32 {
    (cpu % 80) / 40
}

/// A deterministic stream of numbers in [0, 1).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The fixture's machine widened to 2 packages (= NUMA nodes) of 40 cores x 2 threads.
fn machine(template: &Machine) -> Machine {
    let mut m = serde_json::to_value(template).unwrap();
    let cpus_of = |p: u32| -> Vec<u32> { (0..N).filter(|&c| package(c) == p).collect() };
    let cache = |cpus: Vec<u32>, kind: &str, level: u32, size: u64| json!({"cpus": cpus, "kind": kind, "level": level, "line_bytes": 64, "size_bytes": size, "ways": 8});
    let mut caches = Vec::new();
    for (kind, level, size) in [
        ("data", 1, 48 << 10),
        ("instruction", 1, 32 << 10),
        ("unified", 2, 2 << 20),
    ] {
        for c in 0..80 {
            caches.push(cache(vec![c, c + 80], kind, level, size));
        }
    }
    for p in 0..2 {
        caches.push(cache(cpus_of(p), "unified", 3, 105 << 20));
    }
    m["caches"] = json!(caches);
    m["cores"] = json!((0..80)
        .map(|c| json!({"kind": null, "os_index": c, "package": package(c), "pus": [c, c + 80]}))
        .collect::<Vec<_>>());
    m["pus"] = json!((0..N)
        .map(
            |c| json!({"core": c % 80, "die": null, "numa_node": package(c), "os_index": c,
            "package": package(c), "siblings": [if c < 80 { c + 80 } else { c - 80 }]})
        )
        .collect::<Vec<_>>());
    m["packages"] = json!((0..2)
        .map(|p| json!({"cpus": cpus_of(p), "level": 0, "os_index": p, "subtype": null}))
        .collect::<Vec<_>>());
    m["numa_nodes"] = json!((0..2)
        .map(
            |p| json!({"cpus": cpus_of(p), "has_cpus": true, "memory_bytes": 256u64 << 30,
            "os_index": p, "package": p, "subtype": null})
        )
        .collect::<Vec<_>>());
    m["cpu_kinds"] = json!([]);
    m["summary"] = json!({"cores": 80, "numa_nodes": 2, "packages": 2, "pus": N,
        "numa": (0..2).map(|p| json!({"cpus": cpus_of(p), "memory_bytes": 256u64 << 30,
            "os_index": p, "subtype": null})).collect::<Vec<_>>()});
    serde_json::from_value(m).expect("a machine")
}

/// The 160-CPU bundle and the matrix it holds (`None`: not measured).
fn big_bundle() -> (Loaded, Vec<Vec<Option<f64>>>) {
    let mut l = fixture("vm-evaluate");
    let m = machine(l.bundle.envelope.host.topology.as_ref().unwrap());
    l.bundle.envelope.host.topology = Some(m.clone());
    let mut rng = Lcg(45);
    let mut matrix = vec![vec![None; N as usize]; N as usize];
    let mut records: Vec<Record> = Vec::new();
    for r in &l.bundle.records {
        let mut r = r.clone();
        match r.kind.as_str() {
            "c2c.pair" | "c2c.matrix" => continue,
            "topo.machine" => r.data["machine"] = serde_json::to_value(&m).unwrap(),
            "workload.run" => {
                let template = r.data["clients"][0].clone();
                r.data["clients"] = json!((0..N)
                    .map(|c| {
                        let mut t = template.clone();
                        t["pu"] = json!(c);
                        t["node"] = json!(package(c));
                        t["requests_per_s"] = json!(300.0 + 20.0 * rng.next());
                        t
                    })
                    .collect::<Vec<_>>());
            }
            _ => {}
        }
        records.push(r);
    }
    let mut pairs: Vec<(u32, u32)> = (0..N)
        .flat_map(|i| (0..i).map(move |j| (i, j)))
        .filter(|&(i, j)| package(i) == package(j))
        .collect();
    pairs.push((40, 0));
    assert_eq!(pairs.len(), 6321);
    for &(i, j) in &pairs {
        let base = if i % 80 == j % 80 {
            8.0 + rng.next()
        } else if package(i) == package(j) {
            45.0 + 20.0 * rng.next()
        } else {
            120.0 + 30.0 * rng.next()
        };
        let samples: Vec<f64> = (0..100)
            .map(|_| ((base * (1.0 + 0.05 * rng.next())) * 1e4).round() / 1e4)
            .collect();
        let summary = Summary::of(&samples).unwrap();
        let ns = summary.median;
        matrix[i as usize][j as usize] = Some(ns);
        matrix[j as usize][i as usize] = Some(ns);
        let p = PairRecord {
            first: i,
            second: j,
            variant: "cas".into(),
            home_node_requested: None,
            home_node: Some(package(i)),
            round_trips: 1000,
            latency_ns: ns,
            summary,
            samples_ns: samples,
            wall_ns: 99_518_932,
        };
        records.push(Record::new(
            format!("c2c/cas/{i}-{j}"),
            Origin::Measured,
            &p,
        ));
    }
    let group = |cpus: Vec<u32>, intra: f64, inter: f64| GroupJson {
        cpus,
        intra_ns: Some(intra),
        inter_ns: Some(inter),
    };
    let packages: Vec<Vec<u32>> = (0..2)
        .map(|p| (0..N).filter(|&c| package(c) == p).collect())
        .collect();
    let rec = MatrixRecord {
        cpus: (0..N).collect(),
        matrix_ns: SquareMatrix::from_rows(&matrix).unwrap(),
        groups: vec![
            (0..80).map(|c| group(vec![c, c + 80], 8.5, 55.0)).collect(),
            packages
                .iter()
                .map(|p| group(p.clone(), 55.0, 135.0))
                .collect(),
        ],
        levels: vec![
            LevelJson {
                evidence: Evidence::Latency,
                separation: 5.0,
                intra_ns: Some(8.5),
                inter_ns: Some(55.0),
                hwloc: Some("cores (SMT siblings)".into()),
            },
            LevelJson {
                evidence: Evidence::Latency,
                separation: 2.2,
                intra_ns: Some(55.0),
                inter_ns: Some(135.0),
                hwloc: Some("packages".into()),
            },
        ],
        variant: "cas".into(),
        statistic: "median".into(),
        home_node_policy: Some("first-cpu-node".into()),
        selection: Some(Selection::Sampled {
            groups: packages,
            grouped_by: "L3 cache".into(),
            per_group_pair: 1,
            seed: 42,
        }),
        confidence: Confidence::Low,
        notes: vec!["6321 of 12720 pairs are measured (50%)".into()],
        topology_comparison: Vec::new(),
    };
    records.push(Record::new(
        "c2c/matrix/cas/first-cpu-node",
        Origin::Measured,
        &rec,
    ));
    l.bundle.records = records;
    (l, matrix)
}

/// The SVG of the figure with this id.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<figure id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no figure {id}"));
    let end = start + html[start..].find("</figure>").unwrap();
    &html[start..end]
}

/// Cells of a heatmap: its rects less the legend's ten.
fn cells(svg: &str) -> usize {
    svg.matches("<rect").count() - 10
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[test]
fn a_160_cpu_report_is_small_aggregated_and_keeps_every_pair() {
    let (l, matrix) = big_bundle();
    let journal: usize = l
        .bundle
        .records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap().len() + 1)
        .sum();
    assert!(journal > 7_000_000, "a realistic journal: {journal} bytes");
    let doc = document(std::slice::from_ref(&l));
    assert!(doc.problems.is_empty(), "{:?}", doc.problems);
    let html = doc.to_html();
    eprintln!(
        "160 CPUs: journal {journal} bytes, HTML {} bytes",
        html.len()
    );
    assert!(html.len() < 1_500_000, "HTML of {} bytes", html.len());

    // The heatmap: 40 blocks of two whole cores (4 CPUs), never across packages.
    let svg = figure(&html, "c2c-heatmap-c2c-matrix-cas-first-cpu-node");
    assert_eq!(cells(svg), 40 * 40, "one cell per pair of blocks");
    assert!(svg.contains("160 CPUs in 40 blocks"));
    assert!(svg.contains("<title>CPUs 0-1,80-81, inside: median "));
    assert!(svg.contains("<title>CPUs 0-1,80-81 -&gt; CPUs 40-41,120-121: median "));
    assert!(svg.contains("of 1 of 16 pairs measured</title>"));
    assert!(svg.contains(
        "<title>CPUs 0-1,80-81 -&gt; CPUs 42-43,122-123: none of 16 pairs measured</title>"
    ));
    assert!(html.contains("each cell is the median of the measured pairs between two blocks"));
    assert!(html.contains(
        "the full matrix, every pair, is in the raw data: the c2c.matrix record (in the HTML report&#39;s raw-data appendix, never cut, and in the bundle)"
    ));
    // The blocks are listed in every format.
    let md = doc.to_text(Format::Markdown);
    assert!(md.contains("### Blocks of the heatmap"));
    assert!(md.contains("| 0 | 0-1,80-81 | 4 |"), "{md}");
    // Per-CPU tables: the workload's 160 client threads in blocks of 5 PUs of a node.
    assert!(md.contains("Client threads, by blocks of up to 5 PUs of one node"));
    assert!(md.contains("| 0-4 | 0 | 5 |"), "{md}");
    assert!(!md.contains("\n| 159 | 1 |"), "no row per thread");
    assert!(md.len() < 100_000, "Markdown of {} bytes", md.len());

    // The raw data holds the whole matrix: every measured pair, at 12 digits.
    let summary = "vm: c2c.matrix (1 record)</summary><pre>";
    let start = html.find(summary).expect("the matrix in the appendix") + summary.len();
    let end = start + html[start..].find("</pre>").unwrap();
    let text = unescape(&html[start..end]);
    assert!(!text.contains("more record(s)"), "the matrix is never cut");
    let r: Record = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let back: MatrixRecord = r.decode().unwrap().unwrap();
    let mut measured = 0;
    for (i, row) in matrix.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            let got = back.matrix_ns.get(i, j);
            match v {
                Some(v) => {
                    measured += 1;
                    let got = got.unwrap_or_else(|| panic!("pair {i}-{j} lost"));
                    assert!((got - v).abs() <= v.abs() * 1e-11, "{i}-{j}: {got} vs {v}");
                }
                None => assert_eq!(got, None, "{i}-{j}"),
            }
        }
    }
    assert_eq!(measured, 2 * 6321);
    // The pairs' own records are cut, with a note saying where the rest is.
    assert!(html.contains("more record(s) of this kind in"));
}

#[test]
fn up_to_64_cpus_the_heatmap_has_a_cell_per_pair() {
    let l = fixture("c2c-dual-xeon-gold-6242");
    let html = document(std::slice::from_ref(&l)).to_html();
    let svg = figure(&html, "c2c-heatmap-c2c-matrix-imported");
    assert_eq!(cells(svg), 64 * 64);
    assert!(!html.contains("Blocks of the heatmap"));
}
