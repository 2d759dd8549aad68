#!/usr/bin/env bash
# Regenerates the BookSim2 reference curves in crates/model/tests/fixtures/booksim2/ (when
# BookSim2's source is at hand) and prints numalab's input-queued router model beside them.
#
#   scripts/booksim-compare.sh [--booksim-src DIR] [--no-booksim | --booksim-only] [--jobs N]
#                              [--only NAME,...] [--table]
#
# DIR is a checkout of https://github.com/booksim/booksim2 (default: $BOOKSIM_SRC or
# /tmp/booksim2). Without it (or with --no-booksim) the recorded CSVs are compared as they
# are. Building BookSim needs g++, make, flex and bison. --only records just the named curves
# (e.g. mesh16_transpose,mesh16_hotspot: the file names without .csv). --table prints
# docs/model.md's table of every engine and router (discrete-event and analytic,
# input-queued and output-queued) against the curves instead of the detailed comparison.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
fix="$here/crates/model/tests/fixtures/booksim2"
src="${BOOKSIM_SRC:-/tmp/booksim2}"
run_booksim=1
compare=1
jobs="$(nproc)"
only=""
table=""
while [ $# -gt 0 ]; do
  case "$1" in
    --booksim-src) src="$2"; shift 2 ;;
    --no-booksim) run_booksim=0; shift ;;
    --booksim-only) compare=0; shift ;;
    --jobs) jobs="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --table) table="--table"; shift ;;
    *) echo "usage: $0 [--booksim-src DIR] [--no-booksim | --booksim-only] [--jobs N] [--only NAME,...] [--table]" >&2; exit 2 ;;
  esac
done

bs=""
if [ "$run_booksim" = 1 ] && [ -f "$src/src/Makefile" ]; then
  if [ ! -x "$src/src/booksim" ]; then
    for t in g++ make flex bison; do
      command -v "$t" >/dev/null || { echo "building BookSim2 needs $t (apt-get install -y g++ make flex bison)" >&2; exit 1; }
    done
    make -C "$src/src" -j"$jobs" >/dev/null
  fi
  bs="$src/src/booksim"
elif [ "$run_booksim" = 1 ]; then
  echo "no BookSim2 source at $src: comparing with the recorded curves" >&2
fi

# One BookSim run: prints "rate,latency,accepted,stable,wall_s".
# $1 config, $2 rate, then extra key=value overrides.
one() {
  local cfg="$1" rate="$2"; shift 2
  local t0 t1 out
  t0=$(date +%s.%N)
  out=$(cd "$(dirname "$cfg")" && "$bs" "$cfg" injection_rate="$rate" "$@" 2>&1 || true)
  t1=$(date +%s.%N)
  local wall; wall=$(echo "$t1 - $t0" | bc -l)
  if echo "$out" | grep -q "Simulation unstable\|Too many sample periods"; then
    printf '%s,,,0,%.3f\n' "$rate" "$wall"
  else
    # Overall statistics; with several traffic classes the latency is the mean weighted
    # by each class's accepted rate and the accepted rate is their sum.
    echo "$out" | sed -n '/Overall Traffic Statistics/,$p' | awk -v r="$rate" -v w="$wall" '
      BEGIN { n = 0 } /Packet latency average/ { lat[n] = $5 }
      /Accepted packet rate average/ { acc[n] = $6; n++ }
      END { s = 0; a = 0; for (i = 0; i < n; i++) { s += lat[i] * acc[i]; a += acc[i] }
            printf "%s,%.4f,%.5f,1,%.3f\n", r, s / a, a, w }'
  fi
}

# A curve: rates in $2 (space separated) until the first unstable point.
curve() {
  local cfg="$1" rates="$2" csv="$3"; shift 3
  echo "offered,latency_cycles,accepted,stable,wall_s" > "$csv.tmp"
  for r in $rates; do
    line=$(one "$cfg" "$r" "$@")
    echo "$line" >> "$csv.tmp"
    case "$line" in *,0,*) break ;; esac
  done
  mv "$csv.tmp" "$csv"
  echo "wrote $csv" >&2
}

# A hotspot curve: 90% uniform (class 0) and 10% to node 0 (class 1) at a total rate r.
hot_curve() {
  local cfg="$1" rates="$2" csv="$3"
  echo "offered,latency_cycles,accepted,stable,wall_s" > "$csv.tmp"
  for r in $rates; do
    line=$(one "$cfg" "$r" "injection_rate={$(echo "$r * 0.9" | bc -l),$(echo "$r * 0.1" | bc -l)}")
    echo "$line" >> "$csv.tmp"
    case "$line" in *,0,*) break ;; esac
  done
  mv "$csv.tmp" "$csv"
  echo "wrote $csv" >&2
}

# Is curve $1 to be recorded (all, or those named by --only)?
wanted() { [ -z "$only" ] || case ",$only," in *",$1,"*) true ;; *) false ;; esac; }

if [ -n "$bs" ]; then
  seq_rates() { awk -v a="$1" -v b="$2" -v s="$3" 'BEGIN { for (x = a; x <= b + 1e-9; x += s) printf "%.3f ", x }'; }
  low8="$(seq_rates 0.05 0.30 0.05)"
  ! wanted mesh8_uniform || (curve "$fix/mesh8_uniform.cfg" "$low8 $(seq_rates 0.32 0.60 0.02)" "$fix/mesh8_uniform.csv") &
  ! wanted mesh8_transpose || (curve "$fix/mesh8_transpose.cfg" "$(seq_rates 0.02 0.40 0.02)" "$fix/mesh8_transpose.csv") &
  wait
  ! wanted mesh8_hotspot || (hot_curve "$fix/mesh8_hotspot.cfg" "$(seq_rates 0.01 0.20 0.01)" "$fix/mesh8_hotspot.csv") &
  ! wanted mesh16_uniform || (curve "$fix/mesh16_uniform.cfg" "$(seq_rates 0.02 0.30 0.02)" "$fix/mesh16_uniform.csv") &
  wait
  # 8x8 hotspot near saturation on a finer grid than BookSim's 0.01 steps above (the
  # hot node's ejection port binds near 1 / (0.1 x 64 + 0.9) = 0.137).
  ! wanted mesh8_hotspot_fine || hot_curve "$fix/mesh8_hotspot.cfg" "$(seq_rates 0.120 0.150 0.001)" "$fix/mesh8_hotspot_fine.csv"
  # On 16x16 the hot node's ejection port binds at 1 / (0.1 x 256) = 0.039 packets per
  # node per cycle: finer steps.
  ! wanted mesh16_transpose || (curve "$fix/mesh16_transpose.cfg" "$(seq_rates 0.01 0.20 0.01)" "$fix/mesh16_transpose.csv") &
  ! wanted mesh16_hotspot || (hot_curve "$fix/mesh16_hotspot.cfg" "$(seq_rates 0.004 0.080 0.004)" "$fix/mesh16_hotspot.csv") &
  wait
  # 12x12: the hot node's ejection port binds at 1 / (0.1 x 144) = 0.069. No transpose:
  # BookSim2's is a bit permutation and refuses a node count that is not a power of two
  # ("Bit permutation traffic patterns require the number of nodes to be a power of two").
  ! wanted mesh12_uniform || (curve "$fix/mesh12_uniform.cfg" "$(seq_rates 0.02 0.40 0.02)" "$fix/mesh12_uniform.csv") &
  ! wanted mesh12_hotspot || (hot_curve "$fix/mesh12_hotspot.cfg" "$(seq_rates 0.005 0.100 0.005)" "$fix/mesh12_hotspot.csv") &
  wait
  # 4-flit packets (injection_rate counts packets).
  ! wanted mesh8_uniform_p4 || curve "$fix/mesh8_uniform_p4.cfg" "$(seq_rates 0.01 0.15 0.01)" "$fix/mesh8_uniform_p4.csv"
fi

[ "$compare" = 1 ] || exit 0
cd "$here"
cargo run --release -q -p numalab-model --example booksim_compare -- "$fix" $table
