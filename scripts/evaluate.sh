#!/usr/bin/env bash
# The main job: install what is missing, build numalab in release mode, characterize
# this machine. Extra arguments go to `numalab evaluate` (e.g. --quick, --out DIR);
# a relative --out is relative to the folder you ran this script from.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."
repo=$PWD
scripts/deps.sh
cargo build --release --locked -p numalab
# The binary is where cargo put it: CARGO_TARGET_DIR (relative to the repository when
# relative) or target/.
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$repo/$target ;; esac
bin=$target/release/numalab
if [ ! -x "$bin" ]; then
  echo "evaluate.sh: the build did not produce $bin" >&2
  exit 1
fi
echo "evaluate.sh: numalab is $bin (put it on PATH: cargo install --path crates/cli, or export PATH=\"$target/release:\$PATH\")" >&2
cd "$caller"
exec "$bin" evaluate "$@"
