#!/usr/bin/env bash
# The CPU time of the Postgres backends that serve a bench run's worker processes, and only
# those: not the harness's connections (its untimed enqueue, the settle step, its polling for
# "every job finished"), not other users of a shared server, not the checkpointer or the WAL
# writer. A backend belongs to a worker process when the client end of its TCP connection
# (pg_stat_activity.client_port, looked up with ss) is held by a process whose environment has
# BENCH_SYSTEM (bench/children.ts sets it). pg_stat_activity is sampled every 100 ms and each
# such backend's utime + stime read from /proc while it lives: CPU in the last <100 ms of a
# backend's life is missed (the workers' last finish batch and their stop can fall in it; perf,
# below, misses nothing, and counted 10-17% more). No subtraction of a bulk run is needed:
# the worker processes start after the enqueue. (Until 2026-12-06 this script counted every
# backend of the run and subtracted half a bulk run, which left half of the schema setup in and
# charged each system's enqueue at its own bulk rate; bench/NOTES.md finding 19.)
# Needs to read other processes' /proc/PID/environ (run as the user running the bench, or root).
# PERF=1 (root, perf installed) also samples the whole machine with perf at 1999 Hz during the run
# and prints the same backends' CPU as perf counts it (samples / 1999 s): a second clock for the
# same figure, since /proc's utime is tick-based.
# Usage: bash bench/backend-cpu.sh [rounds] [workload] system...
#   bash bench/backend-cpu.sh 2 process-c10-p1 errand-postgres graphile-worker-best
set -euo pipefail
rounds=$1 workload=$2; shift 2
url=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
hz=$(getconf CLK_TCK)
npm run --silent build >/dev/null
# The pid of the process holding each local TCP port, one `ss` call for all ("port pid" lines):
# one call per backend made a sample take longer than a 4-process run lasts (a first cut of this
# script counted 4-5 µs per job there, a handful of samples).
port_owners() {
  ss -tnpH 2>/dev/null | awk '{ n = split($4, a, ":"); if (match($0, /pid=[0-9]+/)) print a[n], substr($0, RSTART + 4, RLENGTH - 4) }'
}
# 1 when the process has BENCH_SYSTEM in its environment (a bench worker process)
is_worker_process() {
  tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | grep -q '^BENCH_SYSTEM=' && echo 1 || echo 0
}
# "ms jobs": backend CPU of one bench run's worker processes and the jobs they ran
cpu_of() {
  local -A seen=() worker=()
  local out
  out=$(mktemp)
  local run=(npm run --silent bench -- --only "$1" --workload "$2" --runs 1 --no-write)
  if [ "${PERF:-}" = 1 ]; then run=(perf record -a -F 1999 -o "$out.perf" -- "${run[@]}"); fi
  "${run[@]}" >"$out" 2>&1 &
  local bench=$! pid port t total=0
  local -A owner=() client_is_worker=()
  local line
  while kill -0 "$bench" 2>/dev/null; do
    owner=()
    while read -r port pid; do owner[$port]=$pid; done < <(port_owners)
    while IFS='|' read -r pid port; do
      if [ -z "${worker[$pid]:-}" ]; then
        line=${owner[$port]:-}
        [ -n "$line" ] || continue # not yet seen from the client's side: try at the next sample
        [ -n "${client_is_worker[$line]:-}" ] || client_is_worker[$line]=$(is_worker_process "$line")
        worker[$pid]=${client_is_worker[$line]}
      fi
      [ "${worker[$pid]}" = 1 ] || continue
      t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
      if ((t > ${seen[$pid]:-0})); then seen[$pid]=$t; fi
    done < <(psql "$url" -Atc "SELECT pid, client_port FROM pg_stat_activity WHERE backend_type = 'client backend' AND client_port > 0" 2>/dev/null)
    sleep 0.1
  done
  wait "$bench" || true
  for pid in "${!seen[@]}"; do total=$((total + seen[$pid])); done
  local perf_ms=""
  if [ "${PERF:-}" = 1 ]; then
    local pids=""
    for pid in "${!worker[@]}"; do if [ "${worker[$pid]}" = 1 ]; then pids+="${pids:+,}$pid"; fi; done
    perf_ms=", perf: $(perf script -i "$out.perf" --pid "$pids" -F pid 2>/dev/null | wc -l | awk '{printf "%d ms", $1 * 1000 / 1999}')"
  fi
  echo "$((total * 1000 / hz)) ms, $(grep -o '[0-9,]* jobs/s' "$out" | head -n1)$perf_ms"
  rm -f "$out" "$out.perf"
}
for ((r = 1; r <= rounds; r++)); do
  for system in "$@"; do
    result=$(cpu_of "$system" "$workload")
    ms=${result%% ms*}
    echo "round $r $system: $((ms * 1000 / 50000)) µs of backend CPU per job (the worker processes' backends: $result)"
  done
done
