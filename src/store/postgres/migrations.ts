/**
 * The PostgreSQL schema, as numbered migrations.
 *
 * Everything errand owns lives in one schema (default "errand", `openPostgresStore({ schema })`),
 * so it can share a database with the application and two errand instances can share one
 * database without seeing each other. `{{schema}}` below is replaced by the quoted schema name.
 *
 * How `migrate()` runs them (migrate.ts): one transaction that first takes
 * `pg_advisory_xact_lock(hashtextextended('errand.migrate:' || schema, 0))`, then creates the
 * schema and the `migrations` table if missing, reads the applied versions and applies the
 * missing ones in order, recording each. Any number of processes may start at once: the first
 * one to get the lock migrates, the others wait for its commit, then find every version
 * recorded and do nothing. A migration that fails rolls the whole transaction back (DDL is
 * transactional in Postgres), leaving the schema at the previous version.
 *
 * Upgrade path:
 * - A schema change is a NEW entry appended at the end with the next version number.
 *   A shipped migration is never edited, renumbered or removed: databases in the field have
 *   recorded its version and would never run the edited text.
 * - A new version of errand runs the missing migrations at start-up (`migrate()`), so upgrading
 *   is: deploy, start. Prefer additive, online-safe changes (new nullable columns, new tables,
 *   `CREATE INDEX` — on a big table, ship the index as its own release and build it by hand
 *   with `CREATE INDEX CONCURRENTLY` first; the migration's `IF NOT EXISTS` then finds it).
 * - During a rolling deploy old processes keep running against the newer schema. A migration
 *   that old code cannot work with is marked `breaking: true`; a process whose code does not
 *   know a recorded breaking version refuses to start (migrate() throws) instead of corrupting
 *   data. Non-breaking newer versions are tolerated.
 * - Downgrades are not supported: restore a backup or write a forward fix.
 */

import { MIGRATIONS_6_TO_15 } from "./migrations-6-to-15.js";

export interface PostgresMigration {
  version: number;
  name: string;
  /** Old code cannot run against a schema with this migration applied. */
  breaking?: boolean;
  sql: string;
}

export const MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    name: "jobs, ledger, schedules, workers",
    sql: `
CREATE TABLE {{schema}}.jobs (
  id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue            text        NOT NULL,
  name             text        NOT NULL,
  state            text        NOT NULL DEFAULT 'pending'
                   CHECK (state IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
  priority         integer     NOT NULL DEFAULT 0,
  attempt          integer     NOT NULL DEFAULT 0,
  max_attempts     integer     NOT NULL,
  run_at           timestamptz NOT NULL,
  payload          jsonb       NOT NULL,
  key              text,
  attempts         jsonb       NOT NULL DEFAULT '[]',
  result           jsonb,
  progress         jsonb,
  last_error       text,
  created_at       timestamptz NOT NULL,
  started_at       timestamptz,
  finished_at      timestamptz,
  locked_by        text,
  locked_until     timestamptz,
  lease_token      integer     NOT NULL DEFAULT 0,
  cancel_requested boolean     NOT NULL DEFAULT false
);

-- A queue table churns: every job is inserted, updated two or three times and deleted by the
-- pruner. Vacuum it early so dead tuples and index bloat stay small.
ALTER TABLE {{schema}}.jobs SET (
  autovacuum_vacuum_scale_factor = 0.02,
  autovacuum_vacuum_insert_scale_factor = 0.02,
  autovacuum_analyze_scale_factor = 0.02
);

-- Partial indexes: a row is in an index only while it is in that index's state, so the pending
-- and running indexes hold the live work only, whatever the number of finished rows. (A state
-- change is never a HOT update here, so each index costs one entry per state a job enters.)

-- Claiming: one queue's pending jobs in claim order; the claim walks it and stops after LIMIT.
-- It is deliberately the only index on pending jobs. With a second one on (queue, run_at), the
-- planner — holding the statistics of a just-created or just-emptied table — claimed through
-- that one and sorted the whole backlog by priority on every claim (76-112 ms per claim of 100
-- from a 50,000-job backlog instead of ~2 ms). The earliest run_at of a queue is read from this
-- index too, one probe per distinct priority (queries.ts pendingHeads).
CREATE INDEX jobs_claim_idx ON {{schema}}.jobs (queue, priority DESC, run_at, id) WHERE state = 'pending';
-- Leases: running jobs by expiry (rescuer; running counts). locked_until is set exactly while a
-- job runs. The predicate is deliberately not "state = 'running'": with it, the planner took the
-- (tiny, stats-wise) index for the finish/extend batches and scanned it whole, dead entries
-- included, instead of probing the primary key per job (22 ms instead of 3 ms per batch of 100).
CREATE INDEX jobs_lease_idx ON {{schema}}.jobs (locked_until) WHERE locked_until IS NOT NULL;
-- Idempotency: one job per (queue, key), under any number of concurrent enqueuers.
CREATE UNIQUE INDEX jobs_key_idx ON {{schema}}.jobs (queue, key) WHERE key IS NOT NULL;
-- Finished jobs by finish time: pruning, the partial minutes of stats windows, throughput scans.
CREATE INDEX jobs_finished_idx ON {{schema}}.jobs (finished_at, queue, state)
  WHERE state IN ('completed', 'failed', 'cancelled');
-- The dead-letter queue (and cancelled jobs), newest first: listing, retry, discard.
CREATE INDEX jobs_dead_idx ON {{schema}}.jobs (state, id) INCLUDE (queue) WHERE state IN ('failed', 'cancelled');

-- Counters for stats() and throughput(): exact, O(queues × buckets), whatever the table size.
-- Counting 5M finished rows took 0.5-20 s (index-only scans, and worse while the visibility map
-- lags); a dashboard polling that would keep a core busy.
--
-- Every statement that changes jobs appends its net change per (queue, state, bucket) to
-- job_count_deltas from statement-level triggers with transition tables — so every path is
-- counted, manual SQL included. Appending never takes a row lock another transaction could
-- wait on (a caller's open transaction holding an enqueue blocks nobody). compact folds the
-- deltas into job_counts (queries.ts COMPACT_COUNTS; rescuer, pruner and stats run it).
--
-- bucket: the minute (UTC) of run_at for pending jobs (what becomes due when), of finished_at
-- for finished ones (last hour/day windows), -infinity for running ones. Buckets older than
-- 25 hours are folded into -infinity by the compaction: no window reaches them.
CREATE TABLE {{schema}}.job_counts (
  queue  text        NOT NULL,
  state  text        NOT NULL,
  bucket timestamptz NOT NULL,
  n      bigint      NOT NULL,
  PRIMARY KEY (queue, state, bucket)
);

CREATE TABLE {{schema}}.job_count_deltas (
  queue  text        NOT NULL,
  state  text        NOT NULL,
  bucket timestamptz NOT NULL,
  n      bigint      NOT NULL
);

CREATE FUNCTION {{schema}}.job_bucket(state text, run_at timestamptz, finished_at timestamptz)
RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN state = 'pending' THEN date_trunc('minute', run_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    WHEN state = 'running' OR finished_at IS NULL THEN '-infinity'::timestamptz
    ELSE date_trunc('minute', finished_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
  END
$$;

CREATE FUNCTION {{schema}}.jobs_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {{schema}}.job_count_deltas (queue, state, bucket, n)
  SELECT queue, state, {{schema}}.job_bucket(state, run_at, finished_at), count(*)
  FROM new_rows GROUP BY 1, 2, 3;
  RETURN NULL;
END
$$;

CREATE FUNCTION {{schema}}.jobs_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {{schema}}.job_count_deltas (queue, state, bucket, n)
  SELECT queue, state, bucket, sum(n) FROM (
    SELECT queue, state, {{schema}}.job_bucket(state, run_at, finished_at) AS bucket, -1 AS n FROM old_rows
    UNION ALL
    SELECT queue, state, {{schema}}.job_bucket(state, run_at, finished_at), 1 FROM new_rows
  ) d
  GROUP BY 1, 2, 3 HAVING sum(n) <> 0;
  RETURN NULL;
END
$$;

CREATE FUNCTION {{schema}}.jobs_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {{schema}}.job_count_deltas (queue, state, bucket, n)
  SELECT queue, state, {{schema}}.job_bucket(state, run_at, finished_at), -count(*)
  FROM old_rows GROUP BY 1, 2, 3;
  RETURN NULL;
END
$$;

CREATE FUNCTION {{schema}}.jobs_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{schema}}.job_counts;
  DELETE FROM {{schema}}.job_count_deltas;
  RETURN NULL;
END
$$;

CREATE TRIGGER jobs_count_insert AFTER INSERT ON {{schema}}.jobs
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_count_insert();
CREATE TRIGGER jobs_count_update AFTER UPDATE ON {{schema}}.jobs
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_count_update();
CREATE TRIGGER jobs_count_delete AFTER DELETE ON {{schema}}.jobs
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_count_delete();
CREATE TRIGGER jobs_count_truncate AFTER TRUNCATE ON {{schema}}.jobs
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_count_truncate();

CREATE TABLE {{schema}}.ledger (
  key        text        PRIMARY KEY,
  job_id     text        NOT NULL,
  value      jsonb,
  created_at timestamptz NOT NULL DEFAULT statement_timestamp()
);

CREATE TABLE {{schema}}.schedules (
  name          text        PRIMARY KEY,
  cron          text        NOT NULL,
  timezone      text        NOT NULL,
  job_name      text        NOT NULL,
  queue         text        NOT NULL,
  payload       jsonb       NOT NULL,
  priority      integer     NOT NULL,
  missed        text        NOT NULL CHECK (missed IN ('latest', 'all')),
  source        text        NOT NULL CHECK (source IN ('code', 'cli')),
  next_run_at   timestamptz NOT NULL,
  last_fired_at timestamptz,
  last_slot     timestamptz,
  created_at    timestamptz NOT NULL
);

CREATE TABLE {{schema}}.workers (
  id                text        PRIMARY KEY,
  host              text        NOT NULL,
  pid               integer     NOT NULL,
  queues            jsonb       NOT NULL,
  started_at        timestamptz NOT NULL,
  last_heartbeat_at timestamptz NOT NULL,
  running           integer     NOT NULL,
  processed         bigint      NOT NULL
);
`,
  },
  {
    version: 2,
    name: "unthrottled autovacuum of the jobs table",
    // Every claim leaves a dead entry at the front of the pending index (jobs_claim_idx) until a
    // vacuum removes it, and each later claim steps over all of them: a queue table must be
    // vacuumed as fast as it churns. Autovacuum's default cost delay (2 ms) throttles it, and each
    // pass reads every index of a table that holds millions of finished rows; for these two
    // tables it runs unthrottled. (Where autovacuum is off, or still behind, the worker's upkeep vacuums them:
    // PostgresStore.upkeep.)
    sql: `
ALTER TABLE {{schema}}.jobs SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE {{schema}}.job_count_deltas SET (autovacuum_vacuum_cost_delay = 0);
`,
  },
  {
    version: 3,
    name: "the completing attempt of a completed job in columns",
    // Appending the completing attempt to the attempts array (a JSONB rewrite of the row's
    // history, two timestamps formatted in SQL) was a third of a finish: 4-5 of ~14 µs of server
    // time and 160 of 549 WAL bytes per job (bench/hot-plans.ts, 50,000 jobs, batches of 500).
    // A completed job never leaves that state, and that attempt's entry is fully known from
    // attempt, started_at, finished_at and the worker: FINISH_JOBS records the worker here
    // instead, and the readers (queries.ts JOB_COLUMNS) append the entry. Rows completed before
    // keep their entry in the array (completed_by NULL). Adding a nullable column without a
    // default rewrites nothing. Not breaking for reading old rows; an older errand reading a job
    // completed by this version would miss that job's last history entry during a rolling
    // deploy (its state, result and times are all there).
    sql: `
ALTER TABLE {{schema}}.jobs ADD COLUMN IF NOT EXISTS completed_by text;
`,
  },
  {
    version: 4,
    name: "paused queues and schedules",
    // CLAIM_JOBS reads paused_queues by its key (an uncorrelated NOT EXISTS: an InitPlan run once
    // per claim, then a One-Time Filter) — a table that holds a row per paused queue only. A
    // schedule's pause is a column: a paused schedule is never due (DUE_SCHEDULES). Nullable,
    // no default: nothing is rewritten. An older errand ignores both (it would go on claiming
    // from a paused queue during a rolling deploy).
    sql: `
CREATE TABLE IF NOT EXISTS {{schema}}.paused_queues (
  queue     text        PRIMARY KEY,
  paused_at timestamptz NOT NULL
);
ALTER TABLE {{schema}}.schedules ADD COLUMN IF NOT EXISTS paused_at timestamptz;
`,
  },
  {
    version: 5,
    name: "flow control: flow keys, the claim log, paused budgets, rotation cursors",
    // Flow control (flow.ts): a job's flow key from its definition at enqueue (NULL: none; a
    // nullable column without a default rewrites nothing, and no index is added, so plain
    // queues' inserts and claims are untouched); the claims of rate-limited queues, kept one
    // window long; budgets a 429 paused ('' = the whole queue); each queue's rotation cursor.
    // On a big table, build jobs_flow_idx by hand with CREATE INDEX CONCURRENTLY first.
    // Not breaking: an older errand ignores these.
    sql: `
ALTER TABLE {{schema}}.jobs ADD COLUMN IF NOT EXISTS flow_key text;
-- The pending jobs that have a flow key, by key (sql/flow.ts FLOW_DUE walks it key by key). Jobs
-- without one are not in it, so a plain queue's inserts and claims pay nothing for it.
CREATE INDEX IF NOT EXISTS jobs_flow_idx ON {{schema}}.jobs (queue, (flow_key COLLATE "C"), priority DESC, run_at, id)
  WHERE state = 'pending' AND flow_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS {{schema}}.flow_claims (
  queue text        NOT NULL,
  key   text        NOT NULL,
  at    timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS flow_claims_idx ON {{schema}}.flow_claims (queue, at);
CREATE TABLE IF NOT EXISTS {{schema}}.flow_pauses (
  queue        text        NOT NULL,
  key          text        NOT NULL,
  paused_until timestamptz NOT NULL,
  PRIMARY KEY (queue, key)
);
CREATE TABLE IF NOT EXISTS {{schema}}.flow_cursors (
  queue  text PRIMARY KEY,
  cursor text NOT NULL
);
`,
  },
  // Versions 6 to 10, in their own file for length; new versions are appended below them.
  ...MIGRATIONS_6_TO_15,
];

/** The highest version this code knows. */
export const LATEST_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;
