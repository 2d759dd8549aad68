//! `numalab fleet` end to end on a real six-node Slurm cluster started on this machine
//! (`scripts/slurm-cluster.sh`, Debian's slurm-wlm and munge): the real numalab binary
//! runs `fleet node` under srun on each node; node n2's slurmd is put in a cgroup with
//! a CPU quota (a twentieth of a CPU), so everything it starts is throttled as on a node with a throttling
//! fan or a wrong power cap. The fleet report must flag n2's bandwidth and no other
//! node; the fleet is then ingested into the history database and queried.
//!
//! A test binary of its own: cargo runs test binaries one after the other, so no other
//! test competes for the CPUs while the nodes measure (in the shared `cli` binary, the
//! other tests' load made the normal nodes as slow and noisy as the throttled one).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn numalab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run numalab")
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-cluster.sh")
}

/// The cluster and the cgroup, torn down when dropped (also when the test fails).
struct Cluster {
    dir: PathBuf,
    cgroup: Option<PathBuf>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").arg(&self.dir).output();
        if let Some(cg) = &self.cgroup {
            // The throttled processes are gone with the cluster; an empty cgroup can go.
            for _ in 0..50 {
                if std::fs::remove_dir(cg).is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}

/// A cgroup holding `pid` with a twentieth of a CPU (1 ms every 20 ms), cgroup v1 or v2.
fn throttle(pid: &str) -> PathBuf {
    let name = format!("numalab-fleet-test-{}", std::process::id());
    let v1 = Path::new("/sys/fs/cgroup/cpu");
    if v1.join("cpu.cfs_quota_us").exists() {
        let cg = v1.join(&name);
        std::fs::create_dir_all(&cg).unwrap();
        std::fs::write(cg.join("cpu.cfs_period_us"), "20000").unwrap();
        std::fs::write(cg.join("cpu.cfs_quota_us"), "1000").unwrap();
        std::fs::write(cg.join("cgroup.procs"), pid).unwrap();
        return cg;
    }
    let root = Path::new("/sys/fs/cgroup");
    assert!(
        root.join("cgroup.controllers").exists(),
        "neither cgroup v1's cpu controller nor cgroup v2 is mounted at /sys/fs/cgroup"
    );
    let _ = std::fs::write(root.join("cgroup.subtree_control"), "+cpu");
    let cg = root.join(&name);
    std::fs::create_dir_all(&cg).unwrap();
    std::fs::write(cg.join("cpu.max"), "1000 20000").unwrap();
    std::fs::write(cg.join("cgroup.procs"), pid).unwrap();
    cg
}

#[test]
fn a_throttled_node_of_a_real_slurm_cluster_is_the_one_outlier_and_the_fleet_goes_to_the_history() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cluster");
    let mut cluster = Cluster {
        dir: dir.clone(),
        cgroup: None,
    };
    // Six nodes: with four, one normal node slowed by something else on the machine
    // widens the MAD enough to hide a node five times as slow (seen while other builds
    // ran: z -3.3).
    let start = Command::new(script())
        .arg("start")
        .arg(&dir)
        .arg("6")
        .output()
        .unwrap();
    assert!(
        start.status.success(),
        "the Slurm cluster did not start: {}{}",
        String::from_utf8_lossy(&start.stdout),
        String::from_utf8_lossy(&start.stderr)
    );
    let pid = std::fs::read_to_string(dir.join("run/slurmd-n2.pid")).unwrap();
    cluster.cgroup = Some(throttle(pid.trim()));

    let fleet = tmp.path().join("qual");
    let run = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .env("SLURM_CONF", dir.join("slurm.conf"))
        .env("NO_COLOR", "1")
        .args([
            "fleet",
            "run",
            "--nodes",
            "n[1-6]",
            "--parallel",
            "1",
            "--timeout",
            "5m",
            "--fleet",
            p(&fleet),
            "--json",
            "--",
            "mem",
            "bandwidth",
            "--kernel",
            "triad",
            "--threads",
            "1",
            "--size",
            "256MiB",
            "--reps",
            "5",
        ])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(summary["done"], 6, "{summary}");
    for n in ["n1", "n2", "n3", "n4", "n5", "n6"] {
        let journal = std::fs::read_to_string(fleet.join("nodes").join(n).join("results.jsonl"))
            .unwrap_or_else(|e| panic!("{n}: {e}"));
        assert!(journal.contains("\"mem.bandwidth\""), "{n}");
    }

    // The report: n2 is worse on triad bandwidth, nobody else is off. The floor is
    // raised to 60%: the throttled node runs at about a twentieth of the others' speed
    // (95% below), while a normal node's whole run on this shared 2-vCPU cloud VM can
    // drift far more than the run-to-run noise of a few percent: CI's run of 988945a
    // measured n1 at 13.8 GB/s and n3-n6 at 9.5 GB/s (46% apart, each node's five
    // repetitions within 10%), the host's bandwidth having stepped between n1's run and
    // the next. Such a step splitting the five normal nodes 2/3 widens the MAD so much
    // that n2 at 5% of their speed has a robust z of only -2.8 to -3.8, under the
    // default 3.5: with the 60% floor keeping normal nodes out, z need only be above 2.
    // And it went bimodal: in a rerun here n1 14.4, n3 15.8, n4 15.7, n5 24.7, n6 26.2
    // GB/s, n2 0.84: MAD 5.1, n2's z only -1.97. So the floor does the work: 80% (n2 is
    // 94-95% below; the healthy nodes have drifted up to 66% apart), z above 0.5.
    // The statistics at a 20% deviation and the default z are tested on synthetic
    // fleets (numalab_report::fleet's tests).
    let html = tmp.path().join("fleet.html");
    let rep = numalab(&[
        "fleet",
        "report",
        p(&fleet),
        "--json",
        "--floor",
        "80",
        "--z",
        "0.5",
        "--html",
        p(&html),
    ]);
    assert!(rep.status.success(), "{}", stderr(&rep));
    let report: serde_json::Value = serde_json::from_slice(&rep.stdout).unwrap();
    let outliers = report["outliers"].as_array().unwrap();
    assert!(!outliers.is_empty(), "n2 was not flagged: {report}");
    // n2 is the one node flagged worse. A healthy node flagged BETTER is this host's
    // bandwidth stepping up during that node's run, a real difference in what it measured,
    // not the fleet statistics' error: CI's run of 092744b measured n1 at 24.2 GB/s
    // against a median of 14.6 (+66%, z +3.3), n2 at 0.84. Such a node is printed, not
    // failed on; the statistics' false-positive rate is tested on synthetic fleets.
    let mut worse = Vec::new();
    for o in outliers {
        // On the test's output, for the record of what this host measured.
        eprintln!("{}", o["sentence"]);
        match o["direction"].as_str() {
            Some("worse") => worse.push(o),
            Some("better") => assert_ne!(o["node"], "n2", "{o}"),
            _ => panic!("an outlier with no direction: {o}"),
        }
    }
    assert_eq!(worse.len(), 1, "only n2 is worse: {outliers:?}");
    assert_eq!(worse[0]["node"], "n2", "only n2 is worse: {}", worse[0]);
    assert!(
        worse[0]["deviation_pct"].as_f64().unwrap() < -80.0,
        "{}",
        worse[0]
    );
    let text = serde_json::to_string(outliers).unwrap();
    assert!(text.contains("triad"), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("n2") && page.contains("<html"),
        "the HTML report"
    );

    // The history: the fleet folder is ingested node by node, tagged, and queried.
    let db = tmp.path().join("h.sqlite");
    let ing = numalab(&["db", "--db", p(&db), "ingest", p(&fleet)]);
    assert!(ing.status.success(), "{}", stderr(&ing));
    assert_eq!(
        stdout(&ing).matches(": stored as run").count(),
        6,
        "{}",
        stdout(&ing)
    );
    let again = numalab(&["db", "--db", p(&db), "ingest", p(&fleet)]);
    assert_eq!(
        stdout(&again).matches("already present").count(),
        6,
        "{}",
        stdout(&again)
    );
    let q = numalab(&[
        "db",
        "--db",
        p(&db),
        "query",
        "--tag",
        "node=n2",
        "--format",
        "json",
    ]);
    assert!(q.status.success(), "{}", stderr(&q));
    let qj: serde_json::Value = serde_json::from_slice(&q.stdout).unwrap();
    let qt = qj.to_string();
    assert!(qt.contains("triad"), "{qt}");
    assert!(qt.contains("n2") && !qt.contains("\"n3\""), "{qt}");
    drop(cluster);
}
