import type { StandardSchemaV1 } from "@standard-schema/spec";
import { type Backoff, type BackoffFn, compileBackoff } from "./backoff.js";
import { type Duration, parseTimerDuration } from "./duration.js";
import { type Classification, type ErrorKind, ValidationError } from "./errors.js";
import { checkFlowOptions, type FlowDefinition, type FlowOptions } from "./flow.js";
import { knownFields, onlyKnownFields } from "./known-fields.js";
import type { Logger } from "./logger.js";
import { quoted } from "./payload.js";
import { checkDebounce, type DebounceDefinition, type DebounceOptions } from "./unique.js";

/**
 * `waiting`: the job depends on jobs that have not all finished (dependencies.ts); it is not
 * claimable, and becomes `pending` when the last of them completes.
 */
export type JobState = "waiting" | "pending" | "running" | "completed" | "failed" | "cancelled";
export const JOB_STATES: readonly JobState[] = [
  "waiting",
  "pending",
  "running",
  "completed",
  "failed",
  "cancelled",
];

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

/** Options of `ctx.once`. */
export interface OnceOptions {
  /** "job" (default): the key is this job's own. "global": shared by every job of the store. */
  scope?: "job" | "global";
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
   * Runs `fn` once per `key` across all attempts of this job: a retry skips side effects that
   * already completed and gets the value recorded the first time (the ledger). The key is the
   * job's own: another job using the same key runs its own effect. With `{ scope: "global" }`
   * the key is shared by every job (the first to record it wins; the others get its value).
   * A job's own entries are deleted with the job; global ones after `retention.globalOnce`.
   * The key: 1 to 512 characters without NUL characters or lone surrogates (else a
   * ValidationError fails the job before `fn` runs).
   */
  once<T>(key: string, fn: () => Promise<T> | T, options?: OnceOptions): Promise<T>;
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
  /**
   * The jobs this one depends on (`dependsOn`, a flow's edges) with their results: by job id,
   * and by node name for the nodes of a flow. Read from the store when called (a job without
   * dependencies gets empty maps).
   */
  dependencies(): Promise<DependencyResults>;
}

/** What `ctx.dependencies()` answers. */
export interface DependencyResults {
  /** Each dependency's result (null when it returned nothing, or did not complete), by job id. */
  byId: Record<string, unknown>;
  /** The same results by node name, for dependencies enqueued in a flow under a name. */
  byName: Record<string, unknown>;
  /** Each dependency: id, node name, job name, queue, state, result. */
  jobs: DependencyLink[];
}

/** One end of a dependency edge, as the job view and ctx.dependencies show it. */
export interface DependencyLink {
  id: string;
  /** The node name in its flow, or null for a job enqueued on its own. */
  node: string | null;
  name: string;
  queue: string;
  state: JobState;
  /** The job's result (dependencies only; null for dependents). */
  result: unknown;
}

/**
 * A job as stored, in the library and in every `--json` output. `R` is its result type (from the
 * definition's `run`), set once the job completed: null before, and for a job with no result.
 */
export interface JobRecord<P = unknown, R = unknown> {
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
  result: R | null;
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
  /**
   * Debounce every enqueue of this job: enqueues with the same key (a string, or a function of
   * the payload) within `delay` collapse into one job that runs once with the latest payload,
   * no later than `maxWait` after the first. An enqueue's own `debounce` option overrides it.
   */
  debounce?: DebounceOptions<string | ((payload: StandardSchemaV1.InferInput<S>) => string)>;
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
  /** Debounce of every enqueue (unique.ts), or null (absent on a definition made by hand). */
  readonly debounce?: DebounceDefinition | null;
  readonly run: (payload: never, ctx: JobContext) => Promise<R> | R;
}

/** Any job definition, whatever its payload type (for registries and lists). */
export type AnyJobDefinition = JobDefinition<unknown, unknown>;

/** The fields of JobDefinitionInput (FlowOptions included). */
const DEFINITION_FIELDS = knownFields(
  "name",
  "queue",
  "schema",
  "run",
  "maxAttempts",
  "backoff",
  "timeout",
  "priority",
  "classify",
  "debounce",
  "globalConcurrency",
  "concurrency",
  "rateLimit",
);

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
export const PRIORITY_RANGE = { min: -1_000_000, max: 1_000_000 } as const;
export const MAX_ATTEMPTS_RANGE = { min: 1, max: 1000 } as const;

export function checkName(value: string, what: string): string {
  if (typeof value !== "string" || !NAME_PATTERN.test(value)) {
    throw new ValidationError(
      `${what} must be 1-128 characters of letters, digits, "_", ".", ":" or "-" (starting with a letter or digit); got ${typeof value === "string" ? quoted(value) : JSON.stringify(value)}`,
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
  onlyKnownFields(input, DEFINITION_FIELDS, `job "${input.name}"`);
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
      input.timeout === undefined ? null : parseTimerDuration(input.timeout, `job "${input.name}" timeout`),
    priority: checkInteger(input.priority ?? 0, `job "${input.name}" priority`, PRIORITY_RANGE),
    classify: input.classify,
    flow: checkFlowOptions(input as FlowOptions<never>, input.name),
    debounce:
      input.debounce === undefined
        ? null
        : checkDebounce(input.debounce, `job "${input.name}" debounce`, true),
    run: input.run as (payload: never, ctx: JobContext) => Promise<R> | R,
  });
}
