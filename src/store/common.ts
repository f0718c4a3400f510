/**
 * Pieces of the Store contract that are the same for every backend and hold no SQL:
 * how an outcome moves a job, what history entry it leaves, cursors.
 */
import { ValidationError } from "../errors.js";
import type { AttemptOutcome, AttemptRecord, JobRecord, JobState } from "../job.js";
import type { NewJob, Outcome, QueueStats } from "./types.js";

export interface Transition {
  state: JobState;
  outcome: AttemptOutcome;
  /** The attempt does not count against maxAttempts (snooze, shutdown release). */
  uncharge: boolean;
  /** New run_at for a job that goes back to pending. */
  runAt?: Date;
}

/**
 * Where an outcome takes a job. A cancel requested while the job ran turns any
 * non-completed outcome into "cancelled": the handler saw its signal abort.
 * A handler that completed anyway stays completed — its work happened.
 */
export function outcomeTransition(outcome: Outcome, cancelRequested: boolean, nowMs: number): Transition {
  if (cancelRequested && outcome.kind !== "completed") {
    return { state: "cancelled", outcome: "cancelled", uncharge: false };
  }
  switch (outcome.kind) {
    case "completed":
      return { state: "completed", outcome: "completed", uncharge: false };
    case "failed":
      return { state: "failed", outcome: "failed", uncharge: false };
    case "cancelled":
      return { state: "cancelled", outcome: "cancelled", uncharge: false };
    case "retry":
      return {
        state: "pending",
        outcome: "retried",
        uncharge: false,
        runAt: new Date(nowMs + (outcome.delayMs ?? 0)),
      };
    case "snoozed":
      return {
        state: "pending",
        outcome: "snoozed",
        uncharge: true,
        runAt: new Date(nowMs + (outcome.delayMs ?? 0)),
      };
    case "released":
      return { state: "pending", outcome: "interrupted", uncharge: true, runAt: new Date(nowMs) };
  }
}

/** The history entry an outcome leaves. */
export function attemptFromOutcome(
  outcome: Outcome,
  t: Transition,
  attempt: number,
  startedAt: Date,
  finishedAt: Date,
): AttemptRecord {
  const record: AttemptRecord = {
    attempt,
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    worker: outcome.worker,
    outcome: t.outcome,
  };
  if (outcome.error) {
    record.error = outcome.error.message;
    if (outcome.error.stack) record.stack = outcome.error.stack;
    record.kind = outcome.error.kind;
  }
  if (t.runAt && t.state === "pending") record.retryAt = t.runAt.toISOString();
  if (outcome.logs && outcome.logs.length > 0) record.logs = outcome.logs;
  return record;
}

/** Cursors are the id (a positive integer) of the last job of the previous page. */
export function encodeCursor(seq: number | string): string {
  return String(seq);
}

export function decodeCursor(cursor: string | undefined | null): number | null {
  if (cursor === undefined || cursor === null || cursor === "") return null;
  if (!/^\d{1,18}$/.test(cursor))
    throw new ValidationError(`invalid cursor ${JSON.stringify(cursor)}: expected a job id`);
  return Number(cursor);
}

/** Search semantics for listJobs: id equals, key contains, or payload JSON contains. */
export function matchesSearch(
  job: Pick<JobRecord, "id" | "key" | "payload" | "lastError">,
  search: string,
): boolean {
  if (job.id === search) return true;
  if (job.key?.includes(search)) return true;
  if (job.lastError?.includes(search)) return true;
  return JSON.stringify(job.payload ?? null).includes(search);
}

/** A queue's stats before anything is counted. */
export function emptyStats(queue: string): QueueStats {
  return {
    queue,
    waiting: 0,
    pending: 0,
    delayed: 0,
    running: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    completedLastHour: 0,
    failedLastHour: 0,
    completedLastDay: 0,
    failedLastDay: 0,
    oldestPendingMs: null,
  };
}

/** The record of a job just inserted: what every store returns from insertJobs for a new job. */
export function newJobRecord(
  id: string,
  input: NewJob,
  payload: unknown,
  runAt: Date,
  createdAt: Date,
  key: string | null = input.key ?? null,
): JobRecord {
  return {
    id,
    queue: input.queue,
    name: input.name,
    state: "pending",
    priority: input.priority,
    attempt: 0,
    maxAttempts: input.maxAttempts,
    runAt,
    payload,
    key,
    attempts: [],
    result: null,
    progress: null,
    lastError: null,
    createdAt,
    startedAt: null,
    finishedAt: null,
    lockedBy: null,
    lockedUntil: null,
    cancelRequested: false,
  };
}

/** deadLetterGroups looks at this many of the newest failed jobs: a bounded read of any DLQ. */
export const DEAD_LETTER_SAMPLE = 10_000;
/** Error messages are grouped (and shown) by their first this many characters. */
export const DEAD_LETTER_MESSAGE_CHARS = 200;

/** The job state each bulk action takes. */
export function bulkState(action: "retry" | "discard" | "cancel"): "failed" | "pending" {
  return action === "cancel" ? "pending" : "failed";
}
