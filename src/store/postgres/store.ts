/**
 * The PostgreSQL store: production mode, any number of worker processes on any number of hosts
 * against one database, no coordinator. Behaves exactly as the memory store (the reference);
 * test/conformance/ holds it to that. All SQL is in queries.ts (and the sql/ files it
 * re-exports), the schema in migrations.ts. Each operation lives in the file of its concern
 * (insert.ts, leases.ts, reads.ts, …) as a plain function over a `Db` (db.ts); this class holds
 * the store's state (pool, limits, notifier, vacuum: assembled in store-parts.ts) and delegates.
 *
 * How it stays fast and safe under many workers:
 * - claimJobs is one statement: `FOR UPDATE SKIP LOCKED` over a partial index of pending jobs in
 *   claim order, so concurrent claimers never wait on each other nor take the same job, and the
 *   index never holds the millions of finished rows.
 * - finishJobs and extendLeases are one statement per batch (`unnest` of arrays), each outcome
 *   fenced by its lease token: a worker that lost its lease cannot overwrite the job's new life.
 * - Leases, due times and retention use the database clock (`statement_timestamp()`).
 * - Inserts are bulk statements of up to 5,000 rows (insert.ts); idempotency keys are a unique
 *   partial index.
 * - LISTEN/NOTIFY wakes idle workers (notifier.ts); polling remains the safety net.
 * - The pool survives killed connections and server restarts: a broken client is dropped, the
 *   next query opens a new one; a method whose connection died throws (the worker backs off and
 *   retries). Idle-client errors never crash the process. A silent connection (no answer at
 *   all) is bounded by timeouts sized from the lease (connection.ts).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type pg from "pg";
import type { JobLogLine, JobRecord } from "../../job.js";
import type {
  ClaimedJob,
  FlowClaim,
  FlowLimits,
  FlowStatus,
  InsertResult,
  JobFilter,
  JobLinks,
  JobPage,
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
import * as admin from "./admin.js";
import * as awaited from "./awaited.js";
import * as bulk from "./bulk.js";
import { type ConnectionLimits, DEFAULT_LEASE_MS, endPool, limitsForLease } from "./connection.js";
import type { Db } from "./db.js";
import { jobLinks } from "./dependencies.js";
import * as flowOps from "./flow.js";
import { insertJobs } from "./insert.js";
import * as leases from "./leases.js";
import { ledgerGet, ledgerPut } from "./ledger.js";
import { migrate } from "./migrate.js";
import type { Notifier } from "./notifier.js";
import { checkPostgresStoreOptions, type PostgresStoreOptions } from "./options.js";
import * as pauses from "./pauses.js";
import * as reads from "./reads.js";
import * as schedules from "./schedules.js";
import { assembleStoreParts } from "./store-parts.js";
import { pruneFinished, type Vacuum } from "./upkeep.js";
import * as workers from "./workers.js";

export type { PostgresStoreOptions };

export class PostgresStore implements Store {
  readonly kind = "postgres" as const;
  readonly schema: string;
  readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  private readonly db: Db;
  private readonly notifier: Notifier;
  private readonly vacuum: Vacuum;
  private readonly onError?: (err: Error) => void;
  private readonly poolErrorHandler = (err: Error) => this.report(err);
  /**
   * The client of the completeInTransaction running in this async context: ledger reads and
   * writes made from its `fn` (ctx.once) join that transaction, so a ledger entry commits or
   * rolls back with the effect it records and the completion (as on SQLite).
   */
  private readonly txClient = new AsyncLocalStorage<pg.PoolClient>();
  private closed = false;
  private readonly waiterId = awaited.newWaiterId(); // this store's rows in `awaited` (waitFor)
  /** Timeouts, from the lease of the workers using this store (useLease) or the default lease. */
  private limits: ConnectionLimits = limitsForLease(DEFAULT_LEASE_MS);
  private leaseMs: number | null = null;
  /** The clients of an owned pool, so close() can destroy silent ones (connection.ts endPool). */
  private readonly clients: Set<pg.Client>;

  constructor(options: PostgresStoreOptions) {
    const schema = checkPostgresStoreOptions(options);
    this.schema = schema;
    this.onError = options.onError;
    const parts = assembleStoreParts(
      options,
      schema,
      () => this.limits,
      (err) => this.report(err),
    );
    this.pool = parts.pool;
    this.ownsPool = parts.ownsPool;
    this.clients = parts.clients;
    this.db = parts.db;
    this.vacuum = parts.vacuum;
    this.notifier = parts.notifier;
    // An idle client whose connection dies (restart, pg_terminate_backend) emits 'error' on the
    // pool; without a handler that would crash the process. The pool drops the client itself.
    this.pool.on("error", this.poolErrorHandler);
  }

  private report(err: unknown): void {
    try {
      this.onError?.(err instanceof Error ? err : new Error(String(err)));
    } catch {
      // a reporter that throws must not crash a connection handler
    }
  }

  /**
   * Sizes the connection timeouts from a worker's lease (the shortest, when several workers
   * share the store): a connection silent for a lease is dropped. Called by the worker at start.
   */
  useLease(leaseMs: number): void {
    if (!(leaseMs > 0) || (this.leaseMs !== null && leaseMs >= this.leaseMs)) return;
    this.leaseMs = leaseMs;
    this.limits = limitsForLease(leaseMs);
    // Connections opened from now on; the statements errand sends name their timeout anyway.
    if (this.ownsPool)
      Object.assign(this.pool.options, {
        query_timeout: this.limits.queryMs,
        connectionTimeoutMillis: this.limits.connectMs,
      });
  }

  // ── lifecycle ───────────────────────────────────────────────────────────────────────────

  migrate(options: { mustExist?: boolean } = {}): Promise<void> {
    return migrate(this.db, options);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.vacuum.stop();
    await this.notifier.close();
    // Bounded: statements on silent connections get a query timeout to come back, then are destroyed.
    if (this.ownsPool) await endPool(this.pool, this.clients, this.limits.queryMs);
    else this.pool.off("error", this.poolErrorHandler);
  }

  /** Vacuums the jobs table when autovacuum falls behind (upkeep.ts Vacuum). */
  upkeep(): Promise<void> {
    return this.vacuum.run();
  }

  now(): Promise<Date> {
    return reads.now(this.db);
  }

  /** Resolves once the LISTEN connection is up (tests that need a NOTIFY to arrive). */
  whenListening(): Promise<void> {
    return this.notifier.whenListening();
  }

  onJobsAvailable(listener: (queue: string | null) => void): () => void {
    if (this.closed) return () => {};
    return this.notifier.subscribe(listener);
  }

  /** waitFor (awaited.ts): NOTIFY of awaited jobs' finishes, on the same LISTEN connection. */
  onJobsFinished(listener: (ids: string[] | null) => void): () => void {
    if (this.closed) return () => {};
    return this.notifier.subscribeFinished(listener);
  }

  awaitJobs(ids: string[]): Promise<JobRecord[]> {
    return awaited.awaitJobs(this.db, this.waiterId, ids);
  }

  unawaitJobs(ids: string[]): Promise<void> {
    return awaited.unawaitJobs(this.db, this.waiterId, ids);
  }

  getJobs(ids: string[]): Promise<JobRecord[]> {
    return awaited.getJobs(this.db, ids);
  }

  // ── insert and read ─────────────────────────────────────────────────────────────────────

  insertJobs(jobs: NewJob[], tx?: TxHandle): Promise<InsertResult[]> {
    return insertJobs(this.db, this.notifier, jobs, tx);
  }

  getJob(id: string): Promise<JobRecord | null> {
    return reads.getJob(this.db, id);
  }

  getJobLinks(id: string): Promise<JobLinks> {
    return jobLinks(this.db, String(id));
  }

  listJobs(filter: JobFilter): Promise<JobPage> {
    return reads.listJobs(this.db, filter);
  }

  stats(): Promise<QueueStats[]> {
    return reads.stats(this.db);
  }

  throughput(sinceMs: number, bucketMs: number): Promise<ThroughputBucket[]> {
    return reads.throughput(this.db, sinceMs, bucketMs);
  }

  // ── claim, lease, finish ────────────────────────────────────────────────────────────────

  claimJobs(req: { queue: string; limit: number; workerId: string; leaseMs: number }): Promise<ClaimedJob[]> {
    return leases.claimJobs(this.db, req);
  }

  claimFlowJobs(req: {
    queue: string;
    limit: number;
    workerId: string;
    leaseMs: number;
    flow: FlowLimits;
  }): Promise<FlowClaim> {
    return flowOps.claimFlowJobs(this.db, req);
  }

  flowStatus(req: { queue: string; windowMs: number }): Promise<FlowStatus> {
    return flowOps.flowStatus(this.db, req);
  }

  pauseFlow(req: { queue: string; key: string | null; ms: number }): Promise<void> {
    return flowOps.pauseFlow(this.db, req);
  }

  resumeFlow(req: { queue: string; key?: string | null }): Promise<number> {
    return flowOps.resumeFlow(this.db, this.notifier, req);
  }

  extendLeases(held: Lease[], leaseMs: number): Promise<LeaseStatus[]> {
    return leases.extendLeases(this.db, held, leaseMs);
  }

  returnJobs(held: Lease[]): Promise<number> {
    return leases.returnJobs(this.db, this.notifier, held);
  }

  finishJobs(outcomes: Outcome[]): Promise<boolean[]> {
    return leases.finishJobs(this.db, this.notifier, outcomes);
  }

  completeInTransaction<T>(
    lease: Lease,
    worker: string,
    fn: (tx: TxHandle) => Promise<T> | T,
    logs?: () => JobLogLine[] | undefined,
  ): Promise<{ applied: boolean; value?: T }> {
    return leases.completeInTransaction(this.db, this.notifier, this.txClient, lease, worker, fn, logs);
  }

  setProgress(lease: Lease, progress: { fraction: number; message?: string }): Promise<boolean> {
    return leases.setProgress(this.db, lease, progress);
  }

  rescueExpiredLeases(_workerNote?: string): Promise<RescuedJob[]> {
    return leases.rescueExpiredLeases(this.db, this.notifier);
  }

  nextRunAt(queues: string[]): Promise<Date | null> {
    return reads.nextRunAt(this.db, queues);
  }

  // ── admin ───────────────────────────────────────────────────────────────────────────────

  cancelJob(id: string): Promise<JobRecord | null> {
    return admin.cancelJob(this.db, id);
  }

  retryJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    return admin.retryJobs(this.db, this.notifier, filter);
  }

  discardJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    return admin.discardJobs(this.db, filter);
  }
  actOnJobs: Store["actOnJobs"] = (batch) => bulk.actOnJobs(this.db, this.notifier, batch);
  deadLetterGroups: Store["deadLetterGroups"] = (queue) => bulk.deadLetterGroups(this.db, queue);
  recentTimings: Store["recentTimings"] = (windowMs, limit) => bulk.recentTimings(this.db, windowMs, limit);

  pruneFinished(req: PruneRequest): Promise<number> {
    return pruneFinished(this.db, req);
  }

  // ── ledger ──────────────────────────────────────────────────────────────────────────────

  ledgerGet(entry: LedgerEntryKey): Promise<{ found: boolean; value?: unknown }> {
    return ledgerGet(this.db, this.txClient, entry);
  }

  ledgerPut(entry: LedgerEntryKey, value: unknown): Promise<void> {
    return ledgerPut(this.db, this.txClient, entry, value);
  }

  // ── pauses (pauses.ts) ────────────────────────────────────────────────────────────────

  pauseQueue(queue: string): Promise<QueuePause> {
    return pauses.pauseQueue(this.db, queue);
  }

  resumeQueue(queue: string): Promise<boolean> {
    return pauses.resumeQueue(this.db, this.notifier, queue);
  }

  listPausedQueues(): Promise<QueuePause[]> {
    return pauses.listPausedQueues(this.db);
  }

  isQueuePaused(queue: string): Promise<boolean> {
    return pauses.isQueuePaused(this.db, queue);
  }

  setSchedulePaused(name: string, paused: boolean): Promise<ScheduleRecord | null> {
    return pauses.setSchedulePaused(this.db, name, paused);
  }

  countJobsAhead(job: { id: string; queue: string }, cap: number): Promise<number> {
    return pauses.countJobsAhead(this.db, job, cap);
  }

  // ── schedules ───────────────────────────────────────────────────────────────────────────

  syncSchedules(list: ScheduleInput[]): Promise<void> {
    return schedules.syncSchedules(this.db, list);
  }

  upsertSchedule(schedule: ScheduleInput): Promise<void> {
    return schedules.upsertSchedule(this.db, schedule);
  }

  removeSchedule(name: string): Promise<boolean> {
    return schedules.removeSchedule(this.db, name);
  }

  listSchedules(): Promise<ScheduleRecord[]> {
    return schedules.listSchedules(this.db);
  }

  dueSchedules(): Promise<ScheduleRecord[]> {
    return schedules.dueSchedules(this.db);
  }

  advanceSchedule(req: {
    name: string;
    expectedNextRunAt: Date;
    nextRunAt: Date;
    lastSlot: Date | null;
  }): Promise<boolean> {
    return schedules.advanceSchedule(this.db, req);
  }

  // ── workers ─────────────────────────────────────────────────────────────────────────────

  registerWorker(info: Omit<WorkerInfo, "startedAt" | "lastHeartbeatAt">): Promise<void> {
    return workers.registerWorker(this.db, info);
  }

  heartbeatWorker(id: string, running: number, processed: number): Promise<void> {
    return workers.heartbeatWorker(this.db, id, running, processed);
  }

  unregisterWorker(id: string): Promise<void> {
    return workers.unregisterWorker(this.db, id);
  }

  listWorkers(staleMs: number): Promise<WorkerInfo[]> {
    return workers.listWorkers(this.db, staleMs);
  }
}

/** Opens (does not migrate) a PostgreSQL store; call `migrate()` before use. */
export function openPostgresStore(options: PostgresStoreOptions): PostgresStore {
  return new PostgresStore(options);
}
