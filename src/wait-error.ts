/** Why `errand.waitFor` rejected: one error class, its `reason` says which way the wait ended. */
import { ErrandError } from "./errand-error.js";
import type { JobRecord } from "./job.js";

export type WaitForReason =
  /** The job failed for good: it is in the dead-letter queue (`job.lastError` says why). */
  | "failed"
  /** The job was cancelled. */
  | "cancelled"
  /** The wait's `timeout` passed first; the job is untouched and may still complete. */
  | "timeout"
  /** The wait's `signal` aborted first (`cause` is the signal's reason); the job is untouched. */
  | "aborted"
  /** There is no such job (never was, or deleted: discarded, pruned). */
  | "not-found"
  /** The errand instance was closed while waiting; the job is untouched. */
  | "closed";

const CODES: Record<WaitForReason, string> = {
  failed: "ERR_JOB_FAILED",
  cancelled: "ERR_JOB_CANCELLED",
  timeout: "ERR_WAIT_TIMEOUT",
  aborted: "ERR_WAIT_ABORTED",
  "not-found": "ERR_JOB_NOT_FOUND",
  closed: "ERR_WAIT_CLOSED",
};

export class WaitForError extends ErrandError {
  readonly reason: WaitForReason;
  readonly jobId: string;
  /** The job as last read: set for "failed" and "cancelled" (its history, its last error). */
  readonly job: JobRecord | null;
  constructor(
    reason: WaitForReason,
    jobId: string,
    message: string,
    job: JobRecord | null = null,
    cause?: unknown,
  ) {
    super(CODES[reason], message, cause === undefined ? undefined : { cause });
    this.name = "WaitForError";
    this.reason = reason;
    this.jobId = jobId;
    this.job = job;
  }
}
