/**
 * The facade's typed results: waiting for a job's result (waitFor, enqueueAndWait; the waits
 * themselves are result-waiters.ts) and event listeners typed by a job definition (onJob).
 * Errand inherits them.
 */
import { type Duration, MAX_TIMER_MS, parseDuration } from "./duration.js";
import { JOB_OPTION_FIELDS } from "./enqueue.js";
import { ErrandOperations } from "./errand-operations.js";
import type { EnqueuedJob, EnqueueOptions, JobEvent } from "./errand-types.js";
import { ValidationError } from "./errors.js";
import type { JobDefinition } from "./job.js";
import { knownFields, onlyKnownFields } from "./known-fields.js";
import type { Logger } from "./logger.js";
import { ResultWaiters } from "./result-waiters.js";

/** Options of `waitFor` and `enqueueAndWait`. */
export interface WaitOptions {
  /** Stop waiting after this long (a WaitForError, reason "timeout"); the job is left as it is. Default: no limit. */
  timeout?: Duration;
  /** Stop waiting when this aborts (a WaitForError, reason "aborted"); the job is left as it is. */
  signal?: AbortSignal;
}

/** A job to wait for: a record from enqueue or getJob (its result type comes with it), or an id. */
export type JobHandle<R> = string | { readonly id: string; readonly result: R | null };

/** The events that carry one job (and, on `completed`, its result). */
export type JobEventName =
  | "started"
  | "completed"
  | "retrying"
  | "failed"
  | "snoozed"
  | "cancelled"
  | "released";

/** Longest `timeout` accepted (a timer's limit, about 24.8 days). */
const MAX_TIMEOUT_MS = MAX_TIMER_MS;

export abstract class ErrandResults extends ErrandOperations {
  private waiters: ResultWaiters | null = null;
  /** How often every wait is looked at again, whatever the notifications say (openErrand's waitRecheck). */
  protected abstract readonly waitRecheckMs: number;

  abstract enqueue<P, R>(
    job: JobDefinition<P, R>,
    payload: P,
    options?: EnqueueOptions,
  ): Promise<EnqueuedJob<P, R>>;

  /**
   * Resolves with the job's result once it completed. Rejects with a WaitForError whose `reason`
   * says why not: "failed" (for good: dead-lettered), "cancelled", "not-found", or — the job left
   * untouched — "timeout", "aborted", "closed". Any number of waits share one notification
   * subscription and one lookup (result-waiters.ts); it works whichever process runs the job.
   */
  waitFor<R = unknown>(job: JobHandle<R>, options: WaitOptions = {}): Promise<R> {
    try {
      const id = typeof job === "string" ? job : job?.id;
      if (typeof id !== "string" || id === "")
        throw new ValidationError("waitFor takes a job (from enqueue or getJob) or a job id");
      const { timeoutMs, signal } = checkWaitOptions(options);
      this.waiters ??= new ResultWaiters(this.store, this.waitRecheckMs, (err) => this.reportWaitError(err));
      return this.waiters.wait(String(id), timeoutMs, signal).then((record) => record.result as R);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Enqueues a job and waits for its result (waitFor). A key matching an existing job waits for
   * that job. `tx` is refused: the job would not exist for a worker until the caller commits.
   */
  async enqueueAndWait<P, R>(
    job: JobDefinition<P, R>,
    payload: P,
    options: Omit<EnqueueOptions, "tx"> & WaitOptions = {},
  ): Promise<R> {
    // Checked whole first: the error lists every field enqueueAndWait takes.
    if (options !== null && typeof options === "object")
      onlyKnownFields(options, ENQUEUE_AND_WAIT_FIELDS, "enqueueAndWait options");
    const { timeout, signal, ...enqueueOptions } = options as EnqueueOptions & WaitOptions;
    if (enqueueOptions.tx !== undefined)
      throw new ValidationError(
        "enqueueAndWait cannot join a transaction (tx): the job runs only after the commit; enqueue with tx, commit, then waitFor the job",
      );
    checkWaitOptions({ timeout, signal });
    const record = await this.enqueue(job, payload, enqueueOptions);
    return this.waitFor<R>(record, { timeout, signal });
  }

  /**
   * Listens to one job definition's events, typed by it (`event.result` is its result type on
   * "completed"); returns a function that stops listening.
   */
  onJob<P, R>(
    job: JobDefinition<P, R>,
    event: JobEventName,
    listener: (event: JobEvent<P, R>) => void,
  ): () => void {
    if (!job || typeof job.name !== "string")
      throw new ValidationError("onJob takes a job definition made by defineJob()");
    const name = job.name;
    const filtered = (e: JobEvent) => {
      if (e.job.name === name) listener(e as JobEvent<P, R>);
    };
    this.on(event, filtered);
    return () => {
      this.off(event, filtered);
    };
  }

  /** Ends every wait (reason "closed"): the errand is closing. */
  protected async closeWaiters(): Promise<void> {
    await this.waiters?.close();
  }

  private reportWaitError(err: unknown): void {
    this.log.warn(
      { err },
      "waitFor: a lookup failed; it is tried again in at most 5 s (or the recheck interval, if shorter)",
    );
  }

  abstract readonly log: Logger;
}

/** The wait's options checked, or a ValidationError naming the bad one. */
const WAIT_FIELDS = knownFields("timeout", "signal");
/** `tx` is known, to be refused with the reason (enqueueAndWait). */
const ENQUEUE_AND_WAIT_FIELDS = knownFields(...JOB_OPTION_FIELDS, "timeout", "signal", "tx");

function checkWaitOptions(options: WaitOptions): {
  timeoutMs: number | null;
  signal: AbortSignal | undefined;
} {
  if (options === null || typeof options !== "object")
    throw new ValidationError("waitFor options must be an object");
  onlyKnownFields(options, WAIT_FIELDS, "waitFor options");
  const { timeout, signal } = options;
  let timeoutMs: number | null = null;
  if (timeout !== undefined) {
    timeoutMs = parseDuration(timeout, "waitFor timeout");
    if (!(timeoutMs >= 0 && timeoutMs <= MAX_TIMEOUT_MS))
      throw new ValidationError(
        `waitFor timeout must be from 0 to ${MAX_TIMEOUT_MS} ms; got ${JSON.stringify(timeout)}`,
      );
  }
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw new ValidationError("waitFor signal must be an AbortSignal");
  return { timeoutMs, signal };
}
