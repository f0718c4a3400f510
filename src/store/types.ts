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

import type { ErrorKind } from "../errors.js";
import type { FlowLimits } from "../flow-limits.js";
import type {
  AttemptRecord,
  DependencyLink,
  JobLogLine,
  JobRecord,
  JobState,
  RunningJob,
  TxHandle,
} from "../job.js";
import type { UniqueRule, UniqueWhile } from "../unique-rule.js";

export type { FlowLimits, UniqueRule, UniqueWhile };

export type StoreKind = "memory" | "sqlite" | "postgres";

/** A job to insert, already validated. */
export interface NewJob {
  queue: string;
  name: string;
  payload: unknown;
  /**
   * The payload's JSON text, when the caller has already serialised and checked it (errand's
   * enqueue does: payload.ts `checkPayload`): then `payload` must be `JSON.parse(payloadJson)`,
   * a value the caller hands over. A store writes this text as is instead of serialising
   * `payload` again, and may put `payload` itself (not a copy) in the inserted job's record.
   * Without it, the store serialises `payload` and returns a copy.
   */
  payloadJson?: string;
  priority: number;
  maxAttempts: number;
  /** Absolute due time; if absent, `delayMs` after the store's now (0 = now). */
  runAt?: Date;
  delayMs?: number;
  key?: string | null;
  /**
   * The job's flow key (flow control: per-key concurrency and rate limits, fairness), from its
   * definition's key function at enqueue; null or absent when it has none.
   */
  flowKey?: string | null;
  /**
   * The trace context active at enqueue (tracing/traceparent.ts: the W3C `traceparent`, and
   * `tracestate` when there is one, as JSON text), stored as is and handed back by the claims;
   * null or absent when the enqueue was not traced.
   */
  traceContext?: string | null;
  /**
   * Which job already holding `key` counts as a duplicate of this one (store/unique.ts); null or
   * absent: any job that holds it (the key's default meaning, `retained` + keep).
   */
  unique?: UniqueRule | null;
  /** What this job waits for (dependsOn, a flow's edges); absent for a job that waits for nothing. */
  dependencies?: NewJobDependencies;
  /** Its name in the flow it was enqueued with (ctx.dependencies().byName), or absent. */
  node?: string | null;
}

/** What happens to a waiting job when a dependency fails for good or is cancelled. */
export type DependencyFailurePolicy = "fail" | "cancel" | "run";

export interface NewJobDependencies {
  /** Stored jobs this one depends on, by id (each must exist: else a ValidationError, nothing stored). */
  ids: string[];
  /** Earlier jobs of the same insertJobs call this one depends on, by position (a flow's edges). */
  rows: number[];
  onFailure: DependencyFailurePolicy;
}

/** A job's place in the dependency graph: what it waits for (with results) and what waits for it. */
export interface JobLinks {
  dependencies: DependencyLink[];
  dependents: DependencyLink[];
}

export interface InsertResult {
  job: JobRecord;
  /** false when an existing job with the same (queue, key) was returned instead. */
  created: boolean;
  /** true when that existing job was pending and took this one's payload and run time (UniqueRule.replace). */
  replaced?: boolean;
}

/** A claimed job: what the executor needs, plus the lease token that fences every later write. */
/** A job as claimed: what its handler sees (RunningJob), and the lease that holds it. */
export interface ClaimedJob extends RunningJob {
  leaseToken: number;
  lockedUntil: Date;
  /** The job's flow key, when claimed by claimFlowJobs (null: none). */
  flowKey?: string | null;
  /** The trace context stored at enqueue (NewJob.traceContext); null when none. */
  traceContext: string | null;
}

/** What claimFlowJobs took, and what it left behind for a limit. */
/** A claim of a flow-controlled queue: claimJobs's request, with the queue's limits. */
export interface FlowClaimRequest {
  queue: string;
  limit: number;
  workerId: string;
  leaseMs: number;
  flow: FlowLimits;
}

export interface FlowClaim {
  jobs: ClaimedJob[];
  /** Due jobs a limit held back (the claim could have taken them otherwise). */
  held: number;
  /** When a rate window or a pause that held jobs back frees up, in ms from now; null if none. */
  retryInMs: number | null;
}

/**
 * What flow control sees of a queue now (errand.whyWaiting): running jobs, the claims within the
 * last `windowMs` (epoch ms, oldest first) and the budgets paused beyond now, each by flow key
 * ("" for jobs without one; a pause under "" holds the whole queue).
 */
export interface FlowStatus {
  now: Date;
  running: Map<string, number>;
  claims: Map<string, number[]>;
  pausedUntil: Map<string, number>;
}

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

export interface Lease {
  id: string;
  leaseToken: number;
}

export interface LeaseStatus {
  id: string;
  /** false: the lease was lost (expired and rescued, or the job was taken over). */
  held: boolean;
  cancelRequested: boolean;
}

/** How an attempt ended, as the worker reports it. Every one is fenced by the lease token. */
export type OutcomeKind =
  | "completed" // → completed
  | "retry" // → pending at now + delayMs, attempt charged
  | "failed" // → failed (dead-letter queue)
  | "snoozed" // → pending at now + delayMs, attempt not charged
  | "released" // → pending now, attempt not charged (interrupted by shutdown)
  | "cancelled"; // → cancelled

export interface Outcome {
  id: string;
  leaseToken: number;
  kind: OutcomeKind;
  result?: unknown;
  delayMs?: number;
  error?: { message: string; stack?: string; kind: ErrorKind };
  worker: string;
  /** The handler's ctx.log lines, kept in this attempt's history entry; absent when none. */
  logs?: JobLogLine[];
}

export interface JobFilter {
  queue?: string;
  state?: JobState;
  name?: string;
  /** Matches the id, or a substring of the key, payload text or error message. */
  search?: string;
  limit?: number;
  /** Opaque cursor from a previous page. Pages go newest first (id descending). */
  cursor?: string;
}

export interface JobPage {
  jobs: JobRecord[];
  nextCursor: string | null;
}

export interface QueueStats {
  queue: string;
  waiting: number; // waiting for dependencies
  pending: number; // due now
  delayed: number; // pending with run_at in the future
  running: number;
  completed: number;
  failed: number;
  cancelled: number;
  completedLastHour: number;
  failedLastHour: number;
  completedLastDay: number;
  failedLastDay: number;
  /** Age in ms of the oldest due pending job, or null. */
  oldestPendingMs: number | null;
}

export interface RescuedJob {
  id: string;
  queue: string;
  name: string;
  state: "pending" | "failed" | "cancelled";
  attempt: number;
}

export interface ThroughputBucket {
  /** Bucket start. */
  at: Date;
  queue: string;
  completed: number;
  failed: number;
}

import type { BulkBatch, DeadLetterGroup, JobTiming } from "./operate-types.js";

export type { BulkBatch, DeadLetterGroup, JobTiming };

export type MissedPolicy = "latest" | "all";

export interface ScheduleRecord {
  name: string;
  cron: string;
  timezone: string;
  jobName: string;
  queue: string;
  payload: unknown;
  priority: number;
  missed: MissedPolicy;
  /** "code": defined in code and synced at start-up; "cli": added by hand. */
  source: "code" | "cli";
  nextRunAt: Date;
  lastFiredAt: Date | null;
  lastSlot: Date | null;
  createdAt: Date;
  /** Set while the schedule is paused (it does not fire); null when it runs. */
  pausedAt: Date | null;
}

export type ScheduleInput = Omit<ScheduleRecord, "lastFiredAt" | "lastSlot" | "createdAt" | "pausedAt">;

/** A paused queue: its claims take nothing until it is resumed (see Store.pauseQueue). */
export interface QueuePause {
  queue: string;
  pausedAt: Date;
}

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  queues: Record<string, number>;
  startedAt: Date;
  lastHeartbeatAt: Date;
  running: number;
  processed: number;
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
}

export type { AttemptRecord };
