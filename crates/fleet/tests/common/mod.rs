//! Shared by the fleet integration tests: a fake numalab that hands `fleet node` to the
//! real agent (`numalab-fleet-agent`) and otherwise behaves by node name.

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A small real journal from the repository's fixtures.
pub fn fixture_journal() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bundles/vm-sweep/results.jsonl")
}

/// Writes `DIR/fake-numalab`. As `fleet run ARGS` it execs the agent binary's `run`
/// (what `--sbatch` starts). As `fleet node ARGS` it execs the agent with
/// `--numalab` itself, except for a node named `wedge*` (the agent never starts and the
/// launcher hangs with a grandchild). As the measuring command it appends the node to
/// `DIR/launches`, then by node name: `n3` or `fail*` writes to stderr and exits 1,
/// `n4` or `hang*` sleeps with a grandchild (pid in `DIR/<node>.grandchild`), any other
/// copies the fixture journal into `--out`. A file `DIR/fixed` makes every node succeed.
pub fn fake_numalab(dir: &Path) -> PathBuf {
    let agent = env!("CARGO_BIN_EXE_numalab-fleet-agent");
    let script = format!(
        r#"#!/bin/sh
[ "$1" = --ready ] && exit 0
state='{state}'
if [ "$1" = fleet ] && [ "$2" = run ]; then
  shift 2
  exec '{agent}' run --numalab "$0" "$@"
fi
if [ "$1" = fleet ] && [ "$2" = node ]; then
  shift 2
  case " $* " in
  *" --node wedge"*)
    sleep 1000 &
    echo $! > "$state/wedge.grandchild"
    wait
    exit 0
    ;;
  esac
  exec '{agent}' --numalab "$0" "$@"
fi
out=""
prev=""
for a in "$@"; do
  [ "$prev" = --out ] && out=$a
  prev=$a
done
node=$NUMALAB_FLEET_NODE
echo "$node" >> "$state/launches"
echo "fake numalab $1 on $node: this line is the command's stdout"
if [ ! -e "$state/fixed" ]; then
  case "$node" in
  n3|fail*)
    echo "fake numalab: the bandwidth step failed on $node" >&2
    exit 1
    ;;
  n4|hang*)
    sleep 1000 &
    echo $! > "$state/$node.grandchild"
    wait
    exit 0
    ;;
  esac
fi
cp '{fixture}' "$out/results.jsonl"
echo '{{"fake":true}}' > "$out/summary.json"
"#,
        state = dir.display(),
        agent = agent,
        fixture = fixture_journal().display(),
    );
    let p = dir.join("fake-numalab");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A child forked by another test thread while the script was open for writing holds
    // that descriptor until it execs, and executing the script meanwhile fails with
    // ETXTBSY. No new holder can appear once the file is closed, so one successful run
    // makes it safe.
    let ready = (0..200).any(
        |_| match std::process::Command::new(&p).arg("--ready").status() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(5));
                false
            }
            r => {
                assert!(r.unwrap().success());
                true
            }
        },
    );
    assert!(ready, "{} stayed busy (ETXTBSY) for a second", p.display());
    // The state folder must be usable by whoever runs the steps (root here).
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The nodes the fake command ran on, in order.
pub fn launches(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("launches"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The pid a fake wrote in `DIR/<name>.grandchild`.
pub fn grandchild(dir: &Path, name: &str) -> i32 {
    let p = dir.join(format!("{name}.grandchild"));
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .trim()
        .parse()
        .unwrap()
}

/// Asserts the node's gathered journal equals the fixture and is listed, verified, in
/// its status.
pub fn assert_gathered(fleet: &Path, node: &str) {
    let st =
        numalab_fleet::read_status(fleet, node).unwrap_or_else(|| panic!("{node}: no status.json"));
    assert_eq!(st.state, numalab_fleet::NodeState::Done, "{node}: {st:#?}");
    let got = std::fs::read(numalab_fleet::node_dir(fleet, node).join("results.jsonl")).unwrap();
    assert_eq!(
        got,
        std::fs::read(fixture_journal()).unwrap(),
        "{node}: journal differs"
    );
    assert!(st.files.iter().any(|f| f.name == "results.jsonl"));
    assert!(st.files.iter().any(|f| f.name == "summary.json"));
    assert!(
        numalab_fleet::can_skip(fleet, node).is_some(),
        "{node}: not verifiable"
    );
}
