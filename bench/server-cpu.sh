#!/usr/bin/env bash
# The Postgres server's CPU per processed job, for each system named, on a server that runs on
# this machine: the CPU time of every postgres process (the postmaster's reaped children
# included) across one processing run, minus that of a bulk run that enqueues as many jobs
# (the processing workloads enqueue their 50,000 jobs in bulk first). Rounds interleave the
# systems. Usage: bash bench/server-cpu.sh [rounds] [workload] system...
#   bash bench/server-cpu.sh 3 process-c50-p4 errand-postgres graphile-worker-best
set -euo pipefail
rounds=$1 workload=$2; shift 2
hz=$(getconf CLK_TCK)
ticks() { # utime + stime + cutime + cstime of every postgres process
  local total=0 t
  for pid in $(pgrep -x postgres); do
    t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pid/stat" 2>/dev/null || echo 0)
    total=$((total + t))
  done
  echo "$total"
}
cpu_of() { # ticks used by one bench run: system, workload
  local before after
  before=$(ticks)
  npm run --silent bench -- --only "$1" --workload "$2" --runs 1 --no-write >/dev/null 2>&1
  after=$(ticks)
  echo $((after - before))
}
npm run --silent build >/dev/null
for ((r = 1; r <= rounds; r++)); do
  for system in "$@"; do
    processing=$(cpu_of "$system" "$workload")
    bulk=$(cpu_of "$system" bulk) # 100,000 jobs: twice the processing run's 50,000
    echo "round $r $system: $(((processing - bulk / 2) * 1000000 / hz / 50000)) µs of Postgres CPU per job" \
      "(processing run $((processing * 1000 / hz)) ms, bulk enqueue of 100,000 $((bulk * 1000 / hz)) ms)"
  done
done
