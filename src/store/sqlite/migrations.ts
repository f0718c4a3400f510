/**
 * The SQLite schema, as numbered migrations. A migration is never edited once released:
 * a change is a new entry at the end. `migrate()` (below) applies the missing ones inside
 * one `BEGIN IMMEDIATE` transaction, so several processes opening the same file at once
 * serialize on SQLite's write lock: the first applies, the others find the versions recorded.
 *
 * Tables are prefixed `errand_` so they can live in the application's own database.
 * Times are integer milliseconds since the epoch; payload, result, progress and the attempt
 * history are JSON text.
 */
import type { Connection } from "./connection.js";
import { MIGRATION_RECORD, MIGRATION_VERSION } from "./queries.js";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS_TABLE_SQL = `
CREATE TABLE IF NOT EXISTS errand_migrations (
  version    INTEGER PRIMARY KEY,
  name       TEXT    NOT NULL,
  applied_at INTEGER NOT NULL
)`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "jobs, ledger, schedules, workers",
    sql: `
CREATE TABLE errand_jobs (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  queue            TEXT    NOT NULL,
  name             TEXT    NOT NULL,
  state            TEXT    NOT NULL DEFAULT 'pending'
                   CHECK (state IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
  priority         INTEGER NOT NULL DEFAULT 0,
  attempt          INTEGER NOT NULL DEFAULT 0,
  max_attempts     INTEGER NOT NULL,
  run_at           INTEGER NOT NULL,
  payload          TEXT    NOT NULL,
  key              TEXT,
  attempts         TEXT    NOT NULL DEFAULT '[]',
  result           TEXT,
  progress         TEXT,
  last_error       TEXT,
  created_at       INTEGER NOT NULL,
  started_at       INTEGER,
  finished_at      INTEGER,
  locked_by        TEXT,
  locked_until     INTEGER,
  lease_token      INTEGER NOT NULL DEFAULT 0,
  cancel_requested INTEGER NOT NULL DEFAULT 0
);

-- Claiming: walks one queue's pending jobs in claim order and stops after LIMIT due ones.
CREATE INDEX errand_jobs_claim_idx ON errand_jobs (queue, priority DESC, run_at, id) WHERE state = 'pending';
-- Earliest due time per queue (nextRunAt, stats' due count and oldest due job).
CREATE INDEX errand_jobs_pending_run_at_idx ON errand_jobs (queue, run_at) WHERE state = 'pending';
-- Idempotency: one job per (queue, key), under any number of concurrent enqueuers.
CREATE UNIQUE INDEX errand_jobs_key_idx ON errand_jobs (queue, key) WHERE key IS NOT NULL;
-- Rescuer: the running jobs whose lease expired.
CREATE INDEX errand_jobs_lease_idx ON errand_jobs (locked_until) WHERE state = 'running';
-- Stats (GROUP BY queue, state, index-only) and listing by queue [and state], newest first.
CREATE INDEX errand_jobs_queue_state_idx ON errand_jobs (queue, state, id);
-- Listing by state, by name, newest first.
CREATE INDEX errand_jobs_state_idx ON errand_jobs (state, id);
CREATE INDEX errand_jobs_name_idx ON errand_jobs (name, id);
-- Pruning, throughput, last hour/day counts: one finished_at range per (queue, state), index-only.
CREATE INDEX errand_jobs_finished_idx ON errand_jobs (queue, state, finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE errand_ledger (
  key        TEXT    PRIMARY KEY,
  job_id     TEXT    NOT NULL,
  value      TEXT,
  created_at INTEGER NOT NULL
);

CREATE TABLE errand_schedules (
  name          TEXT    PRIMARY KEY,
  cron          TEXT    NOT NULL,
  timezone      TEXT    NOT NULL,
  job_name      TEXT    NOT NULL,
  queue         TEXT    NOT NULL,
  payload       TEXT    NOT NULL,
  priority      INTEGER NOT NULL,
  missed        TEXT    NOT NULL CHECK (missed IN ('latest', 'all')),
  source        TEXT    NOT NULL CHECK (source IN ('code', 'cli')),
  next_run_at   INTEGER NOT NULL,
  last_fired_at INTEGER,
  last_slot     INTEGER,
  created_at    INTEGER NOT NULL
);
CREATE INDEX errand_schedules_next_run_at_idx ON errand_schedules (next_run_at);

CREATE TABLE errand_workers (
  id                TEXT    PRIMARY KEY,
  host              TEXT    NOT NULL,
  pid               INTEGER NOT NULL,
  queues            TEXT    NOT NULL,
  started_at        INTEGER NOT NULL,
  last_heartbeat_at INTEGER NOT NULL,
  running           INTEGER NOT NULL DEFAULT 0,
  processed         INTEGER NOT NULL DEFAULT 0
);
`,
  },
  {
    version: 2,
    name: "the completing attempt of a completed job in columns",
    // As the Postgres store's migration 3: a completion records its worker here and leaves its
    // history entry implicit (rows.ts jobFromRow rebuilds it from attempt, started_at and
    // finished_at) instead of a json_insert into the attempts text on every finish — 14.3-14.8
    // → 11.2-12.1 µs per job for finishJobs (bench/store-cost.ts sqlite 500 50000, the JSON
    // append alone). Rows completed before keep their entry in the array (completed_by NULL).
    sql: `
ALTER TABLE errand_jobs ADD COLUMN completed_by TEXT;
`,
  },
  {
    version: 3,
    name: "paused queues and schedules",
    // A claim reads errand_paused_queues by its key inside its transaction (leases.ts): one
    // B-tree probe of a table that holds a row per paused queue only. A schedule's pause is a
    // column: a paused schedule is never due (SCHEDULE_DUE). Nullable, no default: nothing rewritten.
    sql: `
CREATE TABLE errand_paused_queues (
  queue     TEXT    PRIMARY KEY,
  paused_at INTEGER NOT NULL
) WITHOUT ROWID;
ALTER TABLE errand_schedules ADD COLUMN paused_at INTEGER;
`,
  },
  {
    version: 4,
    name: "flow control: flow keys, the claim log, paused budgets, rotation cursors",
    // Flow control (flow.ts): a job's flow key from its definition at enqueue (NULL: none; a
    // nullable column without a default rewrites nothing); the claims of rate-limited queues,
    // kept one window long; budgets a 429 paused ("" = the whole queue); and each queue's
    // rotation cursor (the key its last claim served). Queues without limits never touch them.
    // errand_jobs_flow_idx holds the pending jobs that have a flow key, by key (flow.ts walks
    // it key by key); jobs without one are not in it.
    sql: `
ALTER TABLE errand_jobs ADD COLUMN flow_key TEXT;
CREATE INDEX errand_jobs_flow_idx ON errand_jobs (queue, flow_key, priority DESC, run_at, id)
  WHERE state = 'pending' AND flow_key IS NOT NULL;
CREATE TABLE errand_flow_claims (
  queue TEXT    NOT NULL,
  key   TEXT    NOT NULL,
  at    INTEGER NOT NULL
);
CREATE INDEX errand_flow_claims_idx ON errand_flow_claims (queue, at);
CREATE TABLE errand_flow_pauses (
  queue  TEXT    NOT NULL,
  key    TEXT    NOT NULL,
  until  INTEGER NOT NULL,
  PRIMARY KEY (queue, key)
);
CREATE TABLE errand_flow_cursors (
  queue  TEXT PRIMARY KEY,
  cursor TEXT NOT NULL
);
`,
  },
  {
    version: 10,
    name: "flow control: the claim log counted per key",
    // One row per key per claim with the number of jobs it took (was one row per job): a
    // non-binding rate limit of 10,000/s kept 10,000 rows a window for every claim to read. An
    // older errand's rows read as n = 1. Not breaking.
    sql: `
ALTER TABLE errand_flow_claims ADD COLUMN n INTEGER NOT NULL DEFAULT 1;
`,
  },
];

/** The newest schema version this code knows. */
export const LATEST_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

/**
 * Applies the missing migrations in one BEGIN IMMEDIATE transaction. Concurrent migrators
 * (other processes on the same file) wait on the write lock, then find the versions applied.
 * A database migrated by a newer errand (versions past LATEST_VERSION) is left as it is.
 */
export function migrate(c: Connection): void {
  c.db
    .transaction(() => {
      c.db.exec(MIGRATIONS_TABLE_SQL);
      const current = (c.q(MIGRATION_VERSION).get() as { version: number }).version;
      if (current >= LATEST_VERSION) return;
      for (const migration of MIGRATIONS) {
        if (migration.version <= current) continue;
        c.db.exec(migration.sql);
        c.q(MIGRATION_RECORD).run(migration.version, migration.name);
      }
    })
    .immediate();
}
