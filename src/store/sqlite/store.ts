/**
 * The SQLite store (better-sqlite3): the embedded default. It behaves exactly like the memory
 * store (memory/index.ts, the reference) and holds SQLite-specific concerns only:
 *
 * - One connection. better-sqlite3 is synchronous, so every operation is a synchronous
 *   transaction that no other JavaScript can interleave with — except completeInTransaction,
 *   whose `fn` may be async: while it runs, errand's transaction stays open on the
 *   connection and a gate makes every other operation of this store wait for it (code called
 *   from inside `fn` passes the gate and joins that transaction).
 * - Write transactions are `BEGIN IMMEDIATE`: the write lock is taken first (waiting up to
 *   busy_timeout), so a read-then-write never fails with SQLITE_BUSY_SNAPSHOT in WAL mode.
 *   SQLITE_BUSY after the timeout is thrown to the caller (the worker retries), never swallowed.
 * - The clock is SQLite's (queries.ts `NOW`), never `Date.now()`.
 * - Other processes' commits wake listeners through a watch on the database's directory
 *   (watch.ts), with a `PRAGMA data_version` poll as the safety net (notifier.ts).
 * - This class only delegates, one file per concern: connection.ts (opening, pragmas, the gate),
 *   insert.ts, reads.ts, leases.ts, ledger.ts, workers.ts, upkeep.ts, schedules.ts, migrations.ts,
 *   notifier.ts; waking-writes.ts runs the writes that wake listeners and tells the notifier;
 *   the SQL is in queries.ts, the row decoding in rows.ts.
 * - A shared application handle (`openSqliteStore({ db })`): errand never closes it and never
 *   changes its pragmas. If the application holds a transaction open on it, worker operations
 *   (claim, finish, extend, rescue, completeInTransaction) do not run inside it — their writes
 *   would commit or roll back with the application's work. Claims and rescues return [] and are
 *   tried again at the next poll; finish and extend throw ERR_STORE_BUSY and the worker retries.
 *   Enqueue and operator actions called while it is open join it (on one connection there is
 *   no other choice), as `enqueue(..., { tx: db })` does on purpose.
 */
import type { JobLogLine, JobRecord } from "../../job.js";
import type {
  BulkBatch,
  ClaimedJob,
  DeadLetterGroup,
  FlowClaim,
  FlowLimits,
  FlowStatus,
  InsertResult,
  JobFilter,
  JobLinks,
  JobPage,
  JobTiming,
  Lease,
  LeaseStatus,
  LedgerEntryKey,
  NewJob,
  Outcome,
  PruneRequest,
  QueuePause,
  QueueStats,
  RescuedJob,
  ScheduleInput,
  ScheduleRecord,
  Store,
  ThroughputBucket,
  TxHandle,
  WorkerInfo,
} from "../types.js";
import * as bulk from "./bulk.js";
import { Connection, type ConnectionOptions, closedError } from "./connection.js";
import { jobLinks } from "./dependencies.js";
import * as flowOps from "./flow.js";
import type { Db } from "./handle.js";
import * as insert from "./insert.js";
import * as leases from "./leases.js";
import { ledgerGet, ledgerPut } from "./ledger.js";
import { migrate } from "./migrations.js";
import { Notifier, type NotifierOptions } from "./notifier.js";
import * as pauses from "./pauses.js";
import * as Q from "./queries.js";
import * as reads from "./reads.js";
import * as schedules from "./schedules.js";
import * as upkeep from "./upkeep.js";
import * as writes from "./waking-writes.js";
import * as workers from "./workers.js";

export interface SqliteStoreOptions extends ConnectionOptions, NotifierOptions {}

/** Opens (or shares) a database; call `migrate()` before use. */
export function openSqliteStore(options: SqliteStoreOptions = {}): SqliteStore {
  return new SqliteStore(options);
}

export class SqliteStore implements Store {
  readonly kind = "sqlite" as const;
  private readonly c: Connection;
  private readonly notifier: Notifier;

  constructor(options: SqliteStoreOptions = {}) {
    this.c = new Connection(options);
    this.notifier = new Notifier(this.c, options);
  }

  /** The connection errand uses: its own, or the application's shared handle. */
  get db(): Db {
    return this.c.db;
  }

  // ── lifecycle ────────────────────────────────────────────────────────────────────────────

  migrate(): Promise<void> {
    return this.c.run(() => migrate(this.c));
  }

  async close(): Promise<void> {
    while (this.c.gate.held) await this.c.gate.released;
    if (this.c.closed) return;
    this.c.closed = true;
    this.notifier.close();
    if (this.c.ownsDb && this.c.db.open) this.c.db.close();
  }

  now(): Promise<Date> {
    return this.c.run(() => new Date(this.c.now()));
  }

  /** Lowered waits in force (several workers of one errand may stop at once), and the wait before. */
  private lockWaits = { limits: 0, before: 0 };

  limitLockWaits(ms: number): () => void {
    const { db } = this.c;
    if (!this.c.ownsDb || !db.open) return () => {};
    const w = this.lockWaits;
    if (w.limits++ === 0) w.before = db.pragma("busy_timeout", { simple: true }) as number;
    if (ms < w.before) db.pragma(Q.PRAGMA_BUSY_TIMEOUT(ms));
    let restored = false;
    return () => {
      if (restored) return;
      restored = true;
      if (--w.limits === 0 && db.open) db.pragma(Q.PRAGMA_BUSY_TIMEOUT(w.before));
    };
  }

  // ── enqueue ──────────────────────────────────────────────────────────────────────────────

  /**
   * Without `tx`: one BEGIN IMMEDIATE transaction for the batch. With `tx`: see insertJobsNow —
   * done before this returns its promise, so `db.transaction(() => …)` gets the jobs.
   * Keyless rows go up to 500 per statement (insert.ts; bench/sqlite-store.ts measures).
   */
  insertJobs(jobs: NewJob[], tx?: TxHandle): Promise<InsertResult[]> {
    if (tx !== undefined && tx !== null) {
      try {
        return Promise.resolve(this.insertJobsNow(jobs, tx));
      } catch (err) {
        return Promise.reject(err);
      }
    }
    if (this.c.closed) return Promise.reject(closedError());
    return this.c.run(() => this.created(insert.insertJobs(this.c, jobs)));
  }

  /** Synchronous, on the application's handle `tx` (insert.ts, tx.ts). */
  insertJobsNow(jobs: NewJob[], tx: TxHandle): InsertResult[] {
    if (this.c.closed) throw closedError();
    return this.created(insert.insertJobsNow(this.c, jobs, tx));
  }

  private created(results: InsertResult[]): InsertResult[] {
    // A replaced job may be due sooner than it was: its queue's workers look again.
    this.notifier.notifyEach(results.filter((r) => r.created || r.replaced).map((r) => r.job.queue));
    return results;
  }

  /** Insert, retry and rescue in this process, and other processes' commits (notifier.ts). */
  onJobsAvailable(listener: (queue: string | null) => void): () => void {
    return this.notifier.subscribe(listener);
  }

  // ── reading ──────────────────────────────────────────────────────────────────────────────

  getJob(id: string): Promise<JobRecord | null> {
    return this.c.run(() => reads.getJob(this.c, id));
  }

  listJobs(filter: JobFilter): Promise<JobPage> {
    return this.c.run(() => reads.listJobs(this.c, filter));
  }

  stats(): Promise<QueueStats[]> {
    return this.c.run(() => reads.stats(this.c));
  }

  throughput(sinceMs: number, bucketMs: number): Promise<ThroughputBucket[]> {
    return this.c.run(() => reads.throughput(this.c, sinceMs, bucketMs));
  }

  nextRunAt(queues: string[]): Promise<Date | null> {
    return this.c.run(() => reads.nextRunAt(this.c, queues));
  }

  // ── worker operations ────────────────────────────────────────────────────────────────────

  /** Returns [] while the application holds a transaction open on a shared handle. */
  claimJobs(req: { queue: string; limit: number; workerId: string; leaseMs: number }): Promise<ClaimedJob[]> {
    return this.c.run(() => leases.claimJobs(this.c, req));
  }

  /** Returns nothing while the application holds a transaction open on a shared handle (as claimJobs). */
  claimFlowJobs(req: {
    queue: string;
    limit: number;
    workerId: string;
    leaseMs: number;
    flow: FlowLimits;
  }): Promise<FlowClaim> {
    return this.c.run(() => flowOps.claimFlowJobs(this.c, req));
  }

  flowStatus(req: { queue: string; windowMs: number }): Promise<FlowStatus> {
    return this.c.run(() => flowOps.flowStatus(this.c, req));
  }

  pauseFlow(req: { queue: string; key: string | null; ms: number }): Promise<void> {
    return this.c.run(() => flowOps.pauseFlow(this.c, req));
  }

  resumeFlow(req: { queue: string; key?: string | null }): Promise<number> {
    return writes.resumeFlow(this.c, this.notifier, req);
  }

  extendLeases(held: Lease[], leaseMs: number): Promise<LeaseStatus[]> {
    return this.c.run(() => leases.extendLeases(this.c, held, leaseMs));
  }

  returnJobs(held: Lease[]): Promise<number> {
    return writes.returnJobs(this.c, this.notifier, held);
  }

  finishJobs(outcomes: Outcome[]): Promise<boolean[]> {
    return writes.finishJobs(this.c, this.notifier, outcomes);
  }

  /** leases.ts; wake-ups raised meanwhile are sent once it ends (waking-writes.ts). */
  completeInTransaction<T>(
    lease: Lease,
    worker: string,
    fn: (tx: TxHandle) => Promise<T> | T,
    logs?: () => JobLogLine[] | undefined,
  ): Promise<{ applied: boolean; value?: T }> {
    return writes.completeInTransaction(this.c, this.notifier, lease, worker, fn, logs);
  }

  setProgress(lease: Lease, progress: { fraction: number; message?: string }): Promise<boolean> {
    return this.c.run(() => leases.setProgress(this.c, lease, progress));
  }

  /** Returns [] while the application holds a transaction open on a shared handle. */
  rescueExpiredLeases(_workerNote?: string): Promise<RescuedJob[]> {
    return writes.rescueExpiredLeases(this.c, this.notifier);
  }

  // ── waitFor (notifier.ts) ────────────────────────────────────────────────────────────────

  onJobsFinished(listener: (ids: string[] | null) => void): () => void {
    if (this.c.closed) return () => {};
    return this.notifier.subscribeFinished(listener);
  }

  /**
   * Nothing to record: this store's own writes and other connections' commits reach
   * onJobsFinished (the commit watch is on from the subscription, before this reads).
   */
  awaitJobs(ids: string[]): Promise<JobRecord[]> {
    return this.getJobs(ids);
  }

  async unawaitJobs(_ids: string[]): Promise<void> {}

  getJobs(ids: string[]): Promise<JobRecord[]> {
    return this.c.run(() => reads.getJobs(this.c, ids));
  }

  // ── operator actions ─────────────────────────────────────────────────────────────────────

  getJobLinks(id: string): Promise<JobLinks> {
    return this.c.run(() => jobLinks((sql) => this.c.q(sql), id));
  }

  cancelJob(id: string): Promise<JobRecord | null> {
    return writes.cancelJob(this.c, this.notifier, id);
  }

  retryJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    return writes.retryJobs(this.c, this.notifier, filter);
  }

  discardJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    return writes.discardJobs(this.c, this.notifier, filter);
  }

  actOnJobs(batch: BulkBatch): Promise<number> {
    return writes.actOnJobs(this.c, this.notifier, batch);
  }

  deadLetterGroups(queue?: string): Promise<DeadLetterGroup[]> {
    return this.c.run(() => bulk.deadLetterGroups(this.c, queue));
  }

  recentTimings(windowMs: number, limit: number): Promise<JobTiming[]> {
    return this.c.run(() => bulk.recentTimings(this.c, windowMs, limit));
  }

  pruneFinished(req: PruneRequest): Promise<number> {
    return this.c.run(() => upkeep.pruneFinished(this.c, req));
  }

  // ── ledger ───────────────────────────────────────────────────────────────────────────────

  ledgerGet(entry: LedgerEntryKey): Promise<{ found: boolean; value?: unknown }> {
    return this.c.run(() => ledgerGet(this.c, entry));
  }

  ledgerPut(entry: LedgerEntryKey, value: unknown): Promise<void> {
    return this.c.run(() => ledgerPut(this.c, entry, value));
  }

  // ── schedules ────────────────────────────────────────────────────────────────────────────

  syncSchedules(list: ScheduleInput[]): Promise<void> {
    return this.c.run(() => schedules.syncSchedules(this.c, list));
  }

  upsertSchedule(schedule: ScheduleInput): Promise<void> {
    return this.c.run(() => schedules.upsertSchedule(this.c, schedule));
  }

  removeSchedule(name: string): Promise<boolean> {
    return this.c.run(() => schedules.removeSchedule(this.c, name));
  }

  listSchedules(): Promise<ScheduleRecord[]> {
    return this.c.run(() => schedules.listSchedules(this.c));
  }

  dueSchedules(): Promise<ScheduleRecord[]> {
    return this.c.run(() => schedules.dueSchedules(this.c));
  }

  advanceSchedule(req: {
    name: string;
    expectedNextRunAt: Date;
    nextRunAt: Date;
    lastSlot: Date | null;
  }): Promise<boolean> {
    return this.c.run(() => schedules.advanceSchedule(this.c, req));
  }

  // ── pauses (pauses.ts) ───────────────────────────────────────────────────────────────────

  pauseQueue(queue: string): Promise<QueuePause> {
    return this.c.run(() => pauses.pauseQueue(this.c, queue));
  }

  /** Wakes the queue's workers here and (through the commit watch) in other processes. */
  resumeQueue(queue: string): Promise<boolean> {
    return writes.resumeQueue(this.c, this.notifier, queue);
  }

  listPausedQueues(): Promise<QueuePause[]> {
    return this.c.run(() => pauses.listPausedQueues(this.c));
  }

  isQueuePaused(queue: string): Promise<boolean> {
    return this.c.run(() => pauses.isQueuePaused(this.c, queue));
  }

  setSchedulePaused(name: string, paused: boolean): Promise<ScheduleRecord | null> {
    return this.c.run(() => pauses.setSchedulePaused(this.c, name, paused));
  }

  countJobsAhead(
    job: { id: string; queue: string; priority: number; runAt: Date },
    cap: number,
  ): Promise<number> {
    return this.c.run(() => pauses.countJobsAhead(this.c, job, cap));
  }

  // ── workers registry ─────────────────────────────────────────────────────────────────────

  registerWorker(info: Omit<WorkerInfo, "startedAt" | "lastHeartbeatAt">): Promise<void> {
    return this.c.run(() => workers.registerWorker(this.c, info));
  }

  heartbeatWorker(id: string, running: number, processed: number): Promise<void> {
    return this.c.run(() => workers.heartbeatWorker(this.c, id, running, processed));
  }

  unregisterWorker(id: string): Promise<void> {
    return this.c.run(() => workers.unregisterWorker(this.c, id));
  }

  listWorkers(staleMs: number): Promise<WorkerInfo[]> {
    return this.c.run(() => workers.listWorkers(this.c, staleMs));
  }
}
