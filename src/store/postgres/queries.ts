/**
 * Every SQL statement of the PostgreSQL store, one named constant per query. No other file
 * holds SQL (migrations.ts holds the DDL). `{{schema}}` is replaced by the quoted schema name
 * and `{{channel}}` by the NOTIFY channel literal once per store (`bindSchema`); db.ts runs
 * the hot ones as named prepared statements.
 *
 * The clock is the database's. `NOW` is `statement_timestamp()`: the server's time at the start
 * of the statement — one instant for every row a statement touches (a batch gets one
 * finished_at), and unlike `now()` it is not frozen at BEGIN, so a completion inside a long
 * transaction (completeInTransaction, a caller's `tx`) is stamped when it happens. A worker's
 * clock never decides a lease, a due time or a retention cut-off.
 *
 * History entries are built in SQL with the same fields and formats as shared.ts
 * `attemptFromOutcome` (ISO 8601 UTC strings with milliseconds, like `Date.toISOString()`).
 *
 * Measured on a table of 5,000,000 finished + 1,000,000 pending jobs (5 queues, 3 priorities;
 * bench/postgres-store.ts BENCH_BIG=1) against an empty one. The machine was a shared 2-core box
 * at load average ~18, so absolute times are inflated several-fold; the shapes are the point.
 * - CLAIM_JOBS: Index Scan on jobs_claim_idx (Index Cond: queue, run_at <= now; 94 buffers for
 *   100 rows) → LockRows → Nested Loop on jobs_pkey → Update. 9-12 ms; the cost is the 100 rows'
 *   heap pages, never the finished rows (the partial index does not hold them).
 * - STATS: HashAggregate over job_counts (~20k rows) + a few index probes per queue, 18-40 ms
 *   (empty: 3 ms). Counting the table instead (parallel index-only scans of 5M entries,
 *   2M heap fetches while the visibility map lagged, JIT): 12.8-22.6 s.
 * - NEXT_RUN_AT: one Index Only Scan (LIMIT 1) of jobs_claim_idx per queue and priority,
 *   0.8-4 ms for 5 queues × 3 priorities.
 * - THROUGHPUT_BUCKETS (24 h by hour): 33-38 ms; THROUGHPUT_SCAN of the same 700k rows: 5.8 s.
 * - LIST_DEAD_JOBS (50 failed): Index Only Scan Backward on jobs_dead_idx, 0.3 ms; LIST_JOBS
 *   walked jobs_pkey backwards through 1M newer pending rows: 1.2-5 s.
 * - INSERT_JOBS, 5,000 rows: the same on both tables (290-600 ms at that load).
 * - RESCUE_EXPIRED with nothing expired: 0.5 ms (jobs_lease_idx holds the running jobs only).
 */

/** The database clock: the start of the current statement. */
export const NOW = "statement_timestamp()";

const ms = (param: string) => `(${param} * interval '1 millisecond')`;
/** A timestamptz as epoch milliseconds (float8): a number for the driver, not a string for it to parse into a Date. */
const epochMs = (t: string) => `floor(extract(epoch FROM ${t}) * 1000)::float8`;

/** A timestamptz as `Date.prototype.toISOString()` prints it (milliseconds truncated, like pg's Date parsing). */
const iso = (t: string) => `to_char((${t}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * A value the planner may not look into: `(SELECT x)` is an InitPlan, computed once at run time.
 * The claim/finish/extend/return statements use it so that the first executions (custom plans,
 * planned with the actual values) get the same plan as the later generic one, whatever the
 * table's statistics say (see CLAIM_JOBS): an array behind it counts as ~10 elements, not 500,
 * and `state = opaque('running')` is estimated from the number of distinct states, not from a
 * histogram taken when no job was running. Each costs one Result node (~1 µs per statement).
 */
const opaque = (expr: string) => `(SELECT ${expr})`;

/** One NOTIFY per distinct queue of a statement's rows (delivered on commit; rolled back with it). */
const notifyQueues = (rows: string) =>
  `(SELECT count(pg_notify({{channel}}, q.queue)) AS notified FROM (SELECT DISTINCT queue FROM ${rows}) q)`;

const JOBS = "{{schema}}.jobs";

/**
 * The head of each priority level of one queue's pending jobs: (priority, earliest run_at), one
 * probe of jobs_claim_idx per distinct priority (a loose index scan). The earliest run_at of the
 * queue is the min over these. O(distinct priorities), usually a handful.
 */
const pendingHeads = (queue: string) => `(
  WITH RECURSIVE p AS (
    (SELECT h.priority, h.run_at FROM ${JOBS} h
     WHERE h.queue = ${queue} AND h.state = 'pending' ORDER BY h.priority DESC, h.run_at, h.id LIMIT 1)
    UNION ALL
    SELECT n.priority, n.run_at FROM p, LATERAL (
      SELECT h.priority, h.run_at FROM ${JOBS} h
      WHERE h.queue = ${queue} AND h.state = 'pending' AND h.priority < p.priority
      ORDER BY h.priority DESC, h.run_at, h.id LIMIT 1
    ) n
  )
  SELECT priority, run_at FROM p
)`;

/**
 * A completed job's history: the array, plus the completing attempt when FINISH_JOBS left it
 * implicit (completed_by set; migrations.ts version 3) — the same fields and formats as the
 * entry FINISH_JOBS appends otherwise.
 */
const HISTORY = `CASE WHEN completed_by IS NULL THEN attempts ELSE attempts || jsonb_build_array(jsonb_build_object(
    'attempt', attempt, 'startedAt', ${iso("started_at")}, 'finishedAt', ${iso("finished_at")}, 'worker', completed_by,
    'outcome', 'completed')) END`;

/** Every column of a job record (rows.ts maps them). */
const JOB_COLUMNS = `id, queue, name, state, priority, attempt, max_attempts, run_at, payload, key, ${HISTORY} AS attempts,
  result, progress, last_error, created_at, started_at, finished_at, locked_by, locked_until, cancel_requested`;

// ── schema names and channels ─────────────────────────────────────────────────────────────

/** Schema names errand accepts: a plain identifier, so quoting is trivial and the channel fits in 63 bytes. */
export const SCHEMA_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,49}$/;

/** The LISTEN/NOTIFY channel of one schema: two errand schemas in one database never cross-talk. */
export function channelName(schema: string): string {
  return `errand_jobs.${schema}`;
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** Fills in the schema and channel of one store. */
export function bindSchema(sql: string, schema: string): string {
  return sql
    .replaceAll("{{schema}}", quoteIdent(schema))
    .replaceAll("{{channel}}", quoteLiteral(channelName(schema)));
}

// ── clock and migrations ──────────────────────────────────────────────────────────────────

export const SELECT_NOW = `SELECT ${NOW} AS now`;

/**
 * For the rest of the transaction, no JIT. STATS holds correlated subplans with recursive CTEs
 * whose estimated cost (~80M) is far above jit_above_cost while the work is ~1 ms: on the big
 * table Postgres spent 2.7 s compiling it (inlining + optimization) for a 110 ms run.
 */
export const NO_JIT = "SET LOCAL jit = off";

/** Serializes migrate() across every process; released at COMMIT/ROLLBACK. $1: 'errand.migrate:' || schema. */
export const MIGRATE_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))";

export const MIGRATE_CREATE_SCHEMA = "CREATE SCHEMA IF NOT EXISTS {{schema}}";

export const MIGRATE_CREATE_TABLE = `
CREATE TABLE IF NOT EXISTS {{schema}}.migrations (
  version    integer     PRIMARY KEY,
  name       text        NOT NULL,
  breaking   boolean     NOT NULL DEFAULT false,
  applied_at timestamptz NOT NULL DEFAULT statement_timestamp()
)`;

export const MIGRATE_VERSIONS = "SELECT version, breaking FROM {{schema}}.migrations ORDER BY version";

export const MIGRATE_RECORD =
  "INSERT INTO {{schema}}.migrations (version, name, breaking) VALUES ($1, $2, $3)";

// ── jobs: insert and read ─────────────────────────────────────────────────────────────────

/**
 * The rows of one insert chunk, in input order, each with its id drawn from the identity
 * sequence — so every inserted row maps back to its input position (RETURNING cannot see the
 * input). Parameters are array literals built in insert.ts (`insertValues`): $1 queue,
 * $2 name, $4 priority, $5 max_attempts, $6 run_at (epoch ms; null: now + delay), $7 delay ms,
 * $8 key; and $3 the payloads as one JSON array text, the payloads' own JSON joined by commas —
 * nothing to escape in JS, one jsonb parse on the server (as a text[] of JSON texts, each payload
 * was escaped for the array literal by node-postgres, then parsed twice by Postgres).
 */
const insertInput = (keys: boolean) => `input AS (
  SELECT nextval('{{schema}}.jobs_id_seq'::regclass) AS id, u.*
  FROM ROWS FROM (
    unnest($1::text[]), unnest($2::text[]), jsonb_array_elements($3::jsonb), unnest($4::int[]),
    unnest($5::int[]), unnest($6::float8[]), unnest($7::float8[])${keys ? ", unnest($8::text[])" : ""}
  ) WITH ORDINALITY AS u(queue, name, payload, priority, max_attempts, run_at_ms, delay_ms, ${keys ? "key, " : ""}ord)
)`;

const insertRunAt = `coalesce(timestamptz 'epoch' + ${ms("run_at_ms")}, ${NOW} + ${ms("delay_ms")})`;

/** The statement's clock as epoch milliseconds (text): run_at and created_at of the new jobs follow from it. */
const NOW_MS = `(floor(extract(epoch FROM ${NOW}) * 1000))::text`;

/**
 * Bulk insert of one chunk of jobs without keys (insertInput; no $8). Such a chunk cannot
 * conflict, so every row is inserted: no ON CONFLICT (a speculative insertion per row), no
 * ordering, and one row back — the ids in input order as one comma-separated text — instead of
 * a row per job. Against INSERT_JOBS on 5,000 rows (EXPLAIN ANALYZE, medians of 15, in a
 * transaction on the 2-core VM): 38 ms instead of 52 of server time, and no 5,000-row result to
 * parse in JS.
 */
export const INSERT_NEW_JOBS = `
WITH ${insertInput(false)}, inserted AS (
  INSERT INTO ${JOBS} (id, queue, name, payload, priority, max_attempts, run_at, created_at)
  OVERRIDING SYSTEM VALUE
  SELECT id, queue, name, payload, priority, max_attempts, ${insertRunAt}, ${NOW}
  FROM input
)
SELECT (SELECT string_agg(id::text, ',' ORDER BY ord) FROM input) AS ids, ${NOW_MS} AS now_ms,
       ${notifyQueues("input")} AS notified`;

/**
 * Bulk insert of one chunk holding jobs with keys (insertInput, $8 keys). A duplicate
 * (queue, key) — with an existing job, a concurrent insert (ON CONFLICT waits for that
 * transaction to end) or an earlier row of the same batch — inserts nothing; the caller then
 * reads the existing jobs with SELECT_JOBS_BY_KEYS in a new statement, whose fresh snapshot sees
 * a concurrent commit that this statement's snapshot could not.
 *
 * Rows are inserted in (queue, key) order — ids still follow the input order, they are drawn
 * before. An insert that meets another transaction's uncommitted row with the same key waits for
 * it; two statements taking the same keys in different orders would deadlock (seen with five
 * pools enqueuing the same keys), one order for everybody cannot.
 *
 * Only (ord, id) come back per inserted row, plus the statement's clock: the rest of each record
 * is the input, and run_at/created_at follow from that one instant. Sending 5,000 payloads back
 * and parsing 10,000 timestamps cost more than the insert itself.
 */
export const INSERT_JOBS = `
WITH ${insertInput(true)}, inserted AS (
  INSERT INTO ${JOBS} (id, queue, name, payload, priority, max_attempts, run_at, key, created_at)
  OVERRIDING SYSTEM VALUE
  SELECT id, queue, name, payload, priority, max_attempts, ${insertRunAt}, key, ${NOW}
  FROM input
  ORDER BY queue, key, ord
  ON CONFLICT (queue, key) WHERE key IS NOT NULL DO NOTHING
  RETURNING id, queue
)
SELECT i.ord, j.id, ${NOW_MS} AS now_ms, ${notifyQueues("inserted")} AS notified
FROM inserted j JOIN input i ON i.id = j.id`;

/** Existing jobs for (queue, key) pairs: $1 queues, $2 keys. */
export const SELECT_JOBS_BY_KEYS = `
SELECT ${JOB_COLUMNS}
FROM ${JOBS}
WHERE key IS NOT NULL AND (queue, key) IN (SELECT k.queue, k.key FROM unnest($1::text[], $2::text[]) AS k(queue, key))`;

export const SELECT_JOB = `SELECT ${JOB_COLUMNS} FROM ${JOBS} WHERE id = $1`;

/**
 * listJobs: newest first, keyset pagination on id. Run unnamed, so Postgres plans it with the
 * actual values and folds away the filters given as NULL. Search (shared.ts `matchesSearch`):
 * id equals, key contains, or the payload's JSON text contains — jsonb's text form (keys sorted,
 * ", " and ": " separators), which is what the database holds.
 * $1 queue, $2 state, $3 name, $4 before id, $5 search, $6 limit.
 */
export const LIST_JOBS = `
SELECT ${JOB_COLUMNS} FROM ${JOBS}
WHERE ($1::text IS NULL OR queue = $1)
  AND ($2::text IS NULL OR state = $2)
  AND ($3::text IS NULL OR name = $3)
  AND ($4::bigint IS NULL OR id < $4)
  AND ($5::text IS NULL OR id::text = $5 OR strpos(key, $5) > 0 OR strpos(payload::text, $5) > 0)
ORDER BY id DESC
LIMIT $6`;

/**
 * listJobs for the dead-letter queue — state $2 failed or cancelled, optional queue $1 and
 * cursor $3, limit $4 (no name or search filter: those use LIST_JOBS). The ids come from an
 * index-only walk of jobs_dead_idx (state, id) INCLUDE (queue). With LIST_JOBS the planner walks
 * the primary key backwards, expecting failed rows everywhere; with a million newer pending rows
 * that read 1M rows (1.2-5 s) to find 51 failed ones — this takes under a millisecond.
 */
export const LIST_DEAD_JOBS = `
SELECT ${JOB_COLUMNS} FROM ${JOBS}
WHERE id IN (
  SELECT id FROM ${JOBS}
  WHERE state = $2 AND state IN ('failed', 'cancelled')
    AND ($1::text IS NULL OR queue = $1)
    AND ($3::bigint IS NULL OR id < $3)
  ORDER BY id DESC
  LIMIT $4
)
ORDER BY id DESC`;

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

// ── claim, lease, finish ──────────────────────────────────────────────────────────────────

/**
 * Claims up to $2 due jobs of queue $1 for worker $3 with a lease of $4 ms, in one statement.
 * The CTE walks jobs_claim_idx (queue, priority DESC, run_at, id) WHERE state = 'pending' in claim
 * order and locks with SKIP LOCKED, so concurrent claimers take disjoint rows without waiting;
 * the partial index holds pending rows only, so millions of finished rows are never visited.
 * `ord` is the claim order (UPDATE … RETURNING has none).
 */
/**
 * The churning tables that need a vacuum now: at least $1 dead rows in jobs (or $2 in
 * job_count_deltas, which gets a row per writing statement), and no vacuum running on them.
 * The dead-row counts are the server's statistics (kept whether or not autovacuum is on).
 */
export const TABLES_TO_VACUUM = `
SELECT s.relname AS table
FROM pg_stat_user_tables s
WHERE s.relid IN ('${JOBS}'::regclass, '{{schema}}.job_count_deltas'::regclass)
  AND s.n_dead_tup >= CASE WHEN s.relid = '${JOBS}'::regclass THEN $1::bigint ELSE $2::bigint END
  AND NOT EXISTS (SELECT 1 FROM pg_stat_progress_vacuum p WHERE p.relid = s.relid)`;

/** SKIP_LOCKED: a vacuum of the table already running (autovacuum, another worker) wins; this one skips it. */
export const VACUUM_JOBS = `VACUUM (SKIP_LOCKED) ${JOBS}`;
export const VACUUM_JOB_COUNT_DELTAS = "VACUUM (SKIP_LOCKED) {{schema}}.job_count_deltas";

/**
 * Claims up to $2 due jobs of queue $1 for worker $3 with a lease of $4 ms; `ord` is the claim order.
 *
 * The jobs picked in `c` are updated through `id = ANY(ARRAY(...))`: one probe of jobs_pkey per id,
 * the only plan a ~10-element array leaves, and jobs_claim_idx cannot serve the UPDATE (its
 * state test is opaque). The earlier shape (UPDATE ... FROM c WHERE j.id = c.id AND j.state =
 * 'pending') flipped with statistics. bench/hot-plans.ts on 50,000 pending jobs, batches of 500,
 * EXPLAIN (ANALYZE, BUFFERS) of the first batch (a custom plan), load ~5:
 * - never analyzed: Nested Loop (c → Index Scan jobs_pkey), 2,022 buffers, 8.1 ms.
 * - analyzed: Hash Join (c, Hash (Seq Scan jobs, 50,000 rows)), 1,228 buffers, 20.4 ms — the plan
 *   of every connection's first 4-5 claims, until the generic plan took over.
 * This shape, both states: Limit/LockRows on jobs_claim_idx (513 buffers) → Index Scan (or Bitmap
 * Index Scan) jobs_pkey for the 500 ids (1,524 buffers), 6.3-7.0 ms; over a whole run 12.3
 * buffers and 8.9-9.3 µs of server time per job in both states (before: 13.3/11.8 µs never
 * analyzed, 13.2/10.3 µs analyzed). test/postgres-plans.test.ts holds the plans to it.
 */
export const CLAIM_JOBS = `
WITH c AS (
  SELECT id FROM ${JOBS}
  WHERE queue = $1 AND state = 'pending' AND run_at <= ${NOW}
  ORDER BY priority DESC, run_at, id
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE ${JOBS} j
  SET state = 'running', attempt = j.attempt + 1, lease_token = j.lease_token + 1, locked_by = $3,
      locked_until = ${NOW} + ${ms("$4::float8")}, started_at = ${NOW}, progress = NULL
  WHERE j.id = ANY(ARRAY(SELECT id FROM c)) AND j.state = ${opaque("'pending'::text")}
  RETURNING j.id, j.queue, j.name, j.payload, j.priority, j.attempt, j.max_attempts, j.key, j.run_at, j.created_at,
            j.lease_token, j.locked_until
)
SELECT row_number() OVER (ORDER BY priority DESC, run_at, id) AS ord, id, queue, name, payload, priority, attempt,
       max_attempts, key, ${epochMs("run_at")} AS run_at, ${epochMs("created_at")} AS created_at, lease_token,
       ${epochMs("locked_until")} AS locked_until
FROM claimed`;

/**
 * Extends the leases still held ($1 ids, $2 tokens) to now + $3 ms; returns the (id, token) pairs
 * held. Opaque arrays and state, as FINISH_JOBS (the same plan flip).
 */
export const EXTEND_LEASES = `
UPDATE ${JOBS} j SET locked_until = ${NOW} + ${ms("$3::float8")}
FROM unnest(${opaque("$1::bigint[]")}, ${opaque("$2::int[]")}) AS u(id, token)
WHERE j.id = u.id AND j.lease_token = u.token AND j.state = ${opaque("'running'::text")}
RETURNING j.id, u.token, j.cancel_requested`;

/**
 * returnJobs ($1 ids, $2 tokens): claimed jobs never started go back as they were — run_at kept,
 * the attempt not counted, no history entry; cancelled instead when a cancel was requested.
 * Opaque arrays and state, as FINISH_JOBS.
 */
export const RETURN_JOBS = `
WITH returned AS (
  UPDATE ${JOBS} j
  SET state = CASE WHEN j.cancel_requested THEN 'cancelled' ELSE 'pending' END,
      attempt = j.attempt - 1,
      started_at = CASE WHEN j.attempt = 1 THEN NULL ELSE j.started_at END,
      finished_at = CASE WHEN j.cancel_requested THEN ${NOW} ELSE j.finished_at END,
      locked_by = NULL, locked_until = NULL, progress = NULL, cancel_requested = false
  FROM unnest(${opaque("$1::bigint[]")}, ${opaque("$2::int[]")}) AS u(id, token)
  WHERE j.id = u.id AND j.lease_token = u.token AND j.state = ${opaque("'running'::text")}
  RETURNING j.queue, j.state
)
SELECT r.queue, r.state, ${notifyQueues("returned WHERE state = 'pending'")} AS notified FROM returned r`;

/** A cancel was requested while the job ran and the outcome is not "completed": it ends cancelled. */
const CANCELLING = "(j.cancel_requested AND u.kind <> 'completed')";

/**
 * A completion whose history entry is left implicit (JOB_COLUMNS rebuilds it from the columns;
 * migrations.ts version 3): no error fields, a worker and a start time to rebuild it from.
 */
const IMPLICIT =
  "(u.kind = 'completed' AND u.error IS NULL AND u.worker IS NOT NULL AND j.started_at IS NOT NULL)";

/**
 * Applies a batch of outcomes in one statement, each fenced by its lease token (a stale token or
 * a job no longer running matches nothing and reports not applied). The transition mirrors
 * shared.ts `outcomeTransition` and the history entry `attemptFromOutcome`:
 * - a cancel requested while the job ran turns every outcome but "completed" into "cancelled";
 * - retry → pending at now + delay (charged), snoozed → pending at now + delay (not charged),
 *   released → pending now (not charged, outcome "interrupted");
 * - leaving "pending" stamps finished_at; the lease and the cancel request are cleared.
 * Arrays: $1 id, $2 token, $3 kind, $4 delay ms, $5 result JSON (completed only), $6 worker,
 * $7 error message, $8 stack, $9 error kind. Returns the (id, token) pairs applied.
 *
 * What does not depend on the row is computed once per outcome in "u"; what depends on the row
 * (the cancel request, the attempt, started_at) is read in SET, from the row version the UPDATE
 * locked — a cancel request committed a moment before is seen, never lost. (A row subquery in
 * SET did the same but ran as a subplan per row: ~1 ms of a ~2.5 ms batch of 100.)
 *
 * The outcome arrays and the state test are opaque, so the one plan is Nested Loop (Function
 * Scan u → Index Scan jobs_pkey). With the values visible, statistics taken while every job was
 * pending made the planner expect no running job, scan jobs and rescan the 500 outcomes per
 * running row. bench/hot-plans.ts, 50,000 jobs, batches of 500, first batch (custom plan):
 * - never analyzed: Hash Join (u, Hash (Seq Scan jobs)), 5,133 buffers, 12.3 ms.
 * - analyzed: Nested Loop (Seq Scan jobs → Function Scan u, 500 loops), 97.2 ms — on every
 *   connection's first 5 finishes; over a run 23.2 µs/job of server time instead of 14.1.
 * This shape, both states: Nested Loop (Function Scan → Index Scan jobs_pkey, 500 loops, 1,856
 * buffers), 7.6-7.8 ms; 14.2 buffers and 14.2-14.6 µs/job over a run in both states.
 */
export const FINISH_JOBS = `
WITH u AS (
  SELECT u.*,
         CASE WHEN u.kind IN ('retry', 'snoozed', 'released') THEN 'pending' ELSE u.kind END AS to_state,
         CASE u.kind WHEN 'retry' THEN 'retried' WHEN 'released' THEN 'interrupted' ELSE u.kind END AS outcome,
         u.kind IN ('snoozed', 'released') AS uncharge,
         CASE WHEN u.kind IN ('retry', 'snoozed') THEN ${NOW} + ${ms("coalesce(u.delay_ms, 0)")}
              WHEN u.kind = 'released' THEN ${NOW} END AS retry_at,
         jsonb_strip_nulls(jsonb_build_object('error', u.error, 'stack', u.stack, 'kind', u.error_kind)) AS error_fields
  FROM unnest(${["$1::bigint[]", "$2::int[]", "$3::text[]", "$4::float8[]", "$5::text[]", "$6::text[]", "$7::text[]", "$8::text[]", "$9::text[]"].map(opaque).join(", ")})
    AS u(id, token, kind, delay_ms, result, worker, error, stack, error_kind)
), finished AS (
  UPDATE ${JOBS} j
  SET state = CASE WHEN ${CANCELLING} THEN 'cancelled' ELSE u.to_state END,
      attempt = j.attempt - CASE WHEN u.uncharge AND NOT ${CANCELLING} THEN 1 ELSE 0 END,
      run_at = CASE WHEN ${CANCELLING} OR u.retry_at IS NULL THEN j.run_at ELSE u.retry_at END,
      finished_at = CASE WHEN u.to_state = 'pending' AND NOT ${CANCELLING} THEN j.finished_at ELSE ${NOW} END,
      attempts = CASE WHEN ${IMPLICIT} THEN j.attempts ELSE j.attempts || jsonb_build_array(
        jsonb_build_object('attempt', j.attempt, 'startedAt', ${iso(`coalesce(j.started_at, ${NOW})`)},
                           'finishedAt', ${iso(NOW)}, 'worker', u.worker,
                           'outcome', CASE WHEN ${CANCELLING} THEN 'cancelled' ELSE u.outcome END)
        || u.error_fields
        || CASE WHEN ${CANCELLING} OR u.retry_at IS NULL THEN '{}'::jsonb
                ELSE jsonb_build_object('retryAt', ${iso("u.retry_at")}) END) END,
      completed_by = CASE WHEN ${IMPLICIT} THEN u.worker END,
      last_error = coalesce(u.error, j.last_error),
      result = CASE WHEN u.kind = 'completed' THEN u.result::jsonb ELSE j.result END,
      locked_by = NULL, locked_until = NULL, cancel_requested = false
  FROM u
  WHERE j.id = u.id AND j.lease_token = u.token AND j.state = ${opaque("'running'::text")}
  RETURNING j.id, u.token, j.queue, j.state
)
SELECT f.id, f.token, f.queue, f.state, ${notifyQueues("finished WHERE state = 'pending'")} AS notified FROM finished f`;

/** completeInTransaction: locks the job for the transaction if the lease ($1 id, $2 token) is held. */
export const LOCK_HELD_JOB = `SELECT id FROM ${JOBS} WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR UPDATE`;

/** $1 id, $2 token, $3 progress JSON. */
export const SET_PROGRESS = `UPDATE ${JOBS} SET progress = $3::jsonb WHERE id = $1 AND lease_token = $2 AND state = 'running'`;

/**
 * Rescues up to $1 running jobs whose lease expired: pending now (outcome "lost", the attempt
 * stays charged), failed when the attempts are spent, cancelled when a cancel was requested —
 * as the memory store does. SKIP LOCKED: any number of workers may run the rescuer at once; a
 * row one of them holds is skipped by the others, never rescued twice (and a job a worker is
 * completing in a transaction holds its row lock, so it is not rescued under it).
 */
export const RESCUE_EXPIRED = `
WITH expired AS (
  SELECT id FROM ${JOBS}
  WHERE locked_until < ${NOW} AND state = 'running'
  ORDER BY locked_until
  LIMIT $1
  FOR UPDATE SKIP LOCKED
), rescued AS (
  UPDATE ${JOBS} j
  SET (state, run_at, finished_at, attempts, last_error, locked_by, locked_until, cancel_requested) = (
    SELECT v.state,
           CASE WHEN v.state = 'pending' THEN ${NOW} ELSE j.run_at END,
           CASE WHEN v.state = 'pending' THEN j.finished_at ELSE ${NOW} END,
           j.attempts || jsonb_build_array(jsonb_build_object(
             'attempt', j.attempt, 'startedAt', ${iso(`coalesce(j.started_at, ${NOW})`)}, 'finishedAt', ${iso(NOW)},
             'worker', j.locked_by, 'outcome', 'lost', 'error', v.error, 'kind', 'lost')),
           v.error, NULL::text, NULL::timestamptz, false
    FROM (
      SELECT CASE WHEN j.cancel_requested THEN 'cancelled'
                  WHEN j.attempt >= j.max_attempts THEN 'failed'
                  ELSE 'pending' END AS state,
             'lease expired: worker ' || coalesce(j.locked_by, '?') || ' stopped heartbeating' AS error
    ) v
  )
  FROM expired e
  WHERE j.id = e.id AND j.state = 'running'
  RETURNING j.id, j.queue, j.name, j.state, j.attempt
)
SELECT r.*, ${notifyQueues("rescued WHERE state = 'pending'")} AS notified FROM rescued r`;

/** Earliest run_at of pending jobs in queues $1 (pendingHeads per queue). */
export const NEXT_RUN_AT = `
SELECT min(h.run_at) AS next FROM unnest($1::text[]) AS q(queue), LATERAL ${pendingHeads("q.queue")} h`;

// ── admin: cancel, retry, discard, prune ──────────────────────────────────────────────────

/** pending → cancelled; running → cancel requested; any other state unchanged. Returns the job. */
export const CANCEL_JOB = `
WITH updated AS (
  UPDATE ${JOBS}
  SET state = CASE WHEN state = 'pending' THEN 'cancelled' ELSE state END,
      finished_at = CASE WHEN state = 'pending' THEN ${NOW} ELSE finished_at END,
      cancel_requested = CASE WHEN state = 'running' THEN true ELSE cancel_requested END
  WHERE id = $1 AND state IN ('pending', 'running')
  RETURNING ${JOB_COLUMNS}
)
SELECT * FROM updated
UNION ALL
SELECT ${JOB_COLUMNS} FROM ${JOBS} WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM updated)`;

/**
 * → pending now, attempt budget reset, history kept. $1 ids: failed or cancelled ones; null: the
 * dead-letter queue's failed jobs only. $2 queue (null: any).
 */
export const RETRY_JOBS = `
WITH retried AS (
  UPDATE ${JOBS} SET state = 'pending', run_at = ${NOW}, attempt = 0, finished_at = NULL
  WHERE (state = 'failed' OR (state = 'cancelled' AND $1::bigint[] IS NOT NULL))
    AND ($1::bigint[] IS NULL OR id = ANY($1::bigint[]))
    AND ($2::text IS NULL OR queue = $2)
  RETURNING queue
)
SELECT (SELECT count(*) FROM retried) AS n, (SELECT array_agg(DISTINCT queue) FROM retried) AS queues, x.notified
FROM ${notifyQueues("retried")} x`;

/** Deletes failed jobs. $1 ids (null: any), $2 queue (null: any). */
export const DISCARD_JOBS = `
DELETE FROM ${JOBS}
WHERE state = 'failed'
  AND ($1::bigint[] IS NULL OR id = ANY($1::bigint[]))
  AND ($2::text IS NULL OR queue = $2)`;

/**
 * Retention, in batches of $2 rows per statement so no statement holds many row locks or runs
 * long: a range of jobs_finished_idx from its oldest end. One statement per retention class
 * (an OR of both would be a bitmap scan of every old row, per batch).
 */
export const PRUNE_COMPLETED = `
WITH victims AS (
  SELECT id FROM ${JOBS}
  WHERE state IN ('completed', 'cancelled') AND finished_at < ${NOW} - ${ms("$1::float8")}
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)
DELETE FROM ${JOBS} j USING victims v WHERE j.id = v.id`;

export const PRUNE_FAILED = `
WITH victims AS (
  SELECT id FROM ${JOBS}
  WHERE state = 'failed' AND finished_at < ${NOW} - ${ms("$1::float8")}
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)
DELETE FROM ${JOBS} j USING victims v WHERE j.id = v.id`;

// ── ledger ────────────────────────────────────────────────────────────────────────────────

/** `value` NULL (not JSON null) records `undefined`. */
export const LEDGER_GET = "SELECT value, value IS NULL AS is_undefined FROM {{schema}}.ledger WHERE key = $1";

/** First write wins: a key already recorded keeps its value. */
export const LEDGER_PUT = `
INSERT INTO {{schema}}.ledger (key, job_id, value) VALUES ($1, $2, $3::jsonb)
ON CONFLICT (key) DO NOTHING`;

// ── schedules ─────────────────────────────────────────────────────────────────────────────

const SCHEDULE_COLUMNS = `name, cron, timezone, job_name, queue, payload, priority, missed, source, next_run_at,
  last_fired_at, last_slot, created_at`;

/**
 * Upserts schedules from a JSON array ($1). An existing schedule whose cron and time zone are
 * unchanged keeps its next_run_at, so a restart neither skips nor repeats a slot; last fired
 * time, last slot and creation time are always kept.
 */
export const UPSERT_SCHEDULES = `
INSERT INTO {{schema}}.schedules AS s
  (name, cron, timezone, job_name, queue, payload, priority, missed, source, next_run_at, created_at)
SELECT x.name, x.cron, x.timezone, x.job_name, x.queue, coalesce(x.payload, 'null'::jsonb), x.priority, x.missed,
       x.source, x.next_run_at, ${NOW}
FROM jsonb_to_recordset($1::jsonb) AS x(name text, cron text, timezone text, job_name text, queue text,
                                        payload jsonb, priority integer, missed text, source text,
                                        next_run_at timestamptz)
ON CONFLICT (name) DO UPDATE SET
  cron = excluded.cron, timezone = excluded.timezone, job_name = excluded.job_name, queue = excluded.queue,
  payload = excluded.payload, priority = excluded.priority, missed = excluded.missed, source = excluded.source,
  next_run_at = CASE WHEN s.cron = excluded.cron AND s.timezone = excluded.timezone
                     THEN s.next_run_at ELSE excluded.next_run_at END`;

/** syncSchedules: code schedules no longer defined ($1: the names defined). */
export const DELETE_STALE_CODE_SCHEDULES = `
DELETE FROM {{schema}}.schedules WHERE source = 'code' AND NOT (name = ANY($1::text[]))`;

export const REMOVE_SCHEDULE = "DELETE FROM {{schema}}.schedules WHERE name = $1";

export const LIST_SCHEDULES = `SELECT ${SCHEDULE_COLUMNS} FROM {{schema}}.schedules`;

export const DUE_SCHEDULES = `SELECT ${SCHEDULE_COLUMNS} FROM {{schema}}.schedules WHERE next_run_at <= ${NOW}`;

/**
 * Compare-and-set: only the scheduler that read next_run_at = $2 moves it to $3 (ms precision, as
 * JavaScript holds it). $4 the slot fired, or null when none was.
 */
export const ADVANCE_SCHEDULE = `
UPDATE {{schema}}.schedules
SET next_run_at = $3,
    last_slot = coalesce($4::timestamptz, last_slot),
    last_fired_at = CASE WHEN $4::timestamptz IS NULL THEN last_fired_at ELSE ${NOW} END
WHERE name = $1 AND date_trunc('milliseconds', next_run_at) = $2::timestamptz`;

// ── workers registry ──────────────────────────────────────────────────────────────────────

export const REGISTER_WORKER = `
INSERT INTO {{schema}}.workers (id, host, pid, queues, started_at, last_heartbeat_at, running, processed)
VALUES ($1, $2, $3, $4::jsonb, ${NOW}, ${NOW}, $5, $6)
ON CONFLICT (id) DO UPDATE SET
  host = excluded.host, pid = excluded.pid, queues = excluded.queues, started_at = excluded.started_at,
  last_heartbeat_at = excluded.last_heartbeat_at, running = excluded.running, processed = excluded.processed`;

export const HEARTBEAT_WORKER = `
UPDATE {{schema}}.workers SET running = $2, processed = $3, last_heartbeat_at = ${NOW} WHERE id = $1`;

export const UNREGISTER_WORKER = "DELETE FROM {{schema}}.workers WHERE id = $1";

export const LIST_WORKERS = `
SELECT id, host, pid, queues, started_at, last_heartbeat_at, running, processed
FROM {{schema}}.workers
WHERE last_heartbeat_at >= ${NOW} - ${ms("$1::float8")}
ORDER BY started_at, id`;
