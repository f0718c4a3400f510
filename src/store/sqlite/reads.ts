/**
 * The SQLite store's reads: one job, a page of jobs, queue stats, throughput, the next due
 * time. Each runs on the connection as one synchronous step (connection.ts `run`).
 */
import type { JobRecord } from "../../job.js";
import { decodeCursor, emptyStats, encodeCursor } from "../common.js";
import type { JobFilter, JobPage, QueueStats, ThroughputBucket } from "../types.js";
import type { Connection } from "./connection.js";
import * as Q from "./queries.js";
import { type JobRow, jobFromRow, parseId } from "./rows.js";

const NO_CURSOR = Number.MAX_SAFE_INTEGER;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

export function getJob(c: Connection, id: string): JobRecord | null {
  const n = parseId(id);
  const row = n === null ? undefined : (c.q(Q.SELECT_JOB).get(n) as JobRow | undefined);
  return row ? jobFromRow(row) : null;
}

export function listJobs(c: Connection, filter: JobFilter): JobPage {
  const limit = Math.max(0, Math.floor(filter.limit ?? 50));
  const before = decodeCursor(filter.cursor) ?? NO_CURSOR;
  const queue = filter.queue || null;
  const state = filter.state || null;
  const name = filter.name || null;
  const sql =
    state === "running"
      ? Q.LIST_RUNNING_JOBS
      : queue !== null
        ? state !== null
          ? name !== null
            ? Q.LIST_JOBS_BY_QUEUE_STATE_NAME
            : Q.LIST_JOBS_BY_QUEUE_STATE
          : name !== null
            ? Q.LIST_JOBS_BY_QUEUE_NAME
            : Q.LIST_JOBS_BY_QUEUE
        : state !== null
          ? name !== null
            ? Q.LIST_JOBS_BY_STATE_NAME
            : Q.LIST_JOBS_BY_STATE
          : name !== null
            ? Q.LIST_JOBS_BY_NAME
            : Q.LIST_JOBS;
  // One row more than the page tells whether there is a next page.
  const rows = c.q(sql).all({
    queue,
    state,
    name,
    before,
    search: filter.search || null,
    limit: limit + 1,
  }) as JobRow[];
  const page = rows.slice(0, limit);
  const nextCursor = rows.length > limit && page.length > 0 ? encodeCursor(page[page.length - 1].id) : null;
  return { jobs: page.map(jobFromRow), nextCursor };
}

/**
 * Index-only passes: counts per (queue, state) (a walk of errand_jobs_queue_state_idx, and of
 * errand_jobs_lease_idx for the running jobs — SQLite has no O(1) count); per queue with pending jobs, the delayed ones and the oldest run_at;
 * completed/failed in the last day (a range of errand_jobs_finished_idx). One read transaction.
 */
export function stats(c: Connection): QueueStats[] {
  return c.db.transaction(() => {
    const now = c.now();
    const byQueue = new Map<string, QueueStats>();
    const get = (queue: string): QueueStats => {
      let s = byQueue.get(queue);
      if (!s) {
        s = emptyStats(queue);
        byQueue.set(queue, s);
      }
      return s;
    };
    for (const row of c.q(Q.STATS_BY_STATE).all() as {
      queue: string;
      state: JobRecord["state"];
      n: number;
    }[]) {
      if (row.n === 0) continue;
      const s = get(row.queue);
      if (row.state === "pending")
        s.delayed = row.n; // every pending job, until split below
      else s[row.state] = row.n;
    }
    for (const s of byQueue.values()) {
      if (s.delayed > 0) {
        const p = c.q(Q.STATS_PENDING).get({ queue: s.queue, now }) as {
          delayed: number;
          oldest: number | null;
        };
        s.pending = s.delayed - p.delayed;
        s.delayed = p.delayed;
        s.oldestPendingMs = s.pending > 0 && p.oldest !== null ? now - p.oldest : null;
      }
      if (s.completed > 0 || s.failed > 0) {
        const f = c.q(Q.STATS_FINISHED).get({
          queue: s.queue,
          dayAgo: now - DAY_MS,
          hourAgo: now - HOUR_MS,
        }) as {
          completedDay: number;
          completedHour: number;
          failedDay: number;
          failedHour: number;
        };
        s.completedLastDay = f.completedDay;
        s.completedLastHour = f.completedHour;
        s.failedLastDay = f.failedDay;
        s.failedLastHour = f.failedHour;
      }
    }
    return [...byQueue.values()].sort((a, b) => a.queue.localeCompare(b.queue));
  })();
}

export function throughput(c: Connection, sinceMs: number, bucketMs: number): ThroughputBucket[] {
  const now = c.now();
  const since = now - sinceMs;
  const first = Math.floor(since / bucketMs);
  const last = Math.floor(now / bucketMs);
  const fewBuckets =
    Number.isSafeInteger(bucketMs) &&
    bucketMs > 0 &&
    last >= first &&
    last - first < Q.THROUGHPUT_MAX_BUCKETS;
  const rows = (
    fewBuckets
      ? c.q(Q.THROUGHPUT_BY_BUCKET).all({ bucket: bucketMs, since, first, last })
      : c.q(Q.THROUGHPUT).all({ bucket: bucketMs, since })
  ) as { queue: string; bucket: number; completed: number; failed: number }[];
  return rows
    .filter((r) => r.completed > 0 || r.failed > 0)
    .map((r) => ({
      at: new Date(r.bucket * bucketMs),
      queue: r.queue,
      completed: r.completed,
      failed: r.failed,
    }))
    .sort((a, b) => a.at.getTime() - b.at.getTime() || a.queue.localeCompare(b.queue));
}

/** The earliest run_at of a pending job in any of `queues`. */
export function nextRunAt(c: Connection, queues: string[]): Date | null {
  let next: number | null = null;
  for (const queue of new Set(queues)) {
    const t = (c.q(Q.NEXT_RUN_AT).get({ queue }) as { runAt: number | null }).runAt;
    if (t !== null && (next === null || t < next)) next = t;
  }
  return next === null ? null : new Date(next);
}
