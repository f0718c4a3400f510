/**
 * Pausing and resuming a queue for every worker (the facade's pauseQueue/resumeQueue), and lifting
 * the flow budget pauses of adaptive flow control (resumeFlow).
 */
import { ValidationError } from "./errors.js";
import { checkName } from "./job.js";
import { knownFields, onlyKnownFields } from "./known-fields.js";
import { MAX_KEY_LENGTH, storableString } from "./payload.js";
import { emptyStats } from "./store/common.js";
import type { QueuePause, QueueStats, Store } from "./store/types.js";
import { LIVE_WORKER_MS } from "./waiting.js";
import { PAUSE_SETTLE_MS } from "./worker/pause-window.js";

/**
 * Pauses `queue` and resolves once no handler of it can start on any worker (PAUSE_SETTLE_MS
 * after the pause committed: worker/pause-window.ts says why that is enough). Any valid queue
 * name may be paused, including one that has no jobs yet: queues exist implicitly, so a pause
 * set up before the first enqueue holds too. Running jobs go on to their end.
 */
export async function pauseQueue(store: Store, queue: string): Promise<QueuePause> {
  checkName(queue, "queue");
  const pause = await store.pauseQueue(queue);
  await new Promise((resolve) => setTimeout(resolve, PAUSE_SETTLE_MS));
  return pause;
}

/** Lifts the pause; the queue's workers are woken and claim at once. False when it was not paused. */
export async function resumeQueue(store: Store, queue: string): Promise<boolean> {
  checkName(queue, "queue");
  return store.resumeQueue(queue);
}

/** Which flow budget pauses `resumeFlow` lifts: absent `key`, all of the queue's; null, the queue-wide one. */
const RESUME_FLOW_FIELDS = knownFields("key");

export interface ResumeFlowOptions {
  /** One flow key's budget (a string), the queue-wide budget (null), or every one (absent). */
  key?: string | null;
}

/**
 * Lifts the adaptive flow control pauses (a rate-limited answer's Retry-After) of `queue` that
 * are still in effect, for every worker, and wakes its workers. Not the queue pause above: that
 * one is lifted by resumeQueue. Returns how many pauses were in effect.
 */
export async function resumeFlow(
  store: Store,
  queue: string,
  options: ResumeFlowOptions = {},
): Promise<number> {
  checkName(queue, "resumeFlow queue");
  if (typeof options !== "object" || options === null || Array.isArray(options))
    throw new ValidationError(
      `resumeFlow options must be an object like { key }; got ${JSON.stringify(options)}`,
    );
  // `{ kye: "acme" }` would lift every key's pause, not the one meant.
  onlyKnownFields(options, RESUME_FLOW_FIELDS, "resumeFlow options");
  const { key } = options;
  if (key !== undefined && key !== null) {
    const bad = typeof key !== "string" || key.length === 0 || key.length > MAX_KEY_LENGTH;
    if (bad)
      throw new ValidationError(
        `resumeFlow key must be a flow key (a non-empty string of at most ${MAX_KEY_LENGTH} characters) or null for the queue-wide budget; got ${typeof key === "string" ? `a string of ${key.length}` : (JSON.stringify(key) ?? typeof key)}`,
      );
    storableString(key, "resumeFlow key");
  }
  return store.resumeFlow(key === undefined ? { queue } : { queue, key });
}

/** A queue's counts with its pause and the live workers that serve it (the queue listing). */
export interface QueueOverview extends QueueStats {
  paused: boolean;
  pausedAt: Date | null;
  /** Workers with a heartbeat in the last minute that serve this queue. */
  workers: number;
}

/**
 * Every queue that has jobs, is paused, or is one of `known` (the registered jobs' queues, shown
 * before their first job), by name. `pending > 0 && workers === 0`: due jobs and no worker.
 */
export async function queueOverview(store: Store, known: string[]): Promise<QueueOverview[]> {
  const [stats, pauses, live] = await Promise.all([
    store.stats(),
    store.listPausedQueues(),
    store.listWorkers(LIVE_WORKER_MS),
  ]);
  const names = new Set([...known, ...stats.map((s) => s.queue), ...pauses.map((p) => p.queue)]);
  return [...names]
    .sort((a, b) => a.localeCompare(b))
    .map((queue) => {
      const pause = pauses.find((p) => p.queue === queue);
      return {
        ...(stats.find((s) => s.queue === queue) ?? emptyStats(queue)),
        paused: pause !== undefined,
        pausedAt: pause?.pausedAt ?? null,
        workers: live.filter((w) => Object.hasOwn(w.queues, queue)).length,
      };
    });
}
