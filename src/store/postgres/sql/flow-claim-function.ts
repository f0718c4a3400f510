/**
 * `flow_claim`, the claim of a flow-controlled queue in one round trip, installed by migration 10
 * (with the tables it uses) and replaced whole by migrations 11 to 14 (migrations-6-to-15.ts).
 *
 * A function's text, unlike a table's, is replaced whole by CREATE OR REPLACE: every migration
 * that changes it installs FLOW_CLAIM_DEFINITION, the newest text, and so does migration 10 on a
 * database that never had it. Every database ends with the same function, whichever version it
 * started from; a change to the text below therefore needs a new migration that installs it
 * again (or databases past migration 14 keep the old one). It may use what migration 10 has
 * created and flow_windows (migration 13): PL/pgSQL resolves a table when a statement first
 * runs, not when the function is created, and no claim runs between migrations 10 and 13.
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
 * Generic plans (migration 13, `plan_cache_mode = force_generic_plan`). After ANALYZE the
 * planner replanned the statement that reads a key's share (sql/flow-claim-walk.ts) on every
 * call, its custom plans looking cheaper than the generic one: a per-key claim of 50 over 10
 * keys cost 0.73 of migration 12's backend CPU, 0.98 with the generic plan (bench/flow-claim-ab.ts).
 * The other statements were generic after five calls already.
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
 * The key walk, the candidates and the claim are one statement (sql/flow-claim-walk.ts): in two
 * forms since migration 13, one reading a key's first job per step, one reading several when
 * each key is expected to give more than one (v_fetch below).
 *
 * A claim a concurrency cap held back marks its queue in flow_waits (one that is not held back
 * clears it), so finishes there notify the workers waiting for a slot.
 *
 * Returns the claimed jobs in pick order, then one row with `id` NULL: `held` (due jobs a limit
 * left behind) and `retry_ms` (when a rate window or pause that held them frees, else NULL).
 * `p_now` NULL reads the clock after the lock (a test clock passes its time).
 */
import { claimStatement, windowFrees } from "./flow-claim-walk.js";
import { epochMs, JOBS } from "./fragments.js";

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
LANGUAGE plpgsql SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan AS $flow_claim$
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
  -- How long the claim log is kept: the longest rate window in use (flow_windows), at least ours.
  v_keep float8 := v_window;
  v_keep_ms float8;
  v_keep_until timestamptz;
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
  -- store/flow-plan.ts claimLogRetention, in SQL: keep the log for the longest window in use;
  -- record ours when it is that window (renewed once a window) or the record has lapsed.
  IF v_window > 0 THEN
    SELECT w.keep_ms, w.keep_until INTO v_keep_ms, v_keep_until
    FROM {{schema}}.flow_windows w WHERE w.queue = p_queue;
    IF v_keep_until > v_now THEN
      v_keep := greatest(v_window, v_keep_ms);
    END IF;
    IF v_keep_until IS NULL OR v_keep_until <= v_now OR v_window > v_keep_ms
       OR (v_window = v_keep_ms AND v_keep_until - v_now < 2 * v_window * interval '1 millisecond') THEN
      INSERT INTO {{schema}}.flow_windows (queue, keep_ms, keep_until)
      VALUES (p_queue, v_window, v_now + 3 * v_window * interval '1 millisecond')
      ON CONFLICT (queue) DO UPDATE SET keep_ms = EXCLUDED.keep_ms, keep_until = EXCLUDED.keep_until;
    END IF;
  END IF;
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

  -- Both forms decide alike (sql/flow-claim-walk.ts); each has its plan cached.
  IF v_fetch > 1 THEN
    RETURN QUERY ${claimStatement(true)};
  ELSE
    RETURN QUERY ${claimStatement(false)};
  END IF;
END
$flow_claim$;
`;
