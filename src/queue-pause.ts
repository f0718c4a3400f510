/** Pausing and resuming a queue for every worker (the facade's pauseQueue/resumeQueue). */
import { checkName } from "./job.js";
import type { QueuePause, Store } from "./store/types.js";
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
