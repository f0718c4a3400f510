/**
 * The SQLite store's writes that wake listeners: each runs its operation (leases.ts, upkeep.ts,
 * bulk.ts, pauses.ts) on the connection, then tells the notifier (notifier.ts) which queues now
 * have pending work (onJobsAvailable) and which jobs reached a final state (waitFor's
 * onJobsFinished). The store (store.ts) delegates to these; reads and writes that wake no one
 * it runs directly.
 */
import type { JobLogLine, JobRecord } from "../../job.js";
import type { BulkBatch, Lease, Outcome, RescuedJob, TxHandle } from "../types.js";
import * as bulk from "./bulk.js";
import type { Connection } from "./connection.js";
import * as flow from "./flow.js";
import * as leases from "./leases.js";
import type { Notifier } from "./notifier.js";
import * as pauses from "./pauses.js";
import * as upkeep from "./upkeep.js";

// ── worker operations ──────────────────────────────────────────────────────────────────────

export function returnJobs(c: Connection, notifier: Notifier, held: Lease[]): Promise<number> {
  return c.run(() => {
    const returned = leases.returnJobs(c, held);
    notifier.notifyEach(returned.filter((r) => r.state === "pending").map((r) => r.queue));
    if (returned.some((r) => r.state === "cancelled")) notifier.finished(held.map((l) => l.id));
    return returned.length;
  });
}

export function finishJobs(c: Connection, notifier: Notifier, outcomes: Outcome[]): Promise<boolean[]> {
  return c.run(() => {
    const { applied, wake } = leases.finishJobs(c, outcomes);
    notifier.notifyEach(wake);
    notifier.finished(outcomes.filter((_, i) => applied[i]).map((o) => o.id));
    return applied;
  });
}

/** leases.ts; wake-ups raised meanwhile are sent once it ends. */
export async function completeInTransaction<T>(
  c: Connection,
  notifier: Notifier,
  lease: Lease,
  worker: string,
  fn: (tx: TxHandle) => Promise<T> | T,
  logs?: () => JobLogLine[] | undefined,
): Promise<{ applied: boolean; value?: T }> {
  try {
    const { woken, ...done } = await leases.completeInTransaction(c, lease, worker, fn, logs);
    if (done.applied) notifier.finished([lease.id]);
    if (woken) notifier.notifyEach(woken);
    return done;
  } finally {
    notifier.flushDeferred();
  }
}

export function rescueExpiredLeases(c: Connection, notifier: Notifier): Promise<RescuedJob[]> {
  return c.run(() => {
    const rescued = upkeep.rescueExpiredLeases(c);
    for (const r of rescued) if (r.state === "pending") notifier.notify(r.queue);
    notifier.finished(rescued.filter((r) => r.state !== "pending").map((r) => r.id));
    return rescued;
  });
}

// ── operator actions ───────────────────────────────────────────────────────────────────────

export function cancelJob(c: Connection, notifier: Notifier, id: string): Promise<JobRecord | null> {
  return c.run(() => {
    const job = upkeep.cancelJob(c, id);
    if (job?.state === "cancelled") notifier.finished([job.id]);
    return job;
  });
}

export function retryJobs(
  c: Connection,
  notifier: Notifier,
  filter: { ids?: string[]; queue?: string },
): Promise<number> {
  return c.run(() => {
    const queues = upkeep.retryJobs(c, filter);
    notifier.notifyEach(queues);
    return queues.length;
  });
}

export function discardJobs(
  c: Connection,
  notifier: Notifier,
  filter: { ids?: string[]; queue?: string },
): Promise<number> {
  return c.run(() => {
    const n = upkeep.discardJobs(c, filter);
    if (n > 0) notifier.finished(filter.ids ?? null);
    return n;
  });
}

export function actOnJobs(c: Connection, notifier: Notifier, batch: BulkBatch): Promise<number> {
  return c.run(() => {
    const { count, woken } = bulk.actOnJobs(c, batch);
    notifier.notifyEach(woken);
    return count;
  });
}

/** Wakes the queue's workers here and (through the commit watch) in other processes. */
export function resumeQueue(c: Connection, notifier: Notifier, queue: string): Promise<boolean> {
  return c.run(() => {
    const resumed = pauses.resumeQueue(c, queue);
    if (resumed) notifier.notify(queue);
    return resumed;
  });
}

/** Lifts flow budget pauses (flow.ts) and wakes the queue's workers when any was in effect. */
export function resumeFlow(
  c: Connection,
  notifier: Notifier,
  req: { queue: string; key?: string | null },
): Promise<number> {
  return c.run(() => {
    const lifted = flow.resumeFlow(c, req);
    if (lifted > 0) notifier.notify(req.queue);
    return lifted;
  });
}
