/** An operator's actions (admin.ts), pruning (upkeep.ts) and the ledger (ledger.ts). */
import { JOB_COLUMNS, JOBS, ms, NOW, notifyQueues } from "./fragments.js";

// ── admin: cancel, retry, discard, prune ──────────────────────────────────────────────────

/** pending → cancelled; running → cancel requested; any other state unchanged. Returns the job. */
export const CANCEL_JOB = `
WITH updated AS (
  UPDATE ${JOBS}
  SET state = CASE WHEN state IN ('pending', 'waiting') THEN 'cancelled' ELSE state END,
      finished_at = CASE WHEN state IN ('pending', 'waiting') THEN ${NOW} ELSE finished_at END,
      cancel_requested = CASE WHEN state = 'running' THEN true ELSE cancel_requested END
  WHERE id = $1 AND state IN ('waiting', 'pending', 'running')
  RETURNING ${JOB_COLUMNS}, has_dependents
)
SELECT * FROM updated
UNION ALL
SELECT ${JOB_COLUMNS}, false FROM ${JOBS} WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM updated)`;

/**
 * → pending now, attempt budget reset, history kept. $1 ids: failed or cancelled ones; null: the
 * dead-letter queue's failed jobs only. $2 queue (null: any).
 */
export const RETRY_JOBS = `
WITH retried AS (
  UPDATE ${JOBS} SET state = 'pending', run_at = ${NOW}, attempt = 0, finished_at = NULL
  WHERE (state = 'failed' OR (state = 'cancelled' AND $1::bigint[] IS NOT NULL))
    AND ($1::bigint[] IS NULL OR id = ANY($1::bigint[]))
    AND ($2::text IS NULL OR queue = $2)
  RETURNING queue
)
SELECT (SELECT count(*) FROM retried) AS n, (SELECT array_agg(DISTINCT queue) FROM retried) AS queues, x.notified
FROM ${notifyQueues("retried")} x`;

/** Deletes failed jobs. $1 ids (null: any), $2 queue (null: any). */
export const DISCARD_JOBS = `
DELETE FROM ${JOBS}
WHERE state = 'failed'
  AND ($1::bigint[] IS NULL OR id = ANY($1::bigint[]))
  AND ($2::text IS NULL OR queue = $2)`;

/**
 * Retention, in batches of $2 rows per statement so no statement holds many row locks or runs
 * long: a range of jobs_finished_idx from its oldest end. One statement per retention class
 * (an OR of both would be a bitmap scan of every old row, per batch).
 */
export const PRUNE_COMPLETED = `
WITH victims AS (
  SELECT id FROM ${JOBS}
  WHERE state IN ('completed', 'cancelled') AND finished_at < ${NOW} - ${ms("$1::float8")}
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)
DELETE FROM ${JOBS} j USING victims v WHERE j.id = v.id`;

export const PRUNE_FAILED = `
WITH victims AS (
  SELECT id FROM ${JOBS}
  WHERE state = 'failed' AND finished_at < ${NOW} - ${ms("$1::float8")}
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)
DELETE FROM ${JOBS} j USING victims v WHERE j.id = v.id`;

// ── ledger ────────────────────────────────────────────────────────────────────────────────

/**
 * `value` NULL (not JSON null) records `undefined`. $1 key, $2 scope ('' global, else the job's
 * id), $3 the reading job's id for a per-job read (NULL for a global one): a per-job read also
 * finds a global entry its own job recorded (entries from before scopes: migrations.ts 8), its
 * own scope's entry first. Two probes of ledger_pkey.
 */
export const LEDGER_GET = `
SELECT value, value IS NULL AS is_undefined FROM {{schema}}.ledger
WHERE key = $1 AND (scope = $2 OR (scope = '' AND job_id = $3))
ORDER BY scope = '' LIMIT 1`;

/** First write wins: a key already recorded in its scope keeps its value. $1 key, $2 scope, $3 job id, $4 value. */
export const LEDGER_PUT = `
INSERT INTO {{schema}}.ledger (key, scope, job_id, value, created_at) VALUES ($1, $2, $3, $4::jsonb, ${NOW})
ON CONFLICT (scope, key) DO NOTHING`;

/** Global ctx.once entries recorded more than $1 ms ago, $2 per statement (ledger_global_idx). */
export const PRUNE_GLOBAL_LEDGER = `
WITH victims AS (
  SELECT key FROM {{schema}}.ledger
  WHERE scope = '' AND created_at < ${NOW} - ${ms("$1::float8")}
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)
DELETE FROM {{schema}}.ledger l USING victims v WHERE l.scope = '' AND l.key = v.key`;
