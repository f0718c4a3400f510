/** waitFor's statements (awaited.ts): the jobs a process waits for, and the batched lookup. */
import { JOB_COLUMNS, JOBS } from "./fragments.js";

/** Jobs $1 (ids) as they are now, in one probe of jobs_pkey per id; ids with no job are absent. */
export const SELECT_JOBS_BY_IDS = `SELECT ${JOB_COLUMNS} FROM ${JOBS} WHERE id = ANY($1::bigint[])`;

/**
 * Records that waiter $2 awaits jobs $1 — their move to a final state then sends a NOTIFY
 * (migrations.ts 8, jobs_notify_awaited) — and reads those of them no other transaction is
 * writing, each under a share lock held until this commits (LOCK_JOBS_BY_IDS says why).
 */
export const AWAIT_JOBS = `
WITH recorded AS (
  INSERT INTO {{schema}}.awaited (job_id, waiter)
  SELECT DISTINCT unnest($1::bigint[]), $2
  ON CONFLICT DO NOTHING
)
SELECT ${JOB_COLUMNS} FROM ${JOBS} WHERE id = ANY($1::bigint[]) FOR SHARE SKIP LOCKED`;

/**
 * Jobs $1 read under a share lock, skipping those another transaction is writing. A read under
 * the lock, once the awaited rows are committed, closes the gap between the read and the
 * notification: a write committed before it is in the answer, and a later one waits for the
 * lock, so its trigger runs after the awaited rows were committed and sees them. SKIP LOCKED:
 * it never waits (nor deadlocks) on a worker's batch; awaited.ts reads the skipped ones again.
 */
export const LOCK_JOBS_BY_IDS = `SELECT ${JOB_COLUMNS} FROM ${JOBS} WHERE id = ANY($1::bigint[]) FOR SHARE SKIP LOCKED`;

/**
 * Waiter $2 no longer awaits jobs $1 (a timeout, an abort, a job found finished or gone). A
 * job that finishes while awaited has its rows deleted by the trigger that notifies; a waiter
 * that crashed leaves rows that go when their jobs finish.
 */
export const UNAWAIT_JOBS = `DELETE FROM {{schema}}.awaited WHERE job_id = ANY($1::bigint[]) AND waiter = $2`;
