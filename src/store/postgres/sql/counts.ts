/** The counters behind stats() and throughput() (reads.ts), and their compaction (upkeep.ts). */
import { JOBS, ms, NOW, pendingHeads } from "./fragments.js";

// ── stats and throughput ──────────────────────────────────────────────────────────────────

/** The UTC minute an instant falls in (the bucket of job_counts; migrations.ts job_bucket). */
const minute = (t: string) => `(date_trunc('minute', (${t}) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')`;

/** Counters as of this statement: compacted counts plus the deltas not yet folded in. */
const COUNTS = `(
  SELECT queue, state, bucket, n FROM {{schema}}.job_counts
  UNION ALL
  SELECT queue, state, bucket, n FROM {{schema}}.job_count_deltas
)`;

/**
 * stats(): per queue and state, from the counters (migrations.ts) — never a count of the jobs
 * table, so it costs the same with 6 million rows as with none. The only rows read from jobs
 * are each window's partial minute: pending jobs due later this minute (delayed vs due; one range
 * per priority level), jobs finished in the first minute of the last hour/day, and the oldest
 * pending job per queue (pendingHeads). Columns: queue, state, n, delayed, oldest_ms, last_hour,
 * last_day.
 */
export const STATS = `
WITH t AS (
  SELECT ${NOW} AS now, ${minute(NOW)} AS m,
         ${minute(`${NOW} - interval '1 hour'`)} AS h, ${minute(`${NOW} - interval '1 day'`)} AS d
), per AS (
  SELECT c.queue, c.state, sum(c.n) AS total,
         coalesce(sum(c.n) FILTER (WHERE c.bucket > t.m), 0) AS later,
         coalesce(sum(c.n) FILTER (WHERE c.bucket = t.m), 0) AS this_minute,
         coalesce(sum(c.n) FILTER (WHERE c.bucket > t.h), 0) AS hour_full,
         coalesce(sum(c.n) FILTER (WHERE c.bucket > t.d), 0) AS day_full
  FROM ${COUNTS} c, t
  GROUP BY c.queue, c.state
  HAVING sum(c.n) <> 0
)
SELECT per.queue, per.state, per.total AS n,
  CASE WHEN per.state = 'pending' THEN per.later + CASE WHEN per.this_minute = 0 THEN 0 ELSE (
    SELECT coalesce(sum((
      SELECT count(*) FROM ${JOBS} j
      WHERE j.queue = per.queue AND j.state = 'pending' AND j.priority = h.priority
        AND j.run_at > t.now AND j.run_at < t.m + interval '1 minute'
    )), 0) FROM ${pendingHeads("per.queue")} h
  ) END END AS delayed,
  CASE WHEN per.state = 'pending' THEN (
    SELECT CASE WHEN min(h.run_at) <= t.now THEN floor(extract(epoch FROM t.now - min(h.run_at)) * 1000) END
    FROM ${pendingHeads("per.queue")} h
  ) END AS oldest_ms,
  CASE WHEN per.state IN ('completed', 'failed') THEN per.hour_full + (
    SELECT count(*) FROM ${JOBS} j
    WHERE j.finished_at >= t.now - interval '1 hour' AND j.finished_at < t.h + interval '1 minute'
      AND j.queue = per.queue AND j.state IN ('completed', 'failed') AND j.state = per.state
  ) END AS last_hour,
  CASE WHEN per.state IN ('completed', 'failed') THEN per.day_full + (
    SELECT count(*) FROM ${JOBS} j
    WHERE j.finished_at >= t.now - interval '1 day' AND j.finished_at < t.d + interval '1 minute'
      AND j.queue = per.queue AND j.state IN ('completed', 'failed') AND j.state = per.state
  ) END AS last_day
FROM per, t`;

/**
 * Folds the deltas into job_counts, and buckets older than 25 hours (no window reaches them)
 * into -infinity, in one statement. One compactor at a time (a try-lock: others skip, they do
 * not wait); a delta committed meanwhile stays for the next run. Returns the deltas folded.
 */
export const COMPACT_COUNTS = `
WITH gate AS (
  SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS ok, ${minute(`${NOW} - interval '25 hours'`)} AS fold
), moved AS (
  DELETE FROM {{schema}}.job_count_deltas WHERE (SELECT ok FROM gate) RETURNING queue, state, bucket, n
), folded AS (
  DELETE FROM {{schema}}.job_counts
  WHERE (SELECT ok FROM gate) AND bucket < (SELECT fold FROM gate) AND bucket <> '-infinity'
  RETURNING queue, state, n
), sums AS (
  SELECT queue, state, CASE WHEN bucket < (SELECT fold FROM gate) THEN '-infinity' ELSE bucket END AS bucket, n FROM moved
  UNION ALL
  SELECT queue, state, '-infinity', n FROM folded
), upserted AS (
  INSERT INTO {{schema}}.job_counts AS c (queue, state, bucket, n)
  SELECT queue, state, bucket, sum(n) FROM sums GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (queue, state, bucket) DO UPDATE SET n = c.n + excluded.n
  RETURNING 1
)
SELECT (SELECT count(*) FROM moved) AS moved, (SELECT count(*) FROM upserted) AS upserted`;

/**
 * throughput() from the counters' minute buckets: $1 since ms (≤ 25 h), $2 bucket ms (a
 * multiple of a minute, so a minute never straddles two buckets). The partial first minute is
 * counted from jobs_finished_idx. Bucket start in epoch ms.
 */
export const THROUGHPUT_BUCKETS = `
WITH t AS (SELECT ${NOW} - ${ms("$1::float8")} AS since, ${minute(`${NOW} - ${ms("$1::float8")}`)} AS b0),
r AS (
  SELECT c.queue, c.state, c.bucket AS at, c.n FROM ${COUNTS} c, t
  WHERE c.bucket > t.b0 AND c.state IN ('completed', 'failed')
  UNION ALL
  SELECT j.queue, j.state, j.finished_at, 1 FROM ${JOBS} j, t
  WHERE j.finished_at >= t.since AND j.finished_at < t.b0 + interval '1 minute' AND j.state IN ('completed', 'failed')
)
SELECT queue, state, floor(floor(extract(epoch FROM at) * 1000) / $2::numeric) * $2::numeric AS at, sum(n) AS n
FROM r GROUP BY 1, 2, 3 HAVING sum(n) <> 0`;

/** throughput() for other windows: completed/failed per queue per bucket, a range of jobs_finished_idx. */
export const THROUGHPUT_SCAN = `
SELECT queue, state, floor(floor(extract(epoch FROM finished_at) * 1000) / $2::numeric) * $2::numeric AS at, count(*) AS n
FROM ${JOBS}
WHERE state IN ('completed', 'failed') AND finished_at >= ${NOW} - ${ms("$1::float8")}
GROUP BY 1, 2, 3`;
