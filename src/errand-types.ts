/** The types errand's facade takes and gives: open options, enqueue options and results, events. */
import type { DependencyFailurePolicy, DependencyRef } from "./dependencies.js";
import type { Duration } from "./duration.js";
import type { AnyJobDefinition, JobDefinition, JobRecord } from "./job.js";
import type { Logger } from "./logger.js";
import type { RescuedJob, Store, TxHandle } from "./store/types.js";
import type { DebounceOptions, OnConflict, UniqueOptions } from "./unique.js";

export interface OpenErrandOptions {
  /** `./errand.db` (default, or ERRAND_URL), `sqlite:<path>`, `memory:`, `postgres://…`. */
  url?: string;
  /** Share the application's own better-sqlite3 Database (for transactional enqueue). */
  db?: unknown;
  /** A ready store (advanced: tests, custom backends). */
  store?: Store;
  /** Postgres schema for errand's tables (default "errand"). */
  schema?: string;
  /** The job definitions this process knows (needed to work; enqueue also accepts any definition). */
  jobs?: readonly AnyJobDefinition[];
  /** A pino logger, or options for the built-in one. */
  logger?: Logger;
  /** Log payloads in job log lines (off by default: payloads may hold personal data). */
  logPayloads?: boolean;
  /** Largest payload in bytes (JSON). Default 1 MiB. */
  payloadLimit?: number;
  /** Run migrations on open (default true). */
  migrate?: boolean;
  /** Refuse to create a Postgres schema that is not there (read-only tools). Default false. */
  mustExist?: boolean;
  /**
   * waitFor is woken by the store's notifications; this is how often every wait is also looked
   * at again, in case a notification was missed (a LISTEN connection that was down). Default 5s.
   */
  waitRecheck?: Duration;
}

export interface EnqueueOptions {
  priority?: number;
  /** Run no earlier than this long from now. */
  delay?: Duration;
  /** Run no earlier than this instant (Date or ISO string). */
  runAt?: Date | string;
  maxAttempts?: number;
  /**
   * Idempotency key: a job of this queue with the same key is returned instead of a new one —
   * by default any such job still stored, finished ones included (see `unique`).
   */
  key?: string;
  /** Which job with the same key counts as a duplicate: `{ while: "pending" | "unfinished" | "retained", for: "1h" }`. */
  unique?: UniqueOptions;
  /** `"keep"` (default) returns a duplicate as it is; `"replace"` gives a pending one this payload and run time. */
  onConflict?: OnConflict;
  /** Collapse enqueues with the same key: `{ key, delay: "5s", maxWait: "1m" }` (no key, unique, delay or runAt with it). */
  debounce?: DebounceOptions;
  /**
   * Jobs (ids, or records enqueue returned) that must complete before this one runs: until then
   * it is `waiting`. Each must exist (else a ValidationError, nothing stored).
   */
  dependsOn?: readonly DependencyRef[];
  /** When a dependency fails for good or is cancelled: fail this job (default), cancel it, or run it anyway. */
  onDependencyFailure?: DependencyFailurePolicy;
  /**
   * The caller's transaction: a node-postgres client inside BEGIN, a better-sqlite3 Database, or
   * an ORM's transaction through fromDrizzle, fromKysely, fromKnex or fromPrisma.
   */
  tx?: TxHandle;
}

export interface EnqueueManyItem<P> extends Omit<EnqueueOptions, "tx"> {
  payload: P;
}

/**
 * What `enqueue` returns: the job record; `created`: a new job was stored (false: a job holding
 * the key was returned); `replaced`: that job was pending and took this enqueue's payload and run
 * time (`onConflict: "replace"`, debounce).
 */
export type EnqueuedJob<P, R = unknown> = JobRecord<P, R> & { created: boolean; replaced: boolean };

/** One job's event; `onJob(def, …)` types `payload` and `result` by the definition. */
export interface JobEvent<P = unknown, R = unknown> {
  job: {
    id: string;
    queue: string;
    name: string;
    attempt: number;
    maxAttempts: number;
    priority: number;
    payload: P;
    key: string | null;
    /** When the job was due (store clock) and when it was enqueued. */
    runAt?: Date;
    createdAt?: Date;
  };
  /** The handler's return value (on "completed"). */
  result?: R;
  error?: Error;
  delayMs?: number;
  /** When this process's worker started the attempt, and how long the handler ran (ms). */
  startedAt?: Date;
  durationMs?: number;
}

export interface ErrandEvents {
  /** A handler begins an attempt in this process (`startedAt` set, no outcome yet). */
  started: [JobEvent];
  completed: [JobEvent];
  retrying: [JobEvent];
  failed: [JobEvent];
  snoozed: [JobEvent];
  cancelled: [JobEvent];
  released: [JobEvent];
  lost: [RescuedJob];
  /** The jobs an enqueue call created: the very records it returns (with `created: true`). */
  enqueued: [JobRecord[]];
  /** Flow control held due jobs of a queue back from one of this process's claims (a limit was reached). */
  throttled: [FlowThrottle];
  /** A rate-limited answer paused a flow budget for every worker (a 429, or rateLimited). */
  flowPaused: [FlowPause];
}

/** One claim that flow control held jobs back from. */
export interface FlowThrottle {
  queue: string;
  /** Due jobs held back. */
  held: number;
  /** When the limit frees (a rate window, a pause), in ms; null: when a running job ends. */
  retryInMs: number | null;
}

/** A flow budget paused by a rate-limited answer. */
export interface FlowPause {
  queue: string;
  /** The flow key paused; null for the whole queue's budget. */
  key: string | null;
  ms: number;
}

export type JobRef<P, R = unknown> = JobDefinition<P, R> | string;
