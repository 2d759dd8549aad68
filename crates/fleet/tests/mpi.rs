//! `fleet run` through Open MPI's `mpirun` (Debian's openmpi-bin), a hostfile naming
//! `localhost`: the real agent behind a fake numalab, one node gathered.

mod common;

use std::time::{Duration, Instant};

use numalab_fleet::{read_status, run_fleet, FleetRunOptions, LauncherKind};

#[test]
fn one_host_through_mpirun() {
    let state = tempfile::tempdir().unwrap();
    let fleet = tempfile::tempdir().unwrap();
    let hostfile = state.path().join("hosts");
    std::fs::write(
        &hostfile,
        "# the test machine\nlocalhost slots=2\nlocalhost\n",
    )
    .unwrap();
    let numalab = common::fake_numalab(state.path());
    let mut o = FleetRunOptions::new(fleet.path(), &numalab, "0.0.test");
    o.launcher = LauncherKind::Mpi;
    o.hostfile = Some(hostfile);
    o.launcher_args = vec!["--oversubscribe".into()];
    o.timeout = Duration::from_secs(60);

    let t0 = Instant::now();
    let s = run_fleet(&o, &()).unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(120),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(s.nodes.len(), 1, "one entry per distinct host: {s:#?}");
    assert_eq!(s.done, 1, "{s:#?}");
    common::assert_gathered(fleet.path(), "localhost");
    let st = read_status(fleet.path(), "localhost").unwrap();
    assert_eq!(
        st.launcher_command[..5],
        ["mpirun", "--host", "localhost", "-np", "1"]
    );
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    assert_eq!(
        st.launcher_command
            .contains(&"--allow-run-as-root".to_string()),
        root
    );
    assert_eq!(common::launches(state.path()), ["localhost"]);
}
