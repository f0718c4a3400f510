/**
 * Which job crashed the process (issue 12, item 5). A handler that throws from a timer or leaves
 * a rejected promise unawaited crashes the worker (docs/semantics.md, Shutdown); if every job it interrupted
 * were released uncharged, the job at fault would never reach the dead-letter queue and each
 * restart would crash again, interrupting its neighbours every time.
 *
 * Every handler runs inside `jobScope` (AsyncLocalStorage), so the timers and promises it starts
 * carry its job id: Node 20 runs the `uncaughtException` and `unhandledRejection` listeners in
 * the async context of the callback that threw or of the promise that was rejected. The job at
 * fault is charged (a failed attempt of kind "crashed": retried with its backoff, or failed when
 * its attempts are spent) and its neighbours are released uncharged as at any shutdown. A crash
 * that carries no job id (errand's own code, a callback started outside any handler) charges
 * every job it interrupts once: a poison job then still ends in the dead-letter queue.
 *
 * The scope is made only while someone will read it: runUntilSignal (the `errand worker` CLI, and
 * programs that run a worker as their main job) turns attribution on while its crash listeners
 * are installed. A live AsyncLocalStorage turns on Node's promise hooks for every promise in the
 * process; a worker without those listeners (`errand.work()` alone: a crash ends the process
 * without a word from errand) would pay for them and never use them (bench/NOTES.md finding 13).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { AnyJobDefinition } from "../job.js";
import type { ClaimedJob, Outcome } from "../store/types.js";

const jobScope = new AsyncLocalStorage<string>();

/** How many runUntilSignal calls want crashes attributed now. */
let wanted = 0;

/** Turns crash attribution on (runUntilSignal, while its listeners are installed); returns the off switch. */
export function attributeCrashes(): () => void {
  wanted++;
  let on = true;
  return () => {
    if (!on) return;
    on = false;
    // The last one off disables the scope, and with it the promise hooks (when no other store is live).
    if (--wanted === 0) jobScope.disable();
  };
}

/** Runs `fn(a, b)` in the scope of job `id` when crashes are attributed, else just runs it. */
export function inJobScope<A, B, T>(id: string, fn: (a: A, b: B) => T, a: A, b: B): T {
  return wanted > 0 ? jobScope.run(id, fn, a, b) : fn(a, b);
}

/** The job whose handler started the code running now; undefined outside any handler. */
export function currentJobId(): string | undefined {
  return jobScope.getStore();
}

/** A released-by-crash job charged for the crash: retried with its backoff, or failed when spent. */
export function crashedOutcome(
  released: Outcome,
  claimed: ClaimedJob,
  def: AnyJobDefinition | undefined,
  crash: Error,
): Outcome {
  const error = {
    message: `the worker process crashed while this job ran: ${crash.message || crash.name}`,
    stack: crash.stack,
    kind: "crashed" as const,
  };
  const base = { id: released.id, leaseToken: released.leaseToken, worker: released.worker };
  if (claimed.attempt >= claimed.maxAttempts) return { ...base, kind: "failed", error };
  const delayMs = def?.backoff(claimed.attempt) ?? 1000;
  return { ...base, kind: "retry", delayMs, error };
}
