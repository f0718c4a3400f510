/**
 * Every SQL statement of the PostgreSQL store, one named constant per query: the clock and
 * migration statements here, the others in sql/ by concern (re-exported here). No other file
 * holds SQL (migrations.ts holds the DDL). `{{schema}}` is replaced by the quoted schema name
 * and `{{channel}}` by the NOTIFY channel literal once per store (`bindSchema`); db.ts runs
 * the hot ones as named prepared statements.
 *
 * The clock is the database's. `NOW` is `statement_timestamp()`: the server's time at the start
 * of the statement — one instant for every row a statement touches (a batch gets one
 * finished_at), and unlike `now()` it is not frozen at BEGIN, so a completion inside a long
 * transaction (completeInTransaction, a caller's `tx`) is stamped when it happens. A worker's
 * clock never decides a lease, a due time or a retention cut-off. Tests may give the store a
 * clock (`clock` option): db.ts then turns `NOW` into `coalesce($n, statement_timestamp())` with
 * the clock's time as one more parameter (River's way); without one the text is this one.
 *
 * History entries are built in SQL with the same fields and formats as common.ts
 * `attemptFromOutcome` (ISO 8601 UTC strings with milliseconds, like `Date.toISOString()`).
 *
 * Measured on a table of 5,000,000 finished + 1,000,000 pending jobs (5 queues, 3 priorities;
 * bench/postgres-store.ts BENCH_BIG=1) against an empty one. The machine was a shared 2-core box
 * at load average ~18, so absolute times are inflated several-fold; the shapes are the point.
 * - CLAIM_JOBS: Index Scan on jobs_claim_idx (Index Cond: queue, run_at <= now; 94 buffers for
 *   100 rows) → LockRows → Nested Loop on jobs_pkey → Update. 9-12 ms; the cost is the 100 rows'
 *   heap pages, never the finished rows (the partial index does not hold them).
 * - STATS: HashAggregate over job_counts (~20k rows) + a few index probes per queue, 18-40 ms
 *   (empty: 3 ms). Counting the table instead (parallel index-only scans of 5M entries,
 *   2M heap fetches while the visibility map lagged, JIT): 12.8-22.6 s.
 * - NEXT_RUN_AT: one Index Only Scan (LIMIT 1) of jobs_claim_idx per queue and priority,
 *   0.8-4 ms for 5 queues × 3 priorities.
 * - THROUGHPUT_BUCKETS (24 h by hour): 33-38 ms; THROUGHPUT_SCAN of the same 700k rows: 5.8 s.
 * - LIST_DEAD_JOBS (50 failed): Index Only Scan Backward on jobs_dead_idx, 0.3 ms; LIST_JOBS
 *   walked jobs_pkey backwards through 1M newer pending rows: 1.2-5 s.
 * - INSERT_JOBS, 5,000 rows: the same on both tables (290-600 ms at that load).
 * - RESCUE_EXPIRED with nothing expired: 0.5 ms (jobs_lease_idx holds the running jobs only).
 */

import { NOW } from "./sql/fragments.js";

export * from "./sql/admin.js";
export * from "./sql/awaited.js";
export * from "./sql/bulk.js";
export * from "./sql/counts.js";
export * from "./sql/dependencies.js";
export * from "./sql/flow.js";
export { NOW } from "./sql/fragments.js";
export * from "./sql/jobs.js";
export * from "./sql/leases.js";
export * from "./sql/pauses.js";
export * from "./sql/registry.js";

// ── schema names and channels ─────────────────────────────────────────────────────────────

/** Schema names errand accepts: a plain identifier, so quoting is trivial and the channel fits in 63 bytes. */
export const SCHEMA_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,49}$/;

/** The LISTEN/NOTIFY channel of one schema: two errand schemas in one database never cross-talk. */
export function channelName(schema: string): string {
  return `errand_jobs.${schema}`;
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** Fills in the schema and channel of one store. */
export function bindSchema(sql: string, schema: string): string {
  return sql
    .replaceAll("{{schema}}", quoteIdent(schema))
    .replaceAll("{{channel}}", quoteLiteral(channelName(schema)));
}

// ── clock and migrations ──────────────────────────────────────────────────────────────────

export const SELECT_NOW = `SELECT ${NOW} AS now`;

/**
 * For the rest of the transaction, no JIT. STATS holds correlated subplans with recursive CTEs
 * whose estimated cost (~80M) is far above jit_above_cost while the work is ~1 ms: on the big
 * table Postgres spent 2.7 s compiling it (inlining + optimization) for a 110 ms run.
 */
export const NO_JIT = "SET LOCAL jit = off";

/** Serializes migrate() across every process; released at COMMIT/ROLLBACK. $1: 'errand.migrate:' || schema. */
export const MIGRATE_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))";

export const MIGRATE_CREATE_SCHEMA = "CREATE SCHEMA IF NOT EXISTS {{schema}}";

export const MIGRATE_CREATE_TABLE = `
CREATE TABLE IF NOT EXISTS {{schema}}.migrations (
  version    integer     PRIMARY KEY,
  name       text        NOT NULL,
  breaking   boolean     NOT NULL DEFAULT false,
  applied_at timestamptz NOT NULL DEFAULT statement_timestamp()
)`;

export const MIGRATE_VERSIONS = "SELECT version, breaking FROM {{schema}}.migrations ORDER BY version";

export const MIGRATE_ENCODING =
  "SELECT current_setting('server_encoding') AS encoding, current_database() AS database";

export const MIGRATE_RECORD =
  "INSERT INTO {{schema}}.migrations (version, name, breaking) VALUES ($1, $2, $3)";
