#!/usr/bin/env bash
# A real Slurm cluster of N nodes (default 4) on this one machine, for numalab fleet's tests.
#   scripts/slurm-cluster.sh start DIR [N]   munged, slurmctld and slurmd n1..nN, all state under DIR
#   scripts/slurm-cluster.sh stop DIR    stops them by the pids in their pid files
# Needs root and Debian's slurm-wlm and munge (scripts/deps.sh --test installs them).
# Nothing outside DIR is touched: the munge key, socket, pid, log and seed files, the
# slurm.conf and every Slurm state, spool, pid and log path live under DIR. Clients use
# it with `SLURM_CONF=DIR/slurm.conf` (printed at the end of start, and in DIR/env).
# The nodes n1..nN all run here (NodeAddr=127.0.0.1, one slurmd each on its own port);
# each has CPUs=2 whatever this machine has, which is what Slurm schedules on.
set -euo pipefail

usage() {
  echo "usage: $0 start DIR [NODES] | stop DIR" >&2
  exit 2
}
[ $# -eq 2 ] || [ $# -eq 3 ] || usage
action=$1
dir=$2
nodes=${3:-4}
case "$nodes" in
  ''|*[!0-9]*) usage ;;
esac
[ "$nodes" -ge 1 ] && [ "$nodes" -le 16 ] || { echo "slurm-cluster: 1 to 16 nodes" >&2; exit 2; }

# Whether TCP port $1 is in use on any address (from /proc, no extra tool needed).
port_used() {
  local hex
  hex=$(printf '%04X' "$1")
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2}' | grep -qi ":$hex\$"
}

# NODES+1 consecutive free ports (controller, then n1..nN), from a random start.
free_ports() {
  local tries base ok i
  for tries in $(seq 1 50); do
    base=$((20000 + (RANDOM % 1000) * 30))
    ok=1
    for i in $(seq 0 "$nodes"); do
      if port_used $((base + i)); then ok=0; break; fi
    done
    if [ "$ok" = 1 ]; then echo "$base"; return 0; fi
  done
  echo "slurm-cluster: no $((nodes + 1)) consecutive free TCP ports found in 50 tries" >&2
  return 1
}

stop_pidfile() {
  local f=$1 pid i
  [ -f "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

show_logs() {
  local f
  for f in "$dir"/log/*.log; do
    [ -f "$f" ] || continue
    echo "----- $f (last 40 lines) -----" >&2
    tail -n 40 "$f" >&2
  done
}

case "$action" in
start)
  if [ "$(id -u)" -ne 0 ]; then
    echo "slurm-cluster: run as root (slurmd runs jobs as their user and needs root)" >&2
    exit 1
  fi
  for p in munged slurmctld slurmd sinfo; do
    if ! command -v "$p" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$p" ]; then
      echo "slurm-cluster: $p not found; install slurm-wlm and munge (scripts/deps.sh --test)" >&2
      exit 1
    fi
  done
  export PATH="$PATH:/usr/sbin:/sbin"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/run" "$dir/log"
  # munged refuses key and socket folders others can write to.
  chmod 700 "$dir" "$dir/munge"

  # munge: its own key, socket, pid, log and seed under DIR.
  head -c 1024 /dev/urandom > "$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  sock="$dir/munge/munge.socket.2"
  munged --force \
    --socket="$sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" || {
    echo "slurm-cluster: munged did not start" >&2
    show_logs
    exit 1
  }

  base=$(free_ports)
  host=$(hostname -s)
  cat > "$dir/slurm.conf" <<EOF
# Written by numalab's scripts/slurm-cluster.sh: a test cluster on one machine.
ClusterName=numalabtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$base
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmctldTimeout=60
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=10
NodeName=n[1-$nodes] NodeHostname=$host NodeAddr=127.0.0.1 Port=[$((base + 1))-$((base + nodes))] CPUs=2 State=UNKNOWN
PartitionName=fleet Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP
EOF
  echo "SLURM_CONF=$dir/slurm.conf" > "$dir/env"
  export SLURM_CONF="$dir/slurm.conf"

  slurmctld -f "$dir/slurm.conf" -i || {
    echo "slurm-cluster: slurmctld did not start" >&2
    show_logs
    exit 1
  }
  for n in $(seq 1 "$nodes"); do
    slurmd -f "$dir/slurm.conf" -N "n$n" || {
      echo "slurm-cluster: slurmd -N n$n did not start" >&2
      show_logs
      exit 1
    }
  done

  # Wait (at most 60 s) until sinfo shows every node idle.
  idle=0
  for i in $(seq 1 120); do
    idle=$(sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l || true)
    [ "$idle" -ge "$nodes" ] && break
    sleep 0.5
  done
  if [ "$idle" -lt "$nodes" ]; then
    echo "slurm-cluster: only $idle of $nodes nodes idle after 60 s:" >&2
    sinfo -N >&2 || true
    show_logs
    exit 1
  fi
  echo "slurm-cluster: $nodes nodes idle; use SLURM_CONF=$dir/slurm.conf"
  ;;
stop)
  [ -d "$dir" ] || exit 0
  for f in "$dir"/run/slurmd-*.pid; do
    [ -e "$f" ] && stop_pidfile "$f"
  done
  stop_pidfile "$dir/run/slurmctld.pid"
  stop_pidfile "$dir/run/munged.pid"
  ;;
*)
  usage
  ;;
esac
