#!/usr/bin/env bash
# Every test: install what is missing, then the workspace tests (unit, integration,
# CLI, fixtures) and the multi-node NUMA suite in a QEMU guest (scripts/test-numa.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
cargo test --workspace --locked
scripts/test-numa.sh
