/**
 * Every SQL statement of the SQLite store, one named constant per query (the schema itself is in
 * migrations.ts). handle.ts `Statements` prepares each once per connection and caches it.
 *
 * The clock is SQLite's: `NOW` reads the OS clock inside SQLite (`unixepoch('subsec')`), so a
 * faked JavaScript clock (`Date.now`) in tests or a drifting worker never moves a lease or a
 * due time. Operations that need "now" in JavaScript too (to build a history entry, or to use
 * one instant for a whole batch) read it once with `SELECT_NOW` and bind it. Tests may give the
 * store a clock (`clock` option): handle.ts then prepares `NOW` as a function that reads it.
 *
 * better-sqlite3 binds every JavaScript number as a REAL: columns have INTEGER affinity, so an
 * integral value is stored as an integer, and arithmetic on bound durations is cast back.
 *
 * Without ANALYZE statistics the planner prefers any equality on `state` (errand_jobs_state_idx)
 * to a range on a partial index; where that would scan every finished or running job, the
 * query names its index (`INDEXED BY`: a prepare error, not a silent full scan, if it ever
 * stops applying). Plans checked with EXPLAIN QUERY PLAN on SQLite 3.53 (test/sqlite-plans.test.ts).
 *
 * errand_jobs_state_idx and errand_jobs_queue_state_idx leave running jobs out (migrations.ts
 * version 5: a claim and a finish then change fewer index entries). SQLite reads a partial index
 * only when the query repeats its condition, so reads of them say `state <> 'running'` even
 * where `state = 'failed'` already implies it; running jobs are read through
 * errand_jobs_lease_idx, which holds them and nothing else.
 */

// ── connection ─────────────────────────────────────────────────────────────────────────────

/** Set on a handle errand opens (never on an application's shared handle). */
export const PRAGMA_BUSY_TIMEOUT = (ms: number) => `busy_timeout = ${Math.max(0, Math.floor(ms))}`;
export const PRAGMA_WAL = "journal_mode = WAL";
export const PRAGMA_SYNCHRONOUS_NORMAL = "synchronous = NORMAL";

/** completeInTransaction's transaction, run by hand: it spans an await. */
export const BEGIN_IMMEDIATE = "BEGIN IMMEDIATE";
export const COMMIT = "COMMIT";
export const ROLLBACK = "ROLLBACK";

/** Milliseconds since the epoch, from SQLite's clock. */
export const NOW = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

export const SELECT_NOW = `SELECT ${NOW} AS now`;

/** Changes whenever another connection (any process) commits to the database file. */
export const DATA_VERSION = "PRAGMA data_version";

/** The database's file as SQLite opened it (full path, symlinks resolved); '' in memory. */
export const MAIN_FILE = "SELECT file FROM pragma_database_list WHERE name = 'main'";

// ── migrations ─────────────────────────────────────────────────────────────────────────────

export const MIGRATION_VERSION = "SELECT coalesce(max(version), 0) AS version FROM errand_migrations";
export const MIGRATION_RECORD = `INSERT INTO errand_migrations (version, name, applied_at) VALUES (?, ?, ${NOW})`;

// ── jobs: insert and read ───────────────────────────────────────────────────────────────────

/** One job; a duplicate (queue, key) inserts nothing (changes = 0) and the caller selects the existing job. */
export const INSERT_JOB = `
INSERT INTO errand_jobs (queue, name, priority, max_attempts, run_at, payload, key, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (queue, key) WHERE key IS NOT NULL AND key_released = 0 DO NOTHING`;

/**
 * Keyless jobs go several rows per statement: a job without a key cannot conflict, and inside
 * the write transaction AUTOINCREMENT hands the rows consecutive ids ending at
 * last_insert_rowid(). One statement per size here, largest first (insert.ts takes as many of
 * each as fit; fewer than the smallest go one by one through INSERT_JOB). Measured on the 2-core
 * VM, 100,000 rows in one transaction, the statement alone: 1 row per statement ~130,000 rows/s,
 * 100 rows ~210,000, 500 rows ~265,000, 1,000 rows ~255,000 (index maintenance is the rest).
 */
export const INSERT_JOB_CHUNK_SIZES = [500, 100, 20, 5] as const;
export const INSERT_JOB_CHUNK: Readonly<Record<number, string>> = Object.fromEntries(
  INSERT_JOB_CHUNK_SIZES.map((rows) => [
    rows,
    `
INSERT INTO errand_jobs (queue, name, priority, max_attempts, run_at, payload, key, created_at)
VALUES ${Array(rows).fill("(?, ?, ?, ?, ?, ?, NULL, ?)").join(", ")}`,
  ]),
);

/** The job holding a key (migrations.ts version 5: others may share it, having given it up). */
export const SELECT_JOB_BY_KEY = "SELECT * FROM errand_jobs WHERE queue = ? AND key = ? AND key_released = 0";

/** A job holding a key gives it up (store/unique.ts): no enqueue matches it again. */
export const RELEASE_KEY = "UPDATE errand_jobs SET key_released = 1 WHERE id = ?";

/** A pending job holding a key takes a new enqueue's payload, run time (ms), priority and flow key. */
export const REPLACE_KEY_HOLDER =
  "UPDATE errand_jobs SET payload = @payload, run_at = @runAt, priority = @priority, flow_key = @flowKey WHERE id = @id";

export const SELECT_JOB = "SELECT * FROM errand_jobs WHERE id = ?";

/** Sets the trace context of a job just inserted (in the inserting transaction; insert.ts). */
export const SET_TRACE_CONTEXT = "UPDATE errand_jobs SET trace_context = @context WHERE id = @id";

/** The jobs of a JSON array of ids (waitFor's batched lookup): one primary-key probe each. */
export const SELECT_JOBS_BY_IDS = "SELECT * FROM errand_jobs WHERE id IN (SELECT value FROM json_each(?))";

/**
 * listJobs: newest first, keyset pagination on id. One statement per combination of the
 * indexed filters (queue, state, name) so each uses its index — an `(@x IS NULL OR col = @x)`
 * form would defeat the planner. The search filter is a residual condition (id equals, key
 * contains, payload JSON or error message contains: common.ts `matchesSearch`), `@search` NULL turns it off.
 * A state filter other than running reads the state indexes (NOT_RUNNING, see above); running
 * jobs are listed from errand_jobs_lease_idx (LIST_RUNNING_JOBS).
 */
const SEARCH =
  "(@search IS NULL OR CAST(id AS TEXT) = @search OR instr(key, @search) > 0 OR instr(payload, @search) > 0 OR instr(last_error, @search) > 0)";

const NOT_RUNNING = "state <> 'running'";

function listQuery(filters: string[]): string {
  return `SELECT * FROM errand_jobs WHERE ${[...filters, "id < @before", SEARCH].join(" AND ")} ORDER BY id DESC LIMIT @limit`;
}

/**
 * Queue without state: the (queue, state, id) index orders by id within each state only, so
 * take the newest `limit` of each state (short index walks; the running ones from the lease
 * index) and merge, instead of sorting every job of the queue (or paying for one more index on
 * every insert).
 */
function listByQueueQuery(extra: string[]): string {
  const states = ["waiting", "pending", "completed", "failed", "cancelled"];
  const newest = (from: string, where: string[]) =>
    `SELECT * FROM (SELECT id FROM ${from} WHERE ${[...where, ...extra, "id < @before", SEARCH].join(" AND ")} ORDER BY id DESC LIMIT @limit)`;
  const parts = [
    ...states.map((s) => newest("errand_jobs", ["queue = @queue", `state = '${s}'`, NOT_RUNNING])),
    newest("errand_jobs INDEXED BY errand_jobs_lease_idx", ["state = 'running'", "queue = @queue"]),
  ];
  return `SELECT * FROM errand_jobs WHERE id IN (${parts.join(" UNION ALL ")}) ORDER BY id DESC LIMIT @limit`;
}

export const LIST_JOBS = listQuery([]);
export const LIST_JOBS_BY_QUEUE = listByQueueQuery([]);
export const LIST_JOBS_BY_STATE = listQuery(["state = @state", NOT_RUNNING]);
export const LIST_JOBS_BY_NAME = listQuery(["name = @name"]);
export const LIST_JOBS_BY_QUEUE_STATE = listQuery(["queue = @queue", "state = @state", NOT_RUNNING]);
export const LIST_JOBS_BY_QUEUE_NAME = listQuery(["name = @name", "queue = @queue"]);
export const LIST_JOBS_BY_STATE_NAME = listQuery(["name = @name", "state = @state", NOT_RUNNING]);
export const LIST_JOBS_BY_QUEUE_STATE_NAME = listQuery([
  "queue = @queue",
  "state = @state",
  NOT_RUNNING,
  "name = @name",
]);

/** Running jobs (any queue, name or none): a walk of errand_jobs_lease_idx, sorted (they are few). */
export const LIST_RUNNING_JOBS = `
SELECT * FROM errand_jobs INDEXED BY errand_jobs_lease_idx
WHERE state = 'running' AND (@queue IS NULL OR queue = @queue) AND (@name IS NULL OR name = @name)
  AND id < @before AND ${SEARCH}
ORDER BY id DESC LIMIT @limit`;

// ── stats and throughput: stats-queries.ts ──────────────────────────────────────────────────
export * from "./stats-queries.js";

import { QUEUES_CTE } from "./stats-queries.js";

// ── worker operations ──────────────────────────────────────────────────────────────────────

/**
 * Claims up to @limit due jobs of a queue: the sub-select walks errand_jobs_claim_idx in claim
 * order (priority DESC, run_at, id) and stops after @limit due rows; the UPDATE bumps the lease
 * token that fences every later write. RETURNING gives no order guarantee: the caller sorts.
 */
export const CLAIM_JOBS = `
UPDATE errand_jobs
SET state = 'running',
    attempt = attempt + 1,
    lease_token = lease_token + 1,
    locked_by = @worker,
    locked_until = CAST(@now + @leaseMs AS INTEGER),
    started_at = @now,
    progress = NULL
WHERE id IN (
  SELECT id FROM errand_jobs
  WHERE state = 'pending' AND queue = @queue AND run_at <= @now
  ORDER BY priority DESC, run_at, id
  LIMIT @limit
)
RETURNING id, queue, name, payload, priority, attempt, max_attempts, key, run_at, created_at, lease_token, locked_until,
          trace_context`;

/** Fenced: only the holder of the current lease token of a running job matches. */
export const EXTEND_LEASE = `
UPDATE errand_jobs SET locked_until = CAST(@now + @leaseMs AS INTEGER)
WHERE id = @id AND lease_token = @token AND state = 'running'
RETURNING cancel_requested`;

/** returnJobs: a claimed job never started goes back as it was (fenced; see Store.returnJobs). */
export const RETURN_JOB = `
UPDATE errand_jobs
SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'pending' END,
    attempt = attempt - 1,
    started_at = CASE WHEN attempt = 1 THEN NULL ELSE started_at END,
    finished_at = CASE WHEN cancel_requested THEN @now ELSE finished_at END,
    locked_by = NULL,
    locked_until = NULL,
    progress = NULL,
    cancel_requested = 0
WHERE id = @id AND lease_token = @token AND state = 'running'
RETURNING id, queue, state, has_dependents`;

/** Fenced read of what finishing a job needs. */
export const SELECT_HELD = `
SELECT id, queue, attempt, started_at, cancel_requested, has_dependents FROM errand_jobs
WHERE id = ? AND lease_token = ? AND state = 'running'`;

/**
 * Applies an outcome (fenced). NULL parameters keep the column: run_at for a terminal state,
 * result unless completed, last_error without an error, finished_at while pending.
 * The history entry is appended to the JSON array in place — or, for a plain completion
 * (@record NULL), left implicit: @completedBy records the worker and rows.ts rebuilds the entry.
 */
export const FINISH_JOB = `
UPDATE errand_jobs
SET state = @state,
    attempt = attempt - @uncharge,
    run_at = coalesce(@runAt, run_at),
    result = coalesce(@result, result),
    last_error = coalesce(@lastError, last_error),
    finished_at = coalesce(@finishedAt, finished_at),
    locked_by = NULL,
    locked_until = NULL,
    cancel_requested = 0,
    attempts = CASE WHEN @record IS NULL THEN attempts ELSE json_insert(attempts, '$[#]', json(@record)) END,
    completed_by = @completedBy
WHERE id = @id AND lease_token = @token AND state = 'running'`;

/**
 * A plain completion (no error) in one statement, no read first: the common case of FINISH_JOB
 * with its history entry implicit (@worker in completed_by). A cancel request does not matter
 * to a completion. No change: not held (or no start time to rebuild the entry from, or
 * dependents to resolve: dependencies.ts) — the caller then takes the general path, which
 * reads the row.
 */
export const FINISH_COMPLETED = `
UPDATE errand_jobs
SET state = 'completed',
    result = @result,
    finished_at = @now,
    locked_by = NULL,
    locked_until = NULL,
    cancel_requested = 0,
    completed_by = @worker
WHERE id = @id AND lease_token = @token AND state = 'running' AND started_at IS NOT NULL AND has_dependents = 0`;

export const SET_PROGRESS = `
UPDATE errand_jobs SET progress = ?
WHERE id = ? AND lease_token = ? AND state = 'running'`;

/** Running jobs whose lease expired: a range of errand_jobs_lease_idx. */
export const SELECT_EXPIRED = `
SELECT id, queue, name, attempt, max_attempts, started_at, locked_by, cancel_requested, has_dependents
FROM errand_jobs INDEXED BY errand_jobs_lease_idx
WHERE state = 'running' AND locked_until < ?`;

export const RESCUE_JOB = `
UPDATE errand_jobs
SET state = @state,
    run_at = coalesce(@runAt, run_at),
    finished_at = coalesce(@finishedAt, finished_at),
    last_error = @lastError,
    locked_by = NULL,
    locked_until = NULL,
    cancel_requested = 0,
    attempts = json_insert(attempts, '$[#]', json(@record))
WHERE id = @id AND state = 'running'`;

// ── operator actions ───────────────────────────────────────────────────────────────────────

export const CANCEL_PENDING = `
UPDATE errand_jobs SET state = 'cancelled', finished_at = ${NOW}
WHERE id = ? AND state IN ('pending', 'waiting')
RETURNING has_dependents`;

export const REQUEST_CANCEL =
  "UPDATE errand_jobs SET cancel_requested = 1 WHERE id = ? AND state = 'running'";

/** `@ids` is a JSON array of numeric ids. */
export const RETRY_JOBS_BY_IDS = `
UPDATE errand_jobs SET state = 'pending', run_at = ${NOW}, attempt = 0, finished_at = NULL
WHERE id IN (SELECT value FROM json_each(@ids)) AND state IN ('failed', 'cancelled')
  AND (@queue IS NULL OR queue = @queue)
RETURNING queue`;

/** The whole dead-letter queue (of one queue): failed jobs only; cancelled ones are retried by id. */
export const RETRY_JOBS = `
UPDATE errand_jobs SET state = 'pending', run_at = ${NOW}, attempt = 0, finished_at = NULL
WHERE state = 'failed' AND state <> 'running' AND (@queue IS NULL OR queue = @queue)
RETURNING queue`;

export const DISCARD_JOBS_BY_IDS = `
DELETE FROM errand_jobs
WHERE id IN (SELECT value FROM json_each(@ids)) AND state = 'failed' AND (@queue IS NULL OR queue = @queue)`;

export const DISCARD_JOBS =
  "DELETE FROM errand_jobs WHERE state = 'failed' AND state <> 'running' AND (@queue IS NULL OR queue = @queue)";

/** Both prunes are one finished_at range of errand_jobs_finished_idx per (queue, state). */
export const PRUNE_COMPLETED = `
WITH RECURSIVE ${QUEUES_CTE}
DELETE FROM errand_jobs INDEXED BY errand_jobs_finished_idx
WHERE queue IN (SELECT queue FROM queues WHERE queue IS NOT NULL) AND state IN ('completed', 'cancelled')
  AND finished_at IS NOT NULL AND finished_at < ?`;

export const PRUNE_FAILED = `
WITH RECURSIVE ${QUEUES_CTE}
DELETE FROM errand_jobs INDEXED BY errand_jobs_finished_idx
WHERE queue IN (SELECT queue FROM queues WHERE queue IS NOT NULL) AND state = 'failed'
  AND finished_at IS NOT NULL AND finished_at < ?`;

// ── ledger ─────────────────────────────────────────────────────────────────────────────────

/**
 * ? key, ? scope ('' global, else the job's id), ? the reading job's id for a per-job read (NULL
 * for a global one): a per-job read also finds a global entry its own job recorded (entries from
 * before scopes: migrations.ts 7), its own scope's entry first.
 */
export const LEDGER_GET = `
SELECT value FROM errand_ledger
WHERE key = ? AND (scope = ? OR (scope = '' AND job_id = ?))
ORDER BY scope = '' LIMIT 1`;

/** The first value recorded for a key in its scope wins. ? key, ? scope, ? job id, ? value. */
export const LEDGER_PUT = `
INSERT INTO errand_ledger (key, scope, job_id, value, created_at) VALUES (?, ?, ?, ?, ${NOW})
ON CONFLICT (scope, key) DO NOTHING`;

/** Global ctx.once entries recorded before ? (errand_ledger_global_idx). */
export const PRUNE_GLOBAL_LEDGER = "DELETE FROM errand_ledger WHERE scope = '' AND created_at < ?";

// ── schedules ──────────────────────────────────────────────────────────────────────────────

/**
 * Insert or update; an unchanged cron and time zone keep next_run_at (a restart neither skips
 * nor repeats a slot). last_fired_at, last_slot and created_at are always kept.
 */
export const SCHEDULE_UPSERT = `
INSERT INTO errand_schedules
  (name, cron, timezone, job_name, queue, payload, priority, flow_key, missed, source, next_run_at, created_at)
VALUES (@name, @cron, @timezone, @jobName, @queue, @payload, @priority, @flowKey, @missed, @source, @nextRunAt, ${NOW})
ON CONFLICT (name) DO UPDATE SET
  next_run_at = CASE
    WHEN errand_schedules.cron = excluded.cron AND errand_schedules.timezone = excluded.timezone
    THEN errand_schedules.next_run_at ELSE excluded.next_run_at END,
  cron = excluded.cron,
  timezone = excluded.timezone,
  job_name = excluded.job_name,
  queue = excluded.queue,
  payload = excluded.payload,
  priority = excluded.priority,
  flow_key = excluded.flow_key,
  missed = excluded.missed,
  source = excluded.source`;

/** `?` is a JSON array of the names defined in code. */
export const SCHEDULE_DELETE_STALE_CODE = `
DELETE FROM errand_schedules WHERE source = 'code' AND name NOT IN (SELECT value FROM json_each(?))`;

export const SCHEDULE_DELETE = "DELETE FROM errand_schedules WHERE name = ?";

export const SCHEDULE_LIST = "SELECT * FROM errand_schedules";

export const SCHEDULE_DUE = `SELECT * FROM errand_schedules WHERE next_run_at <= ${NOW} AND paused_at IS NULL`;

/** Compare-and-set on next_run_at: only one of several schedulers moves a schedule on. */
export const SCHEDULE_ADVANCE = `
UPDATE errand_schedules
SET next_run_at = @nextRunAt,
    last_slot = coalesce(@lastSlot, last_slot),
    last_fired_at = CASE WHEN @lastSlot IS NULL THEN last_fired_at ELSE ${NOW} END
WHERE name = @name AND next_run_at = @expected`;

// ── workers registry ───────────────────────────────────────────────────────────────────────

/** Re-registering an id starts it afresh but keeps its row (and its place in the listing). */
export const WORKER_REGISTER = `
INSERT INTO errand_workers (id, host, pid, queues, started_at, last_heartbeat_at, running, processed)
VALUES (@id, @host, @pid, @queues, ${NOW}, ${NOW}, @running, @processed)
ON CONFLICT (id) DO UPDATE SET
  host = excluded.host, pid = excluded.pid, queues = excluded.queues, started_at = excluded.started_at,
  last_heartbeat_at = excluded.last_heartbeat_at, running = excluded.running, processed = excluded.processed`;

export const WORKER_HEARTBEAT = `
UPDATE errand_workers SET running = ?, processed = ?, last_heartbeat_at = ${NOW} WHERE id = ?`;

export const WORKER_DELETE = "DELETE FROM errand_workers WHERE id = ?";

export const WORKER_LIST = `
SELECT * FROM errand_workers WHERE last_heartbeat_at >= ${NOW} - ? ORDER BY rowid`;
