/**
 * Leases on the SQLite store: claim jobs, extend and return leases, finish jobs (in a batch, or
 * one inside the handler's own transaction), report progress. (The rescue of expired leases is
 * upkeep.ts's; the ledger is ledger.ts, the workers registry workers.ts.) Writes that make pending
 * work return the queues to wake; the store notifies them (notifier.ts).
 *
 * Claim, finish, extend and return are BEGIN IMMEDIATE transactions built once per connection.
 * While the application holds a transaction open on a shared handle, none of them runs inside
 * it: claims return [] (tried again at the next poll), the others throw ERR_STORE_BUSY.
 */
import type Database from "better-sqlite3";
import { ErrandError } from "../../errors.js";
import type { JobLogLine } from "../../job.js";
import { attemptFromOutcome, outcomeTransition } from "../common.js";
import type { ClaimedJob, Lease, LeaseStatus, Outcome, TxHandle } from "../types.js";
import { type Connection, closedError, storeBusy } from "./connection.js";
import { isQueuePaused } from "./pauses.js";
import * as Q from "./queries.js";
import { type ClaimRow, claimedFromRow, parseId, toJson } from "./rows.js";

interface HeldRow {
  id: number;
  queue: string;
  attempt: number;
  started_at: number | null;
  cancel_requested: number;
}

interface Transactions {
  claim: Database.Transaction<(queue: string, limit: number, worker: string, leaseMs: number) => ClaimRow[]>;
  finish: Database.Transaction<(outcomes: Outcome[]) => { applied: boolean[]; wake: Set<string> }>;
  extend: Database.Transaction<(leases: Lease[], leaseMs: number) => LeaseStatus[]>;
  give: Database.Transaction<(leases: Lease[]) => { queue: string; state: string }[]>;
}

const built = new WeakMap<Connection, Transactions>();

function transactions(c: Connection): Transactions {
  let txs = built.get(c);
  if (txs) return txs;
  txs = {
    claim: c.db.transaction((queue: string, limit: number, worker: string, leaseMs: number) => {
      // A paused queue gives nothing: one primary-key probe of errand_paused_queues per claim, in
      // its transaction — 5-6 µs measured at load ~10 (200,000 probes), against 20 ms for a
      // claim of 500 (bench/store-cost.ts sqlite 500 20000: 37-49 µs/job before and after).
      if (isQueuePaused(c, queue)) return [];
      const now = c.now();
      return c.q(Q.CLAIM_JOBS).all({ queue, limit, worker, leaseMs, now }) as ClaimRow[];
    }),
    finish: c.db.transaction((outcomes: Outcome[]) => {
      const now = c.now();
      const wake = new Set<string>();
      const applied = outcomes.map((outcome) => {
        const done = applyOutcome(c, outcome, now);
        if (done?.state === "pending") wake.add(done.queue);
        return done !== null;
      });
      return { applied, wake };
    }),
    give: c.db.transaction((leases: Lease[]) => {
      const now = c.now();
      const give = c.q(Q.RETURN_JOB);
      const returned: { queue: string; state: string }[] = [];
      for (const lease of leases) {
        const id = parseId(lease.id);
        if (id === null) continue;
        const row = give.get({ id, token: lease.leaseToken, now }) as
          | { queue: string; state: string }
          | undefined;
        if (row) returned.push(row);
      }
      return returned;
    }),
    extend: c.db.transaction((leases: Lease[], leaseMs: number) => {
      const now = c.now();
      const extend = c.q(Q.EXTEND_LEASE);
      return leases.map((lease) => {
        const id = parseId(lease.id);
        const row =
          id === null
            ? undefined
            : (extend.get({ id, token: lease.leaseToken, now, leaseMs }) as
                | { cancel_requested: number }
                | undefined);
        return { id: lease.id, held: row !== undefined, cancelRequested: row?.cancel_requested === 1 };
      });
    }),
  };
  built.set(c, txs);
  return txs;
}

/**
 * One BEGIN IMMEDIATE transaction: `UPDATE … WHERE id IN (SELECT … ORDER BY priority DESC,
 * run_at, id LIMIT n) RETURNING …` (queries.ts CLAIM_JOBS), then sorted into claim order.
 */
export function claimJobs(
  c: Connection,
  req: { queue: string; limit: number; workerId: string; leaseMs: number },
): ClaimedJob[] {
  const limit = Math.max(0, Math.floor(req.limit));
  if (limit === 0 || c.db.inTransaction) return [];
  const rows = transactions(c).claim.immediate(req.queue, limit, req.workerId, req.leaseMs);
  rows.sort((a, b) => b.priority - a.priority || a.run_at - b.run_at || a.id - b.id);
  return rows.map(claimedFromRow);
}

export function extendLeases(c: Connection, leases: Lease[], leaseMs: number): LeaseStatus[] {
  if (leases.length === 0) return [];
  if (c.db.inTransaction) throw storeBusy("extendLeases");
  return transactions(c).extend.immediate(leases, leaseMs);
}

/** The jobs given back, each with its queue and new state. */
export function returnJobs(c: Connection, leases: Lease[]): { queue: string; state: string }[] {
  if (leases.length === 0) return [];
  if (c.db.inTransaction) throw storeBusy("returnJobs");
  return transactions(c).give.immediate(leases);
}

/** Whether each outcome applied, and the queues a job went back to pending in. */
export function finishJobs(c: Connection, outcomes: Outcome[]): { applied: boolean[]; wake: Set<string> } {
  if (outcomes.length === 0) return { applied: [], wake: new Set() };
  if (c.db.inTransaction) throw storeBusy("finishJobs");
  return transactions(c).finish.immediate(outcomes);
}

/**
 * Applies one outcome if its lease is still held (inside the caller's transaction), with the
 * same transition and history entry as the memory store. Null when fenced off.
 */
function applyOutcome(c: Connection, outcome: Outcome, now: number): { state: string; queue: string } | null {
  const id = parseId(outcome.id);
  if (id === null) return null;
  if (outcome.kind === "completed" && !outcome.error && !outcome.logs && typeof outcome.worker === "string") {
    const done = c.q(Q.FINISH_COMPLETED).run({
      id,
      token: outcome.leaseToken,
      result: toJson(outcome.result),
      now,
      worker: outcome.worker,
    });
    // The queue only matters to a job going back to pending: not this one.
    if (done.changes > 0) return { state: "completed", queue: "" };
  }
  const held = c.q(Q.SELECT_HELD).get(id, outcome.leaseToken) as HeldRow | undefined;
  if (!held) return null;
  const t = outcomeTransition(outcome, held.cancel_requested !== 0, now);
  // A plain completion's entry is implicit (migrations.ts version 2; rows.ts rebuilds it).
  const implicit =
    t.state === "completed" &&
    !outcome.error &&
    !outcome.logs &&
    typeof outcome.worker === "string" &&
    held.started_at !== null;
  const record = implicit
    ? null
    : JSON.stringify(
        attemptFromOutcome(outcome, t, held.attempt, new Date(held.started_at ?? now), new Date(now)),
      );
  c.q(Q.FINISH_JOB).run({
    id,
    token: outcome.leaseToken,
    state: t.state,
    uncharge: t.uncharge ? 1 : 0,
    runAt: t.runAt ? t.runAt.getTime() : null,
    result: outcome.kind === "completed" ? toJson(outcome.result) : null,
    lastError: outcome.error ? outcome.error.message : null,
    finishedAt: t.state !== "pending" ? now : null,
    record,
    completedBy: implicit ? outcome.worker : null,
  });
  return { state: t.state, queue: held.queue };
}

/**
 * BEGIN IMMEDIATE (by hand: better-sqlite3 transactions cannot span an await), check the
 * lease, await `fn(db)`, check the lease again, complete the job, COMMIT — or ROLLBACK on any
 * error or a lost lease. Holding the write lock means no other process can rescue the job
 * meanwhile; in this process, the gate keeps every other operation of the store out of the
 * transaction until it ends, while calls made from inside `fn` (its async context) join it.
 * Keep `fn` short: other processes' writers wait for it (up to their busy_timeout).
 */
export function completeInTransaction<T>(
  c: Connection,
  lease: Lease,
  worker: string,
  fn: (tx: TxHandle) => Promise<T> | T,
  logs?: () => JobLogLine[] | undefined,
): Promise<{ applied: boolean; value?: T }> {
  return c.gate.hold(async (within) => {
    if (c.closed) throw closedError();
    if (c.db.inTransaction) throw storeBusy("completeInTransaction");
    const id = parseId(lease.id);
    if (id === null) return { applied: false };
    c.db.exec(Q.BEGIN_IMMEDIATE);
    try {
      if (!c.q(Q.SELECT_HELD).get(id, lease.leaseToken)) {
        c.db.exec(Q.ROLLBACK);
        return { applied: false };
      }
      const value = await within(() => fn(c.db));
      if (!c.db.inTransaction) {
        throw new ErrandError(
          "ERR_TRANSACTION_ENDED",
          "completeInTransaction: fn committed or rolled back errand's transaction",
        );
      }
      const outcome: Outcome = { ...lease, kind: "completed", result: value, worker };
      const lines = logs?.();
      if (lines) outcome.logs = lines;
      const done = applyOutcome(c, outcome, c.now());
      if (done === null) {
        c.db.exec(Q.ROLLBACK);
        return { applied: false };
      }
      c.db.exec(Q.COMMIT);
      return { applied: true, value };
    } catch (err) {
      if (c.db.open && c.db.inTransaction) c.db.exec(Q.ROLLBACK);
      throw err;
    }
  });
}

export function setProgress(
  c: Connection,
  lease: Lease,
  progress: { fraction: number; message?: string },
): boolean {
  const id = parseId(lease.id);
  if (id === null) return false;
  return c.q(Q.SET_PROGRESS).run(toJson({ ...progress }), id, lease.leaseToken).changes === 1;
}
