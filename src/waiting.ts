/**
 * "Why isn't my job running?": the reasons a pending job waits, as a small discriminated union
 * and one check per reason. Flow control adds its own variants (a rate limit of a key until T, a
 * concurrency cap of a key with n running) by adding a member to `WaitReason` and a check to
 * `WAIT_CHECKS`; the facade, the JSON API, the CLI and the dashboard show every reason by its
 * `message`, so a new variant needs nothing else to be seen.
 */
import type { JobRecord } from "./job.js";
import type { FlowLimits, FlowStatus, QueuePause, Store, WorkerInfo } from "./store/types.js";

export type WaitReason =
  /** It depends on jobs that have not all completed: `done` of `total` have. */
  | { kind: "dependencies"; done: number; total: number; waitingFor: string[]; message: string }
  /** Delayed (a delay, a retry's backoff, a snooze): it is not due before `until`. */
  | { kind: "not-due"; until: Date; message: string }
  /** Its queue is paused (errand.pauseQueue). */
  | { kind: "queue-paused"; queue: string; since: Date; message: string }
  /** No worker with a recent heartbeat serves its queue (a tick-driven host has none: that is expected there). */
  | { kind: "no-worker"; queue: string; message: string }
  /** Due, and `jobsAhead` due jobs of its queue come first in claim order (`atLeast`: counting stopped there). */
  | { kind: "behind"; queue: string; jobsAhead: number; atLeast: boolean; message: string }
  /** A rate-limited answer (429, rateLimited) paused its key's budget, or its queue's (key null), until `until`. */
  | { kind: "flow-paused"; queue: string; key: string | null; until: Date; message: string }
  /** Its key (or its queue, key null) has run `limit` jobs within the rate window; a slot frees at `until`. */
  | { kind: "rate-limited"; queue: string; key: string | null; limit: number; until: Date; message: string }
  /** Its key (or its queue, key null) has `running` jobs running, its concurrency limit. */
  | {
      kind: "concurrency-capped";
      queue: string;
      key: string | null;
      running: number;
      limit: number;
      message: string;
    };

/** A job's flow control, as its registered definition declares it, and its queue's state now. */
export interface WaitFlow {
  /** The job's flow key ("" when it has none). */
  key: string;
  limits: FlowLimits;
  status: FlowStatus;
}

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
  /** Set when the job's definition is registered in this process and declares flow limits. */
  flow: WaitFlow | null;
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
  (ctx) => (isDue(ctx) && !ctx.pause && ctx.flow ? flowReason(ctx.job.queue, ctx.flow) : null),
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

/**
 * The first flow limit that holds a due job back, in the order a claim checks them: a paused
 * budget, then the concurrency caps, then the rate windows (the key's before the queue's).
 */
function flowReason(queue: string, { key, limits, status }: WaitFlow): WaitReason | null {
  const now = status.now.getTime();
  const named = (k: string | null) => (k === null ? `queue "${queue}"` : `key "${k}" of queue "${queue}"`);
  const keyed = key === "" ? null : key;
  for (const k of keyed === null ? [""] : [key, ""]) {
    const until = status.pausedUntil.get(k);
    if (until !== undefined && until > now) {
      const who = k === "" ? null : k;
      return {
        kind: "flow-paused",
        queue,
        key: who,
        until: new Date(until),
        message: `the budget of ${named(who)} is paused by a rate-limited answer until ${new Date(until).toISOString()}`,
      };
    }
  }
  const capped = (who: string | null, running: number, limit: number | undefined): WaitReason | null =>
    limit !== undefined && running >= limit
      ? {
          kind: "concurrency-capped",
          queue,
          key: who,
          running,
          limit,
          message: `${named(who)} runs ${running} job${running === 1 ? "" : "s"}, its concurrency limit of ${limit}`,
        }
      : null;
  const total = [...status.running.values()].reduce((a, b) => a + b, 0);
  const cap =
    (keyed !== null ? capped(keyed, status.running.get(key) ?? 0, limits.keyConcurrency) : null) ??
    capped(null, total, limits.globalConcurrency);
  if (cap) return cap;
  const limited = (who: string | null, times: number[], rate: FlowLimits["rate"]): WaitReason | null => {
    if (!rate) return null;
    const recent = times.filter((t) => t > now - rate.perMs).sort((a, b) => a - b);
    if (recent.length < rate.limit) return null;
    // A slot frees when the claim that keeps the window full leaves it.
    const until = new Date(recent[recent.length - rate.limit] + rate.perMs);
    return {
      kind: "rate-limited",
      queue,
      key: who,
      limit: rate.limit,
      until,
      message: `${named(who)} started its limit of ${rate.limit} job${rate.limit === 1 ? "" : "s"} per ${rate.perMs} ms; the next may start at ${until.toISOString()}`,
    };
  };
  return (
    (keyed !== null ? limited(keyed, status.claims.get(key) ?? [], limits.keyRate) : null) ??
    limited(null, [...status.claims.values()].flat(), limits.rate)
  );
}

/** Why a job waits for its dependencies: how many of them completed, and which it still waits for. */
async function dependencyReason(store: Pick<Store, "getJobLinks">, job: JobRecord): Promise<WaitReason[]> {
  const { dependencies } = await store.getJobLinks(job.id);
  const unfinished = dependencies.filter(
    (d) => d.state !== "completed" && d.state !== "failed" && d.state !== "cancelled",
  );
  const done = dependencies.length - unfinished.length;
  const waitingFor = unfinished.map((d) => d.id);
  const shown = waitingFor.slice(0, 5).join(", ") + (waitingFor.length > 5 ? ", …" : "");
  return [
    {
      kind: "dependencies",
      done,
      total: dependencies.length,
      waitingFor,
      message: `waiting for dependencies: ${done} of ${dependencies.length} done${shown ? ` (waiting for job ${shown})` : ""}`,
    },
  ];
}

/** Why a job waits: [] when it is not pending or waiting (running, finished) or nothing holds it back. */
export async function whyWaiting(
  store: Pick<
    Store,
    "now" | "listPausedQueues" | "listWorkers" | "countJobsAhead" | "flowStatus" | "getJobLinks"
  >,
  job: JobRecord,
  flow: { key: string; limits: FlowLimits } | null = null,
): Promise<WaitReason[]> {
  if (job.state === "waiting") return dependencyReason(store, job);
  if (job.state !== "pending") return [];
  const windowMs = flow ? Math.max(flow.limits.rate?.perMs ?? 0, flow.limits.keyRate?.perMs ?? 0) : 0;
  const [now, pauses, workers, status] = await Promise.all([
    store.now(),
    store.listPausedQueues(),
    store.listWorkers(LIVE_WORKER_MS),
    flow ? store.flowStatus({ queue: job.queue, windowMs }) : null,
  ]);
  const ctx: WaitContext = {
    job,
    now,
    store,
    pause: pauses.find((p) => p.queue === job.queue),
    workers,
    flow: flow && status ? { ...flow, status } : null,
  };
  const reasons: WaitReason[] = [];
  for (const check of WAIT_CHECKS) {
    const reason = await check(ctx);
    if (reason) reasons.push(reason);
  }
  return reasons;
}
