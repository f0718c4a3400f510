/**
 * What an enqueue with a scoped key does with the job already holding that key — the one
 * decision every store makes the same way (memory, SQLite and PostgreSQL each find and lock the
 * holder their own way, then ask here). No SQL.
 *
 * Why the holder is judged at the next enqueue, by that enqueue's rule, and not released as it
 * changes state: a release at claim or finish would touch the claim and finish statements of
 * every job, keyed or not; and a job whose state moves back (a retry, a job given back unstarted,
 * `retry(id)` from the dead-letter queue) would re-enter a unique index it had left and collide
 * with the job that took its key meanwhile. Here the hold is given up once, by an enqueue, and
 * never taken back, so no state change can ever violate the index.
 */
import type { JobState } from "../job.js";
import type { NewJob, UniqueRule, UniqueWhile } from "./types.js";

export type HolderAction =
  | "match" // a duplicate: return it, store nothing
  | "replace" // a pending duplicate that takes the new payload and run time
  | "release"; // not a duplicate under this rule: it gives up the key, the new job is inserted

// A job `waiting` for its dependencies has not started either: it counts as pending (a match,
// not replaced: its run time is its dependencies' to decide).
const IN_SCOPE: Record<UniqueWhile, (state: JobState) => boolean> = {
  pending: (state) => state === "pending" || state === "waiting",
  unfinished: (state) => state === "pending" || state === "waiting" || state === "running",
  retained: () => true,
};

export function holderAction(
  rule: UniqueRule,
  holder: { state: JobState; createdAt: Date },
  nowMs: number,
): HolderAction {
  const counts =
    IN_SCOPE[rule.while](holder.state) &&
    (rule.forMs === null || nowMs - holder.createdAt.getTime() < rule.forMs);
  if (!counts) return "release";
  return rule.replace && holder.state === "pending" ? "replace" : "match";
}

/**
 * The run time (epoch ms) a replaced holder gets: the new job's own (runAt, or now + delay); with
 * debounce, now + delay but no later than maxWait after the holder was first enqueued.
 */
export function replacementRunAt(
  rule: UniqueRule,
  input: NewJob,
  holderCreatedAt: Date,
  nowMs: number,
): number {
  if (rule.debounce) {
    const { delayMs, maxWaitMs } = rule.debounce;
    const latest = nowMs + delayMs;
    return maxWaitMs === null ? latest : Math.min(latest, holderCreatedAt.getTime() + maxWaitMs);
  }
  return input.runAt ? new Date(input.runAt).getTime() : nowMs + (input.delayMs ?? 0);
}
