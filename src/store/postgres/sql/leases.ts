/** Claim, lease, finish and rescue (leases.ts), and the vacuum of the churning tables (upkeep.ts). */
import { iso, JOBS, ms, NOW, notifyQueues, opaque, pendingHeads } from "./fragments.js";

// ── claim, lease, finish ──────────────────────────────────────────────────────────────────

/**
 * The churning tables that need a vacuum now: at least $1 dead rows in jobs (or $2 in
 * job_count_deltas, which gets a row per writing statement), and no vacuum running on them.
 * The dead-row counts are the server's statistics (kept whether or not autovacuum is on).
 */
export const TABLES_TO_VACUUM = `
SELECT s.relname AS table
FROM pg_stat_user_tables s
WHERE s.relid IN ('${JOBS}'::regclass, '{{schema}}.job_count_deltas'::regclass)
  AND s.n_dead_tup >= CASE WHEN s.relid = '${JOBS}'::regclass THEN $1::bigint ELSE $2::bigint END
  AND NOT EXISTS (SELECT 1 FROM pg_stat_progress_vacuum p WHERE p.relid = s.relid)`;

/** SKIP_LOCKED: a vacuum of the table already running (autovacuum, another worker) wins; this one skips it. */
export const VACUUM_JOBS = `VACUUM (SKIP_LOCKED) ${JOBS}`;
export const VACUUM_JOB_COUNT_DELTAS = "VACUUM (SKIP_LOCKED) {{schema}}.job_count_deltas";

/**
 * Epoch milliseconds as int8, whose text is exact whatever the session's extra_float_digits (a
 * float8's text is rounded below 0: with -3, 1796611787123 prints as 1.79661178712e+12).
 */
const epochMsText = (t: string) => `floor(extract(epoch FROM ${t}) * 1000)::int8`;

/**
 * Payload text per row of CLAIM_JOBS's answer: the jobs after the first 8 MB go to further rows
 * (claim-arrays.ts says why there is a bound). The parts and each job's place in claim order
 * (`ord`) are one WindowAgg over the claimed rows sorted in claim order (the sort the row-per-job
 * answer's row_number had), then a HashAggregate. The parts alone: 18.6 µs of server time per
 * job with and without them (claims of 1,000, load ~2); parts and `ord` against the row-per-job
 * answer: -0.4 to +0.6 µs (bench/claim-answer-ab.ts, three runs).
 */
const CLAIM_PART_BYTES = 8 * 1024 * 1024;

/**
 * Claims up to $2 due jobs of queue $1 for worker $3 with a lease of $4 ms, in one statement,
 * answered in rows of arrays (postgres/claim-arrays.ts; none when nothing was due). The CTE walks
 * jobs_claim_idx (queue, priority DESC, run_at, id) WHERE state = 'pending' in claim order and
 * locks with SKIP LOCKED, so concurrent claimers take disjoint rows without waiting; the partial
 * index holds pending rows only, so millions of finished rows are never visited.
 *
 * The jobs picked in `c` are updated through `id = ANY(ARRAY(...))`: one probe of jobs_pkey per id,
 * the only plan a ~10-element array leaves, and jobs_claim_idx cannot serve the UPDATE (its
 * state test is opaque). The earlier shape (UPDATE ... FROM c WHERE j.id = c.id AND j.state =
 * 'pending') flipped with statistics. bench/hot-plans.ts on 50,000 pending jobs, batches of 500,
 * EXPLAIN (ANALYZE, BUFFERS) of the first batch (a custom plan), load ~5:
 * - never analyzed: Nested Loop (c → Index Scan jobs_pkey), 2,022 buffers, 8.1 ms.
 * - analyzed: Hash Join (c, Hash (Seq Scan jobs, 50,000 rows)), 1,228 buffers, 20.4 ms — the plan
 *   of every connection's first 4-5 claims, until the generic plan took over.
 * This shape, both states: Limit/LockRows on jobs_claim_idx (513 buffers) → Index Scan (or Bitmap
 * Index Scan) jobs_pkey for the 500 ids (1,524 buffers), 6.3-7.0 ms; over a whole run 12.3
 * buffers and 8.9-9.3 µs of server time per job in both states (before: 13.3/11.8 µs never
 * analyzed, 13.2/10.3 µs analyzed). test/postgres-plans.test.ts holds the plans to it.
 *
 * A paused queue (paused_queues) gives nothing: the NOT EXISTS names no column of jobs, so it is
 * an InitPlan run once per claim (an Index Only Scan of paused_queues_pkey, 2 buffers, 0.01 ms)
 * and a One-Time Filter over the walk. bench/hot-plans.ts, batches of 500: 12.2 buffers/job
 * fresh and 12.3 analyzed, the same as without it; batches of 10: 13.2 against 13.0 (the 2
 * buffers per claim). Server times moved within the run-to-run noise (load 7-13 on 2 cores).
 */
export const CLAIM_JOBS = `
WITH c AS (
  SELECT id FROM ${JOBS}
  WHERE queue = $1 AND state = 'pending' AND run_at <= ${NOW}
    AND NOT EXISTS (SELECT 1 FROM {{schema}}.paused_queues p WHERE p.queue = $1)
  ORDER BY priority DESC, run_at, id
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE ${JOBS} j
  SET state = 'running', attempt = j.attempt + 1, lease_token = j.lease_token + 1, locked_by = $3,
      locked_until = ${NOW} + ${ms("$4::float8")}, started_at = ${NOW}, progress = NULL
  WHERE j.id = ANY(ARRAY(SELECT id FROM c)) AND j.state = ${opaque("'pending'::text")}
  RETURNING j.id, j.queue, j.name, j.payload, j.priority, j.attempt, j.max_attempts, j.key, j.run_at, j.created_at,
            j.lease_token, j.locked_until, j.trace_context
)
SELECT array_agg(ord)::text AS ord, array_agg(id)::text AS id, array_agg(queue)::text AS queue,
       array_agg(name)::text AS name, string_agg(p, E'\\x01') AS payload, array_agg(priority)::text AS priority,
       array_agg(attempt)::text AS attempt, array_agg(max_attempts)::text AS max_attempts,
       array_agg(key)::text AS key, array_agg(${epochMsText("run_at")})::text AS run_at,
       array_agg(${epochMsText("created_at")})::text AS created_at, array_agg(lease_token)::text AS lease_token,
       array_agg(${epochMsText("locked_until")})::text AS locked_until, array_agg(trace_context)::text AS trace_context
FROM (
  SELECT *, row_number() OVER w AS ord, sum(octet_length(p)) OVER w / ${CLAIM_PART_BYTES} AS part
  FROM (SELECT *, payload::text AS p FROM claimed OFFSET 0) texts
  WINDOW w AS (ORDER BY priority DESC, run_at, id ROWS UNBOUNDED PRECEDING)
) parts
GROUP BY part`;

/**
 * Extends the leases still held ($1 ids, $2 tokens) to now + $3 ms; returns the (id, token) pairs
 * held. Opaque arrays and state, as FINISH_JOBS (the same plan flip).
 */
export const EXTEND_LEASES = `
UPDATE ${JOBS} j SET locked_until = ${NOW} + ${ms("$3::float8")}
FROM unnest(${opaque("$1::bigint[]")}, ${opaque("$2::int[]")}) AS u(id, token)
WHERE j.id = u.id AND j.lease_token = u.token AND j.state = ${opaque("'running'::text")}
RETURNING j.id, u.token, j.cancel_requested`;

/**
 * returnJobs ($1 ids, $2 tokens): claimed jobs never started go back as they were — run_at kept,
 * the attempt not counted, no history entry; cancelled instead when a cancel was requested.
 * Opaque arrays and state, as FINISH_JOBS.
 */
export const RETURN_JOBS = `
WITH returned AS (
  UPDATE ${JOBS} j
  SET state = CASE WHEN j.cancel_requested THEN 'cancelled' ELSE 'pending' END,
      attempt = j.attempt - 1,
      started_at = CASE WHEN j.attempt = 1 THEN NULL ELSE j.started_at END,
      finished_at = CASE WHEN j.cancel_requested THEN ${NOW} ELSE j.finished_at END,
      locked_by = NULL, locked_until = NULL, progress = NULL, cancel_requested = false
  FROM unnest(${opaque("$1::bigint[]")}, ${opaque("$2::int[]")}) AS u(id, token)
  WHERE j.id = u.id AND j.lease_token = u.token AND j.state = ${opaque("'running'::text")}
  RETURNING j.id, j.queue, j.state, j.has_dependents
)
SELECT r.id, r.queue, r.state, r.has_dependents, ${notifyQueues("returned WHERE state = 'pending'")} AS notified FROM returned r`;

/** A cancel was requested while the job ran and the outcome is not "completed": it ends cancelled. */
const CANCELLING = "(j.cancel_requested AND u.kind <> 'completed')";

/**
 * A completion whose history entry is left implicit (JOB_COLUMNS rebuilds it from the columns;
 * migrations.ts version 3): no error fields, a worker and a start time to rebuild it from.
 */
const IMPLICIT =
  "(u.kind = 'completed' AND u.error IS NULL AND u.logs IS NULL AND u.worker IS NOT NULL AND j.started_at IS NOT NULL)";

/**
 * Applies a batch of outcomes in one statement, each fenced by its lease token (a stale token or
 * a job no longer running matches nothing and reports not applied). The transition mirrors
 * common.ts `outcomeTransition` and the history entry `attemptFromOutcome`:
 * - a cancel requested while the job ran turns every outcome but "completed" into "cancelled";
 * - retry → pending at now + delay (charged), snoozed → pending at now + delay (not charged),
 *   released → pending now (not charged, outcome "interrupted");
 * - leaving "pending" stamps finished_at; the lease and the cancel request are cleared.
 * Arrays: $1 id, $2 token, $3 kind, $4 delay ms, $5 result JSON (completed only), $6 worker,
 * $7 error message, $8 stack, $9 error kind, $10 the attempt's job log (JSON array text, or
 * null: no `logs` in the entry). Returns the (id, token) pairs applied.
 *
 * What does not depend on the row is computed once per outcome in "u"; what depends on the row
 * (the cancel request, the attempt, started_at) is read in SET, from the row version the UPDATE
 * locked — a cancel request committed a moment before is seen, never lost. (A row subquery in
 * SET did the same but ran as a subplan per row: ~1 ms of a ~2.5 ms batch of 100.)
 *
 * The outcome arrays and the state test are opaque, so the one plan is Nested Loop (Function
 * Scan u → Index Scan jobs_pkey). With the values visible, statistics taken while every job was
 * pending made the planner expect no running job, scan jobs and rescan the 500 outcomes per
 * running row. bench/hot-plans.ts, 50,000 jobs, batches of 500, first batch (custom plan):
 * - never analyzed: Hash Join (u, Hash (Seq Scan jobs)), 5,133 buffers, 12.3 ms.
 * - analyzed: Nested Loop (Seq Scan jobs → Function Scan u, 500 loops), 97.2 ms — on every
 *   connection's first 5 finishes; over a run 23.2 µs/job of server time instead of 14.1.
 * This shape, both states: Nested Loop (Function Scan → Index Scan jobs_pkey, 500 loops, 1,856
 * buffers), 7.6-7.8 ms; 14.2 buffers and 14.2-14.6 µs/job over a run in both states.
 */
const finishJobs = (linked: boolean) => `
WITH u AS (
  SELECT u.*,
         CASE WHEN u.kind IN ('retry', 'snoozed', 'released') THEN 'pending' ELSE u.kind END AS to_state,
         CASE u.kind WHEN 'retry' THEN 'retried' WHEN 'released' THEN 'interrupted' ELSE u.kind END AS outcome,
         u.kind IN ('snoozed', 'released') AS uncharge,
         CASE WHEN u.kind IN ('retry', 'snoozed') THEN ${NOW} + ${ms("coalesce(u.delay_ms, 0)")}
              WHEN u.kind = 'released' THEN ${NOW} END AS retry_at,
         jsonb_strip_nulls(jsonb_build_object('error', u.error, 'stack', u.stack, 'kind', u.error_kind)) AS error_fields,
         CASE WHEN u.logs IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('logs', u.logs::jsonb) END AS log_field
  FROM unnest(${["$1::bigint[]", "$2::int[]", "$3::text[]", "$4::float8[]", "$5::text[]", "$6::text[]", "$7::text[]", "$8::text[]", "$9::text[]", "$10::text[]"].map(opaque).join(", ")})
    AS u(id, token, kind, delay_ms, result, worker, error, stack, error_kind, logs)
), finished AS (
  UPDATE ${JOBS} j
  SET state = CASE WHEN ${CANCELLING} THEN 'cancelled' ELSE u.to_state END,
      attempt = j.attempt - CASE WHEN u.uncharge AND NOT ${CANCELLING} THEN 1 ELSE 0 END,
      run_at = CASE WHEN ${CANCELLING} OR u.retry_at IS NULL THEN j.run_at ELSE u.retry_at END,
      finished_at = CASE WHEN u.to_state = 'pending' AND NOT ${CANCELLING} THEN j.finished_at ELSE ${NOW} END,
      attempts = CASE WHEN ${IMPLICIT} THEN j.attempts ELSE j.attempts || jsonb_build_array(
        jsonb_build_object('attempt', j.attempt, 'startedAt', ${iso(`coalesce(j.started_at, ${NOW})`)},
                           'finishedAt', ${iso(NOW)}, 'worker', u.worker,
                           'outcome', CASE WHEN ${CANCELLING} THEN 'cancelled' ELSE u.outcome END)
        || u.error_fields
        || u.log_field
        || CASE WHEN ${CANCELLING} OR u.retry_at IS NULL THEN '{}'::jsonb
                ELSE jsonb_build_object('retryAt', ${iso("u.retry_at")}) END) END,
      completed_by = CASE WHEN ${IMPLICIT} THEN u.worker END,
      last_error = coalesce(u.error, j.last_error),
      result = CASE WHEN u.kind = 'completed' THEN u.result::jsonb ELSE j.result END,
      locked_by = NULL, locked_until = NULL, cancel_requested = false
  FROM u
  WHERE j.id = u.id AND j.lease_token = u.token AND j.state = ${opaque("'running'::text")}${linked ? "" : " AND j.has_dependents IS NOT TRUE"}
  RETURNING j.id, u.token, j.queue, j.state, j.has_dependents
)
SELECT f.id, f.token, f.queue, f.state, f.has_dependents, ${notifyQueues("finished WHERE state = 'pending'")} AS notified FROM finished f`;

/**
 * FINISH_JOBS skips the jobs that have dependents (has_dependents: the finish must resolve them
 * in its transaction); leases.ts finishes those with FINISH_JOBS_LINKED in a transaction that
 * also runs RESOLVE_DEPENDENTS. A job without dependents pays one boolean test.
 */
export const FINISH_JOBS = finishJobs(false);
export const FINISH_JOBS_LINKED = finishJobs(true);

/**
 * FINISH_JOBS for a batch of plain completions only (kind "completed", no error, a worker): what
 * most batches are. Arrays: $1 id, $2 token, $3 result JSON, $4 worker. The same row as
 * FINISH_JOBS writes for them (the history entry left implicit when started_at is set, the
 * cancel request cleared, last_error kept), without its per-column CASEs, error object and
 * NOTIFY (a completed job wakes nobody), and four arrays to send instead of nine.
 *
 * Opaque arrays and state, as FINISH_JOBS. bench/hot-plans.ts (50,000 jobs, batches of 500), both
 * states (never analyzed, analyzed while every job was pending), first batch (custom plan) and
 * the rest (generic): Nested Loop (Function Scan u → Index Scan jobs_pkey, 500 loops). Figures:
 * bench/NOTES.md finding 13. Jobs with dependents are skipped, as FINISH_JOBS does.
 */
export const FINISH_COMPLETED = `
UPDATE ${JOBS} j
SET state = 'completed', finished_at = ${NOW},
    attempts = CASE WHEN j.started_at IS NOT NULL THEN j.attempts ELSE j.attempts || jsonb_build_array(
      jsonb_build_object('attempt', j.attempt, 'startedAt', ${iso(NOW)}, 'finishedAt', ${iso(NOW)},
                         'worker', u.worker, 'outcome', 'completed')) END,
    completed_by = CASE WHEN j.started_at IS NOT NULL THEN u.worker END,
    result = u.result::jsonb,
    locked_by = NULL, locked_until = NULL, cancel_requested = false
FROM unnest(${["$1::bigint[]", "$2::int[]", "$3::text[]", "$4::text[]"].map(opaque).join(", ")}) AS u(id, token, result, worker)
WHERE j.id = u.id AND j.lease_token = u.token AND j.state = ${opaque("'running'::text")} AND j.has_dependents IS NOT TRUE
RETURNING j.id, u.token, j.queue, j.state`;

/** completeInTransaction: locks the job for the transaction if the lease ($1 id, $2 token) is held. */
export const LOCK_HELD_JOB = `SELECT id FROM ${JOBS} WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR UPDATE`;

/** $1 id, $2 token, $3 progress JSON. */
export const SET_PROGRESS = `UPDATE ${JOBS} SET progress = $3::jsonb WHERE id = $1 AND lease_token = $2 AND state = 'running'`;

/**
 * Rescues up to $1 running jobs whose lease expired: pending now (outcome "lost", the attempt
 * stays charged), failed when the attempts are spent, cancelled when a cancel was requested —
 * as the memory store does. SKIP LOCKED: any number of workers may run the rescuer at once; a
 * row one of them holds is skipped by the others, never rescued twice (and a job a worker is
 * completing in a transaction holds its row lock, so it is not rescued under it).
 */
export const RESCUE_EXPIRED = `
WITH expired AS (
  SELECT id FROM ${JOBS}
  WHERE locked_until < ${NOW} AND state = 'running'
  ORDER BY locked_until
  LIMIT $1
  FOR UPDATE SKIP LOCKED
), rescued AS (
  UPDATE ${JOBS} j
  SET (state, run_at, finished_at, attempts, last_error, locked_by, locked_until, cancel_requested) = (
    SELECT v.state,
           CASE WHEN v.state = 'pending' THEN ${NOW} ELSE j.run_at END,
           CASE WHEN v.state = 'pending' THEN j.finished_at ELSE ${NOW} END,
           j.attempts || jsonb_build_array(jsonb_build_object(
             'attempt', j.attempt, 'startedAt', ${iso(`coalesce(j.started_at, ${NOW})`)}, 'finishedAt', ${iso(NOW)},
             'worker', j.locked_by, 'outcome', 'lost', 'error', v.error, 'kind', 'lost')),
           v.error, NULL::text, NULL::timestamptz, false
    FROM (
      SELECT CASE WHEN j.cancel_requested THEN 'cancelled'
                  WHEN j.attempt >= j.max_attempts THEN 'failed'
                  ELSE 'pending' END AS state,
             'lease expired: worker ' || coalesce(j.locked_by, '?') || ' stopped heartbeating' AS error
    ) v
  )
  FROM expired e
  WHERE j.id = e.id AND j.state = 'running'
  RETURNING j.id, j.queue, j.name, j.state, j.attempt, j.has_dependents
)
SELECT r.*, ${notifyQueues("rescued WHERE state = 'pending'")} AS notified FROM rescued r`;

/** Earliest run_at of pending jobs in queues $1 (pendingHeads per queue). */
export const NEXT_RUN_AT = `
SELECT min(h.run_at) AS next FROM unnest($1::text[]) AS q(queue), LATERAL ${pendingHeads("q.queue")} h`;
