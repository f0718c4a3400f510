/** Reading jobs and their counts: one job, pages of jobs, per-queue stats, throughput, the clock. */

import type pg from "pg";
import { ValidationError } from "../../errors.js";
import type { JobRecord } from "../../job.js";
import { decodeCursor, emptyStats, encodeCursor } from "../common.js";
import type { JobFilter, JobPage, QueueStats, ThroughputBucket } from "../types.js";
import { SLOW_MS } from "./connection.js";
import type { Db } from "./db.js";
import { isJobId, toDate, toDateOrNull, toJob } from "./rows.js";
import { compactBeforeRead } from "./upkeep.js";

export async function now(db: Db): Promise<Date> {
  const { rows } = await db.run("SELECT_NOW");
  return toDate(rows[0].now);
}

export async function getJob(db: Db, id: string): Promise<JobRecord | null> {
  if (!isJobId(String(id))) return null;
  const { rows } = await db.run("SELECT_JOB", [String(id)]);
  return rows.length > 0 ? toJob(rows[0]) : null;
}

export async function listJobs(db: Db, filter: JobFilter): Promise<JobPage> {
  const limit = filter.limit ?? 50;
  const before = decodeCursor(filter.cursor);
  if (!Number.isInteger(limit) || limit < 1) return { jobs: [], nextCursor: null };
  const cursor = before === null ? null : String(before);
  const dead = (filter.state === "failed" || filter.state === "cancelled") && !filter.name && !filter.search;
  const { rows } = dead
    ? await db.run("LIST_DEAD_JOBS", [filter.queue || null, filter.state, cursor, limit + 1], db.pool, false)
    : await db.run(
        "LIST_JOBS",
        [
          filter.queue || null,
          filter.state || null,
          filter.name || null,
          cursor,
          filter.search || null,
          limit + 1,
        ],
        db.pool,
        false,
      );
  const page = rows.slice(0, limit).map(toJob);
  const nextCursor = rows.length > limit ? encodeCursor(page[page.length - 1].id) : null;
  return { jobs: page, nextCursor };
}

/** The earliest due time of a pending job in `queues`, or null. */
export async function nextRunAt(db: Db, queues: string[]): Promise<Date | null> {
  if (queues.length === 0) return null;
  const { rows } = await db.run("NEXT_RUN_AT", [queues]);
  return toDateOrNull(rows[0]?.next);
}

/** Runs read queries in one transaction without JIT (queries.ts NO_JIT). */
async function withoutJit<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return (await db.transaction(async (client) => {
    await client.query(db.sql.NO_JIT);
    return fn(client);
  }, SLOW_MS)) as T;
}

export async function stats(db: Db): Promise<QueueStats[]> {
  await compactBeforeRead(db);
  const { rows } = await withoutJit(db, (client) => db.run("STATS", [], client));
  const byQueue = new Map<string, QueueStats>();
  for (const r of rows) {
    const queue = r.queue as string;
    let s = byQueue.get(queue);
    if (!s) {
      s = emptyStats(queue);
      byQueue.set(queue, s);
    }
    const n = Number(r.n);
    switch (r.state) {
      case "pending":
        // n counts every pending job; due ones are those not delayed.
        s.delayed = Number(r.delayed);
        s.pending = n - s.delayed;
        s.oldestPendingMs = r.oldest_ms === null ? null : Math.max(0, Number(r.oldest_ms));
        break;
      case "waiting":
        s.waiting = n;
        break;
      case "running":
        s.running = n;
        break;
      case "completed":
        s.completed = n;
        s.completedLastHour = Number(r.last_hour);
        s.completedLastDay = Number(r.last_day);
        break;
      case "failed":
        s.failed = n;
        s.failedLastHour = Number(r.last_hour);
        s.failedLastDay = Number(r.last_day);
        break;
      case "cancelled":
        s.cancelled = n;
        break;
    }
  }
  return [...byQueue.values()].sort((a, b) => a.queue.localeCompare(b.queue));
}

export async function throughput(db: Db, sinceMs: number, bucketMs: number): Promise<ThroughputBucket[]> {
  if (!(bucketMs > 0)) throw new ValidationError(`bucketMs must be a positive number; got ${bucketMs}`);
  // Whole-minute buckets within the counters' 25 hours come from the counters; others scan.
  const fromCounters = bucketMs % 60_000 === 0 && sinceMs >= 0 && sinceMs <= 24 * 3_600_000;
  if (fromCounters) await compactBeforeRead(db);
  const { rows } = await withoutJit(db, (client) =>
    db.run(fromCounters ? "THROUGHPUT_BUCKETS" : "THROUGHPUT_SCAN", [sinceMs, bucketMs], client),
  );
  const buckets = new Map<string, ThroughputBucket>();
  for (const r of rows) {
    const at = Number(r.at);
    const id = `${r.queue}\u0000${at}`;
    let b = buckets.get(id);
    if (!b) {
      b = { at: new Date(at), queue: r.queue as string, completed: 0, failed: 0 };
      buckets.set(id, b);
    }
    if (r.state === "completed") b.completed += Number(r.n);
    else b.failed += Number(r.n);
  }
  return [...buckets.values()].sort(
    (a, b) => a.at.getTime() - b.at.getTime() || a.queue.localeCompare(b.queue),
  );
}
