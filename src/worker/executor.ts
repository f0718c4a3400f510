import {
  type Classification,
  type ErrorKind,
  errorKind,
  JobTimeoutError,
  retryAfterOf429,
  toError,
  usableDelay,
  ValidationError,
} from "../errors.js";
import type { AnyJobDefinition } from "../job.js";
import type { Logger } from "../logger.js";
import { storableText } from "../payload.js";
import type { ClaimedJob, Outcome } from "../store/types.js";
import { JobAbort, SnoozeSignal } from "./abort.js";
import { type ActiveJob, checkResult, type ExecutorDeps } from "./active-job.js";

export { ActiveJob, type ExecutorDeps } from "./active-job.js";

export interface Execution {
  outcome: Outcome | null;
  /** A rate-limited answer: pause the job's flow budget this long (pauseFlowBudget). */
  pauseMs?: number;
  result?: unknown;
  error?: Error;
}

/**
 * Runs one claimed job to an outcome. Never throws: every failure becomes an outcome.
 *
 * Written to make few promises: a worker runs thousands of jobs a second, and every promise costs
 * more once AsyncLocalStorage is on (crash.ts). A job whose schema validates synchronously and
 * whose handler returns synchronously gets its Execution back as a plain value, with no async
 * function and no promise at all; a handler's promise is awaited by one async function
 * (awaitHandler). bench/NOTES.md finding 13: 16 promises per no-op job, then 7; as one async
 * `execute` plus a `.catch`, those two were a fifth of what the worker allocated per no-op job
 * (heap sampling of bench/one-worker.ts postgres, finding 17).
 */
export function executeJob(active: ActiveJob, deps: ExecutorDeps): Execution | Promise<Execution> {
  let execution: Execution | Promise<Execution>;
  try {
    execution = execute(active, deps);
  } catch (err) {
    return internalFault(err, active, deps);
  }
  return execution instanceof Promise
    ? execution.catch((err) => internalFault(err, active, deps))
    : execution;
}

/**
 * Only a fault in errand's own error handling gets here (a classify hook that throws, a logger
 * that cannot serialise what it was given): the job still gets an outcome, so its slot is freed
 * and it is retried or failed like any error.
 */
function internalFault(err: unknown, active: ActiveJob, deps: ExecutorDeps): Execution {
  const error = toError(err);
  const base = { id: active.claimed.id, leaseToken: active.claimed.leaseToken, worker: deps.workerId };
  safeLog(() => deps.log.error({ err: error, jobId: active.claimed.id }, "handling a job's error failed"));
  if (active.completedInTransaction) return { outcome: null };
  const def = deps.findJob(active.claimed.name);
  return { outcome: failureOutcome(base, active.claimed, error, "unknown", def, undefined), error };
}

function execute(active: ActiveJob, deps: ExecutorDeps): Execution | Promise<Execution> {
  const { claimed } = active;
  const def = deps.findJob(claimed.name);

  if (!def) {
    const base = { id: claimed.id, leaseToken: claimed.leaseToken, worker: deps.workerId };
    const error = new Error(
      `no handler for job "${claimed.name}" in this worker (known: ${deps.knownJobNames().join(", ") || "none"})`,
    );
    active.workerLog.error({ err: error }, "unknown job name");
    return { outcome: failureOutcome(base, claimed, error, "unknown", undefined, null), error };
  }
  let validation: Validation;
  try {
    validation = def.schema["~standard"].validate(claimed.payload) as Validation;
  } catch (thrown) {
    return failure(thrown, active, deps, def);
  }
  return validation instanceof Promise
    ? afterValidation(active, deps, def, validation)
    : runValidated(active, deps, def, validation);
}

type Validation = { value?: unknown; issues?: ReadonlyArray<{ message: string }> };

/** A schema that validates asynchronously: the rest of the run once it has answered. */
async function afterValidation(
  active: ActiveJob,
  deps: ExecutorDeps,
  def: AnyJobDefinition,
  pending: Promise<Validation>,
): Promise<Execution> {
  let validation: Validation;
  try {
    validation = await pending;
  } catch (thrown) {
    return failure(thrown, active, deps, def);
  }
  return runValidated(active, deps, def, validation);
}

/** Runs the handler on a validated payload; synchronous unless the handler returns a promise. */
function runValidated(
  active: ActiveJob,
  deps: ExecutorDeps,
  def: AnyJobDefinition,
  validation: Validation,
): Execution | Promise<Execution> {
  const { claimed } = active;
  let timer: NodeJS.Timeout | undefined;
  let awaiting = false; // awaitHandler owns the timer and onAbort from then on
  try {
    if (validation.issues) {
      throw new ValidationError(
        `payload of job "${claimed.name}" does not match its schema: ${validation.issues.map((i) => i.message).join("; ")}`,
        validation.issues,
      );
    }
    const payload = validation.value as never;
    if (deps.log.isLevelEnabled("debug"))
      active.workerLog.debug(deps.logPayloads ? { payload: claimed.payload } : {}, "job started");
    if (def.timeoutMs !== null) {
      const ms = def.timeoutMs;
      timer = setTimeout(() => active.abort(new JobAbort("timeout", `job timed out after ${ms} ms`)), ms);
    }
    if (active.abortReason) throw active.abortReason;
    // A handler that returns synchronously (or throws) is not waited for at all.
    const result: unknown = def.run(payload, active);
    if (typeof (result as PromiseLike<unknown> | null)?.then === "function") {
      awaiting = true;
      return awaitHandler(active, deps, def, result as PromiseLike<unknown>, timer);
    }
    return completion(active, deps, result);
  } catch (thrown) {
    return failure(thrown, active, deps, def);
  } finally {
    if (!awaiting) {
      active.onAbort = undefined;
      if (timer) clearTimeout(timer);
    }
  }
}

/**
 * The wait ends when the handler settles or the job is aborted, whichever comes first: a handler
 * that ignores its signal and hangs must not hold the slot. A handler that rejects after that is
 * handled here too (never an unhandled rejection).
 */
async function awaitHandler(
  active: ActiveJob,
  deps: ExecutorDeps,
  def: AnyJobDefinition,
  returned: PromiseLike<unknown>,
  timer: NodeJS.Timeout | undefined,
): Promise<Execution> {
  try {
    const result = await new Promise<unknown>((resolve, reject) => {
      if (active.abortReason) return reject(active.abortReason);
      active.onAbort = reject;
      returned.then(resolve, reject);
    });
    return completion(active, deps, result);
  } catch (thrown) {
    return await failure(thrown, active, deps, def);
  } finally {
    active.onAbort = undefined;
    if (timer) clearTimeout(timer);
  }
}

/** The handler returned `result` (throws a ValidationError for a result no store can hold). */
function completion(active: ActiveJob, deps: ExecutorDeps, result: unknown): Execution {
  if (active.completedInTransaction) return { outcome: null, result };
  checkResult(result, deps.payloadLimit);
  if (deps.log.isLevelEnabled("debug")) active.workerLog.debug("job completed");
  const { claimed } = active;
  return {
    outcome: {
      id: claimed.id,
      leaseToken: claimed.leaseToken,
      worker: deps.workerId,
      kind: "completed",
      result: result === undefined ? null : result,
    },
    result,
  };
}

/** The handler (or the validation, or the result check) threw: the outcome it earns. */
function failure(
  thrown: unknown,
  active: ActiveJob,
  deps: ExecutorDeps,
  def: AnyJobDefinition,
): Execution | Promise<Execution> {
  if (active.completedInTransaction) {
    active.workerLog.warn(
      { err: toError(thrown) },
      "handler threw after completing in its transaction; the completion stands",
    );
    return { outcome: null };
  }
  const { claimed } = active;
  const base = { id: claimed.id, leaseToken: claimed.leaseToken, worker: deps.workerId };
  const error = toError(thrown);
  const execution = {
    ...classifyFailure(thrown, error, base, claimed, def, deps, active.workerLog),
    error,
  };
  if (execution.pauseMs === undefined || !def.flow) return execution; // nothing to pause
  return pauseFlowBudget(execution, claimed, def, deps, active.workerLog).then(() => execution);
}

function classifyFailure(
  thrown: unknown,
  error: Error,
  base: Pick<Outcome, "id" | "leaseToken" | "worker">,
  claimed: ClaimedJob,
  def: AnyJobDefinition,
  deps: ExecutorDeps,
  log: Logger,
): Execution {
  if (isInstance(thrown, SnoozeSignal)) {
    log.info({ delayMs: thrown.delayMs }, "job snoozed");
    return { outcome: { ...base, kind: "snoozed", delayMs: thrown.delayMs } };
  }
  if (isInstance(thrown, JobAbort)) {
    switch (thrown.cause) {
      case "lease-lost":
        log.warn("lease lost while running: another worker owns this job now; dropping our result");
        return { outcome: null };
      case "shutdown":
        log.warn("interrupted by shutdown; returned to pending, attempt not charged");
        return {
          outcome: { ...base, kind: "released", error: { message: thrown.message, kind: "interrupted" } },
        };
      case "cancelled":
        log.info("job cancelled while running");
        return {
          outcome: { ...base, kind: "cancelled", error: { message: thrown.message, kind: "cancelled" } },
        };
      case "timeout": {
        const error = new JobTimeoutError(def.timeoutMs ?? 0);
        return {
          outcome: failureOutcome(base, claimed, error, "timeout", def, undefined, "retry", log),
          error,
        };
      }
    }
  }
  let kind: ErrorKind = errorKind(thrown);
  let decision: Classification = kind === "permanent" || kind === "validation" ? "fail" : "retry";
  if (kind === "unknown") {
    const custom = def.classify?.(thrown) ?? deps.classify?.(thrown);
    if (custom) decision = custom;
  }
  if (kind === "unknown" && decision === "fail") kind = "permanent";
  // Read as fields, not by instanceof: a jobs module may load a second copy of errand.
  const hints = kind === "retryable" ? (thrown as { retryAfterMs?: unknown; rateLimited?: unknown }) : {};
  // An HTTP 429 carrying Retry-After waits that long (and pauses its flow budget, below).
  const http429 = kind === "retryable" ? retryAfterOf429(thrown) : undefined;
  // A retryAfterMs no delay can be (NaN, negative, past 100 years: a hand-made error, not a
  // RetryableError, whose constructor checks it) is ignored like an unreadable Retry-After.
  const retryAfter = (kind === "retryable" ? usableDelay(hints.retryAfterMs) : undefined) ?? http429;
  if (kind === "retryable" && hints.rateLimited === true) {
    // It spends no attempt: an answer that says to wait 0 (retryAfter 0, a Retry-After date
    // already past) re-ran the job at once, for ever (snoozed 16-131 ms in the test), so it
    // waits the job's backoff, as an answer without a wait does.
    const delayMs = retryAfter !== undefined && retryAfter > 0 ? retryAfter : def.backoff(claimed.attempt);
    log.info({ delayMs, err: error.message }, "rate limited: snoozed without spending an attempt");
    return {
      outcome: { ...base, kind: "snoozed", delayMs, error: errorFields(error, kind) },
      pauseMs: delayMs,
    };
  }
  const outcome = failureOutcome(base, claimed, error, kind, def, retryAfter, decision, log);
  return { outcome, pauseMs: http429 !== undefined && outcome.kind === "retry" ? http429 : undefined };
}

/**
 * Adaptive flow control: a rate-limited answer (RetryableError with rateLimited, or a 429 with
 * Retry-After) pauses the job's flow budget for every worker — its key's, or the whole queue's
 * when its definition has limits but no key — so the next jobs of that key do not each hit the
 * limit again. Queues without flow control keep today's behaviour (only this job waits). A
 * pause that cannot be stored is logged; the job's own outcome is recorded either way.
 */
async function pauseFlowBudget(
  execution: Execution,
  claimed: ClaimedJob,
  def: AnyJobDefinition,
  deps: ExecutorDeps,
  log: Logger,
): Promise<void> {
  const ms = execution.pauseMs;
  if (ms === undefined || !def.flow) return;
  const key = claimed.flowKey || null; // "" and null: no key of its own, the queue's budget
  if (def.flow.key && key === null) return; // enqueued before its definition had a key: no budget to pause
  try {
    await deps.store.pauseFlow({ queue: claimed.queue, key, ms });
    log.info({ flowKey: key, pauseMs: ms }, "rate limited: flow budget paused for every worker");
    deps.onFlowPaused?.({ queue: claimed.queue, key, ms });
  } catch (err) {
    log.warn({ err, flowKey: key }, "could not pause the flow budget; only this job waits");
  }
}

/** What the store keeps of an error: its text made storable (see storableText), read without throwing. */
function errorFields(error: Error, kind: ErrorKind): NonNullable<Outcome["error"]> {
  const message = readText(() => error.message) || readText(() => error.name) || "error";
  const stack = readText(() => error.stack);
  return {
    message: storableText(message),
    stack: stack === undefined ? undefined : storableText(stack),
    kind,
  };
}

/** `instanceof` that answers false instead of throwing (a revoked Proxy throws on instanceof). */
function isInstance<T>(value: unknown, type: abstract new (...args: never[]) => T): value is T {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}

function readText(read: () => unknown): string | undefined {
  try {
    const value = read();
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

function safeLog(write: () => void): void {
  try {
    write();
  } catch {
    // the logger could not write this line: the outcome matters more
  }
}

function failureOutcome(
  base: Pick<Outcome, "id" | "leaseToken" | "worker">,
  claimed: ClaimedJob,
  error: Error,
  kind: ErrorKind,
  def: AnyJobDefinition | undefined,
  retryAfterMs: number | undefined | null,
  decision: Classification = "retry",
  log?: Logger,
): Outcome {
  const exhausted = claimed.attempt >= claimed.maxAttempts;
  if (decision === "fail" || exhausted) {
    log?.error(
      { err: error, kind },
      decision === "fail" ? "job failed permanently" : `job failed after ${claimed.attempt} attempts`,
    );
    return { ...base, kind: "failed", error: errorFields(error, kind) };
  }
  const delayMs = retryAfterMs ?? def?.backoff(claimed.attempt) ?? 1000;
  log?.warn({ err: error.message, kind, retryInMs: delayMs }, "job failed; will retry");
  return { ...base, kind: "retry", delayMs, error: errorFields(error, kind) };
}
