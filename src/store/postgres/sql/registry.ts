/** Cron schedules (schedules.ts) and the workers registry (workers.ts). */
import { ms, NOW } from "./fragments.js";

// ── schedules ─────────────────────────────────────────────────────────────────────────────

const SCHEDULE_COLUMNS = `name, cron, timezone, job_name, queue, payload, priority, flow_key, missed, source, next_run_at,
  last_fired_at, last_slot, created_at, paused_at`;

/**
 * Upserts schedules from a JSON array ($1). An existing schedule whose cron and time zone are
 * unchanged keeps its next_run_at, so a restart neither skips nor repeats a slot; last fired
 * time, last slot and creation time are always kept.
 */
export const UPSERT_SCHEDULES = `
INSERT INTO {{schema}}.schedules AS s
  (name, cron, timezone, job_name, queue, payload, priority, flow_key, missed, source, next_run_at, created_at)
SELECT x.name, x.cron, x.timezone, x.job_name, x.queue, coalesce(x.payload, 'null'::jsonb), x.priority, x.flow_key,
       x.missed, x.source, x.next_run_at, ${NOW}
FROM jsonb_to_recordset($1::jsonb) AS x(name text, cron text, timezone text, job_name text, queue text,
                                        payload jsonb, priority integer, flow_key text, missed text,
                                        source text, next_run_at timestamptz)
ON CONFLICT (name) DO UPDATE SET
  cron = excluded.cron, timezone = excluded.timezone, job_name = excluded.job_name, queue = excluded.queue,
  payload = excluded.payload, priority = excluded.priority, flow_key = excluded.flow_key, missed = excluded.missed,
  source = excluded.source,
  next_run_at = CASE WHEN s.cron = excluded.cron AND s.timezone = excluded.timezone
                     THEN s.next_run_at ELSE excluded.next_run_at END`;

/** syncSchedules: code schedules no longer defined ($1: the names defined). */
export const DELETE_STALE_CODE_SCHEDULES = `
DELETE FROM {{schema}}.schedules WHERE source = 'code' AND NOT (name = ANY($1::text[]))`;

export const REMOVE_SCHEDULE = "DELETE FROM {{schema}}.schedules WHERE name = $1";

export const LIST_SCHEDULES = `SELECT ${SCHEDULE_COLUMNS} FROM {{schema}}.schedules`;

export const DUE_SCHEDULES = `SELECT ${SCHEDULE_COLUMNS} FROM {{schema}}.schedules WHERE next_run_at <= ${NOW} AND paused_at IS NULL`;

/**
 * Compare-and-set: only the scheduler that read next_run_at = $2 moves it to $3 (ms precision, as
 * JavaScript holds it). $4 the slot fired, or null when none was.
 */
export const ADVANCE_SCHEDULE = `
UPDATE {{schema}}.schedules
SET next_run_at = $3,
    last_slot = coalesce($4::timestamptz, last_slot),
    last_fired_at = CASE WHEN $4::timestamptz IS NULL THEN last_fired_at ELSE ${NOW} END
WHERE name = $1 AND date_trunc('milliseconds', next_run_at) = $2::timestamptz`;

// ── workers registry ──────────────────────────────────────────────────────────────────────

export const REGISTER_WORKER = `
INSERT INTO {{schema}}.workers (id, host, pid, queues, started_at, last_heartbeat_at, running, processed)
VALUES ($1, $2, $3, $4::jsonb, ${NOW}, ${NOW}, $5, $6)
ON CONFLICT (id) DO UPDATE SET
  host = excluded.host, pid = excluded.pid, queues = excluded.queues, started_at = excluded.started_at,
  last_heartbeat_at = excluded.last_heartbeat_at, running = excluded.running, processed = excluded.processed`;

export const HEARTBEAT_WORKER = `
UPDATE {{schema}}.workers SET running = $2, processed = $3, last_heartbeat_at = ${NOW} WHERE id = $1`;

export const UNREGISTER_WORKER = "DELETE FROM {{schema}}.workers WHERE id = $1";

export const LIST_WORKERS = `
SELECT id, host, pid, queues, started_at, last_heartbeat_at, running, processed
FROM {{schema}}.workers
WHERE last_heartbeat_at >= ${NOW} - ${ms("$1::float8")}
ORDER BY started_at, id`;
