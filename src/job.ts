import type { StandardSchemaV1 } from "@standard-schema/spec";
import { type Backoff, type BackoffFn, compileBackoff } from "./backoff.js";
import { type Duration, parseDuration } from "./duration.js";
import { type Classification, type ErrorKind, ValidationError } from "./errors.js";
import { checkFlowOptions, type FlowDefinition, type FlowOptions } from "./flow.js";
import type { Logger } from "./logger.js";

export type JobState = "pending" | "running" | "completed" | "failed" | "cancelled";
export const JOB_STATES: readonly JobState[] = ["pending", "running", "completed", "failed", "cancelled"];

/** How one execution (or a release without execution charge) ended. */
export type AttemptOutcome =
  | "completed" // the handler returned
  | "retried" // it failed and the job is pending again
  | "failed" // it failed for good: the job is in the dead-letter queue
  | "snoozed" // the handler asked to run later; no attempt spent
  | "lost" // the lease expired (worker died or stalled) and a rescuer took the job back
  | "interrupted" // the worker shut down past its hard timeout; not charged
  | "cancelled"; // cancelled while running

/** One entry of a job's history (docs/semantics.md, History). Times are ISO strings from the store's clock. */
export interface AttemptRecord {
  attempt: number;
  startedAt: string;
  finishedAt: string;
  worker: string | null;
  outcome: AttemptOutcome;
  error?: string;
  stack?: string;
  kind?: ErrorKind;
  /** When the job runs again, for `retried` and `snoozed`. */
  retryAt?: string;
  /**
   * The lines the handler wrote through `ctx.log` during this attempt (bounded: see
   * worker/job-log.ts), oldest first; absent when it wrote none. Lost with the worker when the
   * attempt ends without an outcome (outcome `lost`).
   */
  logs?: JobLogLine[];
}

/** pino's levels, as a job log line records them. */
export type JobLogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal";

/** One line a handler wrote through `ctx.log`, kept with its attempt. */
export interface JobLogLine {
  /** When it was written (ISO 8601, the worker's clock). */
  at: string;
  level: JobLogLevel;
  msg: string;
  /** The object logged with the message (`ctx.log.info({ orderId }, "charged")`), as JSON. */
  fields?: Record<string, unknown>;
  /** Set on the marker line that ends a truncated log: how many lines were not kept. */
  dropped?: number;
}

/** A claimed job as its handler sees it (`ctx.job`); the store's claim adds its lease to it. */
export interface RunningJob {
  id: string;
  queue: string;
  name: string;
  payload: unknown;
  priority: number;
  attempt: number;
  maxAttempts: number;
  key: string | null;
  runAt: Date;
  createdAt: Date;
}

/** A transaction handle of the caller's: a node-postgres client, a better-sqlite3 Database, or an ORM adapter's (src/orm/). */
export type TxHandle = unknown;

/** What a handler receives besides its payload. */
export interface JobContext {
  /** The claimed job (id, name, queue, priority, attempt, maxAttempts, key, runAt, …). */
  readonly job: Readonly<RunningJob>;
  /** Which execution this is, 1-based. */
  readonly attempt: number;
  /** Aborts on timeout, cancellation, lost lease or hard shutdown; `signal.reason` says which. */
  readonly signal: AbortSignal;
  /**
   * A logger whose lines carry the job's id, name, queue and attempt. Its lines (info and up,
   * or down to the logger's own level) are also kept with the attempt — `getJob(id).attempts[n].logs`,
   * `errand jobs show`, the dashboard — up to 200 lines and 32 KiB per attempt.
   */
  readonly log: Logger;
  /**
   * Runs `fn` once per `key` across all attempts of all jobs: a retry skips side effects that
   * already completed and gets the value recorded the first time (the ledger).
   */
  once<T>(key: string, fn: () => Promise<T> | T): Promise<T>;
  /** Reports progress (0..1) and an optional message; shown by the dashboard and `errand jobs show`. */
  progress(fraction: number, message?: string): Promise<void>;
  /** Asks to run again after `delay` without spending an attempt. Ends the handler (throws). */
  snooze(delay: Duration): never;
  /**
   * Runs `fn` in a store transaction and completes the job in that same transaction:
   * database writes made through `tx` commit if and only if the job completes (exactly-once
   * for database effects). `tx` is a node-postgres client or the better-sqlite3 Database.
   */
  completeInTransaction<T>(fn: (tx: TxHandle) => Promise<T> | T): Promise<T>;
}

/** A job as stored, in the library and in every `--json` output. */
export interface JobRecord<P = unknown> {
  id: string;
  queue: string;
  name: string;
  state: JobState;
  priority: number;
  /** Executions charged so far; while running, the number of the current one. */
  attempt: number;
  maxAttempts: number;
  runAt: Date;
  payload: P;
  key: string | null;
  attempts: AttemptRecord[];
  result: unknown;
  progress: { fraction: number; message?: string } | null;
  lastError: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  lockedBy: string | null;
  lockedUntil: Date | null;
  cancelRequested: boolean;
}

export interface JobDefinitionInput<S extends StandardSchemaV1, R>
  extends FlowOptions<StandardSchemaV1.InferInput<S>> {
  name: string;
  queue?: string;
  schema: S;
  /** Executions in all, the first included. Default 3. */
  maxAttempts?: number;
  backoff?: Backoff;
  /** Per-attempt time limit; past it `ctx.signal` aborts and the attempt fails as a timeout. */
  timeout?: Duration;
  /** Default priority for this job type (higher runs first). */
  priority?: number;
  /** Decide retry-or-fail for errors the built-in rules do not know. */
  classify?: (err: unknown) => Classification | undefined;
  run: (payload: StandardSchemaV1.InferOutput<S>, ctx: JobContext) => Promise<R> | R;
}

/** A typed job definition, made by defineJob. `P` is what enqueue accepts. */
export interface JobDefinition<P = unknown, R = unknown> {
  readonly name: string;
  readonly queue: string;
  readonly schema: StandardSchemaV1<P>;
  readonly maxAttempts: number;
  readonly backoff: BackoffFn;
  readonly timeoutMs: number | null;
  readonly priority: number;
  readonly classify?: (err: unknown) => Classification | undefined;
  /** Flow control (globalConcurrency, concurrency per key, rateLimit), or null. */
  readonly flow: FlowDefinition | null;
  readonly run: (payload: never, ctx: JobContext) => Promise<R> | R;
}

/** Any job definition, whatever its payload type (for registries and lists). */
export type AnyJobDefinition = JobDefinition<unknown, unknown>;

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
export const PRIORITY_RANGE = { min: -1_000_000, max: 1_000_000 } as const;
export const MAX_ATTEMPTS_RANGE = { min: 1, max: 1000 } as const;

export function checkName(value: string, what: string): string {
  if (typeof value !== "string" || !NAME_PATTERN.test(value)) {
    throw new ValidationError(
      `${what} must be 1-128 characters of letters, digits, "_", ".", ":" or "-" (starting with a letter or digit); got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

export function checkInteger(value: unknown, what: string, range: { min: number; max: number }): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < range.min || value > range.max) {
    throw new ValidationError(
      `${what} must be an integer from ${range.min} to ${range.max}; got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** One typed definition per job type; enqueue is checked against `schema` at compile time and at run time. */
export function defineJob<S extends StandardSchemaV1, R = unknown>(
  input: JobDefinitionInput<S, R>,
): JobDefinition<StandardSchemaV1.InferInput<S>, R> {
  checkName(input.name, "job name");
  const queue = checkName(input.queue ?? "default", `queue of job "${input.name}"`);
  if (!input.schema || typeof input.schema !== "object" || !("~standard" in input.schema)) {
    throw new ValidationError(
      `job "${input.name}": schema must be a Standard Schema validator (zod 4, valibot, arktype, …)`,
    );
  }
  if (typeof input.run !== "function")
    throw new ValidationError(`job "${input.name}": run must be a function`);
  return Object.freeze({
    name: input.name,
    queue,
    schema: input.schema as StandardSchemaV1<StandardSchemaV1.InferInput<S>>,
    maxAttempts: checkInteger(input.maxAttempts ?? 3, `job "${input.name}" maxAttempts`, MAX_ATTEMPTS_RANGE),
    backoff: compileBackoff(input.backoff),
    timeoutMs:
      input.timeout === undefined ? null : parseDuration(input.timeout, `job "${input.name}" timeout`),
    priority: checkInteger(input.priority ?? 0, `job "${input.name}" priority`, PRIORITY_RANGE),
    classify: input.classify,
    flow: checkFlowOptions(input as FlowOptions<never>, input.name),
    run: input.run as (payload: never, ctx: JobContext) => Promise<R> | R,
  });
}
