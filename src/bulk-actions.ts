/**
 * Operating queues by filter (the dashboard, scripts): count the jobs a bulk action would take,
 * act on them in bounded batches, and sum up recent timings per queue for the charts.
 */
import { bulkState } from "./store/common.js";
import type { JobTiming, Store } from "./store/types.js";

export type BulkAction = "retry" | "discard" | "cancel";

export interface BulkFilter {
  /** retry or discard: failed jobs; cancel: pending ones. */
  action: BulkAction;
  queue?: string;
  /** Substring of id, key, payload text or error message (as listJobs' search). */
  search?: string;
}

/** Jobs per store transaction: no statement locks more rows than this. */
export const BULK_BATCH = 500;
/** The most jobs one bulk action (or count) takes. */
export const BULK_MAX = 100_000;
const COUNT_PAGE = 1000;

/** How many jobs `filter` matches now, counted up to `cap` (paged reads, no lock). */
export async function countMatching(store: Store, filter: BulkFilter, cap = BULK_MAX): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await store.listJobs({
      queue: filter.queue,
      search: filter.search,
      state: bulkState(filter.action),
      limit: Math.min(COUNT_PAGE, cap - count),
      cursor,
    });
    count += page.jobs.length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined && count < cap);
  return count;
}

/**
 * Acts on up to `max` matching jobs, BULK_BATCH per store transaction, newest first; answers how
 * many. `max` (the count the operator confirmed) bounds the work even when jobs keep arriving.
 */
export async function actOnMatching(store: Store, filter: BulkFilter, max = BULK_MAX): Promise<number> {
  let done = 0;
  while (done < max) {
    const limit = Math.min(BULK_BATCH, max - done);
    const n = await store.actOnJobs({
      action: filter.action,
      queue: filter.queue,
      search: filter.search,
      limit,
    });
    done += n;
    if (n < limit) break;
  }
  return done;
}

export interface Percentiles {
  p50: number;
  p95: number;
  max: number;
}

export interface QueueTimings {
  queue: string;
  /** Finished jobs the numbers come from. */
  count: number;
  runMs: Percentiles;
  waitMs: Percentiles;
}

function percentiles(values: number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return { p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] };
}

/** Runtime and wait percentiles per queue, from the newest `limit` jobs finished within `windowMs`. */
export async function queueTimings(store: Store, windowMs: number, limit: number): Promise<QueueTimings[]> {
  const byQueue = new Map<string, JobTiming[]>();
  for (const t of await store.recentTimings(windowMs, limit)) {
    const list = byQueue.get(t.queue) ?? [];
    list.push(t);
    byQueue.set(t.queue, list);
  }
  return [...byQueue.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([queue, list]) => ({
      queue,
      count: list.length,
      runMs: percentiles(list.map((t) => t.runMs)),
      waitMs: percentiles(list.map((t) => t.waitMs)),
    }));
}
