/**
 * What the claim-and-finish cycle of the Store passes around: claimed jobs and their leases,
 * flow-limited claims and flow status, the outcome an attempt ends with, and the jobs a lease
 * rescue moved on.
 */
import type { ErrorKind } from "../errors.js";
import type { FlowLimits } from "../flow-limits.js";
import type { JobLogLine, RunningJob } from "../job.js";

/** A claimed job: what the executor needs, plus the lease token that fences every later write. */
/** A job as claimed: what its handler sees (RunningJob), and the lease that holds it. */
export interface ClaimedJob extends RunningJob {
  leaseToken: number;
  lockedUntil: Date;
  /** The job's flow key, when claimed by claimFlowJobs (null: none). */
  flowKey?: string | null;
  /** The trace context stored at enqueue (NewJob.traceContext); null when none. */
  traceContext: string | null;
}

/** What claimFlowJobs took, and what it left behind for a limit. */
/** A claim of a flow-controlled queue: claimJobs's request, with the queue's limits. */
export interface FlowClaimRequest {
  queue: string;
  limit: number;
  workerId: string;
  leaseMs: number;
  flow: FlowLimits;
}

export interface FlowClaim {
  jobs: ClaimedJob[];
  /** Due jobs a limit held back (the claim could have taken them otherwise). */
  held: number;
  /** When a rate window or a pause that held jobs back frees up, in ms from now; null if none. */
  retryInMs: number | null;
}

/**
 * What flow control sees of a queue now (errand.whyWaiting): running jobs, the claims within the
 * last `windowMs` (epoch ms, oldest first) and the budgets paused beyond now, each by flow key
 * ("" for jobs without one; a pause under "" holds the whole queue).
 */
export interface FlowStatus {
  now: Date;
  running: Map<string, number>;
  claims: Map<string, number[]>;
  pausedUntil: Map<string, number>;
}

export interface Lease {
  id: string;
  leaseToken: number;
}

export interface LeaseStatus {
  id: string;
  /** false: the lease was lost (expired and rescued, or the job was taken over). */
  held: boolean;
  cancelRequested: boolean;
}

/** How an attempt ended, as the worker reports it. Every one is fenced by the lease token. */
export type OutcomeKind =
  | "completed" // → completed
  | "retry" // → pending at now + delayMs, attempt charged
  | "failed" // → failed (dead-letter queue)
  | "snoozed" // → pending at now + delayMs, attempt not charged
  | "released" // → pending now, attempt not charged (interrupted by shutdown)
  | "cancelled"; // → cancelled

export interface Outcome {
  id: string;
  leaseToken: number;
  kind: OutcomeKind;
  result?: unknown;
  delayMs?: number;
  error?: { message: string; stack?: string; kind: ErrorKind };
  worker: string;
  /** The handler's ctx.log lines, kept in this attempt's history entry; absent when none. */
  logs?: JobLogLine[];
}

export interface RescuedJob {
  id: string;
  queue: string;
  name: string;
  state: "pending" | "failed" | "cancelled";
  attempt: number;
}
