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
  /** Run first, when a change needs more than SQL (a table rebuilt from its own stored schema). */
  before?: (db: Connection["db"]) => void;
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
    version: 5,
    name: "fewer index entries per claim and finish",
    // A claim changed seven index entries per job (claim and pending_run_at: delete; lease:
    // insert; queue_state and state: delete + insert each), a finish six. Running jobs are few
    // (the workers' slots and read-ahead) and errand_jobs_lease_idx already holds them, so the two
    // state indexes leave them out, and the earliest pending run_at per queue is read from
    // errand_jobs_claim_idx, one probe per priority level (queries.ts PENDING_HEADS), as on
    // Postgres. Now 4 entries per claim and 4 per finish: bench/store-cost.ts sqlite 500 50000,
    // claim 8.7-10.4 → 7.1-8.5 µs per job, finish 6.7-7.8 → 6.1-6.5 (bench/NOTES.md finding 14).
    // Reads of these two indexes repeat `state <> 'running'` (SQLite uses a partial index only
    // when the query names its condition); running jobs are read through errand_jobs_lease_idx.
    sql: `
DROP INDEX errand_jobs_pending_run_at_idx;
DROP INDEX errand_jobs_queue_state_idx;
DROP INDEX errand_jobs_state_idx;
CREATE INDEX errand_jobs_queue_state_idx ON errand_jobs (queue, state, id) WHERE state <> 'running';
CREATE INDEX errand_jobs_state_idx ON errand_jobs (state, id) WHERE state <> 'running';
`,
  },
  {
    version: 6,
    name: "tracing: the trace context of the enqueue",
    // The W3C trace context active at enqueue (tracing/traceparent.ts), handed back by the claims
    // so each attempt's span links to it, on whichever worker runs it. Set by a second statement
    // of the inserting transaction, for traced jobs only (insert.ts setTraceContexts): the insert
    // statements of untraced jobs stay as they were. Nullable, no default: nothing rewritten.
    // Job logs need no column: they are part of each attempt's history entry (attempts).
    sql: `
ALTER TABLE errand_jobs ADD COLUMN trace_context TEXT;
`,
  },
  {
    version: 7,
    name: "scoped keys: a job gives its key up when an enqueue's scope no longer counts it",
    // Uniqueness with a scope (store/unique.ts): an enqueue whose `unique.while`/`for` no longer
    // counts the job holding its key marks that job key_released and inserts its own; the unique
    // index holds the jobs that still hold their key only, so several jobs may share a key, one
    // holding it. The column's constant default rewrites nothing; the index is rebuilt (one pass
    // over the keyed rows). An older errand's inserts name the old index's predicate in ON
    // CONFLICT and fail against this one: upgrade every process together.
    sql: `
ALTER TABLE errand_jobs ADD COLUMN key_released INTEGER NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS errand_jobs_key_idx;
CREATE UNIQUE INDEX errand_jobs_key_held_idx ON errand_jobs (queue, key) WHERE key IS NOT NULL AND key_released = 0;
`,
  },
  {
    version: 8,
    name: "ctx.once scopes: ledger entries per job or global, pruned with their job",
    // ctx.once keys were global across all jobs: a job skipped its own side effect when any other
    // job had used the same key. An entry now belongs to a scope: its job's id (the default) or
    // '' (global). Entries recorded before this version become global — their key meant that
    // then — and a per-job read also finds a global entry its own job recorded, so a job retried
    // across the upgrade still skips what it did before (ledger.ts). SQLite cannot change a
    // primary key in place: the table is rebuilt (a ledger holds one row per side effect done).
    // A job's entries are deleted with its row (the trigger: pruning, discard, whatever deletes
    // it); global ones are pruned by age (errand_ledger_global_idx).
    sql: `
CREATE TABLE errand_ledger_scoped (
  scope      TEXT    NOT NULL DEFAULT '',
  key        TEXT    NOT NULL,
  job_id     TEXT    NOT NULL,
  value      TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
);
INSERT INTO errand_ledger_scoped (scope, key, job_id, value, created_at)
  SELECT '', key, job_id, value, created_at FROM errand_ledger;
DROP TABLE errand_ledger;
ALTER TABLE errand_ledger_scoped RENAME TO errand_ledger;
CREATE INDEX errand_ledger_global_idx ON errand_ledger (created_at) WHERE scope = '';
CREATE TRIGGER errand_jobs_ledger_delete AFTER DELETE ON errand_jobs
BEGIN
  DELETE FROM errand_ledger WHERE scope = CAST(old.id AS TEXT);
END;
`,
  },
  {
    version: 9,
    name: "dependencies: the waiting state, dependency counters and edges",
    // A job with unfinished dependencies is 'waiting' (store/dependency-plan.ts): outside the
    // claim index, so claims never see it. The state's CHECK constraint of version 1 does not
    // allow it, and SQLite cannot alter a constraint: `widenStateCheck` rebuilds errand_jobs
    // from its own stored schema (whatever columns later versions added), copies the rows,
    // restores its indexes, triggers and AUTOINCREMENT counter (ids are never reused). On a
    // large file this copies the whole table once, inside the migration's transaction.
    // has_dependents flags the jobs whose finish must resolve dependents (the others skip that
    // work); dependencies_left counts a waiting job's unfinished dependencies.
    before: widenStateCheck,
    sql: `
ALTER TABLE errand_jobs ADD COLUMN dependencies_left INTEGER NOT NULL DEFAULT 0;
ALTER TABLE errand_jobs ADD COLUMN on_dependency_failure TEXT;
ALTER TABLE errand_jobs ADD COLUMN node TEXT;
ALTER TABLE errand_jobs ADD COLUMN has_dependents INTEGER NOT NULL DEFAULT 0;
CREATE TABLE errand_job_dependencies (
  depends_on INTEGER NOT NULL,
  job_id     INTEGER NOT NULL,
  PRIMARY KEY (depends_on, job_id)
) WITHOUT ROWID;
CREATE INDEX errand_job_dependencies_job_idx ON errand_job_dependencies (job_id, depends_on);
-- A deleted dependent (pruned, discarded) takes its edges along; other jobs skip this at once.
CREATE TRIGGER errand_jobs_forget_dependencies AFTER DELETE ON errand_jobs
WHEN OLD.on_dependency_failure IS NOT NULL
BEGIN
  DELETE FROM errand_job_dependencies WHERE job_id = OLD.id;
END;
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
  {
    version: 11,
    name: "flow control: the claim log kept for the longest rate window in use",
    // One row per rate-limited queue: the longest rate window a claim of it used lately, which
    // every claim keeps the log for (store/flow-plan.ts claimLogRetention says why). Not
    // breaking: an older errand forgets by its own window, as before.
    sql: `
CREATE TABLE errand_flow_windows (
  queue      TEXT PRIMARY KEY,
  keep_ms    REAL    NOT NULL,
  keep_until INTEGER NOT NULL
);
`,
  },
  {
    version: 12,
    name: "schedules: the flow key of the enqueued jobs",
    // Computed from the schedule's fixed payload by the process that knows the job, so a
    // scheduler that does not know it enqueues the slot's job under its key (schedule/scheduler.ts).
    // Nullable: existing rows have none until a process that knows the job syncs or re-adds them.
    // Not breaking: an older errand neither writes nor reads the column.
    sql: `
ALTER TABLE errand_schedules ADD COLUMN flow_key TEXT;
`,
  },
];

const NARROW_STATES = "CHECK (state IN ('pending', 'running', 'completed', 'failed', 'cancelled'))";
const WIDE_STATES = "CHECK (state IN ('waiting', 'pending', 'running', 'completed', 'failed', 'cancelled'))";

/** Rebuilds errand_jobs with 'waiting' allowed by its state CHECK (migration 9). */
function widenStateCheck(db: Connection["db"]): void {
  const schema = (name: string, type: string) =>
    db
      .prepare("SELECT name, sql FROM sqlite_schema WHERE type = ? AND tbl_name = ? AND sql IS NOT NULL")
      .all(type, name) as {
      name: string;
      sql: string;
    }[];
  const [table] = schema("errand_jobs", "table");
  if (!table || table.sql.includes(WIDE_STATES)) return;
  if (!table.sql.includes(NARROW_STATES)) {
    throw new Error("errand_jobs has an unexpected state constraint; cannot add the 'waiting' state");
  }
  const indexes = schema("errand_jobs", "index");
  const triggers = schema("errand_jobs", "trigger");
  const seq = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'errand_jobs'").get() as
    | { seq: number }
    | undefined;
  db.exec(
    table.sql
      .replace(NARROW_STATES, WIDE_STATES)
      .replace(/^CREATE TABLE\s+"?errand_jobs"?/, "CREATE TABLE errand_jobs_widened"),
  );
  db.exec("INSERT INTO errand_jobs_widened SELECT * FROM errand_jobs");
  db.exec("DROP TABLE errand_jobs");
  db.exec("ALTER TABLE errand_jobs_widened RENAME TO errand_jobs");
  for (const { sql } of [...indexes, ...triggers]) db.exec(sql);
  if (seq) {
    // The copy set the counter to the highest id left; ids of pruned jobs above it stay used.
    db.prepare("DELETE FROM sqlite_sequence WHERE name = 'errand_jobs'").run();
    db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('errand_jobs', ?)").run(seq.seq);
  }
}

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
        migration.before?.(c.db);
        c.db.exec(migration.sql);
        c.q(MIGRATION_RECORD).run(migration.version, migration.name);
      }
    })
    .immediate();
}
