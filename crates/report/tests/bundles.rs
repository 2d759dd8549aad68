//! The report, findings, metrics and comparisons on recorded bundles
//! (tests/fixtures/bundles: real numalab output from the development VM, a modeled
//! machine, an imported core-to-core matrix, and a hand-made two-node bundle).

use numalab_report::compare::{compare_all, Verdict};
use numalab_report::findings::{findings, Severity};
use numalab_report::load::{load, unique_labels, Loaded};
use numalab_report::metrics::metrics;
use numalab_report::sections::document;
use numalab_report::table::Format;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bundles")
        .join(name)
}

fn bundle(name: &str) -> Loaded {
    let l = load(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(l.warnings.is_empty(), "{name}: {:?}", l.warnings);
    l
}

const ALL: [&str; 8] = [
    "vm-evaluate",
    "vm-scale",
    "vm-policy",
    "vm-sweep",
    "vm-profile",
    "model-neoverse-v1",
    "c2c-dual-xeon-gold-6242",
    "two-node-handmade",
];

#[test]
fn every_record_of_every_fixture_is_understood() {
    for name in ALL {
        let l = bundle(name);
        assert!(
            numalab_report::sections::unreadable(&l).is_empty(),
            "{name}: {:?}",
            numalab_report::sections::unreadable(&l)
        );
        let doc = document(std::slice::from_ref(&l));
        assert!(doc.problems.is_empty(), "{name}: {:?}", doc.problems);
    }
}

#[test]
fn every_finding_links_to_something_on_the_page() {
    let mut set: Vec<Loaded> = ALL.iter().map(|n| bundle(n)).collect();
    unique_labels(&mut set);
    let doc = document(&set);
    let html = doc.to_html();
    assert!(doc.findings.len() > 20, "{}", doc.findings.len());
    for f in &doc.findings {
        if let Some(a) = &f.anchor {
            assert!(
                html.contains(&format!("id=\"{a}\"")),
                "finding {:?} links to #{a}, which is not on the page",
                f.text
            );
        }
    }
    // Anchors are unique.
    let ids: Vec<&str> = html
        .split("id=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len(), "duplicate ids");
}

#[test]
fn the_page_is_self_contained() {
    let mut set: Vec<Loaded> = ALL.iter().map(|n| bundle(n)).collect();
    unique_labels(&mut set);
    let html = document(&set).to_html();
    for bad in [
        "<script", "<img", "<link", "<iframe", "<object", "<embed", "src=", "url(", "@import",
        "http://", "https://",
    ] {
        // The SVG namespace is the one URL allowed: it names XML, it is never fetched.
        let n = html.matches(bad).count()
            - if bad == "http://" {
                html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
            } else {
                0
            };
        assert_eq!(n, 0, "{bad} appears {n} times");
    }
    for href in html.split("href=\"").skip(1) {
        assert!(
            href.starts_with('#'),
            "link {}",
            &href[..40.min(href.len())]
        );
    }
    assert!(html.contains("default-src 'none'"));
}

#[test]
fn findings_on_the_two_node_bundle() {
    let l = bundle("two-node-handmade");
    let f = findings(std::slice::from_ref(&l));
    let text = |id: &str| -> Vec<String> {
        f.iter()
            .filter(|x| x.id == id)
            .map(|x| x.text.clone())
            .collect()
    };
    let domains = text("c2c_domains");
    assert_eq!(domains.len(), 1, "{f:#?}");
    assert!(
        domains[0].starts_with("core-to-core latency shows 2 domains per package")
            && domains[0].contains(
                "hwloc shows 1 NUMA node(s) per package: check the NUMA mode in the firmware"
            ),
        "{}",
        domains[0]
    );
    let shared = text("workload_cpus_idle");
    assert_eq!(
        shared,
        vec!["the workload kept 2.5 of 8 CPUs busy at 8 threads: the machine was shared (other processes used 66% of these CPUs)"]
    );
    assert_eq!(
        text("workload_remote_data"),
        vec!["at 16 threads, replicated data gives 2.20x the requests/s of one shared copy: remote memory accesses limit the shared mode"]
    );
    let scaling = text("workload_scaling");
    assert!(
        scaling
            .iter()
            .any(|s| s.starts_with("reference workload (shared-first-touch): per-thread throughput at 16 threads is 0.38x of one thread")),
        "{scaling:?}"
    );
    assert_eq!(
        text("remote_memory"),
        vec!["remote memory: 1.50x local latency (92.0 ns vs 138.0 ns, idle, random within 4 KiB blocks of 256 MiB, base pages), 0.35x local bandwidth (triad, 40.0 vs 14.0 GB/s)"]
    );
    assert_eq!(
        text("slit_vs_measured"),
        vec!["SLIT says 21 (2.10x local) from node 1 to node 0, measured remote latency is 1.50x local: the firmware's distances are an ordering, not a measurement: use the measured figures"]
    );
    assert_eq!(
        text("bandwidth_saturation"),
        vec!["triad bandwidth saturates at about 4 threads per node (36.0 GB/s at 4 threads on 1 node; 79.0 GB/s at 16)"]
    );
    assert!(text("no_hardware_pmu")[0].starts_with("no hardware PMU: counters"));
    assert!(text("step_failed")[0].starts_with("the power and frequency step failed"));
    assert!(text("packages")[0].contains("CPUs 0-7 on package 0, CPUs 8-15 on package 1"));
    // Most important first.
    assert!(f.windows(2).all(|w| w[0].severity <= w[1].severity));
    assert_eq!(f[0].severity, Severity::Warning);
}

#[test]
fn findings_on_this_machine() {
    let l = bundle("vm-evaluate");
    let f = findings(std::slice::from_ref(&l));
    let ids: Vec<&str> = f.iter().map(|x| x.id.as_str()).collect();
    for id in [
        "no_hardware_pmu",
        "one_numa_node",
        "step_skipped",
        "c2c_range",
        "latency_levels",
        "loaded_latency",
        "migration",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    // One node: no remote-memory sentence, no "domains per package", and migration
    // says it was not measured.
    for id in [
        "workload_remote_data",
        "c2c_domains",
        "remote_memory",
        "slit_vs_measured",
    ] {
        assert!(!ids.contains(&id), "{id}");
    }
    assert!(f.iter().any(|x| x.id == "migration"
        && x.text
            .starts_with("page migration between nodes not measured (one NUMA node)")));
    // This recording (numalab 0.8) chased the node matrix in 4 KiB blocks two lines
    // apart (82.0 ns) and the curve in 4 KiB blocks line by line (129.0 ns, base pages)
    // or in 2 MiB blocks (THP): three different quantities, once put side by side as
    // "memory latency" disagreeing and as "huge pages give 1.38x the latency of base
    // pages". No finding compares figures of different kinds now, and none of these is
    // called memory latency (none is random over the whole buffer).
    for id in ["latency_disagreement", "huge_pages", "page_walks"] {
        assert!(!ids.contains(&id), "{id}: {f:#?}");
    }
    let levels: Vec<&str> = f
        .iter()
        .filter(|x| x.id == "latency_levels")
        .map(|x| x.text.as_str())
        .collect();
    assert!(
        levels.iter().any(|t| t
            .starts_with("load-to-load latency of CPU 0 (random within 4 KiB blocks, base pages)")),
        "{levels:?}"
    );
    assert!(
        levels.iter().any(|t| t.starts_with(
            "load-to-load latency of CPU 0 (random within 2 MiB blocks, huge pages (THP))"
        )),
        "{levels:?}"
    );
    // The modeled machine's findings say so.
    let m = bundle("model-neoverse-v1");
    let mf = findings(std::slice::from_ref(&m));
    assert!(!mf.is_empty() && mf.iter().all(|x| x.modeled), "{mf:#?}");
    assert!(mf.iter().any(|x| x.id == "model_policy"
        && x.text
            .starts_with("main-thread application: numa1 gives the most bandwidth")));
}

#[test]
fn memory_latency_is_named_and_compared_like_with_like() {
    // A quick evaluate of this VM with every latency in one order: the node matrix on
    // THP (the headline) with its local cell again on base pages, the curve and the
    // loaded-latency probe in the same order.
    let l = bundle("vm-quick-run-1");
    let f = findings(std::slice::from_ref(&l));
    let text = |id: &str| -> Vec<String> {
        f.iter()
            .filter(|x| x.id == id)
            .map(|x| x.text.clone())
            .collect()
    };
    let walks = text("page_walks");
    assert_eq!(walks.len(), 1, "{f:#?}");
    assert!(
        walks[0].starts_with("page walks: idle local memory latency (random over 256 MiB (8x LLC)) is 148.3 ns on huge pages and 157.0 ns on base pages"),
        "{}",
        walks[0]
    );
    assert!(
        walks[0].contains("(6%) of each load is translation"),
        "{}",
        walks[0]
    );
    // The VM is flagged: nested paging inflates these figures.
    assert!(text("memory_latency_vm")[0]
        .starts_with("this is a virtual machine (KVM): with nested paging"));
    // The curve names its order; the loaded probe names its kind.
    assert!(text("latency_levels")
        .iter()
        .all(|t| t.starts_with("load-to-load latency of CPU 0 (random over the working set, ")));
    assert!(text("loaded_latency")[0].starts_with(
        "under load, memory latency (random over 256 MiB (8x LLC), huge pages (THP)) goes from"
    ));
    // Same kind, same figure: no disagreement in this run.
    assert!(text("latency_disagreement").is_empty());
    // Key figures: the headline and the base-page figure carry their kinds.
    let ms = metrics(&l);
    let label = |id: &str| ms.iter().find(|m| m.id == id).map(|m| m.label());
    assert_eq!(
        label("mem.latency.local").as_deref(),
        Some("idle local memory latency, random over 256 MiB (8x LLC), huge pages (THP)")
    );
    assert_eq!(
        label("mem.latency.local.base").as_deref(),
        Some("idle local memory latency, random over 256 MiB (8x LLC), base pages")
    );

    // The same kind of figure from two probes 1.5x apart is a disagreement, named by
    // its kind; moving the loaded probe to another working set makes it a different
    // quantity, compared with nothing.
    let mut odd = bundle("vm-quick-run-1");
    for r in &mut odd.bundle.records {
        if r.kind == "mem.loaded" {
            let p = &mut r.data["points"][0];
            let v = p["latency_ns"]["median"].as_f64().unwrap();
            p["latency_ns"]["median"] = serde_json::json!(v * 1.5);
        }
    }
    let f = findings(std::slice::from_ref(&odd));
    let dis: Vec<&str> = f
        .iter()
        .filter(|x| x.id == "latency_disagreement")
        .map(|x| x.text.as_str())
        .collect();
    assert_eq!(dis.len(), 1, "{dis:?}");
    assert!(
        dis[0].starts_with("memory latency (idle, random over 256 MiB (8x LLC), huge pages (THP), local) was 148.3 ns by the node matrix and"),
        "{}",
        dis[0]
    );
    for r in &mut odd.bundle.records {
        if r.kind == "mem.loaded" {
            r.data["chase_bytes"] = serde_json::json!(512u64 << 20);
        }
    }
    let f = findings(std::slice::from_ref(&odd));
    assert!(f.iter().all(|x| x.id != "latency_disagreement"));

    // Across bundles: the old recording's matrix chased in 4 KiB blocks two lines
    // apart (82 ns); the new one randomly over the buffer (148 ns). Not comparable.
    let (old, new) = (bundle("vm-evaluate"), bundle("vm-quick-run-1"));
    let set = vec![
        ("old".to_string(), metrics(&old)),
        ("new".to_string(), metrics(&new)),
    ];
    let c = compare_all(&set, Vec::new());
    let row = c.comparisons[0]
        .rows
        .iter()
        .find(|r| r.id == "mem.latency.local")
        .unwrap();
    assert_eq!(row.verdict, Verdict::NotComparable, "{row:?}");
    assert!(
        row.not_comparable
            .as_deref()
            .unwrap()
            .starts_with("random within 4 KiB blocks of 256 MiB, base pages (old) vs random over 256 MiB (8x LLC), huge pages (THP) (new)"),
        "{:?}",
        row.not_comparable
    );
}

#[test]
fn metrics_of_recorded_bundles() {
    let ids =
        |name: &str| -> Vec<String> { metrics(&bundle(name)).into_iter().map(|m| m.id).collect() };
    let ev = ids("vm-evaluate");
    for id in [
        "workload.shared-first-touch.single_thread",
        "workload.shared-first-touch.all_cpus",
        "workload.shared-first-touch.all_cpus.per_thread",
        "workload.shared-first-touch.single_thread.p99",
        "workload.shared-first-touch.t2.per_thread",
        "c2c.cas.median",
        "mem.bandwidth.triad.t1",
        "mem.bandwidth.triad.all",
        "mem.bandwidth.triad.local",
        "mem.latency.curve.base.largest",
        "mem.latency.local",
        "mem.loaded.saturated",
        "mem.migrate.same-node-baseline.stream_copy.4096",
    ] {
        assert!(ev.contains(&id.to_string()), "{id} not in {ev:?}");
    }
    let scale = metrics(&bundle("vm-scale"));
    let single = scale
        .iter()
        .find(|m| m.id.ends_with(".single_thread"))
        .expect("single-thread metric");
    assert_eq!(single.group, "single thread");
    assert_eq!(single.samples.len(), 3, "one per repetition");
    assert!(scale.iter().any(|m| m.group == "per thread"));
    // Every metric has samples and a unit; latencies are lower-is-better.
    for name in ALL {
        for m in metrics(&bundle(name)) {
            assert!(!m.samples.is_empty() && !m.unit.is_empty(), "{name}: {m:?}");
            if m.unit == "ns" || m.unit == "ms" {
                assert!(!m.higher_is_better, "{}", m.id);
            }
        }
    }
}

/// The evaluation of this machine against a copy whose workload is half as fast and
/// whose core-to-core latency is twice as long.
fn slower_copy() -> Loaded {
    let mut l = bundle("vm-evaluate");
    l.bundle.envelope.host.hostname = Some("slower".into());
    l.label = "slower".into();
    for r in &mut l.bundle.records {
        match r.kind.as_str() {
            "workload.run" => {
                let d = &mut r.data;
                for s in d["requests_per_s_slices"].as_array_mut().unwrap() {
                    *s = serde_json::json!(s.as_f64().unwrap() * 0.5);
                }
            }
            "c2c.pair" => {
                for s in r.data["samples_ns"].as_array_mut().unwrap() {
                    *s = serde_json::json!(s.as_f64().unwrap() * 2.0);
                }
            }
            "c2c.matrix" => {
                for row in r.data["matrix_ns"].as_array_mut().unwrap() {
                    for v in row.as_array_mut().unwrap() {
                        if let Some(x) = v.as_f64() {
                            *v = serde_json::json!(x * 2.0);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    l
}

#[test]
fn compare_two_recorded_bundles() {
    let a = bundle("vm-evaluate");
    let b = slower_copy();
    let set = vec![
        (a.label.clone(), metrics(&a)),
        (b.label.clone(), metrics(&b)),
        (format!("{} again", a.label), metrics(&a)),
    ];
    let r = compare_all(&set, Vec::new());
    assert_eq!(r.comparisons.len(), 2);
    let slower = &r.comparisons[0];
    let row = |id: &str| slower.rows.iter().find(|x| x.id == id).unwrap();
    let per_server = row("workload.shared-first-touch.all_cpus");
    assert!((per_server.ratio - 0.5).abs() < 1e-9);
    assert_eq!(per_server.verdict, Verdict::Worse);
    let c2c = row("c2c.cas.median");
    assert!((c2c.ratio - 2.0).abs() < 0.05, "{}", c2c.ratio);
    assert_eq!(c2c.verdict, Verdict::Worse);
    // The same bundle again: every difference is within the noise (or unknown).
    let same = &r.comparisons[1];
    assert!(same
        .rows
        .iter()
        .all(|x| matches!(x.verdict, Verdict::WithinNoise | Verdict::Unknown)));
    assert!(same.rows.iter().all(|x| (x.ratio - 1.0).abs() < 1e-12));
    assert!(
        r.summary
            .iter()
            .any(|s| s.starts_with("vm again vs vm: per server: no difference beyond the noise")),
        "{:#?}",
        r.summary
    );
    assert!(
        r.summary
            .iter()
            .any(|s| s.starts_with("slower vs vm: per server: vm is better")),
        "{:#?}",
        r.summary
    );
    assert!(!r.nothing_in_common());
}

#[test]
fn two_quick_runs_of_one_machine_differ_in_nothing() {
    // Two `evaluate --quick` runs of this 2-vCPU VM, one after the other: within-run
    // intervals alone called 4 of 9 groups better or worse; with the run-to-run noise
    // unknown (one run per side), no group may be called better, worse or mixed.
    let a = bundle("vm-quick-run-1");
    let b = bundle("vm-quick-run-2");
    let set = vec![
        (a.label.clone(), metrics(&a)),
        (b.label.clone(), metrics(&b)),
    ];
    let r = compare_all(&set, Vec::new());
    let c = &r.comparisons[0];
    assert!(c.rows.len() >= 20, "{} shared figures", c.rows.len());
    for row in &c.rows {
        assert!(
            matches!(row.verdict, Verdict::WithinNoise | Verdict::Unknown),
            "{} {:.2}x: {:?}",
            row.name,
            row.ratio,
            row.verdict
        );
    }
    for line in &r.summary {
        assert!(
            !line.contains(" is better") && !line.contains("mixed"),
            "{line}"
        );
    }
    assert!(
        r.summary
            .iter()
            .any(|l| l.contains("run-to-run noise unknown")),
        "{:#?}",
        r.summary
    );
    // Every group that has figures says "no difference" or "cannot tell".
    for g in [
        "memory bandwidth",
        "memory latency",
        "core-to-core",
        "per server",
    ] {
        assert!(
            r.summary
                .iter()
                .any(|l| l.starts_with(&format!("{g}: no difference"))),
            "{g}: {:#?}",
            r.summary
        );
    }
}

#[test]
fn nothing_in_common() {
    let a = bundle("vm-sweep");
    let b = bundle("model-neoverse-v1");
    let set = vec![
        (a.label.clone(), metrics(&a)),
        (b.label.clone(), metrics(&b)),
    ];
    let r = compare_all(&set, Vec::new());
    assert!(r.nothing_in_common());
    // What each bundle has is still shown.
    let doc = r.document(&set);
    let md = doc.to_text(Format::Markdown);
    assert!(md.contains("share no comparable figure"), "{md}");
    assert!(md.contains("triad, 16 cores, data on node 0"), "{md}");
}

#[test]
fn charts_of_recorded_studies() {
    use numalab_records::harness::{PolicySummary, ScaleSummary, SweepSummary};
    use numalab_report::draw::harness::{policy_svg, scale_svg, sweep_svg};
    let scale = bundle("vm-scale");
    let (_, s) = &scale.records_of::<ScaleSummary>()[0];
    let svg = scale_svg(s);
    assert!(svg.starts_with("<svg") && svg.contains("polyline"));
    let policy = bundle("vm-policy");
    let (_, p) = &policy.records_of::<PolicySummary>()[0];
    let svg = policy_svg(p);
    for r in &p.results {
        assert!(svg.contains(r.policy.name()), "{:?}", r.policy);
    }
    let sweep = bundle("vm-sweep");
    let (_, w) = &sweep.records_of::<SweepSummary>()[0];
    let svg = sweep_svg(w);
    for p in &w.points {
        assert!(svg.contains(&p.label), "{}", p.label);
    }
}

// ------------------------------------------------------------------ snapshots

fn vm_doc() -> numalab_report::doc::Document {
    document(&[bundle("vm-evaluate")])
}

#[test]
fn snapshot_report_html() {
    insta::assert_snapshot!(vm_doc().to_html());
}

#[test]
fn snapshot_report_markdown() {
    insta::assert_snapshot!(vm_doc().to_text(Format::Markdown));
}

#[test]
fn snapshot_report_terminal() {
    insta::assert_snapshot!(vm_doc().to_text(Format::Terminal));
}

#[test]
fn snapshot_report_csv() {
    insta::assert_snapshot!(vm_doc().to_text(Format::Csv));
}

#[test]
fn snapshot_report_json() {
    insta::assert_snapshot!(vm_doc().to_text(Format::Json));
}

#[test]
fn snapshot_every_kind_markdown() {
    // One page of every other fixture, in Markdown: every section builder's tables.
    for name in ALL.iter().filter(|n| **n != "vm-evaluate") {
        let md = document(&[bundle(name)]).to_text(Format::Markdown);
        insta::assert_snapshot!(format!("kind_{}", name.replace('-', "_")), md);
    }
}

fn comparison_doc() -> (
    numalab_report::compare::Report,
    Vec<(String, Vec<numalab_report::compare::Metric>)>,
) {
    let a = bundle("vm-evaluate");
    let b = slower_copy();
    let set = vec![
        (a.label.clone(), metrics(&a)),
        (b.label.clone(), metrics(&b)),
    ];
    (compare_all(&set, Vec::new()), set)
}

#[test]
fn snapshot_compare_every_format() {
    let (r, set) = comparison_doc();
    let doc = r.document(&set);
    insta::assert_snapshot!("compare_terminal", doc.to_text(Format::Terminal));
    insta::assert_snapshot!("compare_markdown", doc.to_text(Format::Markdown));
    insta::assert_snapshot!("compare_csv", doc.to_text(Format::Csv));
    insta::assert_snapshot!("compare_html", doc.to_html());
    insta::assert_snapshot!("compare_json", serde_json::to_string_pretty(&r).unwrap());
}
