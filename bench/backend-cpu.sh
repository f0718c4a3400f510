#!/usr/bin/env bash
# The CPU time of the Postgres backends serving one bench run, and only those: the backends
# whose application_name is errand's (errand:<run schema>) or PGAPPNAME's (bench-peer, which
# node-postgres uses for every peer that sets none) — not the other users of a shared server,
# not the checkpointer or the WAL writer. pg_stat_activity is sampled every 100 ms and each
# backend's utime + stime read from /proc while it lives (CPU in the last <100 ms of a backend's
# life is missed). The harness's connections are counted too: its untimed enqueue of 50,000 jobs
# is taken out by subtracting half a bulk run (100,000 jobs), as bench/server-cpu.sh does; the
# settle step (ANALYZE of the run's tables; the CHECKPOINT runs in the checkpointer) stays in.
# Usage: bash bench/backend-cpu.sh [rounds] [workload] system...
#   bash bench/backend-cpu.sh 2 process-c10-p1 errand-postgres graphile-worker-best
set -euo pipefail
rounds=$1 workload=$2; shift 2
url=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
hz=$(getconf CLK_TCK)
npm run --silent build >/dev/null
# ms of backend CPU of one bench run: system, workload
cpu_of() {
  local -A seen=()
  PGAPPNAME=bench-peer npm run --silent bench -- --only "$1" --workload "$2" --runs 1 --no-write >/dev/null 2>&1 &
  local bench=$! pid t total=0
  while kill -0 "$bench" 2>/dev/null; do
    for pid in $(psql "$url" -Atc "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'errand:ebench%' OR application_name = 'bench-peer'" 2>/dev/null); do
      t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
      if ((t > ${seen[$pid]:-0})); then seen[$pid]=$t; fi
    done
    sleep 0.1
  done
  wait "$bench" || true
  for pid in "${!seen[@]}"; do total=$((total + seen[$pid])); done
  echo $((total * 1000 / hz))
}
for ((r = 1; r <= rounds; r++)); do
  for system in "$@"; do
    processing=$(cpu_of "$system" "$workload")
    bulk=$(cpu_of "$system" bulk)
    echo "round $r $system: $(((processing - bulk / 2) * 1000 / 50000)) µs of backend CPU per job" \
      "(processing run $processing ms, bulk enqueue of 100,000 $bulk ms)"
  done
done
