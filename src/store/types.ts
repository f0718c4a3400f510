/**
 * The Store contract: every database operation errand needs, each a whole
 * transaction named for what it does. The worker, scheduler, HTTP and CLI
 * layers speak only this interface; all SQL lives behind it in store/<backend>/.
 *
 * Semantics every store must meet are pinned by test/conformance/ (one suite,
 * every store) and described in docs/semantics.md. Times that decide anything (run_at,
 * leases, schedule due times) come from the store's own clock: the database's
 * `now()` for Postgres, SQLite's clock for SQLite, an injectable clock for memory.
 */

import type { AttemptRecord, JobLogLine, JobRecord, TxHandle } from "../job.js";
import type { UniqueRule, UniqueWhile } from "../unique-rule.js";
import type {
  ClaimedJob,
  FlowClaim,
  FlowClaimRequest,
  FlowStatus,
  Lease,
  LeaseStatus,
  Outcome,
  OutcomeKind,
  RescuedJob,
} from "./claim-types.js";
import type {
  DependencyFailurePolicy,
  InsertResult,
  JobLinks,
  NewJob,
  NewJobDependencies,
} from "./insert-types.js";
import type { JobFilter, JobPage, QueueStats, ThroughputBucket } from "./inspect-types.js";
import type { BulkBatch, DeadLetterGroup, JobTiming } from "./operate-types.js";
import type {
  MissedPolicy,
  QueuePause,
  ScheduleInput,
  ScheduleRecord,
  WorkerInfo,
} from "./schedule-types.js";

// The request and answer types live in their own files by concern; they are re-exported here so
// that every layer keeps importing the whole contract from store/types.ts.
export type { FlowLimits } from "../flow-limits.js";
export type {
  BulkBatch,
  ClaimedJob,
  DeadLetterGroup,
  DependencyFailurePolicy,
  FlowClaim,
  FlowClaimRequest,
  FlowStatus,
  InsertResult,
  JobFilter,
  JobLinks,
  JobPage,
  JobTiming,
  Lease,
  LeaseStatus,
  MissedPolicy,
  NewJob,
  NewJobDependencies,
  Outcome,
  OutcomeKind,
  QueuePause,
  QueueStats,
  RescuedJob,
  ScheduleInput,
  ScheduleRecord,
  ThroughputBucket,
  UniqueRule,
  UniqueWhile,
  WorkerInfo,
};

export type StoreKind = "memory" | "sqlite" | "postgres";

/** Which ctx.once entry: a key of one job's own (global false), or of the entries all jobs share. */
export interface LedgerEntryKey {
  key: string;
  /** The job that reads or records it. */
  jobId: string;
  global: boolean;
}

export interface PruneRequest {
  completedAgeMs: number;
  failedAgeMs: number;
  globalOnceAgeMs?: number;
}

export type { TxHandle };

export interface Store {
  readonly kind: StoreKind;

  /** Creates or upgrades the schema; safe when several processes run it at once. */
  /**
   * `mustExist`: refuse to create errand's schema when it is not there yet (read-only commands:
   * a mistyped schema must be an error, not an empty store). SQLite and memory ignore it (the
   * CLI checks a SQLite file's existence before opening it).
   */
  migrate(options?: { mustExist?: boolean }): Promise<void>;
  close(): Promise<void>;
  /** The store's clock. */
  now(): Promise<Date>;

  /**
   * Inserts jobs in one transaction (or inside the caller's `tx`). A duplicate (queue, key) — of
   * a stored job or of an earlier job of the same call — inserts nothing and returns the existing
   * job. One result per job, in input order; each record is a new object the caller owns
   * (errand's enqueue adds `created` to it).
   *
   * Jobs with `dependencies` are stored `waiting` (or `pending` when every dependency already
   * completed, or failed/cancelled at once when one already failed and their policy says so: see
   * store/dependency-plan.ts), with their edges, in the same transaction. A dependency id that
   * names no job throws a ValidationError before anything is written.
   */
  insertJobs(jobs: NewJob[], tx?: TxHandle): Promise<InsertResult[]>;
  /**
   * SQLite only: insertJobs on the caller's better-sqlite3 handle, synchronously — done before it
   * returns, any error thrown — so that it can run inside `db.transaction(() => …)`.
   */
  insertJobsNow?(jobs: NewJob[], tx: TxHandle): InsertResult[];
  getJob(id: string): Promise<JobRecord | null>;
  /** A job's dependencies (with their results) and dependents, in id order; empty lists when it has none. */
  getJobLinks(id: string): Promise<JobLinks>;
  listJobs(filter: JobFilter): Promise<JobPage>;
  stats(): Promise<QueueStats[]>;
  /** Completed and failed counts per queue per bucket since `sinceMs` ago, from finished_at. */
  throughput(sinceMs: number, bucketMs: number): Promise<ThroughputBucket[]>;

  /**
   * Claims up to `limit` due pending jobs of one queue, in order (priority desc, run_at, id),
   * each with a fresh lease token and a lease of `leaseMs` from the store's clock.
   */
  claimJobs(req: { queue: string; limit: number; workerId: string; leaseMs: number }): Promise<ClaimedJob[]>;
  /**
   * claimJobs for a queue with flow limits: takes only what the limits allow, counting every
   * worker's claims (serialised per queue, so concurrent claimers never overshoot), rotating
   * among flow keys. A queue without limits uses claimJobs, which this never slows down.
   */
  claimFlowJobs(req: FlowClaimRequest): Promise<FlowClaim>;
  /**
   * Pauses a flow key's budget (or the whole queue's, with key null) for `ms` from the store's
   * clock, for every worker: a 429's Retry-After. A pause never shortens a longer one.
   */
  pauseFlow(req: { queue: string; key: string | null; ms: number }): Promise<void>;
  /**
   * Lifts the flow budget pauses of `queue` still in effect (an operator's undo of an absurd
   * Retry-After): every key's and the queue's own when `key` is undefined, the queue-wide budget
   * when null, one key when a string. Returns how many were in effect; when any was, the
   * queue's workers are woken and claim at once.
   */
  resumeFlow(req: { queue: string; key?: string | null }): Promise<number>;
  /** A queue's flow control state now (a read: no lock, no claim). */
  flowStatus(req: { queue: string; windowMs: number }): Promise<FlowStatus>;
  /** Extends the leases still held; reports lost leases and cancel requests. */
  extendLeases(leases: Lease[], leaseMs: number): Promise<LeaseStatus[]>;
  /**
   * Gives back jobs claimed but never started (a worker's read-ahead, at stop or when a lease
   * check finds a cancel request): each goes back to pending as if never claimed — run_at kept
   * (its place in line), the attempt not counted, no history entry. A job whose cancel was
   * requested meanwhile ends cancelled instead. Fenced by the lease token; returns how many.
   */
  returnJobs(leases: Lease[]): Promise<number>;
  /** Records outcomes (in one transaction); returns per outcome whether it was applied (false = fenced off). */
  finishJobs(outcomes: Outcome[]): Promise<boolean[]>;
  /**
   * Runs `fn` inside a store transaction and completes the job in the same transaction if the
   * lease is still held; if it is not, the transaction rolls back and this returns false.
   * `fn` receives the transaction handle (node-postgres client / better-sqlite3 Database).
   * `logs` (the handler's ctx.log lines, read when the completion is written) go into the
   * completing attempt's history entry.
   */
  completeInTransaction<T>(
    lease: Lease,
    worker: string,
    fn: (tx: TxHandle) => Promise<T> | T,
    logs?: () => JobLogLine[] | undefined,
  ): Promise<{ applied: boolean; value?: T }>;
  /** Saves handler progress for a running job (fenced). */
  setProgress(lease: Lease, progress: { fraction: number; message?: string }): Promise<boolean>;
  /** Returns running jobs whose lease expired to pending (outcome "lost", charged) or failed when attempts are spent. */
  rescueExpiredLeases(workerNote?: string): Promise<RescuedJob[]>;
  /** Earliest run_at among pending jobs of these queues, for a precise wake-up; null if none. */
  nextRunAt(queues: string[]): Promise<Date | null>;

  /** pending → cancelled at once; running → cancel requested (seen at the next heartbeat). */
  cancelJob(id: string): Promise<JobRecord | null>;
  /**
   * → pending now with a fresh attempt budget; history kept. By `ids`: failed or cancelled jobs
   * (a person picked them). Without ids (a whole queue, or all): the dead-letter queue, i.e.
   * failed jobs only — cancelled jobs stay cancelled.
   */
  retryJobs(filter: { ids?: string[]; queue?: string }): Promise<number>;
  /** Deletes failed jobs (from the dead-letter queue). */
  discardJobs(filter: { ids?: string[]; queue?: string }): Promise<number>;
  /**
   * One batch of a bulk action: acts on up to `limit` matching jobs (newest first) in one
   * transaction and answers how many. Callers repeat until an answer falls below `limit`, so no
   * statement ever holds more than `limit` rows.
   */
  actOnJobs(batch: BulkBatch): Promise<number>;
  /** Failed jobs (the newest DEAD_LETTER_SAMPLE, of one queue or all) grouped by error message, most first. */
  deadLetterGroups(queue?: string): Promise<DeadLetterGroup[]>;
  /** Timings of jobs finished within the last `windowMs`, newest first, at most `limit`. */
  recentTimings(windowMs: number, limit: number): Promise<JobTiming[]>;
  /**
   * Deletes completed and cancelled jobs finished more than `completedAgeMs` ago, failed ones
   * past `failedAgeMs` (their own ctx.once entries go with them), and global ctx.once entries
   * recorded more than `globalOnceAgeMs` ago (kept when it is absent). Answers the jobs deleted.
   */
  pruneFinished(req: PruneRequest): Promise<number>;

  /**
   * The side-effect ledger behind ctx.once: one value per key and scope, the first put wins.
   * A job's own entries (global false) are deleted with the job (retention, discard); a per-job
   * read also finds a global entry that same job recorded (entries written before scopes
   * existed were global: docs/semantics.md, ctx.once).
   */
  ledgerGet(entry: LedgerEntryKey): Promise<{ found: boolean; value?: unknown }>;
  ledgerPut(entry: LedgerEntryKey, value: unknown): Promise<void>;

  /** Replaces the set of schedules from code (source "code"); schedules added by hand are kept. */
  syncSchedules(schedules: ScheduleInput[]): Promise<void>;
  upsertSchedule(schedule: ScheduleInput): Promise<void>;
  removeSchedule(name: string): Promise<boolean>;
  listSchedules(): Promise<ScheduleRecord[]>;
  /** Schedules whose next_run_at ≤ now. */
  dueSchedules(): Promise<ScheduleRecord[]>;
  /** Compare-and-set: moves next_run_at from `expectedNextRunAt` on; false if another scheduler already did. */
  advanceSchedule(req: {
    name: string;
    expectedNextRunAt: Date;
    nextRunAt: Date;
    lastSlot: Date | null;
  }): Promise<boolean>;

  /**
   * Pauses a queue for every worker: from the commit on, claimJobs of that queue takes nothing
   * (jobs already claimed are the worker's to hold back: see worker/pause-window.ts). Pausing a
   * paused queue keeps its first pausedAt. Any queue name may be paused, even one with no jobs
   * yet (queues exist implicitly). Answers the pause.
   */
  pauseQueue(queue: string): Promise<QueuePause>;
  /** Lifts a pause and wakes the queue's workers; false when the queue was not paused. */
  resumeQueue(queue: string): Promise<boolean>;
  /** Every paused queue, by name. */
  listPausedQueues(): Promise<QueuePause[]>;
  /** Whether one queue is paused now: the worker's probe before starting a job claimed a while ago. */
  isQueuePaused(queue: string): Promise<boolean>;
  /** Pauses or resumes a schedule (a paused one is never due); the updated row, or null when there is none. */
  setSchedulePaused(name: string, paused: boolean): Promise<ScheduleRecord | null>;
  /**
   * How many due pending jobs of the job's queue come before it in claim order (priority desc,
   * run_at, id), counted up to `cap` (the answer is at most `cap`). For "why is my job waiting".
   */
  countJobsAhead(
    job: { id: string; queue: string; priority: number; runAt: Date },
    cap: number,
  ): Promise<number>;

  /** Live workers registry (dashboard). */
  registerWorker(info: Omit<WorkerInfo, "startedAt" | "lastHeartbeatAt">): Promise<void>;
  heartbeatWorker(id: string, running: number, processed: number): Promise<void>;
  unregisterWorker(id: string): Promise<void>;
  /** Workers with a heartbeat within `staleMs`. */
  listWorkers(staleMs: number): Promise<WorkerInfo[]>;

  /**
   * Subscribe to "jobs may be available" signals (in-process enqueue, LISTEN/NOTIFY, or another
   * process's commit). Returns an unsubscribe function. Polling remains the safety net.
   */
  onJobsAvailable(listener: (queue: string | null) => void): () => void;

  /**
   * waitFor's wake-ups: `listener` gets ids of jobs that may have reached a final state
   * (completed, failed, cancelled) or been deleted, or null when any may have (a notification
   * was lost, another process committed). A hint, never the answer: the waiter reads the jobs
   * (getJobs). Postgres tells of the jobs recorded with awaitJobs only.
   */
  onJobsFinished(listener: (ids: string[] | null) => void): () => void;
  /**
   * Starts waiting for jobs: every move of one of them to a final state committed after this
   * answers reaches onJobsFinished (Postgres notifies only such jobs). Answers the jobs as they
   * are now, as getJobs; a finish committed in between is in the answer or signalled, never lost.
   */
  awaitJobs(ids: string[]): Promise<JobRecord[]>;
  /** Stops waiting for jobs (a timeout, an abort, a job found finished or gone). */
  unawaitJobs(ids: string[]): Promise<void>;
  /** The jobs of `ids` that exist, as they are now, in any order (ids of no job are left out). */
  getJobs(ids: string[]): Promise<JobRecord[]>;

  /**
   * Optional housekeeping a worker runs every few seconds (never two at once in one worker).
   * Postgres vacuums its churning tables when dead rows pile up: every claim leaves a dead
   * entry in the pending index that each later claim steps over until a vacuum removes it.
   */
  upkeep?(): Promise<void>;

  /**
   * A worker's lease, told at its start (the shortest counts): Postgres sizes its connection
   * timeouts from it, so a connection that went silent is dropped within about a lease.
   */
  useLease?(leaseMs: number): void;

  /**
   * A stopping worker's hard deadline: from now on a statement waits at most `ms` for a lock
   * another connection holds, until the returned function restores the wait. SQLite waits
   * (busy_timeout, 5 s by default) inside the thread, where no timer or signal handler runs, so
   * the deadline could not cut such a wait short (test/reliability/sqlite-shutdown-lock.test.ts).
   * Only a handle errand opened is changed; an application's own (`{ db }`) keeps its setting.
   */
  limitLockWaits?(ms: number): () => void;
}

export type { AttemptRecord };
