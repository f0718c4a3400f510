/**
 * The statement of `flow_claim` (sql/flow-claim-function.ts) that walks the keys, picks the
 * candidates, claims them and records the claim: one statement, so the jobs the walk read are
 * still pending when they are claimed (one snapshot). Two forms, chosen per claim by the
 * function: `claimStatement(false)`, migration 12's, and `claimStatement(true)` (migration 14)
 * when it expects each key to give more than one job.
 *
 * The key walk (migration 12). Each step is one probe of jobs_flow_idx: the next key's first job
 * in claim order (key, id, priority, run_at). When that job is due, the key has a due job and it
 * is the key's first candidate; a key's further candidates (a share above one job: few keys, or
 * keys without room counted for `held`) are fetched after it, and a key whose first job is not
 * due is probed as before. Before, a step was three probes (the next key, "has it a due job",
 * then its candidates in a LATERAL), and the walk a statement of its own feeding arrays to the
 * claim. auto_explain of a claim of 50 over 100 keys (30,000 pending jobs, never analyzed): the
 * walk 0.64-0.76 ms plus 50 candidate probes; now 0.49 ms for the walk and no candidate probe.
 *
 * Reading a key's share in the walk (migration 14, `many`). A per-key claim of 250 over 100 keys
 * takes 3 jobs from each key: migration 12's walk probed each key for its first job and the
 * candidates probed it again for the other two, two descents of jobs_flow_idx per key. Here each
 * step reads the next key's first f jobs in one descent, f = the function's guess at the share
 * (v_fetch), never more than a share can still be (p_limit / the keys found so far, plus one);
 * the candidates probe only what it read short of the share (OFFSET the due jobs read), unless
 * it read all the key's jobs. The guess decides only what is read where, not what is chosen:
 * test/flow/claim-walk.test.ts holds every decision to migration 11's, and passed with the guess
 * forced to 2, 5 and 1,000. The function uses this form when its guess is above one job, so a
 * claim of one job per key (50 over 100 keys) runs migration 12's statement unchanged: the
 * arrays cost it CPU for nothing (bench/flow-claim-ab.ts, backend CPU per claim 0.93-0.95 of
 * migration 12's with the same 1,421 buffers, before the two forms).
 *
 * auto_explain (log_analyze, log_buffers) of one per-key claim of 250 over 100 keys after 20
 * claims, each finished after the next (12,500 jobs, 7,250 pending; never analyzed and analyzed
 * alike), migration 12 → 13:
 *   walk:        Index Only Scan jobs_flow_idx, 101 loops of 1 row, 647 buffers, 347 heap fetches
 *             →  Index Only Scan jobs_flow_idx, 101 loops of 3 rows, 845 buffers, 545 heap fetches
 *   candidates:  Index Only Scan jobs_flow_idx, 100 loops of 3 rows (OFFSET 1), 550 buffers,
 *                300 heap fetches → none (unnest of the walk's arrays)
 *   statement:   5,248 → 4,898 buffers (the keyless check 746 of them, unchanged)
 * Claim of 50 over 10 keys (a share of 5): 11 + 10 probes, 1,071 buffers → 11 descents, 1,032.
 */
import { epochMs, JOBS } from "./fragments.js";

const pendingKeyed = `j.queue = p_queue AND j.state = 'pending' AND j.flow_key IS NOT NULL`;

/**
 * The first job of jobs_flow_idx whose key sorts after `after` (a text expression): the next key
 * and its first job in claim order, in one probe; no row when there is none or `when` is false.
 */
const firstAfter = (after: string, when: string) => `(
    SELECT j.flow_key COLLATE "C" AS key, j.id, j.priority, j.run_at FROM ${JOBS} j
    WHERE ${when} AND ${pendingKeyed} AND j.flow_key COLLATE "C" > ${after}
    ORDER BY j.flow_key COLLATE "C", j.priority DESC, j.run_at, j.id LIMIT 1)`;

/**
 * The next key of jobs_flow_idx after `after` (a text expression) and its first `fetch` jobs in
 * claim order, in one descent; none when nothing follows or `when` is false. One row: the key,
 * arrays of those jobs' id, priority and run_at (in claim order), `got` how many of them are due,
 * `whole` when the read went past the key's last job (it read the keys after it too, or ran out).
 * The arrays are filled in the scan's order (an aggregate over the ordered LIMIT, no sort per
 * aggregate: four ORDER BY aggregates per key took back the time the descents saved), and the
 * key's own entries are sliced out only when the read went past them.
 */
const nextAfter = (after: string, when: string, fetch: string) => `(
    SELECT e.keys[1] AS key,
           CASE WHEN e.len = e.read THEN e.ids ELSE e.ids[1:e.len] END AS ids,
           CASE WHEN e.len = e.read THEN e.pris ELSE e.pris[1:e.len] END AS pris,
           CASE WHEN e.len = e.read THEN e.runs ELSE e.runs[1:e.len] END AS runs,
           CASE WHEN e.len = e.read THEN e.due
             ELSE (SELECT count(*) FROM unnest(e.runs[1:e.len]) r WHERE r <= v_now)::int END AS got,
           e.read < ${fetch} OR e.len < e.read AS whole
    FROM (
      SELECT a.*, CASE WHEN a.keys[1] = a.keys[a.read] THEN a.read
                       ELSE cardinality(array_positions(a.keys, a.keys[1])) END AS len FROM (
        SELECT array_agg(f.key) AS keys, array_agg(f.id) AS ids, array_agg(f.priority) AS pris,
               array_agg(f.run_at) AS runs, count(*)::int AS read, count(*) FILTER (WHERE f.run_at <= v_now)::int AS due
        FROM (SELECT j.flow_key COLLATE "C" AS key, j.id, j.priority, j.run_at FROM ${JOBS} j
              WHERE ${when} AND ${pendingKeyed} AND j.flow_key COLLATE "C" > ${after}
              ORDER BY j.flow_key COLLATE "C", j.priority DESC, j.run_at, j.id LIMIT ${fetch}) f
      ) a
    ) e WHERE e.read > 0)`;

/** A key's room (its pause, concurrency and rate window; at most the claim's limit). */
const keyRoom = (
  k: string,
) => `CASE WHEN (v_pauses -> ${k}) IS NOT NULL THEN 0 ELSE greatest(0, least(p_limit,
  p_key_limit - coalesce((v_running ->> ${k})::int, 0), p_key_rate - coalesce((v_key_claims ->> ${k})::int, 0))) END`;

/** Does the key have a due job now? */
const hasDue = (k: string) => `EXISTS (SELECT 1 FROM ${JOBS} d WHERE d.queue = p_queue AND d.state = 'pending'
  AND d.flow_key COLLATE "C" = ${k} AND d.run_at <= v_now)`;

/** When the window of `limit` claims per `perMs` frees a claim (ms from now), from the claims of `where`. */
export const windowFrees = (where: string, limit: string, perMs: string) => `(
  SELECT greatest(1, ${epochMs("w.at")} + ${perMs} - ${epochMs("v_now")} + 1) FROM (
    SELECT c.at, sum(c.n) OVER (ORDER BY c.at DESC) AS newer FROM {{schema}}.flow_claims c
    WHERE c.queue = p_queue AND ${where} AND c.at > v_now - ${perMs} * interval '1 millisecond'
  ) w WHERE w.newer >= ${limit} ORDER BY w.at DESC LIMIT 1)`;

/** Migration 12's walk: one job per key per step. */
const ONE_WALK = `  WITH RECURSIVE walk AS (
    -- The keys in rotation order (seg 0: after the cursor; seg 1: from the start), until room
    -- keys can give a job or keysToVisit's bound. Row 0 is where the rotation starts (no key);
    -- each step is one probe of jobs_flow_idx, the next key's first job in claim order.
    SELECT coalesce(v_cursor, '') COLLATE "C" AS key, CASE WHEN v_cursor IS NULL THEN 1 ELSE 0 END AS seg,
           0 AS n, NULL::bigint AS id, NULL::int AS priority, NULL::timestamptz AS run_at, 0 AS room,
           false AS due, 0 AS usable
    UNION ALL
    SELECT nx.key, nx.seg, w.n + 1, nx.id, nx.priority, nx.run_at, z.room, z.due,
           w.usable + (z.room > 0 AND z.due)::int
    FROM walk w
    LEFT JOIN LATERAL ${firstAfter("w.key", "true")} x ON true
    -- Past the last key, seg 0 goes on from the start (probed only then).
    LEFT JOIN LATERAL ${firstAfter("''", "w.seg = 0 AND x.key IS NULL")} y ON true
    CROSS JOIN LATERAL (
      SELECT x.key, w.seg, x.id, x.priority, x.run_at
      WHERE x.key IS NOT NULL AND (w.seg = 0 OR v_cursor IS NULL OR x.key <= v_cursor)
      UNION ALL
      SELECT y.key, 1, y.id, y.priority, y.run_at WHERE y.key <= v_cursor
    ) nx
    -- A key has a due job when its first one is (else a probe looks further).
    CROSS JOIN LATERAL (SELECT ${keyRoom("nx.key")} AS room,
      CASE WHEN nx.run_at <= v_now THEN true ELSE ${hasDue("nx.key")} END AS due OFFSET 0) z
    WHERE w.n = 0 OR (w.n < v_visit AND w.usable < v_room)
  ),
  visited AS (
    SELECT w.key, w.seg, w.room, w.id, w.priority, w.run_at, w.run_at <= v_now AS first_due
    FROM walk w WHERE w.n > 0 AND w.due
  ),
`;

/** Migration 13's walk: up to v_fetch jobs per key per step. */
const MANY_WALK = `  WITH RECURSIVE walk AS (
    -- The keys in rotation order (seg 0: after the cursor; seg 1: from the start), until room
    -- keys can give a job or keysToVisit's bound. Row 0 is where the rotation starts (no key);
    -- each step is one descent of jobs_flow_idx that reads the next key's first f jobs in
    -- claim order (nextAfter), f = the guess v_fetch, at most the share the keys found so far
    -- leave (ids, pris, runs: the jobs read, in claim order; got: how many are due, the key's
    -- first candidates; whole: the read went past the key's last job).
    SELECT coalesce(v_cursor, '') COLLATE "C" AS key, CASE WHEN v_cursor IS NULL THEN 1 ELSE 0 END AS seg,
           0 AS n, NULL::bigint[] AS ids, NULL::int[] AS pris, NULL::timestamptz[] AS runs, 0 AS got, true AS whole,
           0 AS room, false AS due, 0 AS usable
    UNION ALL
    SELECT nx.key, nx.seg, w.n + 1, nx.ids, nx.pris, nx.runs, nx.got, nx.whole, z.room, z.due,
           w.usable + (z.room > 0 AND z.due)::int
    FROM walk w
    CROSS JOIN LATERAL (SELECT least(v_fetch, ceil(p_limit::float8 / (w.usable + 1))::int) AS f OFFSET 0) g
    LEFT JOIN LATERAL ${nextAfter("w.key", "true", "g.f")} x ON true
    -- Past the last key, seg 0 goes on from the start (read only then).
    LEFT JOIN LATERAL ${nextAfter("''", "w.seg = 0 AND x.key IS NULL", "g.f")} y ON true
    CROSS JOIN LATERAL (
      SELECT x.key, w.seg, x.ids, x.pris, x.runs, x.got, x.whole
      WHERE x.key IS NOT NULL AND (w.seg = 0 OR v_cursor IS NULL OR x.key <= v_cursor)
      UNION ALL
      SELECT y.key, 1, y.ids, y.pris, y.runs, y.got, y.whole WHERE y.key <= v_cursor
    ) nx
    -- A key has a due job when one was read (else, unless all were read, a probe looks further).
    CROSS JOIN LATERAL (SELECT ${keyRoom("nx.key")} AS room,
      CASE WHEN nx.got > 0 THEN true WHEN nx.whole THEN false ELSE ${hasDue("nx.key")} END AS due OFFSET 0) z
    WHERE w.n = 0 OR (w.n < v_visit AND w.usable < v_room)
  ),
  visited AS (
    SELECT w.key, w.seg, w.room, w.ids, w.pris, w.runs, w.got, w.whole
    FROM walk w WHERE w.n > 0 AND w.due
  ),
`;

/** Migration 12's candidates: the first job the walk read when due, a probe for the rest. */
const ONE_CAND = `  cand AS (
    -- Each visited key's due jobs: a share of the claim for those with room, enough to count
    -- what a limit holds back for the others. The walk found the first (when due); a probe
    -- fetches the rest of a share above one.
    SELECT c.id, k.key, k.seg, k.room,
           row_number() OVER (PARTITION BY k.key ORDER BY c.priority DESC, c.run_at, c.id) AS round
    FROM (
      SELECT v.*, v.first_due::int AS got, ceil(p_limit::float8 / greatest(1, CASE WHEN v.room > 0
        THEN (SELECT n.usable FROM counts n) + (SELECT u.found FROM unkeyed u)::int
        ELSE (SELECT n.due FROM counts n) END))::int AS share
      FROM visited v
    ) k,
    LATERAL (
      SELECT k.id, k.priority, k.run_at WHERE k.first_due
      UNION ALL
      (SELECT j.id, j.priority, j.run_at FROM ${JOBS} j
       WHERE j.queue = p_queue AND j.state = 'pending' AND j.flow_key COLLATE "C" = k.key AND j.run_at <= v_now
       ORDER BY j.priority DESC, j.run_at, j.id OFFSET k.got LIMIT k.share - k.got)
    ) c
`;

/** Migration 13's candidates: the due jobs the walk read, a probe for what they fall short. */
const MANY_CAND = `  cand AS (
    -- Each visited key's due jobs: a share of the claim for those with room, enough to count
    -- what a limit holds back for the others. The walk read the first (up to its guess); a
    -- probe fetches the rest of a share above what it read, unless it read all the key's jobs.
    SELECT c.id, k.key, k.seg, k.room,
           row_number() OVER (PARTITION BY k.key ORDER BY c.priority DESC, c.run_at, c.id) AS round
    FROM (
      SELECT v.*, ceil(p_limit::float8 / greatest(1, CASE WHEN v.room > 0
        THEN (SELECT n.usable FROM counts n) + (SELECT u.found FROM unkeyed u)::int
        ELSE (SELECT n.due FROM counts n) END))::int AS share
      FROM visited v
    ) k,
    LATERAL (
      -- The first share due jobs read. unnest in the select list (ProjectSet) keeps the arrays'
      -- (claim) order, as unnest in FROM does, without a tuplestore per array per key.
      (SELECT r.id, r.priority, r.run_at FROM (SELECT unnest(k.ids) AS id, unnest(k.pris) AS priority,
         unnest(k.runs) AS run_at) r
       WHERE r.run_at <= v_now LIMIT k.share)
      UNION ALL
      (SELECT j.id, j.priority, j.run_at FROM ${JOBS} j
       WHERE NOT k.whole AND k.got < k.share
         AND j.queue = p_queue AND j.state = 'pending' AND j.flow_key COLLATE "C" = k.key AND j.run_at <= v_now
       ORDER BY j.priority DESC, j.run_at, j.id OFFSET k.got LIMIT greatest(0, k.share - k.got))
    ) c
`;

/** The walk, candidates, claim and records; `many`: each step reads a key's first v_fetch jobs. */
export const claimStatement = (many: boolean) => `
${many ? MANY_WALK : ONE_WALK}  counts AS (
    SELECT count(*) FILTER (WHERE v.room > 0) AS usable, count(*) AS due FROM visited v
  ),
  -- Does the keyless group have a due job, among the same candidates as below (a bounded walk
  -- of jobs_claim_idx: an unbounded one read every pending job of a keyed backlog per claim).
  unkeyed AS (
    SELECT EXISTS (SELECT 1 FROM (SELECT j.flow_key FROM ${JOBS} j
        WHERE j.queue = p_queue AND j.state = 'pending' AND j.run_at <= v_now
        ORDER BY j.priority DESC, j.run_at, j.id LIMIT v_unkeyed_window) h WHERE h.flow_key IS NULL)
      OR EXISTS (SELECT 1 FROM ${JOBS} j WHERE j.queue = p_queue AND j.state = 'pending'
        AND j.flow_key COLLATE "C" = '' AND j.run_at <= v_now) AS found
  ),
${many ? MANY_CAND : ONE_CAND}    UNION ALL
    -- The keyless group: jobs without a key among the queue's first due jobs, and jobs keyed ''.
    SELECT u.id, '', 1, p_limit, row_number() OVER (ORDER BY u.priority DESC, u.run_at, u.id)
    FROM (
      SELECT h.id, h.priority, h.run_at FROM (
        SELECT j.id, j.flow_key, j.priority, j.run_at FROM ${JOBS} j
        WHERE j.queue = p_queue AND j.state = 'pending' AND j.run_at <= v_now
        ORDER BY j.priority DESC, j.run_at, j.id LIMIT v_unkeyed_window
      ) h WHERE h.flow_key IS NULL
      UNION ALL
      (SELECT j.id, j.priority, j.run_at FROM ${JOBS} j
       WHERE j.queue = p_queue AND j.state = 'pending' AND j.flow_key COLLATE "C" = '' AND j.run_at <= v_now
       ORDER BY j.priority DESC, j.run_at, j.id LIMIT p_limit)
      ORDER BY 2 DESC, 3, 1 LIMIT p_limit
    ) u
    WHERE (SELECT u.found FROM unkeyed u)
  ),
  picks AS (
    SELECT c.id, c.key, row_number() OVER (ORDER BY c.round, c.seg, c.key COLLATE "C") AS ord FROM (
      SELECT * FROM cand WHERE cand.round <= cand.room ORDER BY cand.round, cand.seg, cand.key COLLATE "C" LIMIT v_room
    ) c
  ),
  claimed AS (
    UPDATE ${JOBS} j
    SET state = 'running', attempt = j.attempt + 1, lease_token = j.lease_token + 1, locked_by = p_worker,
        locked_until = v_now + p_lease_ms * interval '1 millisecond', started_at = v_now, progress = NULL
    FROM picks p
    WHERE j.id = p.id AND j.state = (SELECT 'pending'::text)
    RETURNING j.id, j.queue, j.name, j.payload, j.priority, j.attempt, j.max_attempts, j.key, j.run_at,
              j.created_at, j.lease_token, j.locked_until, j.flow_key, j.trace_context, p.key AS pick_key, p.ord
  ),
  logged AS (
    INSERT INTO {{schema}}.flow_claims (queue, key, at, n)
    SELECT p_queue, c.pick_key, v_now, count(*) FROM claimed c
    WHERE v_window > 0 GROUP BY c.pick_key
  ),
  forgotten AS (
    DELETE FROM {{schema}}.flow_claims c
    WHERE v_window > 0 AND c.queue = p_queue AND c.at <= v_now - v_keep * interval '1 millisecond'
  ),
  moved AS (
    INSERT INTO {{schema}}.flow_cursors (queue, cursor)
    SELECT p_queue, c.pick_key FROM claimed c ORDER BY c.ord DESC LIMIT 1
    ON CONFLICT (queue) DO UPDATE SET cursor = EXCLUDED.cursor
  ),
  held AS (
    SELECT greatest(0, least((SELECT count(*) FROM cand), p_limit) - (SELECT count(*) FROM claimed))::int AS n
  ),
  waiting AS (
    INSERT INTO {{schema}}.flow_waits (queue)
    SELECT p_queue FROM held h WHERE h.n > 0 AND (p_global IS NOT NULL OR p_key_limit IS NOT NULL)
    ON CONFLICT DO NOTHING
  ),
  not_waiting AS (
    DELETE FROM {{schema}}.flow_waits w WHERE w.queue = p_queue AND (SELECT h.n FROM held h) = 0
  )
  SELECT r.id, r.queue, r.name, r.payload, r.priority, r.attempt, r.max_attempts, r.key, r.run_at, r.created_at,
         r.lease_token, r.locked_until, r.flow_key, r.trace_context, r.held, r.retry_ms
  FROM (
    SELECT c.ord, c.id, c.queue, c.name, c.payload, c.priority, c.attempt, c.max_attempts, c.key,
           ${epochMs("c.run_at")} AS run_at, ${epochMs("c.created_at")} AS created_at, c.lease_token,
           ${epochMs("c.locked_until")} AS locked_until, c.flow_key, c.trace_context, NULL::int AS held,
           NULL::float8 AS retry_ms
    FROM claimed c
    UNION ALL
    SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           h.n, CASE WHEN h.n > 0 THEN least(v_retry, (
             -- Why keys with due jobs wait: their pause, their rate window.
             SELECT min(least(
               (v_pauses ->> k.key)::float8 - ${epochMs("v_now")},
               CASE WHEN p_key_rate IS NOT NULL AND coalesce((v_key_claims ->> k.key)::int, 0) >= p_key_rate
                    THEN ${windowFrees("c.key = k.key", "p_key_rate", "p_key_rate_ms")} END))
             FROM visited k)) END
    FROM held h
  ) r ORDER BY r.ord NULLS LAST`;
