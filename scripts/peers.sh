#!/usr/bin/env bash
# numalab against its peers, on this machine, in one command anyone can rerun:
#   scripts/peers.sh            every comparison (about 30 minutes on a 2-CPU machine)
#   scripts/peers.sh --quick    fewer rounds (about 8 minutes), for a first look
#
# It installs the peers if they are missing (likwid-bench from Debian's `likwid`;
# core-to-core-latency 1.2.0 from crates.io), builds numalab in release mode, prints the
# machine and its load average, then runs the existing peer benchmarks, which alternate
# the tools round by round and print every ratio as the median of same-round ratios with
# their range:
#   1. `cargo bench -p numalab-mem --bench vs_likwid`: bandwidth kernels against
#      likwid-bench, at one thread and at every CPU of package 0, then at one thread
#      with numalab's arrays on transparent huge pages;
#   2. `cargo bench -p numalab-pingpong --bench pingpong`: the c2c measurement against
#      core-to-core-latency, the library call and the whole process (`numalab c2c`
#      against `core-to-core-latency`, same samples and round trips).
# The ratios are computed in those benchmarks only; this script adds none of its own.
# Environment: PEERS_ROUNDS (bandwidth rounds, default 5; --quick 3), C2C_RUNS
# (c2c alternations, default 9; --quick 5), NUMALAB_BENCH_MB (working set, default 1000).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "peers.sh: unknown argument $a (known: --quick, --help)" >&2; exit 2 ;;
  esac
done
rounds=${PEERS_ROUNDS:-$([ $quick = 1 ] && echo 3 || echo 5)}
c2c_runs=${C2C_RUNS:-$([ $quick = 1 ] && echo 5 || echo 9)}

scripts/deps.sh
if ! command -v likwid-bench >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "peers.sh: likwid is missing; as root: apt-get install -y likwid" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends likwid >/dev/null
fi
c2cl="${CARGO_HOME:-$HOME/.cargo}/bin/core-to-core-latency"
if [ ! -x "$c2cl" ]; then
  cargo install --locked --quiet core-to-core-latency --version 1.2.0
fi

cargo build --release --quiet -p numalab
export NUMALAB_BIN="$PWD/target/release/numalab"

echo "# numalab against its peers, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
echo "- peers: likwid-bench $(dpkg-query -W -f='${Version}' likwid 2>/dev/null || echo '(version unknown)'), $(cargo install --list 2>/dev/null | grep -m1 '^core-to-core-latency' | tr -d ':' || echo core-to-core-latency)"
echo "- numalab: $("$NUMALAB_BIN" --version)"
echo "- load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

for threads in 1 "$(nproc)"; do
  echo "## Bandwidth kernels against likwid-bench, $threads thread(s)"
  NUMALAB_BENCH_THREADS=$threads NUMALAB_BENCH_ROUNDS=$rounds NUMALAB_BENCH_SKIP=latency,migrate \
    cargo bench --quiet -p numalab-mem --bench vs_likwid 2>/dev/null
  echo
  echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
done

echo "## Bandwidth kernels against likwid-bench, 1 thread, numalab on transparent huge pages"
NUMALAB_BENCH_PAGES=thp NUMALAB_BENCH_THREADS=1 NUMALAB_BENCH_ROUNDS=$rounds NUMALAB_BENCH_SKIP=latency,migrate \
  cargo bench --quiet -p numalab-mem --bench vs_likwid 2>/dev/null
echo
echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

echo "## Core-to-core against core-to-core-latency"
C2C_RUNS=$c2c_runs C2C_SKIP_STRUCTURE=1 cargo bench --quiet -p numalab-pingpong --bench pingpong 2>/dev/null
echo
echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
