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

/** The first flow key with pending jobs in a queue (errand_jobs_flow_idx; text compares by code point, BINARY). */
export const FLOW_FIRST_KEY = `
SELECT flow_key AS key FROM errand_jobs
WHERE queue = @queue AND state = 'pending' AND flow_key IS NOT NULL
ORDER BY flow_key LIMIT 1`;

/** The next flow key after @after: one probe of errand_jobs_flow_idx. */
export const FLOW_NEXT_KEY = `
SELECT flow_key AS key FROM errand_jobs
WHERE queue = @queue AND state = 'pending' AND flow_key IS NOT NULL AND flow_key > @after
ORDER BY flow_key LIMIT 1`;

/** One key's first @limit due jobs in claim order. */
export const FLOW_KEY_DUE = `
SELECT id, priority, run_at FROM errand_jobs
WHERE queue = @queue AND state = 'pending' AND flow_key = @key AND run_at <= @now
ORDER BY priority DESC, run_at, id LIMIT @limit`;

/** Jobs without a flow key, among the queue's first 100 due jobs (errand_jobs_claim_idx). */
export const FLOW_UNKEYED_DUE = `
SELECT id, priority, run_at FROM (
  SELECT id, flow_key, priority, run_at FROM errand_jobs
  WHERE queue = @queue AND state = 'pending' AND run_at <= @now
  ORDER BY priority DESC, run_at, id LIMIT 100
) WHERE flow_key IS NULL LIMIT @limit`;

export const FLOW_CLAIMS = "SELECT key, at FROM errand_flow_claims WHERE queue = @queue AND at > @since";
export const FLOW_FORGET_CLAIMS = "DELETE FROM errand_flow_claims WHERE queue = @queue AND at <= @since";
export const FLOW_RECORD_CLAIM =
  "INSERT INTO errand_flow_claims (queue, key, at) VALUES (@queue, @key, @now)";
export const FLOW_PAUSES = "SELECT key, until FROM errand_flow_pauses WHERE queue = @queue AND until > @now";
export const FLOW_PAUSE = `
INSERT INTO errand_flow_pauses (queue, key, until) VALUES (@queue, @key, @until)
ON CONFLICT (queue, key) DO UPDATE SET until = max(until, excluded.until)`;
export const FLOW_CURSOR = "SELECT cursor FROM errand_flow_cursors WHERE queue = @queue";
export const FLOW_SET_CURSOR = `
INSERT INTO errand_flow_cursors (queue, cursor) VALUES (@queue, @cursor)
ON CONFLICT (queue) DO UPDATE SET cursor = excluded.cursor`;

/** One job claimed by id (the plan chose it), as CLAIM_JOBS sets it; nothing if no longer pending. */
export const FLOW_CLAIM_JOB = `
UPDATE errand_jobs
SET state = 'running',
    attempt = attempt + 1,
    lease_token = lease_token + 1,
    locked_by = @worker,
    locked_until = CAST(@now + @leaseMs AS INTEGER),
    started_at = @now,
    progress = NULL
WHERE id = @id AND state = 'pending'
RETURNING id, queue, name, payload, priority, attempt, max_attempts, key, run_at, created_at, lease_token, locked_until,
          flow_key, trace_context`;

/** Sets the flow keys of jobs just inserted (in the inserting transaction). */
export const FLOW_SET_KEY = "UPDATE errand_jobs SET flow_key = @key WHERE id = @id";
