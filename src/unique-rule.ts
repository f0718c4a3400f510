/** The shape of a key's scope, shared by the enqueue options (unique.ts) and the stores (store/types.ts, store/unique.ts). */

/** Which states of an existing job with the same (queue, key) make it a duplicate. */
export type UniqueWhile = "pending" | "unfinished" | "retained";

/**
 * A key's scope, judged by each enqueue: a job holding the key counts as a duplicate when its
 * state is within `while` and it was created less than `forMs` ago. One that does not count
 * gives the key up for good (it keeps its `key` field, but no enqueue matches it again) and the
 * new job is inserted.
 */
export interface UniqueRule {
  while: UniqueWhile;
  /** Only a job created less than this many ms ago counts; null: any age. */
  forMs: number | null;
  /** A pending duplicate takes this job's payload, run time, priority and flow key. */
  replace: boolean;
  /**
   * Debounce (with `replace` and `while: "pending"`): a replaced job runs at
   * least(now + delayMs, its createdAt + maxWaitMs).
   */
  debounce: { delayMs: number; maxWaitMs: number | null } | null;
}
