/**
 * Rows as SQLite returns them (snake_case, integer milliseconds, JSON text, 0/1 booleans)
 * and their conversion to the records of the Store contract.
 */
import type { AttemptRecord, JobRecord, JobState } from "../../job.js";
import { ClaimedRow } from "../claimed-row.js";
import type { ClaimedJob, MissedPolicy, ScheduleRecord, WorkerInfo } from "../types.js";

export interface JobRow {
  id: number;
  queue: string;
  name: string;
  state: JobState;
  priority: number;
  attempt: number;
  max_attempts: number;
  run_at: number;
  payload: string;
  key: string | null;
  attempts: string;
  result: string | null;
  progress: string | null;
  last_error: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  locked_by: string | null;
  locked_until: number | null;
  lease_token: number;
  cancel_requested: number;
  /** Set when the completing attempt's history entry is implicit (migrations.ts version 2). */
  completed_by: string | null;
  /** The enqueue's trace context (migrations.ts version 6). */
  trace_context: string | null;
}

export type ClaimRow = Pick<
  JobRow,
  | "id"
  | "queue"
  | "name"
  | "payload"
  | "priority"
  | "attempt"
  | "max_attempts"
  | "key"
  | "run_at"
  | "created_at"
  | "lease_token"
  | "locked_until"
  | "trace_context"
>;

export interface ScheduleRow {
  name: string;
  cron: string;
  timezone: string;
  job_name: string;
  queue: string;
  payload: string;
  priority: number;
  flow_key: string | null;
  missed: MissedPolicy;
  source: "code" | "cli";
  next_run_at: number;
  last_fired_at: number | null;
  last_slot: number | null;
  created_at: number;
  paused_at: number | null;
}

export interface WorkerRow {
  id: string;
  host: string;
  pid: number;
  queues: string;
  started_at: number;
  last_heartbeat_at: number;
  running: number;
  processed: number;
}

/** JSON text for a value column; `undefined` (and other non-JSON values) are stored as JSON null. */
export function toJson(value: unknown): string {
  return JSON.stringify(value ?? null) ?? "null";
}

export function fromJson(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

const date = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

/**
 * The attempt history: the JSON array, plus the completing attempt of a completed job when the
 * finish left it implicit — the entry common.ts attemptFromOutcome builds for it.
 */
function history(row: JobRow): AttemptRecord[] {
  const attempts = JSON.parse(row.attempts) as AttemptRecord[];
  if (row.completed_by === null || row.completed_by === undefined) return attempts;
  attempts.push({
    attempt: row.attempt,
    startedAt: new Date(row.started_at ?? 0).toISOString(),
    finishedAt: new Date(row.finished_at ?? 0).toISOString(),
    worker: row.completed_by,
    outcome: "completed",
  });
  return attempts;
}

export function jobFromRow(row: JobRow): JobRecord {
  return {
    id: String(row.id),
    queue: row.queue,
    name: row.name,
    state: row.state,
    priority: row.priority,
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    runAt: new Date(row.run_at),
    payload: JSON.parse(row.payload),
    key: row.key,
    attempts: history(row),
    result: fromJson(row.result),
    progress: fromJson(row.progress) as JobRecord["progress"],
    lastError: row.last_error,
    createdAt: new Date(row.created_at),
    startedAt: date(row.started_at),
    finishedAt: date(row.finished_at),
    lockedBy: row.locked_by,
    lockedUntil: date(row.locked_until),
    cancelRequested: row.cancel_requested !== 0,
  };
}

export function claimedFromRow(row: ClaimRow): ClaimedJob {
  // Its Dates are made on first read (claimed-row.ts).
  return new ClaimedRow(
    String(row.id),
    row.queue,
    row.name,
    JSON.parse(row.payload),
    row.priority,
    row.attempt,
    row.max_attempts,
    row.key,
    row.lease_token,
    row.trace_context ?? null,
    row.run_at,
    row.created_at,
    row.locked_until ?? 0,
  );
}

/** A job claimed by a flow-limited claim: claimedFromRow's job with its flow key (set on it: no copy). */
export function flowClaimedFromRow(row: ClaimRow & { flow_key?: string | null }): ClaimedJob {
  const job = claimedFromRow(row);
  job.flowKey = row.flow_key ?? null;
  return job;
}

export function scheduleFromRow(row: ScheduleRow): ScheduleRecord {
  return {
    name: row.name,
    cron: row.cron,
    timezone: row.timezone,
    jobName: row.job_name,
    queue: row.queue,
    payload: JSON.parse(row.payload),
    priority: row.priority,
    flowKey: row.flow_key ?? null,
    missed: row.missed,
    source: row.source,
    nextRunAt: new Date(row.next_run_at),
    lastFiredAt: date(row.last_fired_at),
    lastSlot: date(row.last_slot),
    createdAt: new Date(row.created_at),
    pausedAt: date(row.paused_at ?? null),
  };
}

export function workerFromRow(row: WorkerRow): WorkerInfo {
  return {
    id: row.id,
    host: row.host,
    pid: row.pid,
    queues: JSON.parse(row.queues) as Record<string, number>,
    startedAt: new Date(row.started_at),
    lastHeartbeatAt: new Date(row.last_heartbeat_at),
    running: row.running,
    processed: row.processed,
  };
}

/**
 * Job ids are decimal strings of positive integers. Anything else names no job (the memory
 * store compares strings, so "01" is not job 1 either).
 */
export function parseId(id: string): number | null {
  const text = String(id);
  return /^[1-9]\d{0,15}$/.test(text) ? Number(text) : null;
}
