/** Paused queues and schedules on the SQLite store, and "how many jobs are ahead" (pause-queries.ts). */
import type { QueuePause, ScheduleRecord } from "../types.js";
import type { Connection } from "./connection.js";
import * as Q from "./pause-queries.js";
import { parseId, type ScheduleRow, scheduleFromRow } from "./rows.js";

/** One BEGIN IMMEDIATE transaction: the pause row (kept when there is one), read back. */
export function pauseQueue(c: Connection, queue: string): QueuePause {
  return c.db
    .transaction(() => {
      c.q(Q.QUEUE_PAUSE).run(queue);
      const row = c.q(Q.QUEUE_PAUSED_AT).get(queue) as { paused_at: number };
      return { queue, pausedAt: new Date(row.paused_at) };
    })
    .immediate();
}

export function resumeQueue(c: Connection, queue: string): boolean {
  return c.q(Q.QUEUE_RESUME).run(queue).changes > 0;
}

export function listPausedQueues(c: Connection): QueuePause[] {
  const rows = c.q(Q.QUEUES_PAUSED).all() as { queue: string; paused_at: number }[];
  return rows.map((r) => ({ queue: r.queue, pausedAt: new Date(r.paused_at) }));
}

/** Also run inside the claim transaction (workers.ts), so a claim of a paused queue takes nothing. */
export function isQueuePaused(c: Connection, queue: string): boolean {
  return c.q(Q.QUEUE_PAUSED_AT).get(queue) !== undefined;
}

export function setSchedulePaused(c: Connection, name: string, paused: boolean): ScheduleRecord | null {
  const row = c.q(Q.SCHEDULE_SET_PAUSED).get({ name, paused: paused ? 1 : 0 }) as ScheduleRow | undefined;
  return row ? scheduleFromRow(row) : null;
}

export function countJobsAhead(
  c: Connection,
  job: { id: string; queue: string; priority: number; runAt: Date },
  cap: number,
): number {
  const id = parseId(job.id) ?? 0;
  const row = c.q(Q.JOBS_AHEAD).get({
    queue: job.queue,
    id,
    priority: job.priority,
    runAt: job.runAt.getTime(),
    cap: Math.max(0, Math.floor(cap)),
  }) as { n: number };
  return row.n;
}
