/** The PostgreSQL store's operating reads and writes (sql/bulk.ts): bulk batches, dead-letter groups, timings. */
import type { BulkBatch, DeadLetterGroup, JobTiming } from "../types.js";
import type { Db } from "./db.js";
import { type Notifier, notifyLocally } from "./notifier.js";

/** One statement: picks up to `limit` matching jobs, locks and acts on them. */
export async function actOnJobs(db: Db, notifier: Notifier, batch: BulkBatch): Promise<number> {
  const params = [batch.queue || null, batch.search || null, batch.limit];
  if (batch.action === "retry") {
    const wasListening = notifier.isListening;
    const { rows } = await db.run("BULK_RETRY", params, db.pool, false);
    const n = Number(rows[0]?.n ?? 0);
    if (n > 0) notifyLocally(notifier, wasListening, () => (rows[0].queues as string[]) ?? []);
    return n;
  }
  const result = await db.run(
    batch.action === "discard" ? "BULK_DISCARD" : "BULK_CANCEL",
    params,
    db.pool,
    false,
  );
  return result.rowCount ?? 0;
}

export async function deadLetterGroups(db: Db, queue?: string): Promise<DeadLetterGroup[]> {
  const { rows } = await db.run("DEAD_LETTER_GROUPS", [queue || null], db.pool, false);
  return rows.map((r) => ({
    error: r.error as string,
    count: Number(r.n),
    firstSeen: new Date(Number(r.first_seen)),
    lastSeen: new Date(Number(r.last_seen)),
  }));
}

export async function recentTimings(db: Db, windowMs: number, limit: number): Promise<JobTiming[]> {
  const { rows } = await db.run("RECENT_TIMINGS", [windowMs, limit], db.pool, false);
  return rows.map((r) => ({
    queue: r.queue as string,
    runMs: Math.max(0, Number(r.run_ms)),
    waitMs: Math.max(0, Number(r.wait_ms)),
  }));
}
