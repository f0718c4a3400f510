/**
 * The memory store's reads over its rows: the job list (newest first, by cursor), the per-queue
 * stats and the throughput buckets, each a plain function of the rows and the store's now.
 */
import type { JobRecord } from "../../job.js";
import {
  DEAD_LETTER_MESSAGE_CHARS,
  DEAD_LETTER_SAMPLE,
  decodeCursor,
  emptyStats,
  encodeCursor,
  matchesSearch,
} from "../common.js";
import type { DeadLetterGroup, JobFilter, JobTiming, QueueStats, ThroughputBucket } from "../types.js";

/** What the reads need of a row. */
export interface ReadRow extends JobRecord {
  seq: number;
}

/** One page of rows matching `filter`, newest first, and the cursor of the next page. */
export function listRows<R extends ReadRow>(
  rows: Iterable<R>,
  filter: JobFilter,
): { page: R[]; nextCursor: string | null } {
  const limit = filter.limit ?? 50;
  const before = decodeCursor(filter.cursor);
  const matching = [...rows]
    .filter(
      (r) =>
        (!filter.queue || r.queue === filter.queue) &&
        (!filter.state || r.state === filter.state) &&
        (!filter.name || r.name === filter.name) &&
        (before === null || r.seq < before) &&
        (!filter.search || matchesSearch(r, filter.search)),
    )
    .sort((a, b) => b.seq - a.seq);
  const page = matching.slice(0, limit);
  const nextCursor = matching.length > limit ? encodeCursor(page[page.length - 1].seq) : null;
  return { page, nextCursor };
}

export function statsOf(rows: Iterable<ReadRow>, now: number): QueueStats[] {
  const byQueue = new Map<string, QueueStats>();
  for (const r of rows) {
    let s = byQueue.get(r.queue);
    if (!s) {
      s = emptyStats(r.queue);
      byQueue.set(r.queue, s);
    }
    if (r.state === "pending") {
      if (r.runAt.getTime() <= now) {
        s.pending++;
        const age = now - r.runAt.getTime();
        s.oldestPendingMs = Math.max(s.oldestPendingMs ?? 0, age);
      } else s.delayed++;
    } else s[r.state]++;
    const finished = r.finishedAt?.getTime();
    if (finished !== undefined && (r.state === "completed" || r.state === "failed")) {
      if (now - finished <= 3_600_000) s[r.state === "completed" ? "completedLastHour" : "failedLastHour"]++;
      if (now - finished <= 86_400_000) s[r.state === "completed" ? "completedLastDay" : "failedLastDay"]++;
    }
  }
  return [...byQueue.values()].sort((a, b) => a.queue.localeCompare(b.queue));
}

export function throughputOf(
  rows: Iterable<ReadRow>,
  now: number,
  sinceMs: number,
  bucketMs: number,
): ThroughputBucket[] {
  const buckets = new Map<string, ThroughputBucket>();
  for (const r of rows) {
    const finished = r.finishedAt?.getTime();
    if (finished === undefined || now - finished > sinceMs) continue;
    if (r.state !== "completed" && r.state !== "failed") continue;
    const at = Math.floor(finished / bucketMs) * bucketMs;
    const id = `${r.queue}\u0000${at}`;
    let b = buckets.get(id);
    if (!b) {
      b = { at: new Date(at), queue: r.queue, completed: 0, failed: 0 };
      buckets.set(id, b);
    }
    b[r.state]++;
  }
  return [...buckets.values()].sort(
    (a, b) => a.at.getTime() - b.at.getTime() || a.queue.localeCompare(b.queue),
  );
}

/** Failed rows (the newest DEAD_LETTER_SAMPLE) grouped by the start of their error message. */
export function deadLetterGroupsOf(rows: Iterable<ReadRow>, queue?: string): DeadLetterGroup[] {
  const failed = [...rows]
    .filter((r) => r.state === "failed" && (!queue || r.queue === queue))
    .sort((a, b) => b.seq - a.seq)
    .slice(0, DEAD_LETTER_SAMPLE);
  const groups = new Map<string, DeadLetterGroup>();
  for (const r of failed) {
    const error = (r.lastError ?? "").slice(0, DEAD_LETTER_MESSAGE_CHARS);
    const at = (r.finishedAt ?? r.createdAt).getTime();
    const g = groups.get(error);
    if (!g) groups.set(error, { error, count: 1, firstSeen: new Date(at), lastSeen: new Date(at) });
    else {
      g.count++;
      if (at < g.firstSeen.getTime()) g.firstSeen = new Date(at);
      if (at > g.lastSeen.getTime()) g.lastSeen = new Date(at);
    }
  }
  return [...groups.values()].sort((a, b) => b.count - a.count || a.error.localeCompare(b.error));
}

/** Timings of the rows finished (completed or failed) since `since`, newest first. */
export function timingsOf(rows: Iterable<ReadRow>, since: number, limit: number): JobTiming[] {
  return [...rows]
    .filter(
      (r) =>
        (r.state === "completed" || r.state === "failed") &&
        r.startedAt !== null &&
        r.finishedAt !== null &&
        r.finishedAt.getTime() >= since,
    )
    .sort((a, b) => (b.finishedAt as Date).getTime() - (a.finishedAt as Date).getTime() || b.seq - a.seq)
    .slice(0, limit)
    .map((r) => ({
      queue: r.queue,
      runMs: Math.max(0, (r.finishedAt as Date).getTime() - (r.startedAt as Date).getTime()),
      waitMs: Math.max(0, (r.startedAt as Date).getTime() - r.runAt.getTime()),
    }));
}
