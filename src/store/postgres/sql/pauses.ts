/** Paused queues and schedules, and "how many jobs are ahead" (pauses.ts). */
import { JOBS, NOW, notifyQueues } from "./fragments.js";

/** Pausing a paused queue keeps its first paused_at (the no-op update makes RETURNING answer it). */
export const PAUSE_QUEUE = `
INSERT INTO {{schema}}.paused_queues AS p (queue, paused_at) VALUES ($1, ${NOW})
ON CONFLICT (queue) DO UPDATE SET paused_at = p.paused_at
RETURNING queue, paused_at`;

/** Lifts a pause and wakes the queue's listeners (NOTIFY on commit, as an insert does). */
export const RESUME_QUEUE = `
WITH resumed AS (DELETE FROM {{schema}}.paused_queues WHERE queue = $1 RETURNING queue)
SELECT (SELECT count(*) FROM resumed) AS n, ${notifyQueues("resumed")} AS notified`;

export const LIST_PAUSED_QUEUES = "SELECT queue, paused_at FROM {{schema}}.paused_queues ORDER BY queue";

export const QUEUE_IS_PAUSED =
  "SELECT EXISTS (SELECT 1 FROM {{schema}}.paused_queues WHERE queue = $1) AS paused";

/** Pausing a paused schedule keeps its first paused_at; resuming sets it NULL. */
export const SET_SCHEDULE_PAUSED = `
UPDATE {{schema}}.schedules
SET paused_at = CASE WHEN $2::boolean THEN coalesce(paused_at, ${NOW}) ELSE NULL END
WHERE name = $1
RETURNING name, cron, timezone, job_name, queue, payload, priority, missed, source, next_run_at,
          last_fired_at, last_slot, created_at, paused_at`;

/**
 * The due pending jobs of queue $1 before job $2 in claim order (priority desc, run_at, id), at
 * most $3: a walk of jobs_claim_idx that stops at the cap. The job's own row gives its place
 * (its run_at to the microsecond).
 */
export const COUNT_JOBS_AHEAD = `
WITH me AS (SELECT priority, run_at, id FROM ${JOBS} WHERE id = $2::bigint)
SELECT count(*) AS n FROM (
  SELECT 1 FROM ${JOBS} j, me
  WHERE j.queue = $1 AND j.state = 'pending' AND j.run_at <= ${NOW} AND j.id <> me.id
    AND (j.priority > me.priority OR (j.priority = me.priority AND (j.run_at, j.id) < (me.run_at, me.id)))
  LIMIT $3
) ahead`;
