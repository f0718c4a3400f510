/** Inserting and reading jobs (insert.ts, reads.ts). */
import { epochMs, JOB_COLUMNS, JOBS, ms, NOW, notifyQueues } from "./fragments.js";

// ── jobs: insert and read ─────────────────────────────────────────────────────────────────

/**
 * The rows of one insert chunk, in input order, each with its id drawn from the identity
 * sequence — so every inserted row maps back to its input position (RETURNING cannot see the
 * input). Parameters are array literals built in insert.ts (`insertValues`): $1 queue,
 * $2 name, $4 priority, $5 max_attempts, $6 run_at (epoch ms; null: now + delay), $7 delay ms,
 * $8 key; and $3 the payloads as one JSON array text, the payloads' own JSON joined by commas —
 * nothing to escape in JS, one jsonb parse on the server (as a text[] of JSON texts, each payload
 * was escaped for the array literal by node-postgres, then parsed twice by Postgres).
 */
const insertInput = (keys: boolean, traced = false) => `input AS (
  SELECT nextval('{{schema}}.jobs_id_seq'::regclass) AS id, u.*
  FROM ROWS FROM (
    unnest($1::text[]), unnest($2::text[]), jsonb_array_elements($3::jsonb), unnest($4::int[]),
    unnest($5::int[]), unnest($6::float8[]), unnest($7::float8[])${keys ? ", unnest($8::text[])" : ""}${traced ? `, unnest($${keys ? 9 : 8}::text[])` : ""}
  ) WITH ORDINALITY AS u(queue, name, payload, priority, max_attempts, run_at_ms, delay_ms, ${keys ? "key, " : ""}${traced ? "trace_context, " : ""}ord)
)`;

const insertRunAt = `coalesce(timestamptz 'epoch' + ${ms("run_at_ms")}, ${NOW} + ${ms("delay_ms")})`;

/** The statement's clock as epoch milliseconds (text): run_at and created_at of the new jobs follow from it. */
const NOW_MS = `(floor(extract(epoch FROM ${NOW}) * 1000))::text`;

/**
 * Bulk insert of one chunk of jobs without keys (insertInput; no $8). Such a chunk cannot
 * conflict, so every row is inserted: no ON CONFLICT (a speculative insertion per row), no
 * ordering, and one row back — the ids in input order as one comma-separated text — instead of
 * a row per job. Against INSERT_JOBS on 5,000 rows (EXPLAIN ANALYZE, medians of 15, in a
 * transaction on the 2-core VM): 38 ms instead of 52 of server time, and no 5,000-row result to
 * parse in JS.
 */
const insertNewJobs = (traced: boolean) => `
WITH ${insertInput(false, traced)}, inserted AS (
  INSERT INTO ${JOBS} (id, queue, name, payload, priority, max_attempts, run_at, created_at${traced ? ", trace_context" : ""})
  OVERRIDING SYSTEM VALUE
  SELECT id, queue, name, payload, priority, max_attempts, ${insertRunAt}, ${NOW}${traced ? ", trace_context" : ""}
  FROM input
)
SELECT (SELECT string_agg(id::text, ',' ORDER BY ord) FROM input) AS ids, ${NOW_MS} AS now_ms,
       ${notifyQueues("input")} AS notified`;
export const INSERT_NEW_JOBS = insertNewJobs(false);
/**
 * INSERT_NEW_JOBS for a chunk holding traced jobs (tracing): the trace contexts as one more
 * array ($8). A statement of its own, so untraced inserts send and parse nothing more.
 */
export const INSERT_NEW_TRACED_JOBS = insertNewJobs(true);

/**
 * Bulk insert of one chunk holding jobs with keys (insertInput, $8 keys). A duplicate
 * (queue, key) — with an existing job, a concurrent insert (ON CONFLICT waits for that
 * transaction to end) or an earlier row of the same batch — inserts nothing; the caller then
 * reads the existing jobs with SELECT_JOBS_BY_KEYS in a new statement, whose fresh snapshot sees
 * a concurrent commit that this statement's snapshot could not.
 *
 * Rows are inserted in (queue, key) order — ids still follow the input order, they are drawn
 * before. An insert that meets another transaction's uncommitted row with the same key waits for
 * it; two statements taking the same keys in different orders would deadlock (seen with five
 * pools enqueuing the same keys), one order for everybody cannot.
 *
 * Only (ord, id) come back per inserted row, plus the statement's clock: the rest of each record
 * is the input, and run_at/created_at follow from that one instant. Sending 5,000 payloads back
 * and parsing 10,000 timestamps cost more than the insert itself.
 */
const insertJobs = (traced: boolean) => `
WITH ${insertInput(true, traced)}, inserted AS (
  INSERT INTO ${JOBS} (id, queue, name, payload, priority, max_attempts, run_at, key, created_at${traced ? ", trace_context" : ""})
  OVERRIDING SYSTEM VALUE
  SELECT id, queue, name, payload, priority, max_attempts, ${insertRunAt}, key, ${NOW}${traced ? ", trace_context" : ""}
  FROM input
  ORDER BY queue, key, ord
  ON CONFLICT (queue, key) WHERE key IS NOT NULL AND NOT key_released DO NOTHING
  RETURNING id, queue
)
SELECT i.ord, j.id, ${NOW_MS} AS now_ms, ${notifyQueues("inserted")} AS notified
FROM inserted j JOIN input i ON i.id = j.id`;
export const INSERT_JOBS = insertJobs(false);
/** INSERT_JOBS for a chunk holding traced jobs: the trace contexts as one more array ($9). */
export const INSERT_TRACED_JOBS = insertJobs(true);

/** The jobs holding (queue, key) pairs (migrations.ts version 7): $1 queues, $2 keys. */
export const SELECT_JOBS_BY_KEYS = `
SELECT ${JOB_COLUMNS}
FROM ${JOBS}
WHERE key IS NOT NULL AND NOT key_released
  AND (queue, key) IN (SELECT k.queue, k.key FROM unnest($1::text[], $2::text[]) AS k(queue, key))`;

/**
 * The job holding key $2 of queue $1, locked until the enqueue's transaction ends (unique.ts
 * decides what to do with it; a claim skips it meanwhile), with the statement's clock.
 */
export const LOCK_KEY_HOLDER = `
SELECT ${JOB_COLUMNS}, ${epochMs(NOW)} AS now_ms
FROM ${JOBS}
WHERE queue = $1 AND key = $2 AND NOT key_released
FOR UPDATE`;

/** Job $1 gives its key up (store/unique.ts): no enqueue matches it again. */
export const RELEASE_KEY = `UPDATE ${JOBS} SET key_released = true WHERE id = $1`;

/**
 * Pending job $1, holding a key, takes a new enqueue's payload $2, run time $3 (epoch ms),
 * priority $4 and flow key $5; its queue is told (it may be due sooner).
 */
export const REPLACE_KEY_HOLDER = `
WITH replaced AS (
  UPDATE ${JOBS}
  SET payload = $2::jsonb, run_at = timestamptz 'epoch' + ${ms("$3::float8")}, priority = $4, flow_key = $5
  WHERE id = $1
  RETURNING ${JOB_COLUMNS}
)
SELECT r.*, ${notifyQueues("replaced")} AS notified FROM replaced r`;

export const SELECT_JOB = `SELECT ${JOB_COLUMNS} FROM ${JOBS} WHERE id = $1`;

/**
 * listJobs: newest first, keyset pagination on id. Run unnamed, so Postgres plans it with the
 * actual values and folds away the filters given as NULL. Search (common.ts `matchesSearch`):
 * id equals, key contains, or the payload's JSON text contains — jsonb's text form (keys sorted,
 * ", " and ": " separators), which is what the database holds.
 * $1 queue, $2 state, $3 name, $4 before id, $5 search, $6 limit.
 */
export const LIST_JOBS = `
SELECT ${JOB_COLUMNS} FROM ${JOBS}
WHERE ($1::text IS NULL OR queue = $1)
  AND ($2::text IS NULL OR state = $2)
  AND ($3::text IS NULL OR name = $3)
  AND ($4::bigint IS NULL OR id < $4)
  AND ($5::text IS NULL OR id::text = $5 OR strpos(key, $5) > 0 OR strpos(payload::text, $5) > 0
       OR strpos(last_error, $5) > 0)
ORDER BY id DESC
LIMIT $6`;

/**
 * listJobs for the dead-letter queue — state $2 failed or cancelled, optional queue $1 and
 * cursor $3, limit $4 (no name or search filter: those use LIST_JOBS). The ids come from an
 * index-only walk of jobs_dead_idx (state, id) INCLUDE (queue). With LIST_JOBS the planner walks
 * the primary key backwards, expecting failed rows everywhere; with a million newer pending rows
 * that read 1M rows (1.2-5 s) to find 51 failed ones — this takes under a millisecond.
 */
export const LIST_DEAD_JOBS = `
SELECT ${JOB_COLUMNS} FROM ${JOBS}
WHERE id IN (
  SELECT id FROM ${JOBS}
  WHERE state = $2 AND state IN ('failed', 'cancelled')
    AND ($1::text IS NULL OR queue = $1)
    AND ($3::bigint IS NULL OR id < $3)
  ORDER BY id DESC
  LIMIT $4
)
ORDER BY id DESC`;
