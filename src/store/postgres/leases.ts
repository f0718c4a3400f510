/**
 * A job's run under a lease: claim, extend, return, finish (alone or in a transaction with the
 * handler's own writes), progress, and the rescue of expired leases. Every write is fenced by
 * the lease token: a worker that lost its lease cannot overwrite the job's new life.
 */
import type { AsyncLocalStorage } from "node:async_hooks";
import type pg from "pg";
import { ValidationError } from "../../errors.js";
import type { ClaimedJob, Lease, LeaseStatus, Outcome, OutcomeKind, RescuedJob, TxHandle } from "../types.js";
import type { Queryable } from "./connection.js";
import { type Db, Rollback } from "./db.js";
import { freesSlots } from "./flow.js";
import { serialize } from "./json.js";
import { type Notifier, notifyLocally } from "./notifier.js";
import { compareIds, isJobId, type Row, toClaimed } from "./rows.js";
import { compactCounts } from "./upkeep.js";

/** Rows per rescue statement: short statements, few row locks held at once. */
const RESCUE_BATCH = 1_000;

const OUTCOME_KINDS = new Set<OutcomeKind>([
  "completed",
  "retry",
  "failed",
  "snoozed",
  "released",
  "cancelled",
]);

/**
 * The leases that can name a row, in id order: statements over several rows lock them in the
 * same order, so two of them cannot deadlock.
 */
function validLeases(leases: Lease[]): Lease[] {
  return leases
    .filter((l) => isJobId(l.id) && Number.isInteger(l.leaseToken))
    .sort((a, b) => compareIds(a.id, b.id));
}

/** The pending rows' queues, for notifyLocally. */
function pendingQueues(rows: Row[]): string[] {
  return rows.filter((r) => r.state === "pending").map((r) => r.queue as string);
}

export async function claimJobs(
  db: Db,
  req: { queue: string; limit: number; workerId: string; leaseMs: number },
): Promise<ClaimedJob[]> {
  const limit = Math.floor(req.limit);
  if (!(limit > 0)) return [];
  const { rows } = await db.run("CLAIM_JOBS", [req.queue, limit, req.workerId, req.leaseMs]);
  return rows.sort((a: Row, b: Row) => Number(a.ord) - Number(b.ord)).map(toClaimed);
}

export async function extendLeases(db: Db, leases: Lease[], leaseMs: number): Promise<LeaseStatus[]> {
  const valid = validLeases(leases);
  const held = new Map<string, boolean>();
  if (valid.length > 0) {
    const { rows } = await db.run("EXTEND_LEASES", [
      valid.map((l) => l.id),
      valid.map((l) => l.leaseToken),
      leaseMs,
    ]);
    for (const r of rows) held.set(`${r.id}:${r.token}`, Boolean(r.cancel_requested));
  }
  return leases.map((lease) => {
    const cancel = held.get(`${lease.id}:${lease.leaseToken}`);
    return { id: lease.id, held: cancel !== undefined, cancelRequested: cancel ?? false };
  });
}

export async function returnJobs(db: Db, notifier: Notifier, leases: Lease[]): Promise<number> {
  const valid = validLeases(leases);
  if (valid.length === 0) return 0;
  const wasListening = notifier.isListening;
  const { rows } = await db.run("RETURN_JOBS", [valid.map((l) => l.id), valid.map((l) => l.leaseToken)]);
  notifyLocally(notifier, wasListening, () => pendingQueues(rows));
  return rows.length;
}

/**
 * One statement for the whole batch. The same (id, token) twice is applied once (the first);
 * outcomes go to the database sorted by id, so two batches touching the same rows lock them
 * in the same order and cannot deadlock.
 */
export async function finishJobs(
  db: Db,
  notifier: Notifier,
  outcomes: Outcome[],
  on: Queryable = db.pool,
): Promise<boolean[]> {
  // Keyed by id while no id comes twice with different tokens (the usual batch), else by pair.
  const byPair = chooseOutcomes(outcomes, false) === null;
  const chosen = chooseOutcomes(outcomes, byPair) as Map<string, number>;
  if (chosen.size === 0) return outcomes.map(() => false);
  const batch = [...chosen.values()]
    .map((i) => outcomes[i] as Outcome)
    .sort((a, b) => compareIds(a.id, b.id));
  const wasListening = notifier.isListening;
  // A store that claims a concurrency-limited queue also wakes the workers waiting for a slot.
  const freeing = freesSlots(db);
  const { rows } = await (batch.every(isPlainCompletion)
    ? db.run(freeing ? "FINISH_COMPLETED_FREEING" : "FINISH_COMPLETED", completionValues(batch), on, true)
    : db.run(freeing ? "FINISH_JOBS_FREEING" : "FINISH_JOBS", outcomeValues(batch), on, true));
  const applied = new Map<string, number>();
  for (const r of rows as Row[]) applied.set(byPair ? `${r.id}:${r.token}` : String(r.id), Number(r.token));
  notifyLocally(notifier, wasListening, () => pendingQueues(rows));
  return outcomes.map((o, i) => {
    const key = byPair ? `${o.id}:${o.leaseToken}` : o.id;
    return chosen.get(key) === i && applied.get(key) === o.leaseToken;
  });
}

/**
 * The outcome to write per key (the first), by index. Keyed by id, or by (id, token) pair when
 * `byPair`; null when keyed by id and an id comes twice with different tokens (the caller then
 * keys by pair: only the lease still held can apply, and either may be it).
 */
function chooseOutcomes(outcomes: Outcome[], byPair: boolean): Map<string, number> | null {
  const chosen = new Map<string, number>();
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i] as Outcome;
    if (!OUTCOME_KINDS.has(o.kind))
      throw new ValidationError(`unknown outcome kind ${JSON.stringify(o.kind)}`);
    if (!isJobId(o.id) || !Number.isInteger(o.leaseToken)) continue;
    const key = byPair ? `${o.id}:${o.leaseToken}` : o.id;
    const first = chosen.get(key);
    if (first === undefined) chosen.set(key, i);
    else if (!byPair && (outcomes[first] as Outcome).leaseToken !== o.leaseToken) return null;
  }
  return chosen;
}

/** A completion FINISH_COMPLETED can write: no error fields, a worker to rebuild its history entry from. */
function isPlainCompletion(o: Outcome): boolean {
  return o.kind === "completed" && !o.error && typeof o.worker === "string";
}

/** FINISH_COMPLETED's arrays. */
function completionValues(batch: Outcome[]): unknown[] {
  const ids: string[] = [];
  const tokens: number[] = [];
  const results: string[] = [];
  const workers: string[] = [];
  for (const o of batch) {
    ids.push(o.id);
    tokens.push(o.leaseToken);
    results.push(serialize(o.result ?? null, `result of job ${o.id}`));
    workers.push(o.worker as string);
  }
  return [ids, tokens, results, workers];
}

/** FINISH_JOBS's arrays. */
function outcomeValues(batch: Outcome[]): unknown[] {
  return [
    batch.map((o) => o.id),
    batch.map((o) => o.leaseToken),
    batch.map((o) => o.kind),
    batch.map((o) => o.delayMs ?? 0),
    batch.map((o) => (o.kind === "completed" ? serialize(o.result ?? null, `result of job ${o.id}`) : null)),
    batch.map((o) => o.worker),
    batch.map((o) => (o.error ? String(o.error.message ?? "") : null)),
    batch.map((o) => (o.error?.stack ? String(o.error.stack) : null)),
    batch.map((o) => (o.error ? o.error.kind : null)),
  ];
}

/**
 * Completes the job in one transaction with `fn`'s writes (made on `tx`, the transaction's
 * client). `txClient` holds that client while `fn` runs: ledger reads and writes made from it
 * (ctx.once) join the transaction (ledger.ts).
 */
export async function completeInTransaction<T>(
  db: Db,
  notifier: Notifier,
  txClient: AsyncLocalStorage<pg.PoolClient>,
  lease: Lease,
  worker: string,
  fn: (tx: TxHandle) => Promise<T> | T,
): Promise<{ applied: boolean; value?: T }> {
  if (!isJobId(lease.id) || !Number.isInteger(lease.leaseToken)) return { applied: false };
  const result = await db.transaction(async (client) => {
    // The row lock holds the lease for the whole transaction: the rescuer skips the row, a
    // concurrent finish waits. A lease already lost means fn never runs.
    const locked = await db.run("LOCK_HELD_JOB", [lease.id, lease.leaseToken], client);
    if (locked.rowCount === 0) throw new Rollback();
    const value = await txClient.run(client, () => fn(client));
    const [applied] = await finishJobs(
      db,
      notifier,
      [{ ...lease, kind: "completed", result: value, worker }],
      client,
    );
    if (!applied) throw new Rollback();
    return { applied: true, value };
  });
  return result === Rollback ? { applied: false } : (result as { applied: boolean; value?: T });
}

export async function setProgress(
  db: Db,
  lease: Lease,
  progress: { fraction: number; message?: string },
): Promise<boolean> {
  if (!isJobId(lease.id) || !Number.isInteger(lease.leaseToken)) return false;
  const result = await db.run("SET_PROGRESS", [
    lease.id,
    lease.leaseToken,
    serialize({ ...progress }, "progress"),
  ]);
  return (result.rowCount ?? 0) > 0;
}

export async function rescueExpiredLeases(db: Db, notifier: Notifier): Promise<RescuedJob[]> {
  const rescued: RescuedJob[] = [];
  for (;;) {
    const wasListening = notifier.isListening;
    const { rows } = await db.run("RESCUE_EXPIRED", [RESCUE_BATCH]);
    for (const r of rows) {
      rescued.push({
        id: String(r.id),
        queue: r.queue as string,
        name: r.name as string,
        state: r.state as RescuedJob["state"],
        attempt: Number(r.attempt),
      });
    }
    notifyLocally(notifier, wasListening, () => pendingQueues(rows));
    if (rows.length < RESCUE_BATCH) break;
  }
  // Every worker runs the rescuer periodically: the counters' deltas stay few between stats() calls.
  await compactCounts(db);
  return rescued;
}
