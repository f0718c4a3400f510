import { type Duration, parseDuration } from "../duration.js";
import { type Classification, ValidationError } from "../errors.js";
import { checkDelay } from "../instant.js";
import type { AnyJobDefinition, DependencyResults, JobContext, JobLogLine, OnceOptions } from "../job.js";
import { knownFields, onlyKnownFields } from "../known-fields.js";
import type { Logger } from "../logger.js";
import { storableJson, storableString } from "../payload.js";
import type { ClaimedJob, Store, TxHandle } from "../store/types.js";
import { JobAbort, SnoozeSignal } from "./abort.js";
import { capturingLogger, JobLogBuffer } from "./job-log.js";
import { waitingForStore } from "./store-waits.js";

/**
 * A job this worker runs: its lease, its abort state, and the context its handler receives.
 * One object per job, with the costly parts made on first use (the AbortSignal, the child logger,
 * the job view): a worker runs thousands of jobs a second, and most handlers touch none of them.
 */
export class ActiveJob implements JobContext {
  /** Set when the store rejected our lease (heartbeat) — nothing we write will be applied. */
  leaseLost = false;
  /** Set when the job was completed inside ctx.completeInTransaction. */
  completedInTransaction = false;
  readonly startedAt = Date.now();
  /** When the handler ended (set by the worker; events report the duration from it). */
  finishedAt = 0;
  /** Why the job was aborted (timeout, cancel, lost lease, shutdown); undefined while it may run on. */
  abortReason: JobAbort | undefined = undefined;
  /** Set while the handler runs: ends the executor's wait at once when the job is aborted. */
  onAbort: ((reason: JobAbort) => void) | undefined = undefined;
  private controller: AbortController | undefined = undefined;
  private childLog: Logger | undefined = undefined;
  private handlerLog: Logger | undefined = undefined;
  /** The handler's ctx.log lines; made on the first read of ctx.log. */
  private logBuffer: JobLogBuffer | undefined = undefined;
  private jobView: JobContext["job"] | undefined = undefined;

  constructor(
    readonly claimed: ClaimedJob,
    private readonly deps: ExecutorDeps,
  ) {}

  get lease(): { id: string; leaseToken: number } {
    return { id: this.claimed.id, leaseToken: this.claimed.leaseToken };
  }

  /** Aborts the job once: its signal fires and the executor stops waiting for the handler. */
  abort(reason: JobAbort): void {
    if (this.abortReason) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
    this.onAbort?.(reason);
  }

  // ── JobContext ──

  get job(): JobContext["job"] {
    if (!this.jobView) {
      const { leaseToken: _t, lockedUntil: _l, traceContext: _c, ...job } = this.claimed;
      // The times may be accessors, which a rest copy skips (the Postgres claim's ClaimedRow
      // makes its Dates on first read); a plain object's keep their place.
      this.jobView = Object.freeze({ ...job, runAt: this.claimed.runAt, createdAt: this.claimed.createdAt });
    }
    return this.jobView;
  }

  get attempt(): number {
    return this.claimed.attempt;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  /** ctx.log: the worker's log lines about this job, each also kept with the attempt (job-log.ts). */
  get log(): Logger {
    if (!this.handlerLog) {
      this.logBuffer = new JobLogBuffer();
      this.handlerLog = capturingLogger(this.workerLog, this.logBuffer);
    }
    return this.handlerLog;
  }

  /** errand's own lines about this job (not kept with the attempt: they are not the handler's). */
  get workerLog(): Logger {
    this.childLog ??= this.deps.log.child({
      jobId: this.claimed.id,
      job: this.claimed.name,
      queue: this.claimed.queue,
      attempt: this.claimed.attempt,
    });
    return this.childLog;
  }

  /** The handler's ctx.log lines so far, for the attempt's history entry; undefined when none. */
  logLines(): JobLogLine[] | undefined {
    return this.logBuffer?.snapshot();
  }

  // Methods handlers may destructure (`const { once, progress } = ctx`): bound on first use. As
  // arrow-function fields they were four closures made for every job, used by few.
  private onceFn: JobContext["once"] | undefined = undefined;
  private progressFn: JobContext["progress"] | undefined = undefined;
  private snoozeFn: JobContext["snooze"] | undefined = undefined;
  private completeFn: JobContext["completeInTransaction"] | undefined = undefined;
  private dependenciesFn: JobContext["dependencies"] | undefined = undefined;

  get dependencies(): JobContext["dependencies"] {
    this.dependenciesFn ??= () => readDependencies(this.deps.store, this.claimed.id);
    return this.dependenciesFn;
  }

  get once(): JobContext["once"] {
    this.onceFn ??= <T>(key: string, fn: () => Promise<T> | T, options?: OnceOptions) =>
      this.runOnce(key, fn, options);
    return this.onceFn;
  }

  get progress(): JobContext["progress"] {
    this.progressFn ??= (fraction: number, message?: string) => this.reportProgress(fraction, message);
    return this.progressFn;
  }

  get snooze(): JobContext["snooze"] {
    this.snoozeFn ??= (delay: Duration): never => {
      throw new SnoozeSignal(checkDelay(parseDuration(delay, "snooze delay"), delay, "snooze delay"));
    };
    return this.snoozeFn;
  }

  get completeInTransaction(): JobContext["completeInTransaction"] {
    this.completeFn ??= <T>(fn: (tx: TxHandle) => Promise<T> | T) => this.completeIn(fn);
    return this.completeFn;
  }

  private async runOnce<T>(key: string, fn: () => Promise<T> | T, options?: OnceOptions): Promise<T> {
    // Checked before the ledger is read: PostgreSQL refused a NUL only after the read, a key over
    // ~8 KB only when recording it (after the effect ran), and stored a lone surrogate as U+FFFD,
    // where another key's entry made this job skip an effect it never ran.
    storableString(key, "ctx.once key");
    const entry = { key, jobId: this.claimed.id, global: onceScope(options) === "global" };
    const seen = await waitingForStore(() => this.deps.store.ledgerGet(entry), this, "ctx.once", READ_TRIES);
    if (seen.found) {
      this.workerLog.debug({ key, global: entry.global }, "side effect already done; skipped");
      return seen.value as T;
    }
    const value = await fn();
    // Checked here, not by the store: every store refuses the same values (Postgres alone
    // refused a NUL, after the effect ran), and the job fails without a ledger entry.
    if (value !== undefined)
      storableJson(value, this.deps.payloadLimit, `ctx.once value for key ${JSON.stringify(key)}`);
    // The effect ran: its entry is worth waiting for until the job is aborted.
    await waitingForStore(
      () => this.deps.store.ledgerPut(entry, value === undefined ? null : value),
      this,
      "ctx.once: recording the effect",
    );
    return value;
  }

  private async reportProgress(fraction: number, message?: string): Promise<void> {
    if (typeof fraction !== "number" || !(fraction >= 0 && fraction <= 1)) {
      throw new RangeError(`progress must be a number from 0 to 1, got ${fraction}`);
    }
    if (message !== undefined) storableJson(message, this.deps.payloadLimit, "progress message");
    const progress = message === undefined ? { fraction } : { fraction, message };
    await waitingForStore(
      () => this.deps.store.setProgress(this.lease, progress),
      this,
      "ctx.progress",
      READ_TRIES,
    );
  }

  private async completeIn<T>(fn: (tx: TxHandle) => Promise<T> | T): Promise<T> {
    const limit = this.deps.payloadLimit;
    // A result no store can hold rolls the transaction back and fails the job, on every store.
    // An error `fn` threw is the application's (its own HTTP call refused, say): not retried,
    // or `fn` ran 8 times (a helper's find). Only the store's own errors are waited out.
    let fnThrew = false;
    const checked = async (tx: TxHandle): Promise<T> => {
      let value: T;
      try {
        value = await fn(tx);
      } catch (err) {
        fnThrew = true;
        throw err;
      }
      checkResult(value, limit);
      return value;
    };
    // Nothing of a transaction the store could not begin or commit is kept: `fn` runs again.
    const done = await waitingForStore(
      () => {
        fnThrew = false;
        return this.deps.store.completeInTransaction(this.lease, this.deps.workerId, checked, () =>
          this.logLines(),
        );
      },
      this,
      "ctx.completeInTransaction",
      TRANSACTION_TRIES,
      () => !fnThrew,
    );
    if (!done.applied) {
      throw new JobAbort(
        "lease-lost",
        "lease lost before the transaction could complete the job; rolled back",
      );
    }
    this.completedInTransaction = true;
    return done.value as T;
  }
}

const ONCE_FIELDS = knownFields("scope");
/** Tries of a read or a progress note while the store is busy (about 25 s of waits, plus SQLite's busy_timeout each). */
const READ_TRIES = 16;
/** Tries of a transaction while the store is busy: `fn` runs each time. */
const TRANSACTION_TRIES = 8;

/** The scope of a ctx.once call; a ValidationError (it fails the job at once) for anything else. */
function onceScope(options: OnceOptions | undefined): "job" | "global" {
  // `{ scop: "global" }` would run a global effect once per job.
  if (options !== null && typeof options === "object")
    onlyKnownFields(options, ONCE_FIELDS, "ctx.once options");
  const scope = options?.scope ?? "job";
  if (scope !== "job" && scope !== "global")
    throw new ValidationError(`ctx.once: scope must be "job" or "global"; got ${JSON.stringify(scope)}`);
  return scope;
}

export interface ExecutorDeps {
  store: Store;
  workerId: string;
  log: Logger;
  logPayloads: boolean;
  /** Largest result or ctx.once value in bytes (JSON), as for payloads. */
  payloadLimit: number;
  findJob(name: string): AnyJobDefinition | undefined;
  knownJobNames(): string[];
  classify?: (err: unknown) => Classification | undefined;
  /** A rate-limited answer paused a flow budget (the `flowPaused` event). */
  onFlowPaused?: (pause: { queue: string; key: string | null; ms: number }) => void;
}

/** A result every store can hold, or the ValidationError (permanent: it fails the job) saying why not. */
export function checkResult(result: unknown, limit: number): void {
  if (result === undefined || result === null || typeof result === "number" || typeof result === "boolean")
    return; // nothing to check: the common case costs no serialisation
  storableJson(result, limit, "result");
}

/** ctx.dependencies(): the job's dependencies with their results, by id and by node name. */
async function readDependencies(store: Store, id: string): Promise<DependencyResults> {
  const { dependencies } = await store.getJobLinks(id);
  const byId: Record<string, unknown> = {};
  const byName: Record<string, unknown> = {};
  for (const dep of dependencies) {
    byId[dep.id] = dep.result;
    if (dep.node !== null) byName[dep.node] = dep.result;
  }
  return { byId, byName, jobs: dependencies };
}
