/** Operating queues from the dashboard: a bounded batch of a bulk action, dead-letter groups, timings. */
import { DEAD_LETTER_MESSAGE_CHARS, DEAD_LETTER_SAMPLE } from "../../common.js";
import { epochMs, JOBS, ms, NOW, notifyQueues } from "./fragments.js";

/** The jobs a batch takes: $1 queue (null: any), $2 search (null: none), $3 limit; newest first. */
const picked = (state: "failed" | "pending") => `picked AS (
  SELECT id FROM ${JOBS}
  WHERE state = '${state}' AND ($1::text IS NULL OR queue = $1)
    AND ($2::text IS NULL OR id::text = $2 OR strpos(key, $2) > 0 OR strpos(payload::text, $2) > 0
         OR strpos(last_error, $2) > 0)
  ORDER BY id DESC LIMIT $3
  FOR UPDATE
)`;

/** → pending now with a fresh attempt budget (as RETRY_JOBS), waking the queues. */
export const BULK_RETRY = `
WITH ${picked("failed")}, retried AS (
  UPDATE ${JOBS} j SET state = 'pending', run_at = ${NOW}, attempt = 0, finished_at = NULL
  FROM picked p WHERE j.id = p.id AND j.state = 'failed'
  RETURNING j.queue
)
SELECT (SELECT count(*) FROM retried) AS n, (SELECT array_agg(DISTINCT queue) FROM retried) AS queues, x.notified
FROM ${notifyQueues("retried")} x`;

export const BULK_DISCARD = `
WITH ${picked("failed")}
DELETE FROM ${JOBS} j USING picked p WHERE j.id = p.id AND j.state = 'failed'`;

/** Pending jobs only: one that started meanwhile is left running. */
export const BULK_CANCEL = `
WITH ${picked("pending")}
UPDATE ${JOBS} j SET state = 'cancelled', finished_at = ${NOW}
FROM picked p WHERE j.id = p.id AND j.state = 'pending'`;

/** The newest failed jobs (jobs_dead_idx backwards), grouped by the start of the message. $1 queue. */
export const DEAD_LETTER_GROUPS = `
SELECT left(coalesce(last_error, ''), ${DEAD_LETTER_MESSAGE_CHARS}) AS error, count(*)::int AS n,
       ${epochMs("min(coalesce(finished_at, created_at))")} AS first_seen,
       ${epochMs("max(coalesce(finished_at, created_at))")} AS last_seen
FROM (SELECT last_error, finished_at, created_at FROM ${JOBS}
      WHERE state = 'failed' AND ($1::text IS NULL OR queue = $1)
      ORDER BY id DESC LIMIT ${DEAD_LETTER_SAMPLE}) d
GROUP BY 1 ORDER BY n DESC, error`;

/** Jobs finished within $1 ms (a range of jobs_finished_idx), newest first, at most $2. */
export const RECENT_TIMINGS = `
SELECT queue, ${epochMs("finished_at")} - ${epochMs("started_at")} AS run_ms,
       ${epochMs("started_at")} - ${epochMs("run_at")} AS wait_ms
FROM ${JOBS}
WHERE finished_at >= ${NOW} - ${ms("$1::float8")} AND state IN ('completed', 'failed') AND started_at IS NOT NULL
ORDER BY finished_at DESC, id DESC LIMIT $2`;
