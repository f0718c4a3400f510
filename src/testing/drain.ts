/**
 * Running a test errand's jobs: drain (what is due now, and what that enqueues) and advance
 * (time passing with a worker running). Both go through `errand.processJobs` — the production
 * worker with its executor, retries, rescuer and completer — on the fake clock, so a test sees
 * what a deployment would, only without waiting.
 */
import type { Errand } from "../errand.js";
import type { JobEvent } from "../errand-types.js";
import type { FakeClock } from "./clock.js";

export interface DrainResult {
  /** Attempts started (jobs claimed and run). */
  ran: number;
  completed: number;
  /** Failed attempts that will run again (after their backoff). */
  retried: number;
  /** Jobs that went to the dead-letter queue. */
  failed: number;
  snoozed: number;
  cancelled: number;
  /** Schedule slots that were enqueued. */
  schedulesFired: number;
  /** Pending jobs due but not run at the end: a paused queue, or held by flow control. */
  stillDue: number;
  /** The errors of the attempts that failed (retried or dead-lettered), in order. */
  errors: Array<{ job: JobEvent["job"]; error: Error; retried: boolean }>;
}

export interface Runner {
  readonly errand: Errand;
  readonly clock: FakeClock;
  /** Real time a handler may run before drain gives up on it (ms). */
  readonly stuckAfterMs: number;
  /** Jobs run by one drain or advance before it is taken for a loop (a job enqueuing itself). */
  readonly maxJobs: number;
  readonly concurrency: number;
}

/** Moments one advance or drain visits at most before it is taken for a loop. */
const MAX_STEPS = 100_000;

function emptyResult(): DrainResult {
  return {
    ran: 0,
    completed: 0,
    retried: 0,
    failed: 0,
    snoozed: 0,
    cancelled: 0,
    schedulesFired: 0,
    stillDue: 0,
    errors: [],
  };
}

/** Runs what is due now and what those jobs enqueue, until nothing due is left. */
export async function drainNow(
  runner: Runner,
  into: DrainResult = emptyResult(),
  what: "drain" | "advance" = "drain",
): Promise<DrainResult> {
  const { errand } = runner;
  into.schedulesFired += (await errand.fireSchedules()).fired;
  if (errand.queueNames.length === 0) return into;
  const released: JobEvent["job"][] = [];
  const onRetry = (e: JobEvent) => into.errors.push({ job: e.job, error: e.error as Error, retried: true });
  const onFail = (e: JobEvent) => into.errors.push({ job: e.job, error: e.error as Error, retried: false });
  const onRelease = (e: JobEvent) => released.push(e.job);
  errand.on("retrying", onRetry).on("failed", onFail).on("released", onRelease);
  try {
    for (;;) {
      // Checked before each run as well: `into` carries the runs of the earlier moments of an
      // advance or drain({ untilIdle }), where a job rescheduling itself runs once per moment.
      if (into.ran > runner.maxJobs) throw tooManyJobs(runner, what);
      const r = await errand.processJobs({
        // One past maxJobs at most, so a job that enqueues itself is caught after maxJobs runs,
        // not after the time budget.
        limit: Math.min(10_000, runner.maxJobs - into.ran + 1),
        concurrency: runner.concurrency,
        timeBudget: runner.stuckAfterMs,
        finishTimeout: runner.stuckAfterMs,
      });
      into.ran += r.claimed;
      into.completed += r.completed;
      into.retried += r.retried;
      into.failed += r.failed;
      into.snoozed += r.snoozed;
      into.cancelled += r.cancelled;
      into.stillDue = r.stillDue;
      if (released.length > 0 || r.released > 0) throw stuck(runner, released);
      if (into.ran > runner.maxJobs) throw tooManyJobs(runner, what);
      // Nothing due is left (stillDue counts jobs the run's own handlers enqueued too): done,
      // without one more run to find that out.
      if (r.claimed === 0 || r.stillDue === 0) return into;
    }
  } finally {
    errand.off("retrying", onRetry).off("failed", onFail).off("released", onRelease);
  }
}

function tooManyJobs(runner: Runner, what: "drain" | "advance"): Error {
  return new Error(
    `errand/testing: more than ${runner.maxJobs} jobs ran in one ${what}; do jobs enqueue each other forever, or a job reschedule itself without end? (raise maxJobs if not)`,
  );
}

function stuck(runner: Runner, released: JobEvent["job"][]): Error {
  const jobs = released.map((j) => `${j.id} "${j.name}"`).join(", ") || "a job";
  return new Error(
    `errand/testing: job ${jobs} still ran after ${runner.stuckAfterMs} ms of real time, so drain gave up on it (it is pending again, no attempt spent). ` +
      "Its handler waits for something that does not come: a promise the test never resolves, or a real timer " +
      "(the fake clock moves errand's times, not setTimeout). Raise stuckAfter if it is only slow.",
  );
}

/**
 * The next moment after now that something becomes due: a pending job's run time (a delay, a
 * retry's backoff, a snooze), the expiry of a running job's lease (the rescuer takes it back
 * then), and with `schedules` a schedule's next slot.
 */
async function nextMoment(runner: Runner, schedules: boolean): Promise<number | null> {
  const { errand, clock } = runner;
  const now = clock.nowMs();
  let next: number | null = null;
  const consider = (t: number) => {
    if (t > now && (next === null || t < next)) next = t;
  };
  for (const state of ["pending", "running"] as const) {
    let cursor: string | undefined;
    do {
      const page = await errand.listJobs({ state, limit: 1000, cursor });
      for (const job of page.jobs) {
        if (!errand.queueNames.includes(job.queue)) continue;
        if (state === "pending") consider(job.runAt.getTime());
        // The rescuer takes a lease back once it is past (strictly): a millisecond after.
        else if (job.lockedUntil) consider(job.lockedUntil.getTime() + 1);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  if (schedules) {
    for (const s of await errand.listSchedules()) if (!s.pausedAt) consider(s.nextRunAt.getTime());
  }
  return next;
}

/**
 * Lets `ms` of fake time pass as if a worker ran all along: the clock stops at every moment
 * something becomes due, in order, and what is due then runs; the clock ends at now + ms.
 */
export async function advanceBy(runner: Runner, ms: number): Promise<DrainResult> {
  const target = runner.clock.nowMs() + ms;
  const result = await drainNow(runner, undefined, "advance");
  for (let step = 0; ; step++) {
    const next = await nextMoment(runner, true);
    if (next === null || next > target) break;
    if (step >= MAX_STEPS) throw tooManySteps();
    runner.clock.set(next);
    await drainNow(runner, result, "advance");
  }
  if (target > runner.clock.nowMs()) {
    runner.clock.set(target);
    await drainNow(runner, result, "advance");
  }
  return result;
}

/** Drains, moving the clock to each delayed job, retry and lease expiry until no job waits. Schedules' future slots are not waited for. */
export async function drainUntilIdle(runner: Runner): Promise<DrainResult> {
  const result = await drainNow(runner);
  for (let step = 0; ; step++) {
    const next = await nextMoment(runner, false);
    if (next === null) return result;
    if (step >= MAX_STEPS) throw tooManySteps();
    runner.clock.set(next);
    await drainNow(runner, result);
  }
}

function tooManySteps(): Error {
  return new Error(
    `errand/testing: time stopped at more than ${MAX_STEPS} moments in one call; a job that keeps rescheduling itself, or a schedule firing every second over a long advance?`,
  );
}
