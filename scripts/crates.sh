#!/usr/bin/env bash
# Packages every crate of the workspace as crates.io would receive it (`cargo package`):
#
#   scripts/crates.sh            # package and check every crate's manifest and files (seconds)
#   scripts/crates.sh --verify   # also build each packaged crate alone, its numalab
#                                # dependencies taken from the other packages, as
#                                # `cargo publish --dry-run` does (offline; a full build)
#
# What it checks: every crate names its licence, description and repository; every
# dependency between our crates carries a version (`path` alone cannot be published);
# every file a crate compiles in (`include_str!`: the PMU catalogs, the model presets) is
# inside the crate; the test-only crates (`numalab-testkit`, `numalab-numa-guest`) are
# marked `publish = false` and left out of what is published (a dev-dependency on
# testkit carries no version, so `cargo package` drops it).
# Publishing for real (network and a crates.io token): `cargo publish --workspace`, in
# dependency order; then `cargo install numalab` builds the binary (it needs
# libhwloc-dev and pkg-config, as the README's build from source does).
set -euo pipefail
cd "$(dirname "$0")/.."
verify=--no-verify
case "${1:-}" in
  --verify) verify= ;;
  "") ;;
  *) echo "usage: $0 [--verify]" >&2; exit 2 ;;
esac
# The packages go to their own folder (not target/package, which a --verify run fills with
# a build), and a dirty tree is allowed: the check is about the manifests, run before a
# commit as well as in CI.
dir="${CARGO_TARGET_DIR:-target}/crates-package"
log=$(mktemp "${TMPDIR:-/tmp}/numalab-crates.XXXXXX")
trap 'rm -f "$log"' EXIT
# shellcheck disable=SC2086 # $verify is one flag or nothing
if ! CARGO_TARGET_DIR="$dir" cargo package --workspace --locked --offline --allow-dirty $verify \
  --exclude numalab-testkit --exclude numalab-numa-guest >"$log" 2>&1; then
  cat "$log" >&2
  echo "crates: cargo package failed (above)" >&2
  exit 1
fi
# A manifest warning (a missing description, licence or repository) is a failure here:
# crates.io would refuse or show an incomplete page.
if grep -q '^warning: manifest' "$log"; then
  grep -B2 -A3 '^warning: manifest' "$log" >&2
  echo "crates: a manifest lacks metadata crates.io shows (above)" >&2
  exit 1
fi
n=$(find "$dir/package" -maxdepth 1 -name '*.crate' | wc -l)
largest=$(find "$dir/package" -maxdepth 1 -name '*.crate' -printf '%s %f\n' | sort -n | tail -1)
what="manifests and files checked; --verify also builds each alone"
[ -z "$verify" ] && what="each built alone from its package"
echo "crates: $n crates packaged ($what); the largest: ${largest#* } ($(( ${largest%% *} / 1024 )) KiB, crates.io's limit is 10 MiB)"
