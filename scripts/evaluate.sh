#!/usr/bin/env bash
# The main job: install what is missing, build numalab in release mode, characterize
# this machine. Extra arguments go to `numalab evaluate` (e.g. --quick, --out DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cargo build --release --locked -p numalab
exec target/release/numalab evaluate "$@"
