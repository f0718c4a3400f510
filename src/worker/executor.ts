import { type Duration, parseDuration } from "../duration.js";
import {
  type Classification,
  type ErrorKind,
  errorKind,
  JobTimeoutError,
  toError,
  ValidationError,
} from "../errors.js";
import type { AnyJobDefinition } from "../job.js";
import type { Logger } from "../logger.js";
import type { ClaimedJob, Outcome, Store, TxHandle } from "../store/types.js";
import { JobAbort, SnoozeSignal } from "./abort.js";
import type { JobContext } from "./context.js";

/** A job this worker holds: its lease, and the controller that aborts its handler. */
export interface ActiveJob {
  claimed: ClaimedJob;
  controller: AbortController;
  /** Set when the store rejected our lease (heartbeat) — nothing we write will be applied. */
  leaseLost: boolean;
  /** Set when the job was completed inside ctx.completeInTransaction. */
  completedInTransaction: boolean;
  startedAt: number;
}

export interface ExecutorDeps {
  store: Store;
  workerId: string;
  log: Logger;
  logPayloads: boolean;
  findJob(name: string): AnyJobDefinition | undefined;
  knownJobNames(): string[];
  classify?: (err: unknown) => Classification | undefined;
}

export interface Execution {
  outcome: Outcome | null;
  result?: unknown;
  error?: Error;
}

/** Runs one claimed job to an outcome. Never throws: every failure becomes an outcome. */
export async function executeJob(active: ActiveJob, deps: ExecutorDeps): Promise<Execution> {
  const { claimed, controller } = active;
  const log = deps.log.child({
    jobId: claimed.id,
    name: claimed.name,
    queue: claimed.queue,
    attempt: claimed.attempt,
  });
  const debug = deps.log.isLevelEnabled("debug");
  const lease = { id: claimed.id, leaseToken: claimed.leaseToken };
  const base = { id: claimed.id, leaseToken: claimed.leaseToken, worker: deps.workerId };
  const def = deps.findJob(claimed.name);

  if (!def) {
    const error = new Error(
      `no handler for job "${claimed.name}" in this worker (known: ${deps.knownJobNames().join(", ") || "none"})`,
    );
    log.error({ err: error }, "unknown job name");
    return { outcome: failureOutcome(base, claimed, error, "unknown", undefined, null), error };
  }

  let timer: NodeJS.Timeout | undefined;
  try {
    const validation = await def.schema["~standard"].validate(claimed.payload);
    if (validation.issues) {
      throw new ValidationError(
        `payload of job "${claimed.name}" does not match its schema: ${validation.issues.map((i) => i.message).join("; ")}`,
        validation.issues,
      );
    }
    const ctx = makeContext(active, deps, log, lease);
    if (debug) log.debug(deps.logPayloads ? { payload: claimed.payload } : {}, "job started");

    // The handler races its signal: a handler that ignores the signal and hangs must not hold the slot.
    const aborted = new Promise<never>((_, reject) => {
      const onAbort = () => reject(controller.signal.reason);
      if (controller.signal.aborted) onAbort();
      else controller.signal.addEventListener("abort", onAbort, { once: true });
    });
    if (def.timeoutMs !== null) {
      const ms = def.timeoutMs;
      timer = setTimeout(() => controller.abort(new JobAbort("timeout", `job timed out after ${ms} ms`)), ms);
    }
    const running = Promise.resolve().then(() => def.run(validation.value as never, ctx));
    running.catch(() => {}); // a handler that rejects after its deadline must not become an unhandled rejection
    const result = await Promise.race([running, aborted]);
    if (active.completedInTransaction) return { outcome: null, result };
    if (debug) log.debug("job completed");
    return { outcome: { ...base, kind: "completed", result: result === undefined ? null : result }, result };
  } catch (thrown) {
    if (active.completedInTransaction) {
      log.warn({ err: thrown }, "handler threw after completing in its transaction; the completion stands");
      return { outcome: null };
    }
    return { ...classifyFailure(thrown, base, claimed, def, deps, log), error: toError(thrown) };
  } finally {
    if (timer) clearTimeout(timer);
  }
}

function classifyFailure(
  thrown: unknown,
  base: Pick<Outcome, "id" | "leaseToken" | "worker">,
  claimed: ClaimedJob,
  def: AnyJobDefinition,
  deps: ExecutorDeps,
  log: Logger,
): Execution {
  if (thrown instanceof SnoozeSignal) {
    log.info({ delayMs: thrown.delayMs }, "job snoozed");
    return { outcome: { ...base, kind: "snoozed", delayMs: thrown.delayMs } };
  }
  if (thrown instanceof JobAbort) {
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
  const error = toError(thrown);
  let kind: ErrorKind = errorKind(thrown);
  let decision: Classification = kind === "permanent" || kind === "validation" ? "fail" : "retry";
  if (kind === "unknown") {
    const custom = def.classify?.(thrown) ?? deps.classify?.(thrown);
    if (custom) decision = custom;
  }
  if (kind === "unknown" && decision === "fail") kind = "permanent";
  // Read as fields, not by instanceof: a jobs module may load a second copy of errand.
  const hints = thrown as { retryAfterMs?: unknown; rateLimited?: unknown };
  const retryAfter =
    kind === "retryable" && typeof hints.retryAfterMs === "number" ? hints.retryAfterMs : undefined;
  if (kind === "retryable" && hints.rateLimited === true) {
    const delayMs = retryAfter ?? def.backoff(claimed.attempt);
    log.info({ delayMs, err: error.message }, "rate limited: snoozed without spending an attempt");
    return { outcome: { ...base, kind: "snoozed", delayMs, error: errorFields(error, kind) } };
  }
  return { outcome: failureOutcome(base, claimed, error, kind, def, retryAfter, decision, log) };
}

function errorFields(error: Error, kind: ErrorKind): NonNullable<Outcome["error"]> {
  return { message: error.message || error.name, stack: error.stack, kind };
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

function makeContext(
  active: ActiveJob,
  deps: ExecutorDeps,
  log: Logger,
  lease: { id: string; leaseToken: number },
): JobContext {
  const { claimed, controller } = active;
  const { leaseToken: _t, lockedUntil: _l, ...job } = claimed;
  return {
    job: Object.freeze(job),
    attempt: claimed.attempt,
    signal: controller.signal,
    log,
    async once<T>(key: string, fn: () => Promise<T> | T): Promise<T> {
      if (typeof key !== "string" || key.length === 0)
        throw new TypeError("ctx.once needs a non-empty string key");
      const seen = await deps.store.ledgerGet(key);
      if (seen.found) {
        log.debug({ key }, "side effect already done; skipped");
        return seen.value as T;
      }
      const value = await fn();
      await deps.store.ledgerPut(key, claimed.id, value === undefined ? null : value);
      return value;
    },
    async progress(fraction: number, message?: string): Promise<void> {
      if (typeof fraction !== "number" || !(fraction >= 0 && fraction <= 1)) {
        throw new RangeError(`progress must be a number from 0 to 1, got ${fraction}`);
      }
      await deps.store.setProgress(lease, message === undefined ? { fraction } : { fraction, message });
    },
    snooze(delay: Duration): never {
      throw new SnoozeSignal(parseDuration(delay, "snooze delay"));
    },
    async completeInTransaction<T>(fn: (tx: TxHandle) => Promise<T> | T): Promise<T> {
      const done = await deps.store.completeInTransaction(lease, deps.workerId, fn);
      if (!done.applied) {
        throw new JobAbort(
          "lease-lost",
          "lease lost before the transaction could complete the job; rolled back",
        );
      }
      active.completedInTransaction = true;
      return done.value as T;
    },
  };
}
