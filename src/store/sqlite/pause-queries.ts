/** The SQL of paused queues and schedules, and of "how many jobs are ahead" (pauses.ts). */
import { NOW } from "./queries.js";

/** Pausing a paused queue keeps its first paused_at. */
export const QUEUE_PAUSE = `
INSERT INTO errand_paused_queues (queue, paused_at) VALUES (?, ${NOW})
ON CONFLICT (queue) DO NOTHING`;

export const QUEUE_PAUSED_AT = "SELECT paused_at FROM errand_paused_queues WHERE queue = ?";

export const QUEUE_RESUME = "DELETE FROM errand_paused_queues WHERE queue = ?";

export const QUEUES_PAUSED = "SELECT queue, paused_at FROM errand_paused_queues ORDER BY queue";

/** Pausing a paused schedule keeps its first paused_at; resuming sets it NULL. */
export const SCHEDULE_SET_PAUSED = `
UPDATE errand_schedules
SET paused_at = CASE WHEN @paused THEN coalesce(paused_at, ${NOW}) ELSE NULL END
WHERE name = @name
RETURNING *`;

/**
 * The due pending jobs of @queue before the job (@priority, @runAt, @id) in claim order, at most
 * @cap of them: a walk of errand_jobs_claim_idx that stops at the cap.
 */
export const JOBS_AHEAD = `
SELECT count(*) AS n FROM (
  SELECT 1 FROM errand_jobs INDEXED BY errand_jobs_claim_idx
  WHERE state = 'pending' AND queue = @queue AND run_at <= ${NOW} AND id <> @id
    AND (priority > @priority OR (priority = @priority AND (run_at < @runAt OR (run_at = @runAt AND id < @id))))
  LIMIT @cap
)`;
