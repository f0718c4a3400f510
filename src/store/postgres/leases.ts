/**
 * A job's run under a lease: claim, extend, return, finish (alone or in a transaction with the
 * handler's own writes), progress, and the rescue of expired leases. Every write is fenced by
 * the lease token: a worker that lost its lease cannot overwrite the job's new life.
 */
import type { AsyncLocalStorage } from "node:async_hooks";
import type pg from "pg";
import { ValidationError } from "../../errors.js";
import type { JobLogLine } from "../../job.js";
import type { ClaimedJob, Lease, LeaseStatus, Outcome, OutcomeKind, RescuedJob, TxHandle } from "../types.js";
import { type ClaimArraysRow, claimedFromArrays } from "./claim-arrays.js";
import type { Queryable } from "./connection.js";
import { type Db, Rollback } from "./db.js";
import { resolveDependents } from "./dependencies.js";
import { freesSlots } from "./flow.js";
import { literalQuoter } from "./insert.js";
import { serialize } from "./json.js";
import { type Notifier, notifyLocally } from "./notifier.js";
import { compareIds, isJobId, type Row } from "./rows.js";
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

/** The rows that finished with dependents to resolve. */
function withDependents(rows: Row[]): Array<{ id: string; state: string }> {
  return rows
    .filter((r) => r.has_dependents && r.state !== "pending" && r.state !== "running")
    .map((r) => ({ id: String(r.id), state: r.state as string }));
}

/** `fn` in a transaction, or on `on` when that is already a transaction's client. */
async function inTransactionOn<T>(db: Db, on: Queryable, fn: (client: Queryable) => Promise<T>): Promise<T> {
  if (on !== db.pool) return fn(on);
  return (await db.transaction((client) => fn(client))) as T;
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
  const result = await db.run("CLAIM_JOBS", [req.queue, limit, req.workerId, req.leaseMs]);
  return claimedFromArrays(result.rows as ClaimArraysRow[], db.jsonbParser(result));
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

/** In a transaction: a job cancelled on its return resolves its dependents with it. */
export async function returnJobs(db: Db, notifier: Notifier, leases: Lease[]): Promise<number> {
  const valid = validLeases(leases);
  if (valid.length === 0) return 0;
  const wasListening = notifier.isListening;
  const rows = await inTransactionOn(db, db.pool, async (client) => {
    const { rows } = await db.run(
      "RETURN_JOBS",
      [valid.map((l) => l.id), valid.map((l) => l.leaseToken)],
      client,
    );
    await resolveDependents(db, client, withDependents(rows));
    return rows;
  });
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
  const applied = await finishBatch(db, notifier, outcomes, on, false);
  const missed = outcomes.filter((_, i) => !applied[i]);
  if (missed.length === 0) return applied;
  // The outcomes the hot statements skipped: jobs with dependents, which are finished here with
  // the resolution of their dependents in one transaction (and stale leases, which apply nowhere).
  const again = await inTransactionOn(db, on, (client) => finishBatch(db, notifier, missed, client, true));
  let k = 0;
  return applied.map((done) => done || (again[k++] ?? false));
}

async function finishBatch(
  db: Db,
  notifier: Notifier,
  outcomes: Outcome[],
  on: Queryable,
  linked: boolean,
): Promise<boolean[]> {
  // Keyed by id while no id comes twice with different tokens (the usual batch), else by pair.
  // The keyed-by-id map is kept, not built a second time: a Map entry and a BigInt per outcome
  // fewer (see isJobId).
  const byId = chooseOutcomes(outcomes, false);
  const byPair = byId === null;
  const chosen = byId ?? (chooseOutcomes(outcomes, true) as Map<string, number>);
  if (chosen.size === 0) return outcomes.map(() => false);
  const batch = [...chosen.values()]
    .map((i) => outcomes[i] as Outcome)
    .sort((a, b) => compareIds(a.id, b.id));
  const wasListening = notifier.isListening;
  // A store that claims a concurrency-limited queue also wakes the workers waiting for a slot.
  const freeing = freesSlots(db);
  const { rows } = await (linked
    ? db.run("FINISH_JOBS_LINKED", outcomeValues(batch), on, false)
    : batch.every(isPlainCompletion)
      ? db.run(freeing ? "FINISH_COMPLETED_FREEING" : "FINISH_COMPLETED", completionValues(batch), on, true)
      : db.run(freeing ? "FINISH_JOBS_FREEING" : "FINISH_JOBS", outcomeValues(batch), on, true));
  if (linked) await resolveDependents(db, on, withDependents(rows));
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
  return o.kind === "completed" && !o.error && !o.logs && typeof o.worker === "string";
}

/**
 * FINISH_COMPLETED's arrays, as array literals built here (as insert.ts does for the enqueue):
 * node-postgres's own encoding makes a quoted, regex-escaped string per element and joins them
 * by concatenation — it was a seventh of what the worker allocated per no-op job (heap sampling
 * of bench/one-worker.ts, bench/NOTES.md finding 14). Ids and tokens are digits (checked by
 * chooseOutcomes); a batch repeats its worker and, mostly, its result (`null`).
 */
function completionValues(batch: Outcome[]): string[] {
  const n = batch.length;
  const ids = new Array<string>(n);
  const tokens = new Array<number>(n);
  const results = new Array<string>(n);
  const workers = new Array<string>(n);
  const quoteResult = literalQuoter();
  const quoteWorker = literalQuoter();
  for (let i = 0; i < n; i++) {
    const o = batch[i] as Outcome;
    ids[i] = o.id;
    tokens[i] = o.leaseToken;
    // A null result (most jobs) needs no serialisation, nor the error text built for it.
    const result = o.result ?? null;
    results[i] = quoteResult(result === null ? "null" : serialize(result, `result of job ${o.id}`));
    workers[i] = quoteWorker(o.worker as string);
  }
  return [`{${ids.join(",")}}`, `{${tokens.join(",")}}`, `{${results.join(",")}}`, `{${workers.join(",")}}`];
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
    batch.map((o) => (o.logs && o.logs.length > 0 ? serialize(o.logs, `job log of job ${o.id}`) : null)),
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
  logs?: () => JobLogLine[] | undefined,
): Promise<{ applied: boolean; value?: T }> {
  if (!isJobId(lease.id) || !Number.isInteger(lease.leaseToken)) return { applied: false };
  const result = await db.transaction(async (client) => {
    // The row lock holds the lease for the whole transaction: the rescuer skips the row, a
    // concurrent finish waits. A lease already lost means fn never runs.
    const locked = await db.run("LOCK_HELD_JOB", [lease.id, lease.leaseToken], client);
    if (locked.rowCount === 0) throw new Rollback();
    const value = await txClient.run(client, () => fn(client));
    const outcome: Outcome = { ...lease, kind: "completed", result: value, worker };
    const lines = logs?.();
    if (lines) outcome.logs = lines;
    const [applied] = await finishJobs(db, notifier, [outcome], client);
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
    // In a transaction: a job that failed or was cancelled resolves its dependents with it.
    const rows = await inTransactionOn(db, db.pool, async (client) => {
      const { rows } = await db.run("RESCUE_EXPIRED", [RESCUE_BATCH], client);
      await resolveDependents(db, client, withDependents(rows));
      return rows;
    });
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
