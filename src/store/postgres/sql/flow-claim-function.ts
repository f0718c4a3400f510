/**
 * `flow_claim`, the claim of a flow-controlled queue in one round trip, installed by migration 10
 * (with the tables it uses) and replaced whole by migrations 11, 12 and 13 (migrations-6-to-12.ts).
 *
 * A function's text, unlike a table's, is replaced whole by CREATE OR REPLACE: every migration
 * that changes it installs FLOW_CLAIM_DEFINITION, the newest text, and so does migration 10 on a
 * database that never had it. Every database ends with the same function, whichever version it
 * started from; a change to the text below therefore needs a new migration that installs it
 * again (or databases past migration 13 keep the old one). It may use only what migration 10
 * has created.
 *
 * Why a function. The claim must read the queue's state (running jobs, the claim log, paused
 * budgets) after taking the queue's advisory lock, or two claimers could both see a free slot.
 * One SQL statement cannot do that: under READ COMMITTED its snapshot is taken when it starts,
 * before the lock it waits for, so a claim committed meanwhile would be invisible to it. A
 * PL/pgSQL function takes a new snapshot for each statement it runs, so everything after its
 * PERFORM pg_advisory_xact_lock sees every earlier claim, and called as one statement in
 * autocommit it holds the lock until its own commit. The claim was 5 round trips (BEGIN, lock,
 * read, claim, COMMIT), 3 of them under the lock; now it is one, its plans cached per
 * connection. bench/flow-control.ts has the before and after (bench/NOTES.md).
 *
 * Plans (migration 11). Every read here is by index, and the function runs with
 * `enable_seqscan = off` so that no statement leaves them: on a never-analyzed table the planner
 * takes `locked_until IS NOT NULL` for nearly every row and counted the running jobs with a
 * sequential scan of the whole table (5.8 ms per claim over 60,000 jobs, EXPLAIN ANALYZE through
 * auto_explain), and the claiming UPDATE ANDed jobs_claim_idx's 60,000 pending entries into its
 * bitmap (1.9 ms) unless its state test is opaque, as in CLAIM_JOBS. The claimed rows carry their
 * pick's key and order out of the UPDATE (`FROM picks`): joining the two CTEs afterwards was a
 * nested loop over both (estimated at one row each), quadratic in the claim's size. Together:
 * `node --import tsx bench/flow-control.ts 20000` (never-analyzed tables) went from 0.11 to
 * 0.55 of the unlimited queue's throughput with a global limit (bench/NOTES.md finding 16).
 *
 * No bitmap scans (migration 12, `enable_bitmapscan = off`). The running jobs are read through
 * jobs_lease_idx, whose entries of finished jobs stay in it, dead, until a vacuum. A bitmap scan
 * never marks them dead (only a plain index scan does, the first time it finds one dead to
 * everyone), so the count visited every job finished since the last vacuum: auto_explain after
 * 300 claims of 50 (each finished before the next but one), Bitmap Heap Scan of 17,500 index
 * entries and 683 heap pages, 700 buffers, 0.79 ms per claim and growing; the Index Scan it is
 * now, 7-9 buffers, 0.1 ms. A global limit counts them too (bench/flow-claim-ab.ts global: 1,378
 * shared buffers per claim before, 763 after; a plain claim 688).
 *
 * It decides as store/flow-plan.ts planFlowClaim does (memory and SQLite run that code; the
 * conformance suite holds all three to the same answers):
 * - room: the claim's limit, 0 while the queue's budget is paused (flow_pauses key ''), cut by
 *   globalConcurrency minus the running jobs and by the queue-wide rate minus its window's claims;
 * - each flow key's room: 0 while paused, cut by its concurrency and its own rate window;
 * - round-robin: one job per key per round, keys in rotation order (after the cursor first, then
 *   from the start; the keyless group '' sorts before every key), within a key priority, run_at, id.
 *   Picking the first `room` candidates ordered by (round, rotation position) is that loop.
 * - The key walk (a loose index scan of jobs_flow_idx) stops once it has found `room` keys that
 *   can give a job, or after as many keys as keysToVisit allows: the claim of 50 jobs over 100
 *   keys visits ~50, not all of them.
 *
 * The key walk (migration 12). Each step is one probe of jobs_flow_idx: the next key's first job
 * in claim order (key, id, priority, run_at). When that job is due, the key has a due job and it
 * is the key's first candidate; a key's further candidates (a share above one job: few keys, or
 * keys without room counted for `held`) are fetched after it, and a key whose first job is not
 * due is probed as before. The walk, the candidates and the claim are one statement, so the
 * first job the walk saw is still the key's first when it is claimed (one snapshot). Before, a
 * step was three probes (the next key, "has it a due job", then its candidates in a LATERAL),
 * and the walk a statement of its own feeding arrays to the claim. auto_explain of a claim of 50
 * over 100 keys (30,000 pending jobs, never analyzed): the walk 0.64-0.76 ms plus 50 candidate
 * probes; now 0.49 ms for the walk and no candidate probe. bench/flow-claim-ab.ts times the two
 * texts side by side (bench/NOTES.md finding 16).
 *
 * A claim a concurrency cap held back marks its queue in flow_waits (one that is not held back
 * clears it), so finishes there notify the workers waiting for a slot.
 *
 * Returns the claimed jobs in pick order, then one row with `id` NULL: `held` (due jobs a limit
 * left behind) and `retry_ms` (when a rate window or pause that held them frees, else NULL).
 * `p_now` NULL reads the clock after the lock (a test clock passes its time).
 */
import { epochMs, JOBS } from "./fragments.js";

const pendingKeyed = `j.queue = p_queue AND j.state = 'pending' AND j.flow_key IS NOT NULL`;

/**
 * The next key of jobs_flow_idx after `after` (a text expression) and its first `fetch` jobs in
 * claim order, in one descent; none when nothing follows or `when` is false. One row: the key,
 * the first job read (id, priority, run_at), arrays of the key's other jobs read (rids, rpris,
 * rruns, in claim order; NULL when none), `got` how many of the key's jobs read are due, and
 * `whole` when the read went past the key's last job (into the keys after it, or the index's end).
 *
 * A fetch of one is a plain probe (LIMIT 1), as before migration 13: the aggregate costs CPU a
 * claim of one job per key would pay for nothing. Above one, the arrays are filled in the scan's
 * order (an aggregate over the ordered LIMIT, no sort per aggregate: with ORDER BY in each
 * array_agg, ~700 sorts per claim of 250 took back the time the descents saved), and the key's
 * entries are sliced out only when the read went past them.
 */
const nextAfter = (after: string, when: string, fetch: string) => `(
    SELECT j.flow_key COLLATE "C" AS key, j.id, j.priority, j.run_at, NULL::bigint[] AS rids, NULL::int[] AS rpris,
           NULL::timestamptz[] AS rruns, (j.run_at <= v_now)::int AS got, false AS whole FROM ${JOBS} j
    WHERE ${fetch} = 1 AND ${when} AND ${pendingKeyed} AND j.flow_key COLLATE "C" > ${after}
    ORDER BY j.flow_key COLLATE "C", j.priority DESC, j.run_at, j.id LIMIT 1)
    UNION ALL (
    SELECT e.keys[1], e.ids[1], e.pris[1], e.runs[1],
           CASE WHEN e.len > 1 THEN e.ids[2:e.len] END, CASE WHEN e.len > 1 THEN e.pris[2:e.len] END,
           CASE WHEN e.len > 1 THEN e.runs[2:e.len] END,
           CASE WHEN e.len = e.read THEN e.due
             ELSE (SELECT count(*) FROM unnest(e.runs[1:e.len]) r WHERE r <= v_now)::int END,
           e.read < ${fetch} OR e.len < e.read
    FROM (
      SELECT a.*, CASE WHEN a.keys[1] = a.keys[a.read] THEN a.read
                       ELSE cardinality(array_positions(a.keys, a.keys[1])) END AS len FROM (
        SELECT array_agg(f.key) AS keys, array_agg(f.id) AS ids, array_agg(f.priority) AS pris,
               array_agg(f.run_at) AS runs, count(*)::int AS read, count(*) FILTER (WHERE f.run_at <= v_now)::int AS due
        FROM (SELECT j.flow_key COLLATE "C" AS key, j.id, j.priority, j.run_at FROM ${JOBS} j
              WHERE ${when} AND ${pendingKeyed} AND j.flow_key COLLATE "C" > ${after}
              ORDER BY j.flow_key COLLATE "C", j.priority DESC, j.run_at, j.id LIMIT ${fetch}) f
      ) a
    ) e WHERE ${fetch} > 1 AND e.read > 0)`;

/** A key's room (its pause, concurrency and rate window; at most the claim's limit). */
const keyRoom = (
  k: string,
) => `CASE WHEN (v_pauses -> ${k}) IS NOT NULL THEN 0 ELSE greatest(0, least(p_limit,
  p_key_limit - coalesce((v_running ->> ${k})::int, 0), p_key_rate - coalesce((v_key_claims ->> ${k})::int, 0))) END`;

/** Does the key have a due job now? */
const hasDue = (k: string) => `EXISTS (SELECT 1 FROM ${JOBS} d WHERE d.queue = p_queue AND d.state = 'pending'
  AND d.flow_key COLLATE "C" = ${k} AND d.run_at <= v_now)`;

/** When the window of `limit` claims per `perMs` frees a claim (ms from now), from the claims of `where`. */
const windowFrees = (where: string, limit: string, perMs: string) => `(
  SELECT greatest(1, ${epochMs("w.at")} + ${perMs} - ${epochMs("v_now")} + 1) FROM (
    SELECT c.at, sum(c.n) OVER (ORDER BY c.at DESC) AS newer FROM {{schema}}.flow_claims c
    WHERE c.queue = p_queue AND ${where} AND c.at > v_now - ${perMs} * interval '1 millisecond'
  ) w WHERE w.newer >= ${limit} ORDER BY w.at DESC LIMIT 1)`;

/** Migration 10's tables: the claim log's count per key, and the queues waiting for a freed slot. */
export const FLOW_CLAIM_TABLES = `
ALTER TABLE {{schema}}.flow_claims ADD COLUMN IF NOT EXISTS n integer NOT NULL DEFAULT 1;
-- Queues whose last claim a concurrency cap held back: a finish there notifies the queue's
-- channel (sql/flow.ts FINISH_*_FREEING), so waiting workers claim the freed slot at once.
CREATE TABLE IF NOT EXISTS {{schema}}.flow_waits (queue text PRIMARY KEY);
`;

/** The function's newest text (see the top of this file). */
export const FLOW_CLAIM_DEFINITION = `
CREATE OR REPLACE FUNCTION {{schema}}.flow_claim(
  p_lock text, p_queue text, p_limit int, p_worker text, p_lease_ms float8,
  p_global int, p_key_limit int, p_rate int, p_rate_ms float8, p_key_rate int, p_key_rate_ms float8,
  p_now timestamptz)
RETURNS TABLE (id bigint, queue text, name text, payload jsonb, priority int, attempt int, max_attempts int,
  key text, run_at float8, created_at float8, lease_token int, locked_until float8, flow_key text,
  trace_context text, held int, retry_ms float8)
LANGUAGE plpgsql SET enable_seqscan = off SET enable_bitmapscan = off AS $flow_claim$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
  v_window float8 := greatest(coalesce(p_rate_ms, 0), coalesce(p_key_rate_ms, 0));
  v_running jsonb;
  v_running_total int;
  v_key_claims jsonb := '{}';
  v_pauses jsonb;
  v_cursor text;
  v_room int := p_limit;
  v_visit int;
  -- How far down the queue's claim order the keyless group is looked for: the whole claim when
  -- the queue has no per-key limit (its jobs are mostly keyless), else the first 100 due jobs
  -- (each costs a heap fetch, and a keyed backlog has none to find).
  v_unkeyed_window int := CASE WHEN p_key_limit IS NULL AND p_key_rate IS NULL THEN greatest(p_limit, 100) ELSE 100 END;
  v_retry float8;
  -- How many jobs the key walk reads per key (see the walk): a guess at the key's share.
  v_fetch int := 1;
  v_running_keys int := 0;
  v_claimed_keys int := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_lock, 0));
  v_now := coalesce(p_now, clock_timestamp());
  -- A paused queue gives nothing, as CLAIM_JOBS.
  IF EXISTS (SELECT 1 FROM {{schema}}.paused_queues pq WHERE pq.queue = p_queue) THEN
    RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::int, NULL::int, NULL::int,
      NULL::text, NULL::float8, NULL::float8, NULL::int, NULL::float8, NULL::text, NULL::text, 0,
      NULL::float8;
    RETURN;
  END IF;

  -- The state, read once: running jobs by key (jobs_lease_idx holds the running jobs only),
  -- paused budgets, the cursor, and the claim log of the rate windows.
  -- Running jobs matter to concurrency limits only (by key only to a per-key one).
  IF p_key_limit IS NOT NULL THEN
    SELECT coalesce(jsonb_object_agg(r.key, r.n), '{}'), coalesce(sum(r.n), 0), count(*) FILTER (WHERE r.key <> '')
    INTO v_running, v_running_total, v_running_keys
    FROM (SELECT coalesce(j.flow_key, '') AS key, count(*)::int AS n FROM ${JOBS} j
          WHERE j.locked_until IS NOT NULL AND j.queue = p_queue AND j.state = 'running' GROUP BY 1) r;
  ELSE
    v_running := '{}';
    v_running_total := CASE WHEN p_global IS NULL THEN 0 ELSE (SELECT count(*) FROM ${JOBS} j
      WHERE j.locked_until IS NOT NULL AND j.queue = p_queue AND j.state = 'running') END;
  END IF;
  SELECT coalesce(jsonb_object_agg(p.key, ${epochMs("p.paused_until")}), '{}') INTO v_pauses
  FROM {{schema}}.flow_pauses p WHERE p.queue = p_queue AND p.paused_until > v_now;
  SELECT c.cursor INTO v_cursor FROM {{schema}}.flow_cursors c WHERE c.queue = p_queue;
  IF p_key_rate IS NOT NULL THEN
    SELECT coalesce(jsonb_object_agg(c.key, c.n), '{}'), count(*) FILTER (WHERE c.key <> '')
    INTO v_key_claims, v_claimed_keys FROM (
      SELECT c.key, sum(c.n)::int AS n FROM {{schema}}.flow_claims c
      WHERE c.queue = p_queue AND c.at > v_now - p_key_rate_ms * interval '1 millisecond' GROUP BY c.key) c;
  END IF;

  -- The queue as a whole.
  IF (v_pauses -> '') IS NOT NULL THEN
    v_room := 0;
    v_retry := (v_pauses ->> '')::float8 - ${epochMs("v_now")};
  END IF;
  v_room := least(v_room, p_global - v_running_total);
  IF p_rate IS NOT NULL THEN
    v_room := least(v_room, p_rate - (SELECT coalesce(sum(c.n), 0) FROM {{schema}}.flow_claims c
      WHERE c.queue = p_queue AND c.at > v_now - p_rate_ms * interval '1 millisecond'));
    IF v_room <= 0 THEN
      v_retry := least(v_retry, ${windowFrees("true", "p_rate", "p_rate_ms")});
    END IF;
  END IF;
  v_room := greatest(0, v_room);

  -- The keys that have jobs running, or claims in the rate window, are most often the keys the
  -- last claims took from: this claim's share will be about p_limit / that many. Only a guess:
  -- the walk reads no more than a share can be (p_limit / the keys found so far), the candidates
  -- fetch what it read short, and the decisions do not depend on it.
  IF greatest(v_running_keys, v_claimed_keys) > 0 THEN
    v_fetch := greatest(1, ceil(p_limit::float8 / greatest(v_running_keys, v_claimed_keys)))::int;
  END IF;
  v_visit := p_limit + 32 + v_running_total + (SELECT count(*) FROM jsonb_object_keys(v_pauses))::int
    + (SELECT count(*) FROM jsonb_object_keys(v_key_claims))::int;

  RETURN QUERY
  WITH RECURSIVE walk AS (
    -- The keys in rotation order (seg 0: after the cursor; seg 1: from the start), until room
    -- keys can give a job or keysToVisit's bound. Row 0 is where the rotation starts (no key);
    -- each step is one descent of jobs_flow_idx that reads the next key's first f jobs in
    -- claim order (nextAfter), f = the guess v_fetch, at most the share the keys found so far
    -- leave. The key's due jobs read are its first candidates.
    SELECT coalesce(v_cursor, '') COLLATE "C" AS key, CASE WHEN v_cursor IS NULL THEN 1 ELSE 0 END AS seg,
           0 AS n, NULL::bigint AS id, NULL::int AS priority, NULL::timestamptz AS run_at, NULL::bigint[] AS rids,
           NULL::int[] AS rpris, NULL::timestamptz[] AS rruns, 0 AS got, true AS whole, 0 AS room, false AS due, 0 AS usable
    UNION ALL
    SELECT nx.key, nx.seg, w.n + 1, nx.id, nx.priority, nx.run_at, nx.rids, nx.rpris, nx.rruns, nx.got, nx.whole,
           z.room, z.due,
           w.usable + (z.room > 0 AND z.due)::int
    FROM walk w
    CROSS JOIN LATERAL (SELECT least(v_fetch, ceil(p_limit::float8 / (w.usable + 1))::int) AS f OFFSET 0) g
    LEFT JOIN LATERAL (${nextAfter("w.key", "true", "g.f")}) x ON true
    -- Past the last key, seg 0 goes on from the start (read only then).
    LEFT JOIN LATERAL (${nextAfter("''", "w.seg = 0 AND x.key IS NULL", "g.f")}) y ON true
    CROSS JOIN LATERAL (
      SELECT x.key, w.seg, x.id, x.priority, x.run_at, x.rids, x.rpris, x.rruns, x.got, x.whole
      WHERE x.key IS NOT NULL AND (w.seg = 0 OR v_cursor IS NULL OR x.key <= v_cursor)
      UNION ALL
      SELECT y.key, 1, y.id, y.priority, y.run_at, y.rids, y.rpris, y.rruns, y.got, y.whole WHERE y.key <= v_cursor
    ) nx
    -- A key has a due job when one was read (else, unless all were read, a probe looks further).
    CROSS JOIN LATERAL (SELECT ${keyRoom("nx.key")} AS room,
      CASE WHEN nx.got > 0 THEN true WHEN nx.whole THEN false ELSE ${hasDue("nx.key")} END AS due OFFSET 0) z
    WHERE w.n = 0 OR (w.n < v_visit AND w.usable < v_room)
  ),
  visited AS (
    SELECT w.key, w.seg, w.room, w.id, w.priority, w.run_at, w.rids, w.rpris, w.rruns, w.got, w.whole
    FROM walk w WHERE w.n > 0 AND w.due
  ),
  counts AS (
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
  cand AS (
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
      SELECT k.id, k.priority, k.run_at WHERE k.run_at <= v_now
      UNION ALL
      -- unnest keeps the arrays' (claim) order: the next due jobs read, up to the share.
      (SELECT r.id, r.priority, r.run_at FROM unnest(k.rids, k.rpris, k.rruns) r(id, priority, run_at)
       WHERE k.rids IS NOT NULL AND r.run_at <= v_now LIMIT greatest(0, k.share - (k.run_at <= v_now)::int))
      UNION ALL
      (SELECT j.id, j.priority, j.run_at FROM ${JOBS} j
       WHERE NOT k.whole AND k.got < k.share
         AND j.queue = p_queue AND j.state = 'pending' AND j.flow_key COLLATE "C" = k.key AND j.run_at <= v_now
       ORDER BY j.priority DESC, j.run_at, j.id OFFSET k.got LIMIT greatest(0, k.share - k.got))
    ) c
    UNION ALL
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
    WHERE v_window > 0 AND c.queue = p_queue AND c.at <= v_now - v_window * interval '1 millisecond'
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
  ) r ORDER BY r.ord NULLS LAST;
END
$flow_claim$;
`;
