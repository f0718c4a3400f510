/**
 * Flow control's statements (flow.ts). The claim is one call of the flow_claim function
 * (FLOW_CLAIM), which serialises the claims of one queue under an advisory lock, so concurrent
 * claimers on any number of connections never overshoot a limit. Queues without limits never
 * run these (CLAIM_JOBS is unchanged).
 */
import { epochMs, JOBS, ms, NOW, notifyQueues } from "./fragments.js";
import { FINISH_COMPLETED, FINISH_JOBS } from "./leases.js";

/**
 * A queue's flow state now, for errand.whyWaiting (no lock: a read): the clock ('n'), running
 * jobs by flow key ('r', through jobs_lease_idx), claims within the last $2 ms ('c', one row per claimed job)
 * and budgets paused beyond now ('p'). $1 queue.
 */
export const FLOW_STATUS = `
SELECT 'n' AS kind, '' AS key, ${epochMs(NOW)} AS v
UNION ALL
SELECT 'r', coalesce(flow_key, ''), count(*)::float8 FROM ${JOBS}
WHERE locked_until IS NOT NULL AND queue = $1 AND state = 'running' GROUP BY flow_key
UNION ALL
SELECT 'c', key, ${epochMs("at")} FROM {{schema}}.flow_claims, generate_series(1, n)
WHERE $2::float8 > 0 AND queue = $1 AND at > ${NOW} - ${ms("$2::float8")}
UNION ALL
SELECT 'p', key, ${epochMs("paused_until")} FROM {{schema}}.flow_pauses WHERE queue = $1 AND paused_until > ${NOW}`;

/**
 * Claims up to $3 jobs of queue $2 under its limits, in one round trip: the function of migration
 * 11 (sql/flow-claim-function.ts: the advisory lock $1 = 'errand.flow:<schema>:<queue>', the
 * state, the decision, the claim and its record). $4 worker, $5 lease ms, $6 globalConcurrency,
 * $7 per-key concurrency, $8/$9 the queue's rate (limit, ms), $10/$11 the per-key rate; NULL
 * where the queue has no such limit. Its "now" is NULL in production — the function reads the
 * clock after the lock — and a test clock's time under one (NOW is then not statement_timestamp()).
 * The second clock is spelled "statement_timestamp"(), the same function: a test clock replaces
 * the text of NOW wherever it occurs (db.ts withTestClock), and replaced on both sides the nullif
 * was NULL under a test clock too, so the function read the real clock — a conformance test that
 * moved a test clock past a rate window found the window still full on PostgreSQL alone.
 */
export const FLOW_CLAIM = `
SELECT * FROM {{schema}}.flow_claim($1, $2, $3, $4, $5::float8, $6, $7, $8, $9::float8, $10, $11::float8,
                                    nullif(${NOW}, "statement_timestamp"()))`;

/** Pauses budget ($1 queue, $2 key, '' = the whole queue) for $3 ms; never shortens a longer pause. */
export const FLOW_PAUSE = `
INSERT INTO {{schema}}.flow_pauses (queue, key, paused_until) VALUES ($1, $2, ${NOW} + ${ms("$3::float8")})
ON CONFLICT (queue, key) DO UPDATE
SET paused_until = greatest({{schema}}.flow_pauses.paused_until, EXCLUDED.paused_until)`;

/**
 * resumeFlow: deletes the pauses of queue $1 — every key's when $3 is false, else key $2's
 * ('' = the whole queue) — lapsed rows too, and counts those still in effect; NOTIFY (on commit)
 * wakes the queue's workers when any was.
 */
export const FLOW_RESUME = `
WITH lifted AS (
  DELETE FROM {{schema}}.flow_pauses WHERE queue = $1 AND (NOT $3::boolean OR key = $2::text)
  RETURNING queue, paused_until > ${NOW} AS in_effect
), live AS (SELECT queue FROM lifted WHERE in_effect)
SELECT (SELECT count(*) FROM live) AS n, ${notifyQueues("live")} AS notified`;

/** The flow keys of jobs just inserted ($1 ids, $2 keys), in the inserting transaction. */
export const FLOW_SET_KEYS = `
UPDATE ${JOBS} j SET flow_key = u.key
FROM unnest($1::bigint[], $2::text[]) AS u(id, key)
WHERE j.id = u.id`;

/**
 * One NOTIFY per distinct queue of `rows` that a worker waits on for a concurrency slot
 * (flow_waits, kept by the flow_claim function): a finish frees a slot, and the waiting workers
 * claim at once instead of at their next poll.
 */
const slotsFreed = (rows: string) =>
  `(SELECT count(pg_notify({{channel}}, q.queue)) FROM (SELECT DISTINCT queue FROM ${rows}) q
    WHERE EXISTS (SELECT 1 FROM {{schema}}.flow_waits w WHERE w.queue = q.queue))`;

/**
 * FINISH_COMPLETED and FINISH_JOBS, and the slots freed: what a store that has claimed a queue
 * with a concurrency limit finishes with (leases.ts). One flow_waits probe per distinct queue of
 * the batch; a store that never did keeps the plain statements.
 */
export const FINISH_COMPLETED_FREEING = `
WITH finished AS (${FINISH_COMPLETED})
SELECT f.id, f.token, f.queue, f.state, ${slotsFreed("finished")} AS freed FROM finished f`;

export const FINISH_JOBS_FREEING = FINISH_JOBS.replace(
  " AS notified FROM finished f",
  ` AS notified, ${slotsFreed("finished")} AS freed FROM finished f`,
);
