//! `fleet run` through a real Slurm cluster: four slurmd (n1..n4) on this machine started
//! by `scripts/slurm-cluster.sh`, srun steps launching the real agent behind a fake
//! numalab. Needs root and Debian's slurm-wlm and munge (`scripts/deps.sh --test`); when
//! the cluster cannot start, the test fails with the daemons' logs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use numalab_fleet::{read_status, run_fleet, FleetRunOptions, LauncherKind, NodeState};

/// The cluster; stopped (daemons killed by their pid files) when dropped, even when the
/// test fails.
struct Cluster {
    dir: tempfile::TempDir,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-cluster.sh")
}

/// Runs the script with a time bound; returns (success, stdout + stderr).
fn run_script(action: &str, dir: &Path, limit: Duration) -> (bool, String) {
    let out_path = dir.with_extension("script.log");
    let log = std::fs::File::create(&out_path).unwrap();
    let mut child = Command::new("bash")
        .arg(script())
        .arg(action)
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("bash");
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    (status.is_some_and(|s| s.success()), text)
}

impl Cluster {
    fn start() -> Cluster {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        assert!(
            root,
            "the Slurm test needs root (slurmd runs the steps); run the tests as root"
        );
        let dir = tempfile::Builder::new()
            .prefix("numalab-slurm-")
            .tempdir()
            .unwrap();
        let cluster = Cluster { dir };
        let (ok, text) = run_script("start", cluster.dir.path(), Duration::from_secs(120));
        assert!(ok, "scripts/slurm-cluster.sh start failed:\n{text}");
        cluster
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let (ok, text) = run_script("stop", self.dir.path(), Duration::from_secs(60));
        if !ok {
            eprintln!("slurm-cluster.sh stop failed:\n{text}");
        }
    }
}

#[test]
fn four_nodes_through_srun() {
    let cluster = Cluster::start();
    // Every Slurm client (scontrol, srun) started from here uses this cluster. Only
    // this test runs in this test binary.
    std::env::set_var("SLURM_CONF", cluster.conf());
    std::env::remove_var("SLURM_JOB_ID");

    let state = tempfile::tempdir().unwrap();
    let fleet = tempfile::tempdir().unwrap();
    let numalab = common::fake_numalab(state.path());
    let mut o = FleetRunOptions::new(fleet.path(), &numalab, "0.0.test");
    o.launcher = LauncherKind::Slurm;
    o.nodes = Some("n[1-4]".into());
    o.parallel = 1;
    o.timeout = Duration::from_secs(20);

    let t0 = Instant::now();
    let s = run_fleet(&o, &()).unwrap();
    let first = t0.elapsed();
    eprintln!("first run: {first:?}");
    let names: Vec<&str> = s.nodes.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(names, ["n1", "n2", "n3", "n4"], "scontrol expanded n[1-4]");
    // n4 takes the 20 s timeout; the others a second or two each.
    assert!(first < Duration::from_secs(90), "{first:?}: {s:#?}");
    assert!(first >= Duration::from_secs(20), "{first:?}");

    common::assert_gathered(fleet.path(), "n1");
    common::assert_gathered(fleet.path(), "n2");
    let n1 = read_status(fleet.path(), "n1").unwrap();
    assert!(
        n1.launcher_command.contains(&"--nodelist=n1".to_string()),
        "{:?}",
        n1.launcher_command
    );
    assert_eq!(n1.launcher_command[0], "srun");

    let n3 = read_status(fleet.path(), "n3").unwrap();
    assert_eq!(n3.state, NodeState::Failed, "{n3:#?}");
    assert_eq!(n3.exit_code, Some(1));
    assert!(
        n3.stderr_tail.contains("the bandwidth step failed on n3"),
        "{}",
        n3.stderr_tail
    );
    assert!(
        n3.message.contains("the bandwidth step failed on n3"),
        "{}",
        n3.message
    );

    let n4 = read_status(fleet.path(), "n4").unwrap();
    assert_eq!(n4.state, NodeState::Timeout, "{n4:#?}");
    assert!(
        n4.duration_s >= 20.0 && n4.duration_s < 60.0,
        "{}",
        n4.duration_s
    );
    let gc = common::grandchild(state.path(), "n4");
    assert!(
        numalab_fleet::process_gone(gc, Duration::from_secs(10)),
        "n4's grandchild {gc} survived the timeout"
    );
    assert_eq!(common::launches(state.path()), ["n1", "n2", "n3", "n4"]);

    // Rerun in the same folder: only n3 and n4 are launched again.
    std::fs::write(state.path().join("fixed"), b"").unwrap();
    std::fs::remove_file(state.path().join("launches")).unwrap();
    let t1 = Instant::now();
    let s = run_fleet(&o, &()).unwrap();
    eprintln!("resumed run: {:?}", t1.elapsed());
    assert_eq!((s.done, s.resumed), (4, 2), "{s:#?}");
    assert_eq!(common::launches(state.path()), ["n3", "n4"]);
    for n in ["n1", "n2", "n3", "n4"] {
        common::assert_gathered(fleet.path(), n);
    }
    assert_eq!(read_status(fleet.path(), "n4").unwrap().attempt, 2);
    assert_eq!(read_status(fleet.path(), "n1").unwrap().attempt, 1);

    // numalab missing on the node: srun's execve error is turned into the remedy.
    let fleet2 = tempfile::tempdir().unwrap();
    let missing = state.path().join("not-installed/numalab");
    let mut o2 = FleetRunOptions::new(fleet2.path(), &missing, "0.0.test");
    o2.nodes = Some("n2".into());
    o2.timeout = Duration::from_secs(20);
    let s = run_fleet(&o2, &()).unwrap();
    assert_eq!(s.launch_failed, 1, "{s:#?}");
    let st = read_status(fleet2.path(), "n2").unwrap();
    assert_eq!(
        st.message,
        format!(
            "numalab is not at {} on node n2: install it at the same path on every node",
            missing.display()
        ),
        "{st:#?}"
    );

    // --push: srun broadcasts the binary into each node's /tmp (--bcast=/tmp/), the agent
    // checks the copy's SHA-256 against the file sent, runs that copy and removes it; the
    // original stays where it is.
    let bcast_copies = || -> Vec<String> {
        std::fs::read_dir(numalab_fleet::PUSH_DIR)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("slurm_bcast_"))
            .collect()
    };
    let before = bcast_copies();
    let fleet4 = tempfile::tempdir().unwrap();
    let mut o4 = FleetRunOptions::new(fleet4.path(), &numalab, "0.0.test");
    o4.nodes = Some("n[1-2]".into());
    o4.timeout = Duration::from_secs(20);
    o4.push = true;
    let s = run_fleet(&o4, &()).unwrap();
    assert_eq!(s.done, 2, "{s:#?}");
    let (_, sent) =
        numalab_fleet::frame::hash_reader(std::fs::File::open(&numalab).unwrap()).unwrap();
    for n in ["n1", "n2"] {
        common::assert_gathered(fleet4.path(), n);
        let st = read_status(fleet4.path(), n).unwrap();
        assert_eq!(st.pushed_sha256.as_deref(), Some(sent.as_str()), "{st:#?}");
        assert!(
            st.launcher_command.contains(&"--bcast=/tmp/".to_string()),
            "{:?}",
            st.launcher_command
        );
    }
    assert!(numalab.exists(), "the original numalab stays");
    let left: Vec<String> = bcast_copies()
        .into_iter()
        .filter(|n| !before.contains(n))
        .collect();
    assert!(left.is_empty(), "pushed copies left behind: {left:?}");

    // --sbatch: one batch allocation of n1,n2 whose script runs `fleet run` inside it
    // (the steps then go without --exclusive). The fleet folder is on this machine, which
    // is also the batch host here.
    std::fs::remove_file(state.path().join("launches")).unwrap();
    let fleet3 = tempfile::tempdir().unwrap();
    let mut o3 = FleetRunOptions::new(fleet3.path(), &numalab, "0.0.test");
    o3.nodes = Some("n[1-2]".into());
    o3.sbatch = true;
    o3.timeout = Duration::from_secs(60);
    let t3 = Instant::now();
    let s = run_fleet(&o3, &()).unwrap();
    eprintln!("sbatch run: {:?}", t3.elapsed());
    assert_eq!(s.done, 2, "{s:#?}");
    for n in ["n1", "n2"] {
        common::assert_gathered(fleet3.path(), n);
        let st = read_status(fleet3.path(), n).unwrap();
        assert!(
            !st.launcher_command.contains(&"--exclusive".to_string()),
            "inside the allocation: {:?}",
            st.launcher_command
        );
    }
    let logs = std::fs::read_dir(fleet3.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("slurm-"))
        .count();
    assert_eq!(logs, 1, "the batch job's slurm-%j.out in the fleet folder");
    eprintln!("whole test: {:?}", t0.elapsed());
}
