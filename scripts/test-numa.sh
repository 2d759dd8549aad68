#!/usr/bin/env bash
# The multi-node NUMA suite (docs/numa-guest.md): builds numalab and the guest runner,
# boots a QEMU guest with 5 emulated NUMA nodes (one memory-only) from Debian's kernel
# and a busybox initramfs made now, runs the checks inside it and fails, showing the
# guest's console, if any check fails or the guest does not finish in time.
# Arguments go to `numa-guest run` (e.g. -v to watch the console, --only bind,interleave).
# NUMALAB_SKIP_NUMA_GUEST=1 skips it for a developer by hand; CI (CI=true) ignores it.
set -euo pipefail
cd "$(dirname "$0")/.."
skip="${NUMALAB_SKIP_NUMA_GUEST:-0}"
if [ "$skip" != "0" ] && [ -n "$skip" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "numa-guest: NUMALAB_SKIP_NUMA_GUEST is ignored in CI: the multi-node suite must run" >&2
  else
    echo "numa-guest: SKIPPED (NUMALAB_SKIP_NUMA_GUEST=$skip): multi-node NUMA code was NOT tested" >&2
    exit 0
  fi
fi
scripts/deps.sh --test
# The test profile is what `cargo test` builds, so after scripts/test.sh's cargo test
# this only links the guest runner.
cargo build --locked --profile test -p numalab -p numalab-numa-guest
target="${CARGO_TARGET_DIR:-target}/debug"
exec "$target/numa-guest" run --numalab "$target/numalab" "$@"
