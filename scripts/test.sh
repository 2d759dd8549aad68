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
# qemu user mode implements neither mbind(2) nor perf_event_open(2) (ENOSYS): the three
# tests that need them are left out here; they run in the x86 suite above and their code
# paths run on Arm under a real kernel in the Arm guest below (binding, profile, check).
scripts/cross-aarch64.sh test -p numalab-mem -p numalab-pmu --lib -- \
  --skip pool::tests::workers_are_pinned_and_memory_is_where_the_kernel_says \
  --skip capability::tests::software_task_clock_counts_here \
  --skip check::tests::check_counts_the_loop_and_agrees_with_the_thread_clock
echo "test: aarch64 unit tests (qemu-user) took $((SECONDS - t0)) s" >&2
t0=$SECONDS
scripts/test-numa.sh --arch all
echo "test: NUMA guests took $((SECONDS - t0)) s" >&2
