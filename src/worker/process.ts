/**
 * The process-level rules of a worker (docs/semantics.md, Shutdown), for `errand worker` and for programs
 * that run a worker as their main job:
 *
 * - SIGTERM / SIGINT: stop claiming, let in-flight jobs finish. A clean stop exits 0. Past the
 *   hard timeout the worker aborts the jobs' signals and returns them to `pending` (the
 *   interrupted attempt is recorded, not charged): exit 1. The timeout is hard: outcomes the
 *   store cannot take within a second more are not recorded (Worker.stop), and closing
 *   the store gets CLOSE_MS (ABANDONED_CLOSE_MS when it did not answer the stop).
 * - A second signal during the graceful stop cuts it short: the hard stop happens at once, and
 *   the process returns within about a second whatever the store does (Worker.hurry).
 * - An unhandled rejection or uncaught exception: logged, every running job aborted at once,
 *   exit 1 — the process may be in a bad state, so the orchestrator should start a clean one.
 *   The job whose code crashed (crash.ts) is charged a failed attempt of kind "crashed"; the
 *   others are released uncharged. When no job can be told, every interrupted job is charged.
 *
 * - The timeout is hard even when a handler blocks the event loop during the stop, which holds
 *   every timer above: a thread armed when the stop begins kills the process (SIGKILL) once the
 *   stop is a second past its budget and the loop has not run for 6 s (stop-backstop.ts).
 *
 * runUntilSignal resolves with the exit code instead of exiting, so the caller decides when the
 * process ends (the CLI calls process.exit with it). Every listener it installs is removed
 * before it resolves.
 */
import { type Duration, parseTimerDuration } from "../duration.js";
import { toError } from "../errors.js";
import { knownFields, onlyKnownFields } from "../known-fields.js";
import type { Logger } from "../logger.js";
import { attributeCrashes, currentJobId } from "./crash.js";
import { armStopBackstop, type Backstop } from "./stop-backstop.js";
import { FINAL_WRITE_MS, type StopResult, type Worker } from "./worker.js";

/**
 * How long closing the store may take after the worker stopped (a pool's end waits for its
 * clients); a store that already did not answer the stop gets ABANDONED_CLOSE_MS only.
 */
const CLOSE_MS = 1000;
const ABANDONED_CLOSE_MS = 200;
/**
 * Past the stop's own budget (the timeout, the released jobs' outcomes, closing the store), how
 * long before the backstop thread may kill a process whose event loop has stopped running
 * (stop-backstop.ts, which also waits for the loop to have been still for 6 s): room for a
 * loaded machine.
 */
const BACKSTOP_MARGIN_MS = 1000;

/** What runUntilSignal needs of the errand the worker belongs to (an Errand is one). */
export interface ClosableOwner {
  /** Where shutdown and crash lines go unless `options.log` says otherwise. */
  readonly log: Logger;
  /** Closes the store after the worker stopped. */
  close(): Promise<void>;
}

export interface RunUntilSignalOptions {
  /** Graceful stop budget before running jobs are aborted and released. Default 30s. */
  shutdownTimeout?: Duration;
  /** Where shutdown and crash lines go. Default the errand's logger. */
  log?: Logger;
  /** Signals that start the graceful stop. Default SIGTERM and SIGINT. */
  signals?: NodeJS.Signals[];
  /** Aborting this starts the graceful stop, like a first signal (embedding, tests). */
  signal?: AbortSignal;
  /** Close the errand (and its store) after the worker stopped. Default true. */
  close?: boolean;
}

const RUN_UNTIL_SIGNAL_FIELDS = knownFields("shutdownTimeout", "log", "signals", "signal", "close");

export interface ShutdownReport {
  /** 0 after a clean stop; 1 after the hard timeout, a forced stop or a crash. */
  exitCode: 0 | 1;
  cause: "signal" | "abort" | "crash";
  /** The first signal received, when the cause is a signal. */
  signal?: NodeJS.Signals;
  /** Every in-flight job finished on its own. */
  clean: boolean;
  /** Jobs returned to pending unfinished. */
  released: number;
  /** A second signal cut the graceful stop short. */
  forced: boolean;
  /** The unhandled error, when the cause is a crash. */
  error?: Error;
}

/**
 * Runs until a signal, an abort or a crash, then stops the worker by the rules above.
 *
 * Pass a function that starts the worker (`() => errand.work(...)`) rather than a started
 * worker when you can: the handlers are then in place before the first job is claimed. A
 * SIGTERM that arrives after a claim but before a handler exists would kill the process the
 * default way, and the claimed job would wait for its lease to expire.
 */
export async function runUntilSignal(
  workerOrStart: Worker | (() => Worker),
  errand: ClosableOwner,
  options: RunUntilSignalOptions = {},
): Promise<ShutdownReport> {
  onlyKnownFields(options, RUN_UNTIL_SIGNAL_FIELDS, "runUntilSignal options");
  const timeoutMs = parseTimerDuration(options.shutdownTimeout ?? "30s", "shutdownTimeout");
  const log = options.log ?? errand.log;
  const signals = options.signals ?? ["SIGTERM", "SIGINT"];

  // Assigned right after the handlers are installed; they only run from later event-loop turns.
  let worker!: Worker;
  let stopping: Promise<StopResult> | null = null;
  let cause: ShutdownReport["cause"] | null = null;
  let firstSignal: NodeJS.Signals | undefined;
  let forced = false;
  let crash: Error | undefined;
  let aborted = 0;
  let triggered!: () => void;
  const trigger = new Promise<void>((resolve) => {
    triggered = resolve;
  });

  let backstop: Backstop | undefined;
  const beginStop = (timeout: number): void => {
    backstop ??= armStopBackstop(timeout + FINAL_WRITE_MS + CLOSE_MS + BACKSTOP_MARGIN_MS, (message) =>
      log.warn({}, message),
    );
    stopping ??= worker.stop({ timeout });
    triggered();
  };

  const onSignal = (sig: NodeJS.Signals): void => {
    if (!stopping) {
      cause = "signal";
      firstSignal = sig;
      log.info(
        { signal: sig, running: worker.running, timeoutMs },
        `${sig} received: finishing running jobs (up to ${timeoutMs} ms); send it again to stop at once`,
      );
      beginStop(timeoutMs);
      return;
    }
    if (forced) return;
    forced = true;
    log.warn({ signal: sig, running: worker.running }, `${sig} received again: releasing running jobs now`);
    aborted = Math.max(aborted, worker.hurry());
  };

  const onCrash = (kind: "uncaughtException" | "unhandledRejection") => (thrown: unknown) => {
    // First, while the listener still runs in the async context of the code that crashed.
    const culprit = currentJobId();
    const err = toError(thrown);
    if (!crash) crash = err;
    const what = kind === "uncaughtException" ? "uncaught exception" : "unhandled promise rejection";
    const message = culprit
      ? `${what} from job ${culprit}: charging it an attempt, releasing the other running jobs and exiting`
      : `${what} (from no known job): charging every running job an attempt and exiting`;
    const fields = culprit ? { err, jobId: culprit } : { err };
    if (kind === "uncaughtException") log.fatal(fields, message);
    else log.error(fields, message);
    if (!stopping) {
      cause = "crash";
      beginStop(0);
    }
    // A crash during a graceful stop ends the grace period too.
    aborted = Math.max(aborted, worker.crashed(culprit, err));
  };

  const onAbort = (): void => {
    if (stopping) return;
    cause = "abort";
    log.info({ running: worker.running, timeoutMs }, "stop requested: finishing running jobs");
    beginStop(timeoutMs);
  };

  // process.exit() called while the worker runs (a handler's, a library's): the running jobs are
  // abandoned, so it is no clean stop whatever code was asked for — a supervisor that restarts
  // only failed processes must restart this one (test/reliability/handler-exit.test.ts).
  const onExit = (code: number): void => {
    if (code === 0) process.exitCode = 1;
    log.fatal(
      { code, running: worker.running },
      `the process exited while the worker ran ${worker.running} job(s) (process.exit called by a handler?): exit code 1; their leases run out and rescuers return them`,
    );
  };
  const onException = onCrash("uncaughtException");
  const onRejection = onCrash("unhandledRejection");
  for (const sig of signals) process.on(sig, onSignal);
  process.on("uncaughtException", onException);
  process.on("unhandledRejection", onRejection);
  process.on("exit", onExit);
  const stopAttributing = attributeCrashes();
  const removeHandlers = (): void => {
    stopAttributing();
    for (const sig of signals) process.off(sig, onSignal);
    process.off("uncaughtException", onException);
    process.off("unhandledRejection", onRejection);
    process.off("exit", onExit);
    options.signal?.removeEventListener("abort", onAbort);
  };

  try {
    worker = typeof workerOrStart === "function" ? workerOrStart() : workerOrStart;
  } catch (err) {
    removeHandlers();
    throw err;
  }
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener("abort", onAbort, { once: true });

  try {
    await trigger;
    const result = await (stopping as unknown as Promise<StopResult>);
    let closeFailed = false;
    if (options.close !== false) {
      try {
        let timer: NodeJS.Timeout | undefined;
        const closeMs = result.abandoned ? ABANDONED_CLOSE_MS : CLOSE_MS;
        const closed = await Promise.race([
          errand.close().then(() => true),
          new Promise<false>((resolve) => {
            timer = setTimeout(() => resolve(false), closeMs);
          }),
        ]);
        clearTimeout(timer);
        if (!closed) throw new Error(`the store did not close within ${closeMs} ms`);
      } catch (err) {
        closeFailed = true;
        log.error({ err }, "closing the store failed");
      }
    }
    const released = Math.max(result.released, aborted);
    const clean = result.clean && !forced && aborted === 0 && !crash;
    const exitCode: 0 | 1 = clean && !closeFailed ? 0 : 1;
    const report: ShutdownReport = {
      exitCode,
      cause: crash ? "crash" : (cause ?? "abort"),
      clean,
      released,
      forced,
    };
    if (firstSignal) report.signal = firstSignal;
    if (crash) report.error = crash;
    log.info(
      { exitCode, clean, released },
      clean ? "shut down cleanly" : "shut down with unfinished jobs released",
    );
    return report;
  } finally {
    backstop?.disarm();
    removeHandlers();
  }
}
