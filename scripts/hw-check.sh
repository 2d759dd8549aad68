#!/usr/bin/env bash
# The real-hardware check: on whatever machine it is given (more cores, NUMA nodes, a PMU),
# in at most about 8 minutes, run what this development VM cannot and keep all of it in
# one folder:
#
#   scripts/hw-check.sh [--numalab BIN] [--only STEP,...] [--quick] [OUT]
#
# Steps (each under its own time limit, a failure recorded and the next step run):
#   doctor    numalab doctor --json                                  (30 s)
#   evaluate  numalab evaluate --quick --out OUT/bundle              (300 s; 60 s with --quick: skipped)
#   c2c       numalab c2c --pairs auto --out OUT/c2c                 (90 s; every pair up to 64 CPUs, sampled above)
#   chase     numalab profile --out OUT/profile-chase -- numalab kernel chase     (45 s)
#   branchy   numalab profile --out OUT/profile-branchy -- numalab kernel branchy (45 s)
#   model     numalab model run mesh --experiment uniform --engine des --set noc.router=input-queued
#             --jobs $(nproc) --out OUT/model: the input-queued simulation sharded on every core (60 s)
#
# OUT (default hw-check-<host>-<date>) gets each step's output and log, the kernels'
# expectations, and summary.txt: the machine (CPUs, NUMA nodes, PMU, uncore PMUs), each
# step's exit status and time, and for the kernels whether the counted events satisfy what
# a correct PMU must count (python3 is used for that where present). --quick shrinks the
# kernels and skips evaluate (what the test suite runs on the development VM). BIN defaults
# to target/release/numalab, else numalab on PATH.
#
# Whenever such a machine is at hand, run it there and keep the folder: a bundle with
# anything this VM cannot produce (hardware counts, more than one NUMA node, more than 2
# CPUs) goes under tests/fixtures/bundles/real-<machine>/ with its provenance (issue 49).
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin=""
only="doctor,evaluate,c2c,chase,branchy,model"
quick=0
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --numalab) bin="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    -*) echo "hw-check: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) out="$1"; shift ;;
  esac
done
if [ -z "$bin" ]; then
  if [ -x "$here/target/release/numalab" ]; then bin="$here/target/release/numalab"
  elif command -v numalab >/dev/null; then bin="$(command -v numalab)"
  else echo "hw-check: no numalab binary: build it (cargo build --release -p numalab) or give --numalab BIN" >&2; exit 2
  fi
fi
for s in ${only//,/ }; do
  case "$s" in doctor|evaluate|c2c|chase|branchy|model) ;; *) echo "hw-check: unknown step $s (doctor, evaluate, c2c, chase, branchy, model)" >&2; exit 2 ;; esac
done
[ -n "$out" ] || out="hw-check-$(hostname -s 2>/dev/null || echo host)-$(date -u +%Y%m%dT%H%M%SZ)"
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "hw-check: $out exists and is not empty; give a new folder" >&2; exit 2
fi
mkdir -p "$out" || exit 1
summary="$out/summary.txt"
wants() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

if [ "$quick" = 1 ]; then
  chase_args=(--bytes 16MiB --steps 2000000); branchy_args=(--iterations 5000000)
else
  chase_args=(--bytes 1GiB --steps 50000000); branchy_args=(--iterations 200000000)
fi

nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
pmus=$(ls /sys/bus/event_source/devices 2>/dev/null | tr '\n' ' ')
{
  echo "numalab hardware check, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "binary:   $bin ($("$bin" --version 2>/dev/null | head -1))"
  echo "host:     $(hostname 2>/dev/null) $(uname -srm)"
  echo "cpus:     $(nproc) online; NUMA nodes: $nodes"
  echo "cpu:      $(grep -m1 -E 'model name|^CPU part' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
  echo "pmus:     $pmus"
  echo "paranoid: $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unknown)"
  echo
  echo "step      exit  seconds  output"
} > "$summary"

# step NAME LIMIT OUTPUT CMD...: runs CMD under a time limit, its stdout+stderr in OUT/NAME.log.
step() {
  local name="$1" limit="$2" what="$3"; shift 3
  local t0 rc
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" > "$out/$name.log" 2>&1
  rc=$?
  local note=""
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && note=" (ran past its $limit s)"
  printf '%-9s %4s  %7s  %s%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$what" "$note" >> "$summary"
  echo "hw-check: $name exit $rc$note" >&2
  return 0
}

wants doctor && step doctor 30 doctor.json sh -c '"$0" doctor --json > "$1/doctor.json"' "$bin" "$out"
if wants evaluate; then
  if [ "$quick" = 1 ]; then
    printf '%-9s %4s  %7s  %s\n' evaluate - - "skipped (--quick)" >> "$summary"
  else
    step evaluate 300 bundle/ "$bin" evaluate --quick --out "$out/bundle"
  fi
fi
wants c2c && step c2c 90 c2c/ "$bin" c2c --pairs auto --out "$out/c2c"
if wants chase; then
  "$bin" kernel chase "${chase_args[@]}" --json > "$out/chase-expected.json" 2>/dev/null
  step chase 45 profile-chase/ "$bin" profile --out "$out/profile-chase" -- "$bin" kernel chase "${chase_args[@]}"
fi
if wants branchy; then
  "$bin" kernel branchy "${branchy_args[@]}" --json > "$out/branchy-expected.json" 2>/dev/null
  step branchy 45 profile-branchy/ "$bin" profile --out "$out/profile-branchy" -- "$bin" kernel branchy "${branchy_args[@]}"
fi
if wants model; then
  cycles=20000; [ "$quick" = 1 ] && cycles=2000
  step model 60 model/ "$bin" model run mesh --experiment uniform --engine des --set noc.router=input-queued \
    --jobs "$(nproc)" --cycles "$cycles" --out "$out/model"
fi

# The kernels' expectations against what the profiles counted.
{
  echo
  echo "Known kernels: what a correct PMU counts, against the profile"
} >> "$summary"
if command -v python3 >/dev/null; then
  for k in chase branchy; do
    [ -f "$out/$k-expected.json" ] || continue
    python3 - "$out/$k-expected.json" "$out/profile-$k/results.jsonl" >> "$summary" <<'EOF'
import json, sys
exp = json.load(open(sys.argv[1]))
counts = {}
try:
    for line in open(sys.argv[2]):
        r = json.loads(line)
        if r.get("kind") == "pmu.profile":
            for e in r["data"].get("events", []):
                if e.get("value") is not None:
                    counts[e["name"]] = e["value"]
except (OSError, ValueError) as e:
    print(f"  {exp['kernel']}: no profile to check ({e})")
    sys.exit(0)
for x in exp["expected"]:
    name = next((n for n in x["names"] if n in counts), None)
    if name is None:
        print(f"  {exp['kernel']}: {x['event']}: not counted here (none of {', '.join(x['names'])})")
        continue
    v = counts[name]
    ok = v >= x["at_least"] and (x["at_most"] is None or v <= x["at_most"])
    bound = f">= {x['at_least']:.0f}" + (f" and <= {x['at_most']:.0f}" if x["at_most"] is not None else "")
    print(f"  {exp['kernel']}: {name} = {v:.0f}, must be {bound}: {'ok' if ok else 'WRONG'} ({x['why']})")
EOF
  done
else
  echo "  python3 not found: the expectations are in *-expected.json, the counts in profile-*/results.jsonl" >> "$summary"
fi
cat "$summary"
