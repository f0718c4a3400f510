/**
 * The SQLite store's upkeep: rescuing jobs whose lease expired, pruning finished jobs, and the
 * operator's actions (cancel, retry, discard). Writes that make pending work return the queues
 * to wake; the store notifies them (notifier.ts).
 */
import type { AttemptRecord, JobRecord } from "../../job.js";
import type { PruneRequest, RescuedJob } from "../types.js";
import type { Connection } from "./connection.js";
import { resolveDependents } from "./dependencies.js";
import * as Q from "./queries.js";
import { type JobRow, jobFromRow, parseId } from "./rows.js";

interface ExpiredRow {
  id: number;
  queue: string;
  name: string;
  attempt: number;
  max_attempts: number;
  started_at: number | null;
  locked_by: string | null;
  cancel_requested: number;
  has_dependents: number;
}

/**
 * One BEGIN IMMEDIATE transaction: every job whose lease expired goes back to pending, or to
 * failed (attempts spent) or cancelled (cancel requested), with a "lost" entry in its history.
 * Returns [] while the application holds a transaction open on a shared handle.
 */
export function rescueExpiredLeases(c: Connection): RescuedJob[] {
  if (c.db.inTransaction) return [];
  return c.db
    .transaction(() => {
      const now = c.now();
      const expired = c.q(Q.SELECT_EXPIRED).all(now) as ExpiredRow[];
      return expired.map((row): RescuedJob => {
        const record: AttemptRecord = {
          attempt: row.attempt,
          startedAt: new Date(row.started_at ?? now).toISOString(),
          finishedAt: new Date(now).toISOString(),
          worker: row.locked_by,
          outcome: "lost",
          error: `lease expired: worker ${row.locked_by ?? "?"} stopped heartbeating`,
          kind: "lost",
        };
        const state = row.cancel_requested
          ? "cancelled"
          : row.attempt >= row.max_attempts
            ? "failed"
            : "pending";
        c.q(Q.RESCUE_JOB).run({
          id: row.id,
          state,
          runAt: state === "pending" ? now : null,
          finishedAt: state === "pending" ? null : now,
          lastError: record.error,
          record: JSON.stringify(record),
        });
        if (state !== "pending" && row.has_dependents)
          resolveDependents((sql) => c.q(sql), [{ id: row.id, state }], now);
        return { id: String(row.id), queue: row.queue, name: row.name, state, attempt: row.attempt };
      });
    })
    .immediate();
}

/** Old jobs (their ctx.once entries go with them: migrations.ts 7's trigger) and old global entries. */
export function pruneFinished(c: Connection, req: PruneRequest): number {
  return c.db
    .transaction(() => {
      const now = c.now();
      const completed = c.q(Q.PRUNE_COMPLETED).run(now - req.completedAgeMs).changes;
      const failed = c.q(Q.PRUNE_FAILED).run(now - req.failedAgeMs).changes;
      if (req.globalOnceAgeMs !== undefined) c.q(Q.PRUNE_GLOBAL_LEDGER).run(now - req.globalOnceAgeMs);
      return completed + failed;
    })
    .immediate();
}

/** A pending job is cancelled at once; a running one gets its cancel requested. */
export function cancelJob(c: Connection, id: string): JobRecord | null {
  const n = parseId(id);
  if (n === null) return null;
  return c.db
    .transaction(() => {
      const cancelled = c.q(Q.CANCEL_PENDING).get(n) as { has_dependents: number } | undefined;
      if (!cancelled) c.q(Q.REQUEST_CANCEL).run(n);
      else if (cancelled.has_dependents)
        resolveDependents((sql) => c.q(sql), [{ id: n, state: "cancelled" }], c.now());
      const row = c.q(Q.SELECT_JOB).get(n) as JobRow | undefined;
      return row ? jobFromRow(row) : null;
    })
    .immediate();
}

/** The queue of each job put back to pending (one entry per job). */
export function retryJobs(c: Connection, filter: { ids?: string[]; queue?: string }): string[] {
  const queue = filter.queue || null;
  const rows = (
    filter.ids
      ? c.q(Q.RETRY_JOBS_BY_IDS).all({ ids: idsJson(filter.ids), queue })
      : c.q(Q.RETRY_JOBS).all({ queue })
  ) as { queue: string }[];
  return rows.map((r) => r.queue);
}

export function discardJobs(c: Connection, filter: { ids?: string[]; queue?: string }): number {
  const queue = filter.queue || null;
  const info = filter.ids
    ? c.q(Q.DISCARD_JOBS_BY_IDS).run({ ids: idsJson(filter.ids), queue })
    : c.q(Q.DISCARD_JOBS).run({ queue });
  return info.changes;
}

function idsJson(ids: string[]): string {
  return JSON.stringify(ids.map(parseId).filter((id) => id !== null));
}
