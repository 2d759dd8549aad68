#!/usr/bin/env bash
# Fuzzes every parser of outside data numalab implements (fuzz/fuzz_targets), each for
# SECONDS (default 30, what CI runs; the long run is `scripts/fuzz.sh 600`), with
# libFuzzer through cargo-fuzz on the nightly toolchain. The corpus grows in
# target/fuzz-corpus/TARGET (seeded from the repository's fixtures); a crash stops the
# script with its input in fuzz/artifacts/TARGET (make it a regression test).
#
# FUZZ_SEED=N makes libFuzzer's choices repeatable (CI sets 1, so a clean checkout
# explores the same inputs each run and a red CI is a reproducible bug, not luck);
# unset, every run explores new ground (the long run).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
cargo +nightly fuzz build
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
seed pmu_text crates/memaccess/tests/fixtures/*.script fuzz/seeds/pmu_text/*
targets=$(cargo +nightly fuzz list)
for t in $targets; do
  echo "fuzz: $t for $secs s" >&2
  cargo +nightly fuzz run "$t" "$corpus/$t" -- \
    ${FUZZ_SEED:+-seed="$FUZZ_SEED"} -max_total_time="$secs" -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 2>&1 \
    | grep -E '^(stat::number_of_executed_units|stat::new_units_added|==|SUMMARY|Done)' || true
  if [ -n "$(ls -A "fuzz/artifacts/$t" 2>/dev/null)" ]; then
    echo "fuzz: $t crashed; inputs in fuzz/artifacts/$t" >&2
    exit 1
  fi
  echo "fuzz: $t: $(ls "$corpus/$t" | wc -l) inputs in the corpus" >&2
done
