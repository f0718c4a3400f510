/**
 * The SQLite store's statements for stats and throughput (the dashboard, `errand stats`, metrics):
 * counts over ranges of the jobs table's indexes. The other statements are in queries.ts, which
 * re-exports these.
 */
//
// Measured on 1,000,000 jobs (4 queues, 400,000 finished in the last hour; 2-core VM): one
// `GROUP BY queue, state` walk of errand_jobs_queue_state_idx took 140–290 ms, a `GROUP BY`
// over a finished_at range 390–580 ms (a temp B-tree to sort 400,000 rows), while plain
// `count(*)` over index ranges costs 20–80 ns per entry and sorts nothing. So: find the queues
// by skip-scan, then count each (queue, state) range.

/**
 * The distinct queues: one seek of errand_jobs_queue_state_idx each (a skip-scan, where
 * `SELECT DISTINCT queue` would walk every job), plus the queues of running jobs, which that
 * index leaves out (migrations.ts version 5) and errand_jobs_lease_idx holds (a few rows).
 */
export const QUEUES_CTE = `
not_running(queue) AS (
  SELECT (SELECT min(queue) FROM errand_jobs WHERE state <> 'running')
  UNION ALL
  SELECT (SELECT min(queue) FROM errand_jobs WHERE state <> 'running' AND queue > not_running.queue)
  FROM not_running WHERE queue IS NOT NULL
),
queues(queue) AS (
  SELECT queue FROM not_running WHERE queue IS NOT NULL
  UNION
  SELECT queue FROM errand_jobs INDEXED BY errand_jobs_lease_idx WHERE state = 'running'
)`;

/**
 * Jobs per (queue, state): one count over a range of errand_jobs_queue_state_idx each (zeros
 * included), and the running jobs per queue from errand_jobs_lease_idx.
 */
export const STATS_BY_STATE = `
WITH RECURSIVE ${QUEUES_CTE},
states(state) AS (VALUES ('pending'), ('completed'), ('failed'), ('cancelled'))
SELECT q.queue, s.state,
       (SELECT count(*) FROM errand_jobs WHERE queue = q.queue AND state = s.state AND state <> 'running') AS n
FROM queues q, states s
UNION ALL
SELECT queue, 'running', count(*) FROM errand_jobs INDEXED BY errand_jobs_lease_idx
WHERE state = 'running' GROUP BY queue`;

/**
 * The priority levels of one queue's pending jobs, highest first: one probe of
 * errand_jobs_claim_idx (queue, priority DESC, run_at, id) per level, a loose index scan. Within
 * a level the entries are in run_at order, so a level's earliest run_at is its first entry and
 * its not-yet-due jobs are one range. O(distinct priorities), usually a handful.
 */
export const PENDING_LEVELS = `
levels(priority) AS (
  SELECT (SELECT max(priority) FROM errand_jobs INDEXED BY errand_jobs_claim_idx
          WHERE state = 'pending' AND queue = @queue)
  UNION ALL
  SELECT (SELECT max(priority) FROM errand_jobs INDEXED BY errand_jobs_claim_idx
          WHERE state = 'pending' AND queue = @queue AND priority < levels.priority)
  FROM levels WHERE priority IS NOT NULL
)`;

const LEVEL_HEAD = `(SELECT min(run_at) FROM errand_jobs INDEXED BY errand_jobs_claim_idx
   WHERE state = 'pending' AND queue = @queue AND priority = l.priority)`;

/**
 * One queue's delayed jobs and its earliest pending run_at, per priority level (PENDING_LEVELS):
 * the count walks only the not-yet-due entries (a large backlog is due, so it is not walked;
 * due = pending − delayed) and the earliest run_at is each level's first entry.
 */
export const STATS_PENDING = `
WITH RECURSIVE ${PENDING_LEVELS}
SELECT coalesce(sum((SELECT count(*) FROM errand_jobs INDEXED BY errand_jobs_claim_idx
         WHERE state = 'pending' AND queue = @queue AND priority = l.priority AND run_at > @now)), 0) AS delayed,
       min(${LEVEL_HEAD}) AS oldest
FROM levels l WHERE l.priority IS NOT NULL`;

/** Earliest pending run_at of one queue: the first entry of each priority level (PENDING_LEVELS). */
export const NEXT_RUN_AT = `
WITH RECURSIVE ${PENDING_LEVELS}
SELECT min(${LEVEL_HEAD}) AS runAt FROM levels l WHERE l.priority IS NOT NULL`;

const FINISHED_SINCE = (state: string, since: string) => `
  (SELECT count(*) FROM errand_jobs INDEXED BY errand_jobs_finished_idx
   WHERE queue = @queue AND state = '${state}' AND finished_at IS NOT NULL AND finished_at >= ${since})`;

/** One queue's completed/failed in the last day and hour: four ranges of errand_jobs_finished_idx. */
export const STATS_FINISHED = `
SELECT ${FINISHED_SINCE("completed", "@dayAgo")} AS completedDay, ${FINISHED_SINCE("completed", "@hourAgo")} AS completedHour,
       ${FINISHED_SINCE("failed", "@dayAgo")} AS failedDay, ${FINISHED_SINCE("failed", "@hourAgo")} AS failedHour`;

/**
 * Completed/failed per queue per bucket (bucket index = floor(finished_at / @bucket); the caller
 * multiplies back). Every finished_at ≥ @since is visited, then sorted by GROUP BY: the fallback.
 */
export const THROUGHPUT = `
WITH RECURSIVE ${QUEUES_CTE}
SELECT queue, CAST(finished_at / @bucket AS INTEGER) AS bucket,
       sum(state = 'completed') AS completed, sum(state = 'failed') AS failed
FROM errand_jobs INDEXED BY errand_jobs_finished_idx
WHERE queue IN (SELECT queue FROM queues WHERE queue IS NOT NULL) AND state IN ('completed', 'failed')
  AND finished_at IS NOT NULL AND finished_at >= @since
GROUP BY queue, bucket`;

/**
 * The same for an integral @bucket and a few buckets (@first..@last): two range counts per
 * (queue, bucket), no sort — ~10x faster for a dashboard's "last hour by minute".
 * Empty buckets come back as zero rows; the caller drops them.
 */
export const THROUGHPUT_BY_BUCKET = `
WITH RECURSIVE ${QUEUES_CTE},
buckets(b) AS (SELECT @first UNION ALL SELECT b + 1 FROM buckets WHERE b < @last)
SELECT q.queue, k.b AS bucket,
  (SELECT count(*) FROM errand_jobs INDEXED BY errand_jobs_finished_idx
   WHERE queue = q.queue AND state = 'completed' AND finished_at IS NOT NULL
     AND finished_at >= max(@since, k.b * @bucket) AND finished_at < (k.b + 1) * @bucket) AS completed,
  (SELECT count(*) FROM errand_jobs INDEXED BY errand_jobs_finished_idx
   WHERE queue = q.queue AND state = 'failed' AND finished_at IS NOT NULL
     AND finished_at >= max(@since, k.b * @bucket) AND finished_at < (k.b + 1) * @bucket) AS failed
FROM queues q, buckets k
WHERE q.queue IS NOT NULL`;

/** Above this many buckets, THROUGHPUT_BY_BUCKET's per-bucket seeks cost more than one sort. */
export const THROUGHPUT_MAX_BUCKETS = 2000;
