/** The shape of a queue's flow limits, shared by the definitions (flow.ts) and the stores (store/types.ts). */

/**
 * The limits a claim of a flow-controlled queue obeys, for every worker together
 * (docs/semantics.md, Flow control). Absent fields do not limit.
 */
export interface FlowLimits {
  /** Jobs of the queue running at once. */
  globalConcurrency?: number;
  /** Jobs of one flow key running at once. */
  keyConcurrency?: number;
  /** Claims of the queue within any window of `perMs`. */
  rate?: { limit: number; perMs: number };
  /** Claims of one flow key within any window of `perMs`. */
  keyRate?: { limit: number; perMs: number };
}
