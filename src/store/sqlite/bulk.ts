/**
 * The SQLite store's reads and writes for operating queues from the dashboard: one bounded
 * batch of a bulk action by filter, dead letters grouped by error message, recent timings.
 */
import { bulkState, DEAD_LETTER_MESSAGE_CHARS, DEAD_LETTER_SAMPLE } from "../common.js";
import type { BulkBatch, DeadLetterGroup, JobTiming } from "../types.js";
import type { Connection } from "./connection.js";
import * as Q from "./queries.js";
import { listJobs } from "./reads.js";
import { discardJobs, retryJobs } from "./upkeep.js";

/** The newest failed jobs (a walk of errand_jobs_state_idx or _queue_state_idx), grouped. */
const DEAD_LETTER_GROUPS = `
SELECT substr(coalesce(last_error, ''), 1, ${DEAD_LETTER_MESSAGE_CHARS}) AS error, count(*) AS n,
       min(coalesce(finished_at, created_at)) AS first_seen, max(coalesce(finished_at, created_at)) AS last_seen
FROM (SELECT last_error, finished_at, created_at FROM errand_jobs
      WHERE state = 'failed' AND (@queue IS NULL OR queue = @queue)
      ORDER BY id DESC LIMIT ${DEAD_LETTER_SAMPLE})
GROUP BY 1 ORDER BY n DESC, error`;

/** A range of errand_jobs_finished_idx per (queue, state) would need the queues; finished_at suffices. */
const RECENT_TIMINGS = `
SELECT queue, finished_at - started_at AS run_ms, started_at - run_at AS wait_ms
FROM errand_jobs
WHERE finished_at >= @since AND state IN ('completed', 'failed') AND started_at IS NOT NULL
ORDER BY finished_at DESC, id DESC LIMIT @limit`;

/** One BEGIN IMMEDIATE transaction: picks up to `limit` matching jobs and acts on them. Returns the queues woken (retry) and the count. */
export function actOnJobs(c: Connection, batch: BulkBatch): { count: number; woken: string[] } {
  return c.db
    .transaction(() => {
      const page = listJobs(c, { ...batch, state: bulkState(batch.action) });
      const ids = page.jobs.map((j) => j.id);
      if (ids.length === 0) return { count: 0, woken: [] };
      if (batch.action === "retry") {
        const woken = retryJobs(c, { ids });
        return { count: woken.length, woken };
      }
      if (batch.action === "discard") return { count: discardJobs(c, { ids }), woken: [] };
      let count = 0;
      for (const id of ids) count += c.q(Q.CANCEL_PENDING).run(Number(id)).changes;
      return { count, woken: [] };
    })
    .immediate();
}

export function deadLetterGroups(c: Connection, queue?: string): DeadLetterGroup[] {
  const rows = c.q(DEAD_LETTER_GROUPS).all({ queue: queue || null }) as {
    error: string;
    n: number;
    first_seen: number;
    last_seen: number;
  }[];
  return rows.map((r) => ({
    error: r.error,
    count: r.n,
    firstSeen: new Date(r.first_seen),
    lastSeen: new Date(r.last_seen),
  }));
}

export function recentTimings(c: Connection, windowMs: number, limit: number): JobTiming[] {
  const rows = c.q(RECENT_TIMINGS).all({ since: c.now() - windowMs, limit }) as {
    queue: string;
    run_ms: number;
    wait_ms: number;
  }[];
  return rows.map((r) => ({ queue: r.queue, runMs: Math.max(0, r.run_ms), waitMs: Math.max(0, r.wait_ms) }));
}
