#!/usr/bin/env bash
# What each SQL statement of a command cost the Postgres server, in counts that do not depend on
# the machine's load (WAL bytes and shared buffers) and in execution time: starts a private
# PostgreSQL cluster (initdb on a free port, pg_stat_statements loaded, autovacuum off like the
# shared server), runs the command with BENCH_PG_URL pointing at it, prints the statements that
# touched at least MIN_ROWS rows (default 5000) per JOBS jobs (default 50000), and removes the
# cluster. The shared server is never touched (loading pg_stat_statements needs a restart).
# Usage: bash bench/statement-costs.sh COMMAND...
#   bash bench/statement-costs.sh node --import tsx bench/finish-shapes.ts move
#   bash bench/statement-costs.sh npm run --silent bench -- --only errand-postgres --workload process-c10-p1 --runs 1 --no-write
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
jobs=${JOBS:-50000} min_rows=${MIN_ROWS:-5000}
dir=$(mktemp -d /tmp/errand-statement-costs-XXXXXX)
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -c "$*"; else bash -c "$*"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$dir"
as_pg "$bin/initdb -D $dir/data -A trust -U postgres >/dev/null"
cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
autovacuum = off
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.track_planning = on
CONF
stop() { as_pg "$bin/pg_ctl -D $dir/data -m immediate stop >/dev/null" || true; rm -rf "$dir"; }
trap stop EXIT
as_pg "$bin/pg_ctl -D $dir/data -l $dir/log -w start >/dev/null"
url="postgres://postgres@127.0.0.1:$port/test"
psql "postgres://postgres@127.0.0.1:$port/postgres" -qc "CREATE DATABASE test"
psql "$url" -qc "CREATE EXTENSION pg_stat_statements"
BENCH_PG_URL=$url "$@"
psql "$url" -c "
SELECT calls, rows, round(wal_bytes / $jobs) AS wal_bytes_per_job,
       round((shared_blks_hit + shared_blks_read)::numeric / $jobs, 1) AS buffers_per_job,
       round((total_exec_time * 1000 / $jobs)::numeric, 1) AS exec_us_per_job,
       round((total_plan_time * 1000 / $jobs)::numeric, 1) AS plan_us_per_job, plans,
       left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS statement
FROM pg_stat_statements WHERE rows >= $min_rows ORDER BY total_exec_time DESC"
# Every statement together, the small ones (BEGIN, LISTEN, stats reads, heartbeats) included.
psql "$url" -c "
SELECT sum(calls) AS calls, round((sum(total_exec_time) * 1000 / $jobs)::numeric, 1) AS exec_us_per_job,
       round((sum(total_plan_time) * 1000 / $jobs)::numeric, 1) AS plan_us_per_job,
       round(sum(wal_bytes) / $jobs) AS wal_bytes_per_job
FROM pg_stat_statements WHERE toplevel"
