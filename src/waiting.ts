/**
 * "Why isn't my job running?": the reasons a pending job waits, as a small discriminated union
 * and one check per reason. Flow control adds its own variants (a rate limit of a key until T, a
 * concurrency cap of a key with n running) by adding a member to `WaitReason` and a check to
 * `WAIT_CHECKS`; the facade, the JSON API, the CLI and the dashboard show every reason by its
 * `message`, so a new variant needs nothing else to be seen.
 */
import type { JobRecord } from "./job.js";
import type { QueuePause, Store, WorkerInfo } from "./store/types.js";

export type WaitReason =
  /** Delayed (a delay, a retry's backoff, a snooze): it is not due before `until`. */
  | { kind: "not-due"; until: Date; message: string }
  /** Its queue is paused (errand.pauseQueue). */
  | { kind: "queue-paused"; queue: string; since: Date; message: string }
  /** No worker with a recent heartbeat serves its queue (a tick-driven host has none: that is expected there). */
  | { kind: "no-worker"; queue: string; message: string }
  /** Due, and `jobsAhead` due jobs of its queue come first in claim order (`atLeast`: counting stopped there). */
  | { kind: "behind"; queue: string; jobsAhead: number; atLeast: boolean; message: string };

/** Workers whose last heartbeat is older than this do not count as serving a queue. */
export const LIVE_WORKER_MS = 60_000;
/** Counting the jobs ahead stops here: a walk of the pending index, bounded. */
export const JOBS_AHEAD_CAP = 10_000;

/** What the checks share, read once per question. */
export interface WaitContext {
  job: JobRecord;
  now: Date;
  store: Pick<Store, "countJobsAhead">;
  pause: QueuePause | undefined;
  workers: WorkerInfo[];
}

export type WaitCheck = (ctx: WaitContext) => Promise<WaitReason | null> | WaitReason | null;

const isDue = (ctx: WaitContext) => ctx.job.runAt.getTime() <= ctx.now.getTime();

/** In the order they are reported: the pause first (it overrides everything), the line last. */
export const WAIT_CHECKS: WaitCheck[] = [
  ({ job, pause }) =>
    pause
      ? {
          kind: "queue-paused",
          queue: job.queue,
          since: pause.pausedAt,
          message: `queue "${job.queue}" is paused (since ${pause.pausedAt.toISOString()})`,
        }
      : null,
  (ctx) =>
    isDue(ctx)
      ? null
      : { kind: "not-due", until: ctx.job.runAt, message: `not due until ${ctx.job.runAt.toISOString()}` },
  ({ job, workers }) =>
    workers.some((w) => Object.hasOwn(w.queues, job.queue))
      ? null
      : { kind: "no-worker", queue: job.queue, message: `no live worker serves queue "${job.queue}"` },
  async (ctx) => {
    if (!isDue(ctx) || ctx.pause) return null;
    const ahead = await ctx.store.countJobsAhead(ctx.job, JOBS_AHEAD_CAP);
    if (ahead === 0) return null;
    const atLeast = ahead >= JOBS_AHEAD_CAP;
    return {
      kind: "behind",
      queue: ctx.job.queue,
      jobsAhead: ahead,
      atLeast,
      message: `waiting behind ${atLeast ? "at least " : ""}${ahead} earlier job${ahead === 1 ? "" : "s"} of queue "${ctx.job.queue}"`,
    };
  },
];

/** Why a job waits: [] when it is not pending (running, finished) or nothing holds it back. */
export async function whyWaiting(
  store: Pick<Store, "now" | "listPausedQueues" | "listWorkers" | "countJobsAhead">,
  job: JobRecord,
): Promise<WaitReason[]> {
  if (job.state !== "pending") return [];
  const [now, pauses, workers] = await Promise.all([
    store.now(),
    store.listPausedQueues(),
    store.listWorkers(LIVE_WORKER_MS),
  ]);
  const ctx: WaitContext = { job, now, store, pause: pauses.find((p) => p.queue === job.queue), workers };
  const reasons: WaitReason[] = [];
  for (const check of WAIT_CHECKS) {
    const reason = await check(ctx);
    if (reason) reasons.push(reason);
  }
  return reasons;
}
