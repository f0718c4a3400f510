/** What the store answers for operating queues from the dashboard (Store.actOnJobs, deadLetterGroups, recentTimings). */

/**
 * One bounded batch of a bulk action by filter (the dashboard's "retry every failed job matching
 * a search"): retry and discard take failed jobs, cancel takes pending ones (due or delayed).
 */
export interface BulkBatch {
  action: "retry" | "discard" | "cancel";
  queue?: string;
  /** As JobFilter.search: id, key, payload text or error message. */
  search?: string;
  limit: number;
}

/** Dead letters (failed jobs) sharing one error message, over the newest DEAD_LETTER_SAMPLE. */
export interface DeadLetterGroup {
  /** The error message, cut at DEAD_LETTER_MESSAGE_CHARS ("" for none). */
  error: string;
  count: number;
  firstSeen: Date;
  lastSeen: Date;
}

/** A finished job's timings (ms), the raw material of the dashboard's per-queue charts. */
export interface JobTiming {
  queue: string;
  /** started_at → finished_at of its last attempt. */
  runMs: number;
  /** run_at (due) → started_at of its last attempt. */
  waitMs: number;
}
