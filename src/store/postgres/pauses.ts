/** Paused queues and schedules on the Postgres store, and "how many jobs are ahead" (sql/pauses.ts). */
import type { QueuePause, ScheduleRecord } from "../types.js";
import type { Db } from "./db.js";
import { type Notifier, notifyLocally } from "./notifier.js";
import { isJobId, toDate, toSchedule } from "./rows.js";

export async function pauseQueue(db: Db, queue: string): Promise<QueuePause> {
  const { rows } = await db.run("PAUSE_QUEUE", [queue]);
  return { queue: rows[0].queue, pausedAt: toDate(rows[0].paused_at) };
}

export async function resumeQueue(db: Db, notifier: Notifier, queue: string): Promise<boolean> {
  const wasListening = notifier.isListening;
  const { rows } = await db.run("RESUME_QUEUE", [queue]);
  const resumed = Number(rows[0]?.n ?? 0) > 0;
  if (resumed) notifyLocally(notifier, wasListening, () => [queue]);
  return resumed;
}

export async function listPausedQueues(db: Db): Promise<QueuePause[]> {
  const { rows } = await db.run("LIST_PAUSED_QUEUES");
  return rows.map((r) => ({ queue: r.queue as string, pausedAt: toDate(r.paused_at) }));
}

export async function isQueuePaused(db: Db, queue: string): Promise<boolean> {
  const { rows } = await db.run("QUEUE_IS_PAUSED", [queue]);
  return rows[0]?.paused === true;
}

export async function setSchedulePaused(
  db: Db,
  name: string,
  paused: boolean,
): Promise<ScheduleRecord | null> {
  const { rows } = await db.run("SET_SCHEDULE_PAUSED", [name, paused]);
  return rows.length > 0 ? toSchedule(rows[0]) : null;
}

export async function countJobsAhead(
  db: Db,
  job: { id: string; queue: string },
  cap: number,
): Promise<number> {
  if (!isJobId(String(job.id))) return 0;
  const { rows } = await db.run("COUNT_JOBS_AHEAD", [
    job.queue,
    String(job.id),
    Math.max(0, Math.floor(cap)),
  ]);
  return Number(rows[0]?.n ?? 0);
}
