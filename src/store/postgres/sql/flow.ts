/**
 * Flow control's statements (flow.ts), run in one transaction per claim after FLOW_LOCK: claims
 * of one flow-controlled queue are serialised by a transaction-scoped advisory lock, so the state
 * FLOW_STATE reads cannot change before FLOW_CLAIM and FLOW_RECORD write the claim, and
 * concurrent claimers on any number of connections never overshoot a limit. Queues without
 * limits never run these (CLAIM_JOBS is unchanged).
 */
import { epochMs, JOBS, ms, NOW, opaque } from "./fragments.js";

/** Serialises flow claims of one queue; $1: 'errand.flow:<schema>:<queue>'. Released at COMMIT/ROLLBACK. */
export const FLOW_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))";

/**
 * What the plan decides from, as (kind, key, v) rows: 'n' the clock (epoch ms); 'r' running jobs
 * by flow key ('' for none) — through jobs_lease_idx (locked_until IS NOT NULL holds the running
 * jobs only, a few hundred at most), not a scan of the queue; 'c' claim times within the rate
 * window ($2 ms; none when 0); 'p' paused budgets; 'k' the rotation cursor. $1 queue.
 */
export const FLOW_STATE = `
SELECT 'n' AS kind, '' AS key, ${epochMs(NOW)} AS v
UNION ALL
SELECT 'r', coalesce(flow_key, ''), count(*)::float8 FROM ${JOBS}
WHERE locked_until IS NOT NULL AND queue = $1 AND state = 'running' GROUP BY flow_key
UNION ALL
SELECT 'c', key, ${epochMs("at")} FROM {{schema}}.flow_claims
WHERE $2::float8 > 0 AND queue = $1 AND at > ${NOW} - ${ms("$2::float8")}
UNION ALL
SELECT 'p', key, ${epochMs("paused_until")} FROM {{schema}}.flow_pauses WHERE queue = $1 AND paused_until > ${NOW}
UNION ALL
SELECT 'k', cursor, NULL FROM {{schema}}.flow_cursors WHERE queue = $1`;

/** Jobs of a queue without a flow key are looked for among its first this many due jobs. */
export const UNKEYED_WINDOW = 500;

const pendingKeyed = `queue = $1 AND state = 'pending' AND flow_key IS NOT NULL`;

/**
 * The claim's candidates: up to $2 due jobs of each of up to $4 flow keys, the keys taken in
 * rotation order — those after the cursor $3 first, then from the start ($5: there is no cursor)
 * — and the jobs without a flow key among the queue's first UNKEYED_WINDOW due jobs. Keys compare
 * in "C" order (code points, as the plan sorts them) through jobs_flow_idx, which holds the
 * pending jobs that have a key: each key is one probe of it (a loose index scan), so a tenant's
 * backlog of 100,000 jobs costs a claim what 10 do. Rows: key ('' = none), id, priority, run_at.
 */
export const FLOW_DUE = `
WITH RECURSIVE after_keys AS (
  (SELECT flow_key COLLATE "C" AS key, 1 AS n FROM ${JOBS}
   WHERE ${pendingKeyed} AND flow_key COLLATE "C" > $3::text ORDER BY flow_key COLLATE "C" LIMIT 1)
  UNION ALL
  SELECT nk.key, a.n + 1 FROM after_keys a, LATERAL (
    SELECT flow_key COLLATE "C" AS key FROM ${JOBS}
    WHERE ${pendingKeyed} AND flow_key COLLATE "C" > a.key ORDER BY flow_key COLLATE "C" LIMIT 1
  ) nk WHERE a.n < $4
), wrap_keys AS (
  (SELECT flow_key COLLATE "C" AS key, 1 AS n FROM ${JOBS}
   WHERE ${pendingKeyed} AND ($5::boolean OR flow_key COLLATE "C" <= $3::text) ORDER BY flow_key COLLATE "C" LIMIT 1)
  UNION ALL
  SELECT nk.key, w.n + 1 FROM wrap_keys w, LATERAL (
    SELECT flow_key COLLATE "C" AS key FROM ${JOBS}
    WHERE ${pendingKeyed} AND flow_key COLLATE "C" > w.key AND ($5::boolean OR flow_key COLLATE "C" <= $3::text)
    ORDER BY flow_key COLLATE "C" LIMIT 1
  ) nk WHERE w.n < $4
), keys AS (
  SELECT key FROM after_keys UNION SELECT key FROM wrap_keys
)
SELECT k.key, j.id, j.priority, ${epochMs("j.run_at")} AS run_at
FROM keys k, LATERAL (
  SELECT id, priority, run_at FROM ${JOBS}
  WHERE queue = $1 AND state = 'pending' AND flow_key COLLATE "C" = k.key AND run_at <= ${NOW}
  ORDER BY priority DESC, run_at, id LIMIT $2
) j
UNION ALL
SELECT '', u.id, u.priority, ${epochMs("u.run_at")}
FROM (
  SELECT id, flow_key, priority, run_at FROM ${JOBS}
  WHERE queue = $1 AND state = 'pending' AND run_at <= ${NOW}
  ORDER BY priority DESC, run_at, id LIMIT ${UNKEYED_WINDOW}
) u
WHERE u.flow_key IS NULL`;

/** Claims the jobs the plan chose ($1 ids) for worker $2 with a lease of $3 ms, as CLAIM_JOBS does. */
export const FLOW_CLAIM = `
UPDATE ${JOBS} j
SET state = 'running', attempt = j.attempt + 1, lease_token = j.lease_token + 1, locked_by = $2,
    locked_until = ${NOW} + ${ms("$3::float8")}, started_at = ${NOW}, progress = NULL
WHERE j.id = ANY($1::bigint[]) AND j.state = ${opaque("'pending'::text")}
RETURNING j.id, j.queue, j.name, j.payload, j.priority, j.attempt, j.max_attempts, j.key,
          ${epochMs("j.run_at")} AS run_at, ${epochMs("j.created_at")} AS created_at, j.lease_token,
          ${epochMs("j.locked_until")} AS locked_until, j.flow_key`;

/**
 * After a claim of queue $1: logs one claim per key of $2 (rate-limited queues), forgets claims
 * older than the window ($4 ms), and moves the rotation cursor to $3 (when not null).
 */
export const FLOW_RECORD = `
WITH logged AS (
  INSERT INTO {{schema}}.flow_claims (queue, key, at) SELECT $1, k, ${NOW} FROM unnest($2::text[]) AS k
), forgotten AS (
  DELETE FROM {{schema}}.flow_claims WHERE $4::float8 > 0 AND queue = $1 AND at <= ${NOW} - ${ms("$4::float8")}
), moved AS (
  INSERT INTO {{schema}}.flow_cursors (queue, cursor) SELECT $1, $3::text WHERE $3::text IS NOT NULL
  ON CONFLICT (queue) DO UPDATE SET cursor = EXCLUDED.cursor
)
SELECT 1 AS done`;

/** Pauses budget ($1 queue, $2 key, '' = the whole queue) for $3 ms; never shortens a longer pause. */
export const FLOW_PAUSE = `
INSERT INTO {{schema}}.flow_pauses (queue, key, paused_until) VALUES ($1, $2, ${NOW} + ${ms("$3::float8")})
ON CONFLICT (queue, key) DO UPDATE
SET paused_until = greatest({{schema}}.flow_pauses.paused_until, EXCLUDED.paused_until)`;

/** The flow keys of jobs just inserted ($1 ids, $2 keys), in the inserting transaction. */
export const FLOW_SET_KEYS = `
UPDATE ${JOBS} j SET flow_key = u.key
FROM unnest($1::bigint[], $2::text[]) AS u(id, key)
WHERE j.id = u.id`;
