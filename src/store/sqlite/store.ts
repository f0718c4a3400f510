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
 *   (watch.ts), with a `PRAGMA data_version` poll as the safety net (`onJobsAvailable`).
 * - A shared application handle (`openSqliteStore({ db })`): errand never closes it and never
 *   changes its pragmas. If the application holds a transaction open on it, worker operations
 *   (claim, finish, extend, rescue, completeInTransaction) do not run inside it — their writes
 *   would commit or roll back with the application's work. Claims and rescues return [] and are
 *   tried again at the next poll; finish and extend throw ERR_STORE_BUSY and the worker retries.
 *   Enqueue and operator actions called while it is open join it (on one connection there is
 *   no other choice), as `enqueue(..., { tx: db })` does on purpose.
 */
import Database from "better-sqlite3";
import { ErrandError, ValidationError } from "../../errors.js";
import type { AttemptRecord, JobRecord } from "../../job.js";
import { attemptFromOutcome, decodeCursor, emptyStats, encodeCursor, outcomeTransition } from "../shared.js";
import type {
  ClaimedJob,
  InsertResult,
  JobFilter,
  JobPage,
  Lease,
  LeaseStatus,
  NewJob,
  Outcome,
  QueueStats,
  RescuedJob,
  ScheduleInput,
  ScheduleRecord,
  Store,
  ThroughputBucket,
  TxHandle,
  WorkerInfo,
} from "../types.js";
import { Gate } from "./gate.js";
import { type Db, describe, isDatabase, type Statement, Statements } from "./handle.js";
import { insertJobsOn } from "./insert.js";
import { LATEST_VERSION, MIGRATIONS, MIGRATIONS_TABLE_SQL } from "./migrations.js";
import * as Q from "./queries.js";
import {
  type ClaimRow,
  claimedFromRow,
  type JobRow,
  jobFromRow,
  parseId,
  type ScheduleRow,
  scheduleFromRow,
  toJson,
  type WorkerRow,
  workerFromRow,
} from "./rows.js";
import { checkTxHandle } from "./tx.js";
import { type CommitWatch, watchCommits } from "./watch.js";

export interface SqliteStoreOptions {
  /** Database file; default `./errand.db`. `:memory:` works for a single connection. */
  path?: string;
  /** The application's own better-sqlite3 handle: errand shares it and never closes it. */
  db?: Db;
  /** busy_timeout set on a handle errand opens; default 5000 ms. */
  busyTimeoutMs?: number;
  /**
   * Learn of other processes' commits as they happen by watching the database's directory
   * (fs.watch; watch.ts); default true. Without it, only the poll sees them.
   */
  watch?: boolean;
  /**
   * How often `PRAGMA data_version` is polled while someone listens for new jobs: the safety
   * net behind the watch (default 250 ms), or the only way to see other processes' commits
   * when there is no watch (`watch: false`, an in-memory database, or a watch that failed;
   * default 50 ms).
   */
  pollIntervalMs?: number;
  /**
   * Called when the database's directory cannot be watched, or the watch fails later
   * (inotify's watches spent — ENOSPC —, the directory removed, …): the poll takes over at
   * its no-watch interval. Never throws into the store.
   */
  onWatchError?: (err: Error) => void;
}

/** The poll behind a working watch: it only catches what the watch missed. */
const SAFETY_POLL_MS = 250;
/** The poll without a watch: half of it is the average wait for another process's job. */
const FALLBACK_POLL_MS = 50;

/** Opens (or shares) a database; call `migrate()` before use. */
export function openSqliteStore(options: SqliteStoreOptions = {}): SqliteStore {
  return new SqliteStore(options);
}

interface HeldRow {
  id: number;
  queue: string;
  attempt: number;
  started_at: number | null;
  cancel_requested: number;
}

interface ExpiredRow {
  id: number;
  queue: string;
  name: string;
  attempt: number;
  max_attempts: number;
  started_at: number | null;
  locked_by: string | null;
  cancel_requested: number;
}

const NO_CURSOR = Number.MAX_SAFE_INTEGER;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

function storeBusy(operation: string): ErrandError {
  return new ErrandError(
    "ERR_STORE_BUSY",
    `${operation}: the application holds a transaction open on the SQLite connection errand shares; retry after it ends`,
  );
}

function idsJson(ids: string[]): string {
  return JSON.stringify(ids.map(parseId).filter((id) => id !== null));
}

export class SqliteStore implements Store {
  readonly kind = "sqlite" as const;
  /** The connection errand uses: its own, or the application's shared handle. */
  readonly db: Db;
  private readonly ownsDb: boolean;
  private readonly pollIntervalMs: number | undefined;
  private readonly watchFiles: boolean;
  private readonly onWatchError: ((err: Error) => void) | undefined;
  private readonly statements = new Statements();
  private readonly listeners = new Set<(queue: string | null) => void>();
  private pollTimer: NodeJS.Timeout | null = null;
  private commitWatch: CommitWatch | null = null;
  private dataVersion: unknown = null;
  private closed = false;
  /** Held by completeInTransaction while its transaction spans an await (gate.ts). */
  private readonly gate = new Gate();
  /** Wake-ups raised while the gate is held, sent once it opens (after the commit). */
  private readonly deferredWake = new Set<string>();

  private readonly claimTx: Database.Transaction<
    (queue: string, limit: number, worker: string, leaseMs: number) => ClaimRow[]
  >;
  private readonly finishTx: Database.Transaction<
    (outcomes: Outcome[]) => { applied: boolean[]; wake: Set<string> }
  >;
  private readonly extendTx: Database.Transaction<(leases: Lease[], leaseMs: number) => LeaseStatus[]>;
  private readonly returnTx: Database.Transaction<(leases: Lease[]) => { queue: string; state: string }[]>;

  constructor(options: SqliteStoreOptions = {}) {
    if (options.db !== undefined && options.path !== undefined) {
      throw new ValidationError("openSqliteStore: pass either `path` or `db`, not both");
    }
    if (options.db !== undefined) {
      if (!isDatabase(options.db)) {
        throw new ValidationError(
          `openSqliteStore: \`db\` must be a better-sqlite3 Database; got ${describe(options.db)}`,
        );
      }
      this.db = options.db;
      this.ownsDb = false;
    } else {
      this.db = new Database(options.path ?? "./errand.db");
      this.ownsDb = true;
      // busy_timeout first: switching to WAL needs a lock another process may hold right now.
      this.db.pragma(Q.PRAGMA_BUSY_TIMEOUT(options.busyTimeoutMs ?? 5000));
      this.db.pragma(Q.PRAGMA_WAL);
      this.db.pragma(Q.PRAGMA_SYNCHRONOUS_NORMAL);
    }
    this.pollIntervalMs = options.pollIntervalMs;
    this.watchFiles = options.watch ?? true;
    this.onWatchError = options.onWatchError;

    this.claimTx = this.db.transaction((queue: string, limit: number, worker: string, leaseMs: number) => {
      const now = this.nowMs();
      return this.q(Q.CLAIM_JOBS).all({ queue, limit, worker, leaseMs, now }) as ClaimRow[];
    });
    this.finishTx = this.db.transaction((outcomes: Outcome[]) => {
      const now = this.nowMs();
      const wake = new Set<string>();
      const applied = outcomes.map((outcome) => {
        const done = this.applyOutcome(outcome, now);
        if (done?.state === "pending") wake.add(done.queue);
        return done !== null;
      });
      return { applied, wake };
    });
    this.returnTx = this.db.transaction((leases: Lease[]) => {
      const now = this.nowMs();
      const give = this.q(Q.RETURN_JOB);
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
    });
    this.extendTx = this.db.transaction((leases: Lease[], leaseMs: number) => {
      const now = this.nowMs();
      const extend = this.q(Q.EXTEND_LEASE);
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
    });
  }

  // ── plumbing ─────────────────────────────────────────────────────────────────────────────

  /** The prepared statement for `sql` on errand's connection. */
  private q(sql: string): Statement {
    return this.statements.get(this.db, sql);
  }

  private nowMs(): number {
    return this.statements.now(this.db);
  }

  /**
   * Runs a synchronous operation on the connection — at once, unless completeInTransaction
   * holds it from another async context: then once it lets go.
   */
  private run<T>(operation: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new ErrandError("ERR_CLOSED", "the SQLite store is closed"));
    if (this.gate.blocked) return this.gate.released.then(() => this.run(operation));
    try {
      return Promise.resolve(operation());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private notify(queue: string | null): void {
    if (queue !== null && this.gate.held) {
      this.deferredWake.add(queue);
      return;
    }
    for (const listener of this.listeners) queueMicrotask(() => listener(queue));
  }

  // ── lifecycle ────────────────────────────────────────────────────────────────────────────

  /**
   * Applies the missing migrations in one BEGIN IMMEDIATE transaction. Concurrent migrators
   * (other processes on the same file) wait on the write lock, then find the versions applied.
   * A database migrated by a newer errand (versions past LATEST_VERSION) is left as it is.
   */
  migrate(): Promise<void> {
    return this.run(() => {
      this.db
        .transaction(() => {
          this.db.exec(MIGRATIONS_TABLE_SQL);
          const current = (this.q(Q.MIGRATION_VERSION).get() as { version: number }).version;
          if (current >= LATEST_VERSION) return;
          for (const migration of MIGRATIONS) {
            if (migration.version <= current) continue;
            this.db.exec(migration.sql);
            this.q(Q.MIGRATION_RECORD).run(migration.version, migration.name);
          }
        })
        .immediate();
    });
  }

  async close(): Promise<void> {
    while (this.gate.held) await this.gate.released;
    if (this.closed) return;
    this.closed = true;
    this.stopWatching();
    this.listeners.clear();
    if (this.ownsDb && this.db.open) this.db.close();
  }

  now(): Promise<Date> {
    return this.run(() => new Date(this.nowMs()));
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
    if (this.closed) return Promise.reject(new ErrandError("ERR_CLOSED", "the SQLite store is closed"));
    return this.run(() => {
      if (jobs.length === 0) return [];
      const results = this.db.transaction(() => insertJobsOn(this.db, this.statements, jobs)).immediate();
      this.notifyCreated(results);
      return results;
    });
  }

  /**
   * The inserts run on `tx` (a better-sqlite3 Database on errand's file, tx.ts) synchronously,
   * inside its open transaction — or, if it has none, in one of their own; any error is thrown,
   * so that an application's `db.transaction(() => …)` rolls back with it.
   */
  insertJobsNow(jobs: NewJob[], tx: TxHandle): InsertResult[] {
    if (this.closed) throw new ErrandError("ERR_CLOSED", "the SQLite store is closed");
    const db = checkTxHandle(tx, this.db, this.statements);
    const insert = () => insertJobsOn(db, this.statements, jobs);
    const results = db.inTransaction ? insert() : db.transaction(insert).immediate();
    this.notifyCreated(results);
    return results;
  }

  private notifyCreated(results: InsertResult[]): void {
    const queues = new Set<string>();
    for (const r of results) if (r.created) queues.add(r.job.queue);
    for (const queue of queues) this.notify(queue);
  }

  /**
   * In-process: called after an insert, retry or rescue that makes pending work. Across
   * processes, while anyone listens: a change of `PRAGMA data_version` on this connection —
   * another connection committed — calls listeners with null. It is looked at after every
   * event of a watch on the database's files (watch.ts), and by a poll (an unref'd timer):
   * every 250 ms behind the watch, every 50 ms without one.
   */
  onJobsAvailable(listener: (queue: string | null) => void): () => void {
    this.listeners.add(listener);
    this.startWatching();
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) this.stopWatching();
    };
  }

  private startWatching(): void {
    if (this.pollTimer !== null || this.closed) return;
    let file: string;
    try {
      this.dataVersion = this.q(Q.DATA_VERSION).pluck().get();
      file = this.watchFiles ? this.mainFile() : "";
    } catch {
      return; // the shared handle is closed: nothing to watch
    }
    if (file !== "") {
      try {
        this.commitWatch = watchCommits(
          file,
          () => this.checkDataVersion(),
          (err) => this.watchFailed(err),
        );
      } catch (err) {
        this.reportWatchError(err);
      }
    }
    this.startPoll();
  }

  /** The database file, '' for an in-memory or temporary database (nothing to watch). */
  private mainFile(): string {
    const file = this.q(Q.MAIN_FILE).pluck().get();
    return typeof file === "string" ? file : "";
  }

  private startPoll(): void {
    if (this.pollTimer !== null) clearInterval(this.pollTimer);
    const ms = this.pollIntervalMs ?? (this.commitWatch !== null ? SAFETY_POLL_MS : FALLBACK_POLL_MS);
    this.pollTimer = setInterval(() => this.checkDataVersion(), ms);
    this.pollTimer.unref();
  }

  /** The watch failed after it started (watch.ts closed it): the poll speeds up in its place. */
  private watchFailed(err: Error): void {
    this.commitWatch = null;
    this.reportWatchError(err);
    if (this.pollTimer !== null) this.startPoll();
  }

  private reportWatchError(err: unknown): void {
    try {
      this.onWatchError?.(err instanceof Error ? err : new Error(String(err)));
    } catch {
      // a throwing callback must not break the fallback
    }
  }

  private stopWatching(): void {
    this.commitWatch?.close();
    this.commitWatch = null;
    if (this.pollTimer !== null) clearInterval(this.pollTimer);
    this.pollTimer = null;
  }

  /** Calls listeners with null if another connection committed since the last look. */
  private checkDataVersion(): boolean {
    let version: unknown;
    try {
      version = this.q(Q.DATA_VERSION).pluck().get();
    } catch {
      // The application closed the handle it shared: stop. Anything else (SQLITE_BUSY in
      // rollback-journal mode while another connection commits): the next look will tell.
      if (!this.db.open) this.stopWatching();
      return false;
    }
    if (version === this.dataVersion) return false;
    this.dataVersion = version;
    for (const listener of this.listeners) queueMicrotask(() => listener(null));
    return true;
  }

  // ── reading ──────────────────────────────────────────────────────────────────────────────

  getJob(id: string): Promise<JobRecord | null> {
    return this.run(() => {
      const n = parseId(id);
      const row = n === null ? undefined : (this.q(Q.SELECT_JOB).get(n) as JobRow | undefined);
      return row ? jobFromRow(row) : null;
    });
  }

  listJobs(filter: JobFilter): Promise<JobPage> {
    return this.run(() => {
      const limit = Math.max(0, Math.floor(filter.limit ?? 50));
      const before = decodeCursor(filter.cursor) ?? NO_CURSOR;
      const queue = filter.queue || null;
      const state = filter.state || null;
      const name = filter.name || null;
      const sql =
        queue !== null
          ? state !== null
            ? name !== null
              ? Q.LIST_JOBS_BY_QUEUE_STATE_NAME
              : Q.LIST_JOBS_BY_QUEUE_STATE
            : name !== null
              ? Q.LIST_JOBS_BY_QUEUE_NAME
              : Q.LIST_JOBS_BY_QUEUE
          : state !== null
            ? name !== null
              ? Q.LIST_JOBS_BY_STATE_NAME
              : Q.LIST_JOBS_BY_STATE
            : name !== null
              ? Q.LIST_JOBS_BY_NAME
              : Q.LIST_JOBS;
      // One row more than the page tells whether there is a next page.
      const rows = this.q(sql).all({
        queue,
        state,
        name,
        before,
        search: filter.search || null,
        limit: limit + 1,
      }) as JobRow[];
      const page = rows.slice(0, limit);
      const nextCursor =
        rows.length > limit && page.length > 0 ? encodeCursor(page[page.length - 1].id) : null;
      return { jobs: page.map(jobFromRow), nextCursor };
    });
  }

  /**
   * Index-only passes: counts per (queue, state) (a walk of errand_jobs_queue_state_idx — SQLite
   * has no O(1) count); per queue with pending jobs, the delayed ones and the oldest run_at;
   * completed/failed in the last day (a range of errand_jobs_finished_idx).
   */
  stats(): Promise<QueueStats[]> {
    return this.run(() =>
      this.db.transaction(() => {
        const now = this.nowMs();
        const byQueue = new Map<string, QueueStats>();
        const get = (queue: string): QueueStats => {
          let s = byQueue.get(queue);
          if (!s) {
            s = emptyStats(queue);
            byQueue.set(queue, s);
          }
          return s;
        };
        for (const row of this.q(Q.STATS_BY_STATE).all() as {
          queue: string;
          state: JobRecord["state"];
          n: number;
        }[]) {
          if (row.n === 0) continue;
          const s = get(row.queue);
          if (row.state === "pending")
            s.delayed = row.n; // every pending job, until split below
          else s[row.state] = row.n;
        }
        for (const s of byQueue.values()) {
          if (s.delayed > 0) {
            const p = this.q(Q.STATS_PENDING).get({ queue: s.queue, now }) as {
              delayed: number;
              oldest: number | null;
            };
            s.pending = s.delayed - p.delayed;
            s.delayed = p.delayed;
            s.oldestPendingMs = s.pending > 0 && p.oldest !== null ? now - p.oldest : null;
          }
          if (s.completed > 0 || s.failed > 0) {
            const f = this.q(Q.STATS_FINISHED).get({
              queue: s.queue,
              dayAgo: now - DAY_MS,
              hourAgo: now - HOUR_MS,
            }) as {
              completedDay: number;
              completedHour: number;
              failedDay: number;
              failedHour: number;
            };
            s.completedLastDay = f.completedDay;
            s.completedLastHour = f.completedHour;
            s.failedLastDay = f.failedDay;
            s.failedLastHour = f.failedHour;
          }
        }
        return [...byQueue.values()].sort((a, b) => a.queue.localeCompare(b.queue));
      })(),
    );
  }

  throughput(sinceMs: number, bucketMs: number): Promise<ThroughputBucket[]> {
    return this.run(() => {
      const now = this.nowMs();
      const since = now - sinceMs;
      const first = Math.floor(since / bucketMs);
      const last = Math.floor(now / bucketMs);
      const fewBuckets =
        Number.isSafeInteger(bucketMs) &&
        bucketMs > 0 &&
        last >= first &&
        last - first < Q.THROUGHPUT_MAX_BUCKETS;
      const rows = (
        fewBuckets
          ? this.q(Q.THROUGHPUT_BY_BUCKET).all({ bucket: bucketMs, since, first, last })
          : this.q(Q.THROUGHPUT).all({ bucket: bucketMs, since })
      ) as { queue: string; bucket: number; completed: number; failed: number }[];
      return rows
        .filter((r) => r.completed > 0 || r.failed > 0)
        .map((r) => ({
          at: new Date(r.bucket * bucketMs),
          queue: r.queue,
          completed: r.completed,
          failed: r.failed,
        }))
        .sort((a, b) => a.at.getTime() - b.at.getTime() || a.queue.localeCompare(b.queue));
    });
  }

  // ── worker operations ────────────────────────────────────────────────────────────────────

  /**
   * One BEGIN IMMEDIATE transaction: `UPDATE … WHERE id IN (SELECT … ORDER BY priority DESC,
   * run_at, id LIMIT n) RETURNING …` (queries.ts CLAIM_JOBS), then sorted into claim order.
   * Returns [] while the application holds a transaction open on a shared handle.
   */
  claimJobs(req: { queue: string; limit: number; workerId: string; leaseMs: number }): Promise<ClaimedJob[]> {
    return this.run(() => {
      const limit = Math.max(0, Math.floor(req.limit));
      if (limit === 0 || this.db.inTransaction) return [];
      const rows = this.claimTx.immediate(req.queue, limit, req.workerId, req.leaseMs);
      rows.sort((a, b) => b.priority - a.priority || a.run_at - b.run_at || a.id - b.id);
      return rows.map(claimedFromRow);
    });
  }

  extendLeases(leases: Lease[], leaseMs: number): Promise<LeaseStatus[]> {
    return this.run(() => {
      if (leases.length === 0) return [];
      if (this.db.inTransaction) throw storeBusy("extendLeases");
      return this.extendTx.immediate(leases, leaseMs);
    });
  }

  returnJobs(leases: Lease[]): Promise<number> {
    return this.run(() => {
      if (leases.length === 0) return 0;
      if (this.db.inTransaction) throw storeBusy("returnJobs");
      const returned = this.returnTx.immediate(leases);
      for (const queue of new Set(returned.filter((r) => r.state === "pending").map((r) => r.queue)))
        this.notify(queue);
      return returned.length;
    });
  }

  finishJobs(outcomes: Outcome[]): Promise<boolean[]> {
    return this.run(() => {
      if (outcomes.length === 0) return [];
      if (this.db.inTransaction) throw storeBusy("finishJobs");
      const { applied, wake } = this.finishTx.immediate(outcomes);
      for (const queue of wake) this.notify(queue);
      return applied;
    });
  }

  /**
   * Applies one outcome if its lease is still held (inside the caller's transaction), with the
   * same transition and history entry as the memory store. Null when fenced off.
   */
  private applyOutcome(outcome: Outcome, now: number): { state: string; queue: string } | null {
    const id = parseId(outcome.id);
    if (id === null) return null;
    if (outcome.kind === "completed" && !outcome.error && typeof outcome.worker === "string") {
      const done = this.q(Q.FINISH_COMPLETED).run({
        id,
        token: outcome.leaseToken,
        result: toJson(outcome.result),
        now,
        worker: outcome.worker,
      });
      // The queue only matters to a job going back to pending: not this one.
      if (done.changes > 0) return { state: "completed", queue: "" };
    }
    const held = this.q(Q.SELECT_HELD).get(id, outcome.leaseToken) as HeldRow | undefined;
    if (!held) return null;
    const t = outcomeTransition(outcome, held.cancel_requested !== 0, now);
    // A plain completion's entry is implicit (migrations.ts version 2; rows.ts rebuilds it).
    const implicit =
      t.state === "completed" &&
      !outcome.error &&
      typeof outcome.worker === "string" &&
      held.started_at !== null;
    const record = implicit
      ? null
      : JSON.stringify(
          attemptFromOutcome(outcome, t, held.attempt, new Date(held.started_at ?? now), new Date(now)),
        );
    this.q(Q.FINISH_JOB).run({
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
  async completeInTransaction<T>(
    lease: Lease,
    worker: string,
    fn: (tx: TxHandle) => Promise<T> | T,
  ): Promise<{ applied: boolean; value?: T }> {
    try {
      return await this.gate.hold(async (within) => {
        if (this.closed) throw new ErrandError("ERR_CLOSED", "the SQLite store is closed");
        if (this.db.inTransaction) throw storeBusy("completeInTransaction");
        const id = parseId(lease.id);
        if (id === null) return { applied: false };
        this.db.exec(Q.BEGIN_IMMEDIATE);
        try {
          if (!this.q(Q.SELECT_HELD).get(id, lease.leaseToken)) {
            this.db.exec(Q.ROLLBACK);
            return { applied: false };
          }
          const value = await within(() => fn(this.db));
          if (!this.db.inTransaction) {
            throw new ErrandError(
              "ERR_TRANSACTION_ENDED",
              "completeInTransaction: fn committed or rolled back errand's transaction",
            );
          }
          const done = this.applyOutcome(
            { ...lease, kind: "completed", result: value, worker },
            this.nowMs(),
          );
          if (done === null) {
            this.db.exec(Q.ROLLBACK);
            return { applied: false };
          }
          this.db.exec(Q.COMMIT);
          return { applied: true, value };
        } catch (err) {
          if (this.db.open && this.db.inTransaction) this.db.exec(Q.ROLLBACK);
          throw err;
        }
      });
    } finally {
      const wake = [...this.deferredWake];
      this.deferredWake.clear();
      for (const queue of wake) this.notify(queue);
    }
  }

  setProgress(lease: Lease, progress: { fraction: number; message?: string }): Promise<boolean> {
    return this.run(() => {
      const id = parseId(lease.id);
      if (id === null) return false;
      return this.q(Q.SET_PROGRESS).run(toJson({ ...progress }), id, lease.leaseToken).changes === 1;
    });
  }

  /** Returns [] while the application holds a transaction open on a shared handle. */
  rescueExpiredLeases(_workerNote?: string): Promise<RescuedJob[]> {
    return this.run(() => {
      if (this.db.inTransaction) return [];
      const rescued = this.db
        .transaction(() => {
          const now = this.nowMs();
          const expired = this.q(Q.SELECT_EXPIRED).all(now) as ExpiredRow[];
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
            this.q(Q.RESCUE_JOB).run({
              id: row.id,
              state,
              runAt: state === "pending" ? now : null,
              finishedAt: state === "pending" ? null : now,
              lastError: record.error,
              record: JSON.stringify(record),
            });
            return { id: String(row.id), queue: row.queue, name: row.name, state, attempt: row.attempt };
          });
        })
        .immediate();
      for (const r of rescued) if (r.state === "pending") this.notify(r.queue);
      return rescued;
    });
  }

  nextRunAt(queues: string[]): Promise<Date | null> {
    return this.run(() => {
      let next: number | null = null;
      for (const queue of new Set(queues)) {
        const t = (this.q(Q.NEXT_RUN_AT).get(queue) as { runAt: number | null }).runAt;
        if (t !== null && (next === null || t < next)) next = t;
      }
      return next === null ? null : new Date(next);
    });
  }

  // ── operator actions ─────────────────────────────────────────────────────────────────────

  cancelJob(id: string): Promise<JobRecord | null> {
    return this.run(() => {
      const n = parseId(id);
      if (n === null) return null;
      return this.db
        .transaction(() => {
          if (this.q(Q.CANCEL_PENDING).run(n).changes === 0) this.q(Q.REQUEST_CANCEL).run(n);
          const row = this.q(Q.SELECT_JOB).get(n) as JobRow | undefined;
          return row ? jobFromRow(row) : null;
        })
        .immediate();
    });
  }

  retryJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    return this.run(() => {
      const queue = filter.queue || null;
      const rows = (
        filter.ids
          ? this.q(Q.RETRY_JOBS_BY_IDS).all({ ids: idsJson(filter.ids), queue })
          : this.q(Q.RETRY_JOBS).all({ queue })
      ) as { queue: string }[];
      for (const queue of new Set(rows.map((r) => r.queue))) this.notify(queue);
      return rows.length;
    });
  }

  discardJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    return this.run(() => {
      const queue = filter.queue || null;
      const info = filter.ids
        ? this.q(Q.DISCARD_JOBS_BY_IDS).run({ ids: idsJson(filter.ids), queue })
        : this.q(Q.DISCARD_JOBS).run({ queue });
      return info.changes;
    });
  }

  pruneFinished(req: { completedAgeMs: number; failedAgeMs: number }): Promise<number> {
    return this.run(() =>
      this.db
        .transaction(() => {
          const now = this.nowMs();
          const completed = this.q(Q.PRUNE_COMPLETED).run(now - req.completedAgeMs).changes;
          const failed = this.q(Q.PRUNE_FAILED).run(now - req.failedAgeMs).changes;
          return completed + failed;
        })
        .immediate(),
    );
  }

  // ── ledger ───────────────────────────────────────────────────────────────────────────────

  ledgerGet(key: string): Promise<{ found: boolean; value?: unknown }> {
    return this.run(() => {
      const row = this.q(Q.LEDGER_GET).get(key) as { value: string | null } | undefined;
      if (!row) return { found: false };
      return { found: true, value: row.value === null ? undefined : JSON.parse(row.value) };
    });
  }

  ledgerPut(key: string, jobId: string, value: unknown): Promise<void> {
    return this.run(() => {
      // NULL stands for undefined; anything else is JSON (null included).
      const text = value === undefined ? null : (JSON.stringify(value) ?? null);
      this.q(Q.LEDGER_PUT).run(key, String(jobId), text);
    });
  }

  // ── schedules ────────────────────────────────────────────────────────────────────────────

  syncSchedules(schedules: ScheduleInput[]): Promise<void> {
    return this.run(() => {
      this.db
        .transaction(() => {
          this.q(Q.SCHEDULE_DELETE_STALE_CODE).run(JSON.stringify(schedules.map((s) => s.name)));
          for (const s of schedules) this.upsertScheduleRow(s);
        })
        .immediate();
    });
  }

  upsertSchedule(schedule: ScheduleInput): Promise<void> {
    return this.run(() => this.upsertScheduleRow(schedule));
  }

  private upsertScheduleRow(s: ScheduleInput): void {
    this.q(Q.SCHEDULE_UPSERT).run({
      name: s.name,
      cron: s.cron,
      timezone: s.timezone,
      jobName: s.jobName,
      queue: s.queue,
      payload: toJson(s.payload),
      priority: s.priority,
      missed: s.missed,
      source: s.source,
      nextRunAt: new Date(s.nextRunAt).getTime(),
    });
  }

  removeSchedule(name: string): Promise<boolean> {
    return this.run(() => this.q(Q.SCHEDULE_DELETE).run(name).changes > 0);
  }

  listSchedules(): Promise<ScheduleRecord[]> {
    return this.run(() => this.schedulesFrom(Q.SCHEDULE_LIST));
  }

  dueSchedules(): Promise<ScheduleRecord[]> {
    return this.run(() => this.schedulesFrom(Q.SCHEDULE_DUE));
  }

  private schedulesFrom(sql: string): ScheduleRecord[] {
    return (this.q(sql).all() as ScheduleRow[])
      .map(scheduleFromRow)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  advanceSchedule(req: {
    name: string;
    expectedNextRunAt: Date;
    nextRunAt: Date;
    lastSlot: Date | null;
  }): Promise<boolean> {
    return this.run(
      () =>
        this.q(Q.SCHEDULE_ADVANCE).run({
          name: req.name,
          expected: req.expectedNextRunAt.getTime(),
          nextRunAt: req.nextRunAt.getTime(),
          lastSlot: req.lastSlot ? req.lastSlot.getTime() : null,
        }).changes === 1,
    );
  }

  // ── workers registry ─────────────────────────────────────────────────────────────────────

  registerWorker(info: Omit<WorkerInfo, "startedAt" | "lastHeartbeatAt">): Promise<void> {
    return this.run(() => {
      this.q(Q.WORKER_REGISTER).run({
        id: info.id,
        host: info.host,
        pid: info.pid,
        queues: JSON.stringify(info.queues ?? {}),
        running: info.running,
        processed: info.processed,
      });
    });
  }

  heartbeatWorker(id: string, running: number, processed: number): Promise<void> {
    return this.run(() => {
      this.q(Q.WORKER_HEARTBEAT).run(running, processed, id);
    });
  }

  unregisterWorker(id: string): Promise<void> {
    return this.run(() => {
      this.q(Q.WORKER_DELETE).run(id);
    });
  }

  listWorkers(staleMs: number): Promise<WorkerInfo[]> {
    return this.run(() => (this.q(Q.WORKER_LIST).all(staleMs) as WorkerRow[]).map(workerFromRow));
  }
}
