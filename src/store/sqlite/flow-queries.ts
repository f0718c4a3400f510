/**
 * The SQLite statements of flow control (flow.ts), run inside one BEGIN IMMEDIATE transaction
 * per claim: SQLite's single writer serialises the claims of every process on the file, so the
 * state read here cannot change before the claim is written.
 */

/** Running jobs of a queue by flow key ("" for none); errand_jobs_lease_idx (it holds the running jobs only). */
export const FLOW_RUNNING = `
SELECT coalesce(flow_key, '') AS key, count(*) AS n
FROM errand_jobs WHERE queue = @queue AND state = 'running'
GROUP BY flow_key`;

/** Running jobs of a queue: a count over errand_jobs_lease_idx (it holds the running jobs only). */
export const FLOW_RUNNING_TOTAL =
  "SELECT count(*) AS n FROM errand_jobs WHERE queue = @queue AND state = 'running'";

/** Does the queue have a pending job with a flow key? One probe of errand_jobs_flow_idx. */
export const FLOW_ANY_KEYED =
  "SELECT 1 FROM errand_jobs WHERE queue = @queue AND state = 'pending' AND flow_key IS NOT NULL LIMIT 1";

/**
 * Up to @limit flow keys with pending jobs in key order, after @after (FLOW_KEYS_AFTER) or from
 * the first (FLOW_KEYS_FIRST), none past @upto when it is set, each with its head: its first
 * pending job in claim order (id, priority, run_at). One statement walking errand_jobs_flow_idx,
 * one descent per key (its first entry past the previous key is that key's head) and one lookup
 * by id; a claim that needs one job from a key whose head is due needs no other read of it
 * (FLOW_KEYS_DUE). Claims of 50 over 100 keys: the walk and FLOW_KEYS_DUE 212 µs per claim, this
 * walk alone 120 (`node --import tsx bench/sqlite-statement-times.ts 50`, load 0.4). The price:
 * a claim of several jobs per key reads its keys again anyway, so claims of 250 over 100 keys pay
 * the lookups for nothing (walk 172-179 → 261 µs per claim, 0.35 µs per job; the head as a JSON
 * array from the index alone, no lookup, was slower at both sizes: 160 and 317). bench/NOTES.md finding 22.
 */
const nextHead = (past: string) => `errand_jobs.id = (SELECT id FROM errand_jobs
   WHERE queue = @queue AND state = 'pending' AND flow_key IS NOT NULL${past}
   ORDER BY flow_key, priority DESC, run_at, id LIMIT 1)`;
const walkFrom = (first: string) => `WITH RECURSIVE w(key, id, priority, run_at, n) AS (
  SELECT flow_key, id, priority, run_at, 1 FROM errand_jobs WHERE ${first}
  UNION ALL
  SELECT flow_key, errand_jobs.id, errand_jobs.priority, errand_jobs.run_at, n + 1
  FROM w JOIN errand_jobs ON ${nextHead(" AND flow_key > w.key")} WHERE n < @limit
)
SELECT key, id, priority, run_at FROM w WHERE @upto IS NULL OR key <= @upto`;
export const FLOW_KEYS_AFTER = walkFrom(nextHead(" AND flow_key > @after"));
export const FLOW_KEYS_FIRST = walkFrom(nextHead(""));

/**
 * The first @limit due jobs of each key of @keys (a JSON array): one row per key, its jobs a JSON
 * array of [id, priority, run_at] (`[]`: none due), read from errand_jobs_flow_idx alone. (Rows
 * of jobs joined back to the table by id and sorted cost 0.67 ms for 100 keys × 3 jobs, this
 * 0.32-0.41 ms with the parsing.) The aggregate's order is not promised: the caller sorts.
 */
export const FLOW_KEYS_DUE = `
SELECT k.value AS key, (
  SELECT json_group_array(json_array(id, priority, run_at)) FROM (
    SELECT id, priority, run_at FROM errand_jobs
    WHERE queue = @queue AND state = 'pending' AND flow_key = k.value AND run_at <= @now
    ORDER BY priority DESC, run_at, id LIMIT @limit
  )
) AS jobs
FROM json_each(@keys) k`;

/**
 * Jobs without a flow key, among the queue's first @window due jobs, through
 * errand_jobs_claim_idx in claim order: `+run_at` keeps the planner off
 * errand_jobs_pending_run_at_idx, which it chose for `run_at <= @now` and then read and sorted
 * every pending job of the queue (5.3 ms per claim over 20,000 pending jobs, against 0.2 ms).
 */
export const FLOW_UNKEYED_DUE = `
SELECT id, priority, run_at FROM (
  SELECT id, flow_key, priority, run_at FROM errand_jobs
  WHERE queue = @queue AND state = 'pending' AND +run_at <= @now
  ORDER BY priority DESC, run_at, id LIMIT @window
) WHERE flow_key IS NULL LIMIT @limit`;

/** The claim log within a window: one row per key per claim, `n` the jobs it took. */
export const FLOW_CLAIMS = "SELECT key, at, n FROM errand_flow_claims WHERE queue = @queue AND at > @since";
export const FLOW_FORGET_CLAIMS = "DELETE FROM errand_flow_claims WHERE queue = @queue AND at <= @since";
/** The longest rate window in use for a queue (store/flow-plan.ts claimLogRetention). */
export const FLOW_KEPT_WINDOW =
  "SELECT keep_ms AS keepMs, keep_until AS keepUntil FROM errand_flow_windows WHERE queue = @queue";
export const FLOW_KEEP_WINDOW = `
INSERT INTO errand_flow_windows (queue, keep_ms, keep_until) VALUES (@queue, @keepMs, @keepUntil)
ON CONFLICT (queue) DO UPDATE SET keep_ms = excluded.keep_ms, keep_until = excluded.keep_until`;
export const FLOW_RECORD_CLAIM =
  "INSERT INTO errand_flow_claims (queue, key, at, n) VALUES (@queue, @key, @now, @n)";
export const FLOW_PAUSES = "SELECT key, until FROM errand_flow_pauses WHERE queue = @queue AND until > @now";
export const FLOW_PAUSE = `
INSERT INTO errand_flow_pauses (queue, key, until) VALUES (@queue, @key, @until)
ON CONFLICT (queue, key) DO UPDATE SET until = max(until, excluded.until)`;
/** resumeFlow: a queue's pauses (every key), or one key's ('' = the whole queue's); lapsed rows go too. */
export const FLOW_RESUME_ALL = "DELETE FROM errand_flow_pauses WHERE queue = @queue RETURNING until";
export const FLOW_RESUME_KEY =
  "DELETE FROM errand_flow_pauses WHERE queue = @queue AND key = @key RETURNING until";
export const FLOW_CURSOR = "SELECT cursor FROM errand_flow_cursors WHERE queue = @queue";
export const FLOW_SET_CURSOR = `
INSERT INTO errand_flow_cursors (queue, cursor) VALUES (@queue, @cursor)
ON CONFLICT (queue) DO UPDATE SET cursor = excluded.cursor`;

/**
 * The jobs the plan chose (@ids, a JSON array), claimed in one statement as CLAIM_JOBS sets them;
 * those no longer pending are left out. RETURNING gives no order: the caller puts them in pick order.
 */
export const FLOW_CLAIM_JOBS = `
UPDATE errand_jobs
SET state = 'running',
    attempt = attempt + 1,
    lease_token = lease_token + 1,
    locked_by = @worker,
    locked_until = CAST(@now + @leaseMs AS INTEGER),
    started_at = @now,
    progress = NULL
WHERE id IN (SELECT value FROM json_each(@ids)) AND state = 'pending'
RETURNING id, queue, name, payload, priority, attempt, max_attempts, key, run_at, created_at, lease_token, locked_until,
          flow_key, trace_context`;

/** Sets the flow keys of jobs just inserted (in the inserting transaction). */
export const FLOW_SET_KEY = "UPDATE errand_jobs SET flow_key = @key WHERE id = @id";
