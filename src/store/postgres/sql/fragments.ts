/** Pieces shared by the statements of queries.ts: the clock, conversions, the jobs table's columns. */

/** The database clock: the start of the current statement. */
export const NOW = "statement_timestamp()";

export const ms = (param: string) => `(${param} * interval '1 millisecond')`;
/** A timestamptz as epoch milliseconds (float8): a number for the driver, not a string for it to parse into a Date. */
export const epochMs = (t: string) => `floor(extract(epoch FROM ${t}) * 1000)::float8`;

/** A timestamptz as `Date.prototype.toISOString()` prints it (milliseconds truncated, like pg's Date parsing). */
export const iso = (t: string) => `to_char((${t}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * A value the planner may not look into: `(SELECT x)` is an InitPlan, computed once at run time.
 * The claim/finish/extend/return statements use it so that the first executions (custom plans,
 * planned with the actual values) get the same plan as the later generic one, whatever the
 * table's statistics say (see CLAIM_JOBS): an array behind it counts as ~10 elements, not 500,
 * and `state = opaque('running')` is estimated from the number of distinct states, not from a
 * histogram taken when no job was running. Each costs one Result node (~1 µs per statement).
 */
export const opaque = (expr: string) => `(SELECT ${expr})`;

/** One NOTIFY per distinct queue of a statement's rows (delivered on commit; rolled back with it). */
export const notifyQueues = (rows: string) =>
  `(SELECT count(pg_notify({{channel}}, q.queue)) AS notified FROM (SELECT DISTINCT queue FROM ${rows}) q)`;

export const JOBS = "{{schema}}.jobs";

/**
 * The head of each priority level of one queue's pending jobs: (priority, earliest run_at), one
 * probe of jobs_claim_idx per distinct priority (a loose index scan). The earliest run_at of the
 * queue is the min over these. O(distinct priorities), usually a handful.
 */
export const pendingHeads = (queue: string) => `(
  WITH RECURSIVE p AS (
    (SELECT h.priority, h.run_at FROM ${JOBS} h
     WHERE h.queue = ${queue} AND h.state = 'pending' ORDER BY h.priority DESC, h.run_at, h.id LIMIT 1)
    UNION ALL
    SELECT n.priority, n.run_at FROM p, LATERAL (
      SELECT h.priority, h.run_at FROM ${JOBS} h
      WHERE h.queue = ${queue} AND h.state = 'pending' AND h.priority < p.priority
      ORDER BY h.priority DESC, h.run_at, h.id LIMIT 1
    ) n
  )
  SELECT priority, run_at FROM p
)`;

/**
 * A completed job's history: the array, plus the completing attempt when FINISH_JOBS left it
 * implicit (completed_by set; migrations.ts version 3) — the same fields and formats as the
 * entry FINISH_JOBS appends otherwise.
 */
export const HISTORY = `CASE WHEN completed_by IS NULL THEN attempts ELSE attempts || jsonb_build_array(jsonb_build_object(
    'attempt', attempt, 'startedAt', ${iso("started_at")}, 'finishedAt', ${iso("finished_at")}, 'worker', completed_by,
    'outcome', 'completed')) END`;

/** Every column of a job record (rows.ts maps them). */
export const JOB_COLUMNS = `id, queue, name, state, priority, attempt, max_attempts, run_at, payload, key, ${HISTORY} AS attempts,
  result, progress, last_error, created_at, started_at, finished_at, locked_by, locked_until, cancel_requested`;
