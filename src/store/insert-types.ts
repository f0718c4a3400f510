/**
 * What Store.insertJobs takes and answers: a validated job to insert (with what it waits for)
 * and the inserted or existing record; and a job's place in the dependency graph (getJobLinks).
 */
import type { DependencyLink, JobRecord } from "../job.js";
import type { UniqueRule } from "../unique-rule.js";

/** A job to insert, already validated. */
export interface NewJob {
  queue: string;
  name: string;
  payload: unknown;
  /**
   * The payload's JSON text, when the caller has already serialised and checked it (errand's
   * enqueue does: payload.ts `checkPayload`): then `payload` must be `JSON.parse(payloadJson)`,
   * a value the caller hands over. A store writes this text as is instead of serialising
   * `payload` again, and may put `payload` itself (not a copy) in the inserted job's record.
   * Without it, the store serialises `payload` and returns a copy.
   */
  payloadJson?: string;
  priority: number;
  maxAttempts: number;
  /** Absolute due time; if absent, `delayMs` after the store's now (0 = now). */
  runAt?: Date;
  delayMs?: number;
  key?: string | null;
  /**
   * The job's flow key (flow control: per-key concurrency and rate limits, fairness), from its
   * definition's key function at enqueue; null or absent when it has none.
   */
  flowKey?: string | null;
  /**
   * The trace context active at enqueue (tracing/traceparent.ts: the W3C `traceparent`, and
   * `tracestate` when there is one, as JSON text), stored as is and handed back by the claims;
   * null or absent when the enqueue was not traced.
   */
  traceContext?: string | null;
  /**
   * Which job already holding `key` counts as a duplicate of this one (store/unique.ts); null or
   * absent: any job that holds it (the key's default meaning, `retained` + keep).
   */
  unique?: UniqueRule | null;
  /** What this job waits for (dependsOn, a flow's edges); absent for a job that waits for nothing. */
  dependencies?: NewJobDependencies;
  /** Its name in the flow it was enqueued with (ctx.dependencies().byName), or absent. */
  node?: string | null;
}

/** What happens to a waiting job when a dependency fails for good or is cancelled. */
export type DependencyFailurePolicy = "fail" | "cancel" | "run";

export interface NewJobDependencies {
  /** Stored jobs this one depends on, by id (each must exist: else a ValidationError, nothing stored). */
  ids: string[];
  /** Earlier jobs of the same insertJobs call this one depends on, by position (a flow's edges). */
  rows: number[];
  onFailure: DependencyFailurePolicy;
}

/** A job's place in the dependency graph: what it waits for (with results) and what waits for it. */
export interface JobLinks {
  dependencies: DependencyLink[];
  dependents: DependencyLink[];
}

export interface InsertResult {
  job: JobRecord;
  /** false when an existing job with the same (queue, key) was returned instead. */
  created: boolean;
  /** true when that existing job was pending and took this one's payload and run time (UniqueRule.replace). */
  replaced?: boolean;
}
