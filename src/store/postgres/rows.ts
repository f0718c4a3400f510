/**
 * Rows of the PostgreSQL store as the Store contract's records. Defensive about scalar types: a
 * pool passed in may carry custom type parsers (int8 as number, timestamps as strings), so ids
 * are forced to strings and times to Dates. jsonb values are taken as pg parsed them (a JSON
 * string payload arrives as a JavaScript string, so it cannot be re-parsed safely).
 */
import type { AttemptRecord, JobRecord, JobState } from "../../job.js";
import { ClaimedRow } from "../claimed-row.js";
import type { ClaimedJob, ScheduleRecord, WorkerInfo } from "../types.js";

export type Row = Record<string, unknown>;

export function toDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(value as string | number);
}

export function toDateOrNull(value: unknown): Date | null {
  return value === null || value === undefined ? null : toDate(value);
}

export function toJob(r: Row): JobRecord {
  return {
    id: String(r.id),
    queue: r.queue as string,
    name: r.name as string,
    state: r.state as JobState,
    priority: Number(r.priority),
    attempt: Number(r.attempt),
    maxAttempts: Number(r.max_attempts),
    runAt: toDate(r.run_at),
    payload: r.payload,
    key: (r.key as string | null) ?? null,
    attempts: (r.attempts as AttemptRecord[] | null) ?? [],
    result: r.result ?? null,
    progress: (r.progress as JobRecord["progress"]) ?? null,
    lastError: (r.last_error as string | null) ?? null,
    createdAt: toDate(r.created_at),
    startedAt: toDateOrNull(r.started_at),
    finishedAt: toDateOrNull(r.finished_at),
    lockedBy: (r.locked_by as string | null) ?? null,
    lockedUntil: toDateOrNull(r.locked_until),
    cancelRequested: Boolean(r.cancel_requested),
  };
}

export function toClaimed(r: Row): ClaimedJob {
  return new ClaimedRow(
    String(r.id),
    r.queue as string,
    r.name as string,
    r.payload,
    Number(r.priority),
    Number(r.attempt),
    Number(r.max_attempts),
    (r.key as string | null) ?? null,
    Number(r.lease_token),
    (r.trace_context as string | null) ?? null,
    r.run_at,
    r.created_at,
    r.locked_until,
  );
}

export function toSchedule(r: Row): ScheduleRecord {
  return {
    name: r.name as string,
    cron: r.cron as string,
    timezone: r.timezone as string,
    jobName: r.job_name as string,
    queue: r.queue as string,
    payload: r.payload,
    priority: Number(r.priority),
    flowKey: (r.flow_key as string | null) ?? null,
    missed: r.missed as ScheduleRecord["missed"],
    source: r.source as ScheduleRecord["source"],
    nextRunAt: toDate(r.next_run_at),
    lastFiredAt: toDateOrNull(r.last_fired_at),
    lastSlot: toDateOrNull(r.last_slot),
    createdAt: toDate(r.created_at),
    pausedAt: toDateOrNull(r.paused_at),
  };
}

export function toWorker(r: Row): WorkerInfo {
  return {
    id: r.id as string,
    host: r.host as string,
    pid: Number(r.pid),
    queues: r.queues as Record<string, number>,
    startedAt: toDate(r.started_at),
    lastHeartbeatAt: toDate(r.last_heartbeat_at),
    running: Number(r.running),
    processed: Number(r.processed),
  };
}

/**
 * Job ids are positive bigints; anything else names no job. The range is checked on the digits
 * (19 digits without a leading zero compare as numbers do): BigInt(id) allocated a BigInt per
 * outcome of every finish batch.
 */
export function isJobId(id: unknown): id is string {
  return (
    typeof id === "string" && /^[1-9]\d{0,18}$/.test(id) && (id.length < 19 || id <= "9223372036854775807")
  );
}

/** Orders job ids numerically (they are strings of up to 19 digits). */
export function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
