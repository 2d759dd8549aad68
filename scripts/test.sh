#!/usr/bin/env bash
# Every test: install what is missing, then the workspace tests (unit, integration,
# CLI, fixtures), the aarch64 unit tests of the crates with Arm code under qemu-user
# (scripts/cross-aarch64.sh), and the multi-node NUMA suites in QEMU guests, x86-64 and
# the emulated Arm server (scripts/test-numa.sh --arch all).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
t0=$SECONDS
cargo test --workspace --locked
echo "test: x86_64 workspace tests took $((SECONDS - t0)) s" >&2
t0=$SECONDS
scripts/cross-aarch64.sh test -p numalab-mem -p numalab-pmu --lib
echo "test: aarch64 unit tests (qemu-user) took $((SECONDS - t0)) s" >&2
t0=$SECONDS
scripts/test-numa.sh --arch all
echo "test: NUMA guests took $((SECONDS - t0)) s" >&2
