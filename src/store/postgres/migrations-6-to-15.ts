/**
 * PostgreSQL migrations 6 to 15 (tracing, waitFor, the ledger's scopes, dependencies, flow
 * control's one-round-trip claim, its plans and its key walk, the schedules' flow keys), moved
 * out of migrations.ts only to keep files short:
 * migrations.ts lists them in MIGRATIONS after versions 1 to 5, and its header says how they
 * run and why a shipped migration's text is never edited.
 */
import { FLOW_CLAIM_DEFINITION, FLOW_CLAIM_TABLES } from "./sql/flow-claim-function.js";

/** PostgresMigration entries, typed where migrations.ts spreads them (importing the type here would make a cycle). */
export const MIGRATIONS_6_TO_15 = [
  {
    version: 6,
    name: "tracing: the trace context of the enqueue",
    // The W3C trace context active at enqueue (tracing/traceparent.ts), written by the insert of
    // traced jobs (sql/jobs.ts INSERT_*TRACED_JOBS) and handed back by the claims, so each
    // attempt's span links to it on whichever worker runs it. Nullable, no default: nothing is
    // rewritten, and untraced jobs store a NULL (no bytes in the row). Job logs need no column:
    // they are part of each attempt's history entry (attempts). Not breaking: an older errand
    // ignores the column.
    sql: `
ALTER TABLE {{schema}}.jobs ADD COLUMN IF NOT EXISTS trace_context text;
`,
  },
  {
    version: 7,
    name: "scoped keys: a job gives its key up when an enqueue's scope no longer counts it",
    // Uniqueness with a scope (store/unique.ts): an enqueue whose `unique.while`/`for` no longer
    // counts the job holding its key marks that job key_released and inserts its own, so several
    // jobs may share a key, one holding it; the unique index holds the holders only. A column
    // with a constant default is added without a rewrite (PostgreSQL 11+); the new index is one
    // pass over the keyed rows (on a big table, build it by hand first with CREATE UNIQUE INDEX
    // CONCURRENTLY: IF NOT EXISTS then finds it). Breaking: an older errand's ON CONFLICT names
    // the old index's predicate, which no index has any more, so its keyed enqueues would fail.
    breaking: true,
    sql: `
ALTER TABLE {{schema}}.jobs ADD COLUMN IF NOT EXISTS key_released boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX IF NOT EXISTS jobs_key_held_idx ON {{schema}}.jobs (queue, key)
  WHERE key IS NOT NULL AND NOT key_released;
DROP INDEX IF EXISTS {{schema}}.jobs_key_idx;
`,
  },
  {
    version: 8,
    name: "ctx.once scopes (ledger entries per job or global, pruned with their job); awaited jobs notify when they finish",
    // ctx.once keys were global across all jobs: a job skipped its own side effect when any other
    // job had used the same key. An entry now belongs to a scope: its job's id (the default) or
    // '' (global, ctx.once(key, fn, { scope: "global" })). Entries recorded before this version
    // become global — their key meant that then — and a per-job read also finds a global entry
    // its own job recorded, so a job retried across the upgrade still skips what it did before
    // (ledger.ts). ADD COLUMN with a constant default rewrites nothing; the new primary key is
    // built from the table (a ledger holds one row per side effect done).
    //
    // A job's entries are deleted with its row, whatever deletes it (pruning, discard): the
    // statement trigger reads the deleted ids from the transition table. Global entries are
    // pruned by age (ledger_global_idx, PRUNE_GLOBAL_LEDGER).
    //
    // waitFor (result-waiters.ts): a process waiting for jobs records them in `awaited` (one row
    // per job and waiting store). When an UPDATE moves awaited jobs to completed, failed or
    // cancelled, the statement trigger deletes their rows and sends one NOTIFY on the store's
    // channel with the ids ("!" and the ids, comma-separated; "!" alone when they do not fit a
    // notification: every waiter looks again). While nothing is awaited it costs one probe of
    // an empty table per state-changing statement and sends nothing: a finish wakes nobody
    // unless someone waits for it (sql/leases.ts FINISH_COMPLETED). (A trigger with a
    // transition table cannot name columns: lease extensions fire it too, for that one probe.)
    //
    // Breaking: an older errand's ctx.once writes ON CONFLICT (key), which no longer has a
    // unique index to match, and its reads would see other jobs' entries. Stop older workers
    // before starting this version.
    breaking: true,
    sql: `
ALTER TABLE {{schema}}.ledger ADD COLUMN IF NOT EXISTS scope text NOT NULL DEFAULT '';
ALTER TABLE {{schema}}.ledger DROP CONSTRAINT IF EXISTS ledger_pkey;
ALTER TABLE {{schema}}.ledger ADD PRIMARY KEY (scope, key);
CREATE INDEX IF NOT EXISTS ledger_global_idx ON {{schema}}.ledger (created_at) WHERE scope = '';

CREATE OR REPLACE FUNCTION {{schema}}.jobs_ledger_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- An array, not a join: one probe of ledger_pkey (scope first) per deleted job, whatever the
  -- planner guesses of the transition table, never a scan of a big ledger per prune batch.
  DELETE FROM {{schema}}.ledger WHERE scope = ANY(ARRAY(SELECT id::text FROM old_rows));
  RETURN NULL;
END
$$;
CREATE TRIGGER jobs_ledger_delete AFTER DELETE ON {{schema}}.jobs
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_ledger_delete();

CREATE TABLE IF NOT EXISTS {{schema}}.awaited (
  job_id bigint      NOT NULL,
  waiter text        NOT NULL,
  since  timestamptz NOT NULL DEFAULT statement_timestamp(),
  PRIMARY KEY (job_id, waiter)
);
CREATE OR REPLACE FUNCTION {{schema}}.jobs_notify_awaited() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids text;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM {{schema}}.awaited) THEN
    RETURN NULL;
  END IF;
  WITH done AS (
    DELETE FROM {{schema}}.awaited a USING new_rows n
    WHERE a.job_id = n.id AND n.state IN ('completed', 'failed', 'cancelled')
    RETURNING a.job_id
  )
  SELECT string_agg(DISTINCT job_id::text, ',') INTO ids FROM done;
  IF ids IS NOT NULL THEN
    PERFORM pg_notify({{channel}}, CASE WHEN length(ids) < 7900 THEN '!' || ids ELSE '!' END);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER jobs_notify_awaited AFTER UPDATE ON {{schema}}.jobs
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_notify_awaited();
`,
  },
  {
    version: 9,
    name: "dependencies: the waiting state, dependency counters and edges",
    // A job with unfinished dependencies is 'waiting' (store/dependency-plan.ts): outside
    // jobs_claim_idx (WHERE state = 'pending'), so claims never see it and cost what they did.
    // The state CHECK is replaced by a wider one NOT VALID: every stored row satisfies it, and
    // validating would scan the table under lock. The new columns are nullable without a
    // default: nothing is rewritten, and a job without dependencies stores them as NULL bits
    // (its row and WAL stay the size they were: with NOT NULL DEFAULT 0/false they cost ~21
    // more WAL bytes per claim and per finish, bench/hot-plans.ts). has_dependents (NULL =
    // false) flags the jobs whose finish must resolve dependents; the finish statements skip
    // the rows that have it, which then go through the transaction that resolves them
    // (leases.ts) — a job without dependents pays one test of a NULL. Edges: (depends_on, job_id) for the resolution, (job_id) for the job view.
    // A statement-level trigger forgets a deleted dependent's edges. Not breaking: an older
    // errand never claims a waiting job; it would not release one either, so finish a rolling
    // deploy before enqueueing flows.
    sql: `
ALTER TABLE {{schema}}.jobs DROP CONSTRAINT IF EXISTS jobs_state_check;
ALTER TABLE {{schema}}.jobs ADD CONSTRAINT jobs_state_check
  CHECK (state IN ('waiting', 'pending', 'running', 'completed', 'failed', 'cancelled')) NOT VALID;
ALTER TABLE {{schema}}.jobs ADD COLUMN IF NOT EXISTS dependencies_left integer;
ALTER TABLE {{schema}}.jobs ADD COLUMN IF NOT EXISTS on_dependency_failure text;
ALTER TABLE {{schema}}.jobs ADD COLUMN IF NOT EXISTS node text;
ALTER TABLE {{schema}}.jobs ADD COLUMN IF NOT EXISTS has_dependents boolean;
CREATE TABLE IF NOT EXISTS {{schema}}.job_dependencies (
  depends_on bigint NOT NULL,
  job_id     bigint NOT NULL,
  PRIMARY KEY (depends_on, job_id)
);
CREATE INDEX IF NOT EXISTS job_dependencies_job_idx ON {{schema}}.job_dependencies (job_id, depends_on);
CREATE OR REPLACE FUNCTION {{schema}}.jobs_forget_dependencies() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{schema}}.job_dependencies e USING old_rows o
  WHERE o.on_dependency_failure IS NOT NULL AND e.job_id = o.id;
  RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS jobs_forget_dependencies ON {{schema}}.jobs;
CREATE TRIGGER jobs_forget_dependencies AFTER DELETE ON {{schema}}.jobs
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_forget_dependencies();
`,
  },
  {
    version: 10,
    name: "flow control: the claim in one round trip (flow_claim), the claim log counted per key",
    // sql/flow-claim-function.ts says why a function. Not breaking: an older errand claims in its
    // own transaction under the same advisory lock, and its one-row-per-job claim log rows read as
    // n = 1 (the default).
    sql: FLOW_CLAIM_TABLES + FLOW_CLAIM_DEFINITION,
  },
  {
    version: 11,
    name: "flow_claim: index plans before ANALYZE, no quadratic joins",
    // The function's newest text again (sql/flow-claim-function.ts says why migration 10 installs
    // it too). Not breaking: same arguments, same rows.
    sql: FLOW_CLAIM_DEFINITION,
  },
  {
    version: 12,
    name: "flow_claim: one index probe per key, the key walk and the claim in one statement",
    // The function's newest text again, as migration 11. Not breaking: same arguments, same rows,
    // same decisions (sql/flow-claim-function.ts, bench/NOTES.md finding 16).
    sql: FLOW_CLAIM_DEFINITION,
  },
  {
    version: 13,
    name: "flow_claim: the claim log kept for the longest rate window in use",
    // One row per rate-limited queue: the longest rate window a claim of it used lately, which
    // every claim keeps the log for (store/flow-plan.ts claimLogRetention says why), and the
    // function's newest text that reads and renews it. Not breaking: an older errand's function
    // is replaced; an older errand claiming meanwhile forgets by its own window, as before.
    sql: `
CREATE TABLE IF NOT EXISTS {{schema}}.flow_windows (
  queue      text PRIMARY KEY,
  keep_ms    float8      NOT NULL,
  keep_until timestamptz NOT NULL
);
${FLOW_CLAIM_DEFINITION}`,
  },
  {
    version: 14,
    name: "flow_claim: the key walk reads a key's share of jobs in the descent that finds the key",
    // The function's newest text again, as migration 11. Not breaking: same arguments, same rows,
    // same decisions (sql/flow-claim-function.ts, bench/NOTES.md finding 16).
    sql: FLOW_CLAIM_DEFINITION,
  },
  {
    version: 15,
    name: "schedules: the flow key of the enqueued jobs",
    // Computed from the schedule's fixed payload by the process that knows the job, so a
    // scheduler that does not know it enqueues the slot's job under its key (schedule/scheduler.ts).
    // Nullable, no default: existing rows have none until a process that knows the job syncs or
    // re-adds them. Not breaking: an older errand neither writes nor reads the column.
    sql: `
ALTER TABLE {{schema}}.schedules ADD COLUMN IF NOT EXISTS flow_key text;
`,
  },
];
