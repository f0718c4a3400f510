#!/usr/bin/env bash
# Where the Postgres backends that serve a bench run's worker processes spend their time, by
# call stack: perf samples the whole machine with call graphs (DWARF unwinding, 499 Hz) during
# one run of the workload, the worker processes' backends are found as bench/backend-cpu.sh finds
# them (the client port held by a process with BENCH_SYSTEM), and bench/perf-stacks.ts prints
# the inclusive share of the executor, row and index writes, triggers, planning, commit and
# sockets in their samples. Needs root and perf; ~300 MB of perf data in /tmp while it runs.
# Usage: bash bench/backend-stacks.sh system [workload]
#   bash bench/backend-stacks.sh errand-postgres process-c10-p1
set -euo pipefail
system=$1 workload=${2:-process-c10-p1}
url=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
npm run --silent build >/dev/null
serves_worker() {
  local client
  client=$(ss -tnpH "sport = :$2" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2)
  [ -n "$client" ] && tr '\0' '\n' <"/proc/$client/environ" 2>/dev/null | grep -q '^BENCH_SYSTEM=' && echo 1 || echo 0
}
out=$(mktemp)
trap 'rm -f "$out" "$out.perf"' EXIT
perf record -a -F 499 --call-graph dwarf,16384 -o "$out.perf" -- \
  npm run --silent bench -- --only "$system" --workload "$workload" --runs 1 --no-write >"$out" 2>&1 &
bench=$!
declare -A worker=()
while kill -0 "$bench" 2>/dev/null; do
  while IFS='|' read -r pid port; do
    [ -n "${worker[$pid]:-}" ] || worker[$pid]=$(serves_worker "$pid" "$port")
  done < <(psql "$url" -Atc "SELECT pid, client_port FROM pg_stat_activity WHERE backend_type = 'client backend' AND client_port > 0" 2>/dev/null)
  sleep 0.1
done
wait "$bench" || true
pids=""
for pid in "${!worker[@]}"; do if [ "${worker[$pid]}" = 1 ]; then pids+="${pids:+,}$pid"; fi; done
echo "$system, $workload: $(grep -o '[0-9,]* jobs/s' "$out" | head -n1) (slowed by the sampling); backends $pids"
perf script -i "$out.perf" --pid "$pids" -F ip,sym 2>/dev/null | node --import tsx bench/perf-stacks.ts
