/**
 * Flow control's statements (flow.ts), run in one transaction per claim after FLOW_LOCK: claims
 * of one flow-controlled queue are serialised by a transaction-scoped advisory lock, so the state
 * FLOW_READ reads cannot change before FLOW_CLAIM writes the claim, and
 * concurrent claimers on any number of connections never overshoot a limit. Queues without
 * limits never run these (CLAIM_JOBS is unchanged).
 */
import { epochMs, JOBS, ms, NOW, opaque } from "./fragments.js";

/**
 * A queue's flow state now, for errand.whyWaiting (no lock: a read): the clock ('n'), running
 * jobs by flow key ('r', through jobs_lease_idx as FLOW_READ), claims within the last $2 ms ('c')
 * and budgets paused beyond now ('p'). $1 queue.
 */
export const FLOW_STATUS = `
SELECT 'n' AS kind, '' AS key, ${epochMs(NOW)} AS v
UNION ALL
SELECT 'r', coalesce(flow_key, ''), count(*)::float8 FROM ${JOBS}
WHERE locked_until IS NOT NULL AND queue = $1 AND state = 'running' GROUP BY flow_key
UNION ALL
SELECT 'c', key, ${epochMs("at")} FROM {{schema}}.flow_claims
WHERE $2::float8 > 0 AND queue = $1 AND at > ${NOW} - ${ms("$2::float8")}
UNION ALL
SELECT 'p', key, ${epochMs("paused_until")} FROM {{schema}}.flow_pauses WHERE queue = $1 AND paused_until > ${NOW}`;

/** Serialises flow claims of one queue; $1: 'errand.flow:<schema>:<queue>'. Released at COMMIT/ROLLBACK. */
export const FLOW_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))";

/** Jobs of a queue without a flow key are looked for among its first this many due jobs. */
export const UNKEYED_WINDOW = 100;

const pendingKeyed = `queue = $1 AND state = 'pending' AND flow_key IS NOT NULL`;

/**
 * Everything the plan decides from, in one statement, as (kind, key, v, id, priority) rows:
 * - 'n': the clock (epoch ms, v);
 * - 'r': running jobs by flow key ('' for none; v the count) — through jobs_lease_idx
 *   (locked_until IS NOT NULL holds the running jobs only, a few hundred at most);
 * - 'c': claim times within the rate window ($2 ms; none when 0); 'p': paused budgets; 'k': the
 *   rotation cursor (key);
 * - 'd': the candidates (id, priority, v = run_at): a share of the $3 jobs wanted (ceil($3 / keys
 *   visited); a claim takes one job per key per turn) from each flow key, the keys
 *   taken in rotation order — after the cursor first, then from the start — and the jobs without
 *   a flow key among the queue's first UNKEYED_WINDOW due jobs. Keys compare in "C" order (code
 *   points, as the plan sorts them) through jobs_flow_idx, which holds the pending jobs that have
 *   a key: each key is one probe of it (a loose index scan), so a tenant's backlog of 100,000
 *   jobs costs a claim what 10 do. It visits $3 + 32 keys plus one per running job, logged claim
 *   and pause (flow-plan.ts keysToVisit: room for every key those could block). $1 queue.
 */
export const FLOW_READ = `
WITH RECURSIVE
running AS (
  SELECT coalesce(flow_key, '') AS key, count(*)::float8 AS n FROM ${JOBS}
  WHERE locked_until IS NOT NULL AND queue = $1 AND state = 'running' GROUP BY flow_key
),
claims AS (
  SELECT key, ${epochMs("at")} AS at FROM {{schema}}.flow_claims
  WHERE $2::float8 > 0 AND queue = $1 AND at > ${NOW} - ${ms("$2::float8")}
),
pauses AS (
  SELECT key, ${epochMs("paused_until")} AS until FROM {{schema}}.flow_pauses WHERE queue = $1 AND paused_until > ${NOW}
),
cursor AS (SELECT cursor FROM {{schema}}.flow_cursors WHERE queue = $1),
visit AS (
  SELECT $3::int + 32 + (SELECT coalesce(sum(n), 0) FROM running)::int + (SELECT count(*) FROM claims)::int
         + (SELECT count(*) FROM pauses)::int AS n
),
after_keys AS (
  (SELECT flow_key COLLATE "C" AS key, 1 AS n FROM ${JOBS}
   WHERE ${pendingKeyed} AND flow_key COLLATE "C" > (SELECT cursor FROM cursor) ORDER BY flow_key COLLATE "C" LIMIT 1)
  UNION ALL
  SELECT nk.key, a.n + 1 FROM after_keys a, LATERAL (
    SELECT flow_key COLLATE "C" AS key FROM ${JOBS}
    WHERE ${pendingKeyed} AND flow_key COLLATE "C" > a.key ORDER BY flow_key COLLATE "C" LIMIT 1
  ) nk WHERE a.n < (SELECT n FROM visit)
),
wrap_keys AS (
  (SELECT flow_key COLLATE "C" AS key, 1 AS n FROM ${JOBS}
   WHERE ${pendingKeyed} AND (NOT EXISTS (SELECT 1 FROM cursor) OR flow_key COLLATE "C" <= (SELECT cursor FROM cursor))
   ORDER BY flow_key COLLATE "C" LIMIT 1)
  UNION ALL
  SELECT nk.key, w.n + 1 FROM wrap_keys w, LATERAL (
    SELECT flow_key COLLATE "C" AS key FROM ${JOBS}
    WHERE ${pendingKeyed} AND flow_key COLLATE "C" > w.key
      AND (NOT EXISTS (SELECT 1 FROM cursor) OR flow_key COLLATE "C" <= (SELECT cursor FROM cursor))
    ORDER BY flow_key COLLATE "C" LIMIT 1
  ) nk WHERE w.n < (SELECT n FROM visit)
),
keys AS (SELECT key FROM after_keys UNION SELECT key FROM wrap_keys),
key_share AS (SELECT ceil($3::float8 / greatest(1, (SELECT count(*) FROM keys)))::int AS share)
SELECT 'n' AS kind, '' AS key, ${epochMs(NOW)} AS v, NULL::bigint AS id, NULL::int AS priority
UNION ALL SELECT 'r', key, n, NULL, NULL FROM running
UNION ALL SELECT 'c', key, at, NULL, NULL FROM claims
UNION ALL SELECT 'p', key, until, NULL, NULL FROM pauses
UNION ALL SELECT 'k', cursor, NULL, NULL, NULL FROM cursor
UNION ALL
SELECT 'd', k.key, ${epochMs("j.run_at")}, j.id, j.priority
FROM keys k, LATERAL (
  SELECT id, priority, run_at FROM ${JOBS}
  WHERE queue = $1 AND state = 'pending' AND flow_key COLLATE "C" = k.key AND run_at <= ${NOW}
  ORDER BY priority DESC, run_at, id LIMIT (SELECT share FROM key_share)
) j
UNION ALL
SELECT 'd', '', ${epochMs("u.run_at")}, u.id, u.priority
FROM (
  SELECT id, flow_key, priority, run_at FROM ${JOBS}
  WHERE queue = $1 AND state = 'pending' AND run_at <= ${NOW}
  ORDER BY priority DESC, run_at, id LIMIT ${UNKEYED_WINDOW}
) u
WHERE u.flow_key IS NULL`;

/**
 * Claims the jobs the plan chose ($1 ids, with $5 their flow keys) for worker $2 with a lease of
 * $3 ms, as CLAIM_JOBS sets them; then, for queue $4: logs each claimed job's key when the queue
 * has a rate window ($7 ms > 0) and forgets claims older than it, and moves the rotation cursor
 * to $6 (when not null). One statement: the claim and its record commit together.
 */
export const FLOW_CLAIM = `
WITH claimed AS (
  UPDATE ${JOBS} j
  SET state = 'running', attempt = j.attempt + 1, lease_token = j.lease_token + 1, locked_by = $2,
      locked_until = ${NOW} + ${ms("$3::float8")}, started_at = ${NOW}, progress = NULL
  WHERE j.id = ANY($1::bigint[]) AND j.state = ${opaque("'pending'::text")}
    -- A paused queue gives nothing, as in CLAIM_JOBS (an InitPlan: one probe per claim).
    AND NOT EXISTS (SELECT 1 FROM {{schema}}.paused_queues p WHERE p.queue = $4)
  RETURNING j.id, j.queue, j.name, j.payload, j.priority, j.attempt, j.max_attempts, j.key, j.run_at, j.created_at,
            j.lease_token, j.locked_until, j.flow_key, j.trace_context
), logged AS (
  INSERT INTO {{schema}}.flow_claims (queue, key, at)
  SELECT $4, p.key, ${NOW} FROM unnest($1::bigint[], $5::text[]) AS p(id, key)
  WHERE $7::float8 > 0 AND p.id IN (SELECT id FROM claimed)
), forgotten AS (
  DELETE FROM {{schema}}.flow_claims WHERE $7::float8 > 0 AND queue = $4 AND at <= ${NOW} - ${ms("$7::float8")}
), moved AS (
  INSERT INTO {{schema}}.flow_cursors (queue, cursor) SELECT $4, $6::text WHERE $6::text IS NOT NULL
  ON CONFLICT (queue) DO UPDATE SET cursor = EXCLUDED.cursor
)
SELECT id, queue, name, payload, priority, attempt, max_attempts, key, ${epochMs("run_at")} AS run_at,
       ${epochMs("created_at")} AS created_at, lease_token, ${epochMs("locked_until")} AS locked_until, flow_key,
       trace_context
FROM claimed`;

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
