/** An operator's actions on jobs: cancel one, retry or discard many (the dashboard, the CLI). */
import type { JobRecord } from "../../job.js";
import type { Db } from "./db.js";
import { resolveDependents } from "./dependencies.js";
import { type Notifier, notifyLocally } from "./notifier.js";
import { isJobId, toJob } from "./rows.js";

export async function cancelJob(db: Db, id: string): Promise<JobRecord | null> {
  if (!isJobId(String(id))) return null;
  // In a transaction: a waiting or pending job cancelled resolves its dependents with it.
  const rows = await db.transaction(async (client) => {
    const { rows } = await db.run("CANCEL_JOB", [String(id)], client);
    const job = rows[0];
    if (job?.has_dependents && job.state === "cancelled") {
      await resolveDependents(db, client, [{ id: String(job.id), state: "cancelled" }]);
    }
    return rows;
  });
  return Array.isArray(rows) && rows.length > 0 ? toJob(rows[0]) : null;
}

/** ids filter: null = any; an empty or all-invalid list matches nothing. */
function idFilter(filter: { ids?: string[] }): string[] | null | "none" {
  if (!filter.ids) return null;
  const ids = filter.ids.map(String).filter(isJobId);
  return ids.length > 0 ? ids : "none";
}

export async function retryJobs(
  db: Db,
  notifier: Notifier,
  filter: { ids?: string[]; queue?: string },
): Promise<number> {
  const ids = idFilter(filter);
  if (ids === "none") return 0;
  const wasListening = notifier.isListening;
  const { rows } = await db.run("RETRY_JOBS", [ids, filter.queue ?? null], db.pool, false);
  const n = Number(rows[0]?.n ?? 0);
  if (n > 0) notifyLocally(notifier, wasListening, () => (rows[0].queues as string[]) ?? []);
  return n;
}

export async function discardJobs(db: Db, filter: { ids?: string[]; queue?: string }): Promise<number> {
  const ids = idFilter(filter);
  if (ids === "none") return 0;
  const result = await db.run("DISCARD_JOBS", [ids, filter.queue ?? null], db.pool, false);
  return result.rowCount ?? 0;
}
