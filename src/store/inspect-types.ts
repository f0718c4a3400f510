/** What the Store answers when jobs and queues are looked at: job pages, queue stats, throughput. */
import type { JobRecord, JobState } from "../job.js";

export interface JobFilter {
  queue?: string;
  state?: JobState;
  name?: string;
  /** Matches the id, or a substring of the key, payload text or error message. */
  search?: string;
  limit?: number;
  /** Opaque cursor from a previous page. Pages go newest first (id descending). */
  cursor?: string;
}

export interface JobPage {
  jobs: JobRecord[];
  nextCursor: string | null;
}

export interface QueueStats {
  queue: string;
  waiting: number; // waiting for dependencies
  pending: number; // due now
  delayed: number; // pending with run_at in the future
  running: number;
  completed: number;
  failed: number;
  cancelled: number;
  completedLastHour: number;
  failedLastHour: number;
  completedLastDay: number;
  failedLastDay: number;
  /** Age in ms of the oldest due pending job, or null. */
  oldestPendingMs: number | null;
}

export interface ThroughputBucket {
  /** Bucket start. */
  at: Date;
  queue: string;
  completed: number;
  failed: number;
}
