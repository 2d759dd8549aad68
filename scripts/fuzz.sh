#!/usr/bin/env bash
# Fuzzes every parser of outside data numalab implements (fuzz/fuzz_targets), each for
# SECONDS (default 30; CI runs 10; the long run is `scripts/fuzz.sh 600`), FUZZ_JOBS at a
# time (default: the CPU count), with
# libFuzzer (the libfuzzer-sys crate builds it) under AddressSanitizer. The corpus grows
# in target/fuzz-corpus/TARGET (seeded from the repository's fixtures); a crash stops the
# script with its input in fuzz/artifacts/TARGET (make it a regression test).
#
# The targets are built by the machine's own (stable) toolchain with the flags cargo-fuzz
# would pass (SanitizerCoverage's inline 8-bit counters, PC table and compare tracing,
# `--cfg fuzzing`, debug assertions, overflow checks, ASan), so neither a nightly
# toolchain nor cargo-fuzz is installed for it (that install was ~400 s of every CI
# run). ASan is a nightly-only flag: RUSTC_BOOTSTRAP=1 lets the stable compiler take it,
# for this build only (the stable toolchain ships the ASan runtime). `cargo fuzz run
# TARGET` (nightly, cargo-fuzz) still works on the same targets by hand.
#
# FUZZ_PROFILE=ci builds the targets at opt-level 1 (CI's short run: a shorter build,
# fewer executions a second); unset, the release profile.
#
# FUZZ_SEED=N makes libFuzzer's choices repeatable (CI sets 1, so a clean checkout
# explores the same inputs each run and a red CI is a reproducible bug, not luck);
# unset, every run explores new ground (the long run).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
host=$(rustc -vV | sed -n 's/^host: //p')
flags=(
  --cfg fuzzing
  -Cpasses=sancov-module
  -Cllvm-args=-sanitizer-coverage-level=4
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
  -Cllvm-args=-sanitizer-coverage-pc-table
  -Cllvm-args=-sanitizer-coverage-trace-compares
  -Cdebug-assertions
  -Coverflow-checks
  -Zsanitizer=address
)
# --target keeps the flags off build scripts and proc macros (they run on the host
# uninstrumented, as under cargo-fuzz).
# FUZZ_PROFILE picks fuzz/Cargo.toml's profile: `release` (the default, the fastest
# targets) or `ci` (opt-level 1: a shorter build for CI's 10 s per target).
profile=${FUZZ_PROFILE:-release}
RUSTC_BOOTSTRAP=1 RUSTFLAGS="${flags[*]}" \
  cargo build --locked --profile "$profile" --manifest-path fuzz/Cargo.toml --target "$host" --bins
bin_dir=fuzz/target/$host/$profile
targets=$(cargo metadata --locked --no-deps --format-version 1 --manifest-path fuzz/Cargo.toml \
  | python3 -c 'import json,sys
for p in json.load(sys.stdin)["packages"]:
    for t in p["targets"]:
        if "bin" in t["kind"]: print(t["name"])')
corpus=target/fuzz-corpus
seed() { # TARGET FILES...
  local t=$1; shift
  mkdir -p "$corpus/$t"
  for f in "$@"; do [ -f "$f" ] && cp -n "$f" "$corpus/$t/" || true; done
}
seed c2c_csv tests/fixtures/c2c/*.csv
seed perf_import tests/fixtures/pmu/perf-stat/*
seed bundle tests/fixtures/bundles/two-node-handmade/results.jsonl
seed schedule_mix fuzz/seeds/schedule_mix/*
seed model_preset
for p in crates/model/presets/*.toml; do
  { echo; cat "$p"; } > "$corpus/model_preset/$(basename "$p")"
done
printf 'noc.cols=4;noc.rows=3\n' > "$corpus/model_preset/set-only"
seed snapshot_archive tests/fixtures/topology/*.tar.bz2
seed small_parsers fuzz/seeds/small_parsers/*
seed home_map fuzz/seeds/home_map/*
seed slice_tables tests/fixtures/slice-hash/PermSelectMasks_*.tbl tests/fixtures/slice-hash/BaseSequence_SKX_16-slice.tbl tests/fixtures/slice-hash/BaseSequence_SKX_20-slice.tbl
seed pmu_text crates/memaccess/tests/fixtures/*.script fuzz/seeds/pmu_text/*
seed spe_packets fuzz/seeds/spe_packets/*
# The targets run FUZZ_JOBS at a time (default: the CPU count): each libFuzzer run is one
# thread, so on N cores N of them get as many executions in their SECONDS as one alone
# would, and the stage takes 1/N of the time. Each run's lines are printed together, in
# the targets' order, when all have ended.
jobs=${FUZZ_JOBS:-$(nproc)}
logs=$(mktemp -d "${TMPDIR:-/tmp}/numalab-fuzz.XXXXXX")
trap 'rm -rf "$logs"' EXIT
fuzz_one() { # TARGET
  local t=$1
  mkdir -p "fuzz/artifacts/$t"
  "$bin_dir/$t" -artifact_prefix="fuzz/artifacts/$t/" "$corpus/$t" \
    ${FUZZ_SEED:+-seed="$FUZZ_SEED"} -max_total_time="$secs" -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 2>&1 \
    | grep -E '^(stat::number_of_executed_units|stat::new_units_added|==|SUMMARY|Done)' || true
}
running=0
for t in $targets; do
  echo "fuzz: $t for $secs s" >&2
  fuzz_one "$t" > "$logs/$t" 2>&1 &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait
crashed=0
for t in $targets; do
  echo "fuzz: $t:" >&2
  cat "$logs/$t"
  if [ -n "$(ls -A "fuzz/artifacts/$t" 2>/dev/null)" ]; then
    echo "fuzz: $t crashed; inputs in fuzz/artifacts/$t" >&2
    crashed=1
  else
    echo "fuzz: $t: $(ls "$corpus/$t" | wc -l) inputs in the corpus" >&2
  fi
done
exit "$crashed"
