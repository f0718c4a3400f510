/**
 * The SQLite store's index layout (migrations.ts version 5): running jobs are in
 * errand_jobs_lease_idx only, so a claim and a finish change four index entries each instead
 * of seven and six. What that asks of the reads, checked here:
 * - every statement of the store that reads errand_jobs does it through an index or the primary
 *   key (EXPLAIN QUERY PLAN, nothing executed), on a fresh file and after ANALYZE of a table in
 *   use — SQLite uses a partial index only when the query repeats its condition, and forgetting
 *   `state <> 'running'` turns a read into a scan of the whole table;
 * - a database made before version 5, holding jobs in every state, upgrades in place and reads
 *   the same afterwards (stats, listings by state and queue, the next due time).
 *
 *   node --import tsx --test test/sqlite-plans.test.ts
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import Database from "better-sqlite3";
import * as Flow from "../src/store/sqlite/flow-queries.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import * as Pause from "../src/store/sqlite/pause-queries.js";
import * as Q from "../src/store/sqlite/queries.js";
import { applyMigrationsBelow, connection, fresh, tempPath } from "./helpers/sqlite.js";

/** Each exported statement that reads or writes errand_jobs, by module and name. */
function statements(): [string, string][] {
  const found: [string, string][] = [];
  for (const [module, exports] of [
    ["queries", Q],
    ["flow-queries", Flow],
    ["pause-queries", Pause],
  ] as const) {
    for (const [name, sql] of Object.entries(exports)) {
      // Fragments (a CTE to splice into a statement) are not statements of their own.
      if (
        typeof sql !== "string" ||
        !/\berrand_jobs\b/.test(sql) ||
        !/^\s*(WITH|SELECT|UPDATE|DELETE|INSERT)\b/i.test(sql)
      )
        continue;
      found.push([`${module}.${name}`, sql]);
    }
  }
  return found;
}

/** Placeholder values for every parameter (EXPLAIN QUERY PLAN binds but runs nothing). */
function placeholders(sql: string): unknown[] {
  const named = Object.fromEntries([...sql.matchAll(/@(\w+)/g)].map((m) => [m[1], 1]));
  const positional = Array((sql.match(/\?/g) ?? []).length).fill(1);
  return Object.keys(named).length > 0 ? [...positional, named] : positional;
}

for (const analyzed of [false, true]) {
  test(`every statement reads errand_jobs through an index or the primary key (${analyzed ? "analyzed" : "never analyzed"})`, async (t) => {
    const { path, store } = await fresh(t);
    const db = connection(t, path);
    if (analyzed) {
      // Statistics of a table in use: jobs in every state, two queues, three priorities.
      const job = (i: number) => ({
        queue: i % 2 ? "a" : "b",
        name: "n",
        payload: {},
        priority: i % 3,
        maxAttempts: 1,
      });
      await store.insertJobs(Array.from({ length: 3000 }, (_, i) => job(i)));
      for (const queue of ["a", "b"]) {
        const claimed = await store.claimJobs({ queue, limit: 1000, workerId: "w", leaseMs: 60_000 });
        const finishing = claimed.slice(0, 900);
        await store.finishJobs(
          finishing.map((c, i) => ({
            id: c.id,
            leaseToken: c.leaseToken,
            kind: i % 3 ? ("completed" as const) : ("failed" as const),
            worker: "w",
            ...(i % 3 ? {} : { error: { message: "no", kind: "permanent" as const } }),
          })),
        );
      }
      db.exec("ANALYZE");
    }
    const all = statements();
    assert.ok(all.length > 30, `found only ${all.length} statements`);
    const scans: string[] = [];
    for (const [name, sql] of all) {
      const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...placeholders(sql)) as { detail: string }[];
      for (const { detail } of plan) {
        if (!/\berrand_jobs\b/.test(detail)) continue;
        // A walk of errand_jobs_lease_idx is a walk of the running jobs, which are few.
        const onIndex = / USING (COVERING )?INDEX errand_jobs_\w+_idx| USING INTEGER PRIMARY KEY/.test(
          detail,
        );
        const runningOnly = /USING INDEX errand_jobs_lease_idx/.test(detail);
        if (!onIndex || (detail.startsWith("SCAN") && !runningOnly)) scans.push(`${name}: ${detail}`);
      }
    }
    assert.deepEqual(scans, []);
  });
}

test("the claim and the finish change no entry of the state indexes", async (t) => {
  const { path, store } = await fresh(t);
  const db = connection(t, path);
  const indexes = db
    .prepare(
      "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'errand_jobs' AND sql IS NOT NULL",
    )
    .all() as { name: string; sql: string }[];
  const byName = new Map(indexes.map((i) => [i.name, i.sql]));
  assert.equal(byName.has("errand_jobs_pending_run_at_idx"), false);
  for (const name of ["errand_jobs_queue_state_idx", "errand_jobs_state_idx"])
    assert.match(byName.get(name) ?? "", /WHERE state <> 'running'$/, name);
  await store.insertJobs([{ queue: "q", name: "n", payload: {}, priority: 0, maxAttempts: 1 }]);
  const [claimed] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w", leaseMs: 60_000 });
  assert.ok(claimed);
  // The running job is in the lease index and in neither state index.
  const inIndex = (index: string, where: string) =>
    db.prepare(`SELECT count(*) FROM errand_jobs INDEXED BY ${index} WHERE ${where}`).pluck().get();
  assert.equal(inIndex("errand_jobs_state_idx", "state <> 'running'"), 0);
  assert.equal(inIndex("errand_jobs_queue_state_idx", "queue = 'q' AND state <> 'running'"), 0);
  assert.equal(inIndex("errand_jobs_lease_idx", "state = 'running'"), 1);
  assert.deepEqual(
    await store.finishJobs([
      { id: claimed.id, leaseToken: claimed.leaseToken, kind: "completed", worker: "w" },
    ]),
    [true],
  );
  assert.equal(inIndex("errand_jobs_state_idx", "state <> 'running'"), 1);
  assert.equal(inIndex("errand_jobs_lease_idx", "state = 'running'"), 0);
});

test("a database made before version 5 upgrades in place and reads the same", async (t) => {
  const path = await tempPath(t);
  const old = new Database(path);
  applyMigrationsBelow(old, 5);
  const now = Date.now();
  const insert = old.prepare(`
    INSERT INTO errand_jobs (queue, name, state, priority, attempt, max_attempts, run_at, payload, created_at,
                             started_at, finished_at, locked_by, locked_until, lease_token)
    VALUES (@queue, 'n', @state, @priority, @attempt, 3, @runAt, '{}', @runAt, @startedAt, @finishedAt,
            @lockedBy, @lockedUntil, @attempt)`);
  const row = (over: Record<string, unknown>) => ({
    queue: "a",
    state: "pending",
    priority: 0,
    attempt: 0,
    runAt: now - 60_000,
    startedAt: null,
    finishedAt: null,
    lockedBy: null,
    lockedUntil: null,
    ...over,
  });
  insert.run(row({ priority: 5, runAt: now - 1_000 })); // due, high priority
  insert.run(row({ priority: 0, runAt: now - 30_000 })); // due, the oldest
  insert.run(row({ priority: 5, runAt: now + 3_600_000 })); // delayed
  const running = {
    state: "running",
    attempt: 1,
    startedAt: now - 500,
    lockedBy: "w",
    lockedUntil: now + 60_000,
  };
  insert.run(row(running));
  insert.run(row({ ...running, queue: "only-running" })); // a queue whose every job runs
  insert.run(row({ state: "completed", attempt: 1, startedAt: now - 2_000, finishedAt: now - 1_000 }));
  insert.run(row({ state: "failed", attempt: 3, startedAt: now - 2_000, finishedAt: now - 1_000 }));
  insert.run(row({ queue: "b", state: "cancelled", finishedAt: now - 1_000 }));
  old.close();

  const store = openSqliteStore({ path });
  t.after(() => store.close());
  await store.migrate();

  const stats = await store.stats();
  assert.deepEqual(
    stats.map((s) => [s.queue, s.pending, s.delayed, s.running, s.completed, s.failed, s.cancelled]),
    [
      ["a", 2, 1, 1, 1, 1, 0],
      ["b", 0, 0, 0, 0, 0, 1],
      ["only-running", 0, 0, 1, 0, 0, 0],
    ],
  );
  const a = stats[0];
  assert.ok(a && a.oldestPendingMs !== null && a.oldestPendingMs >= 30_000 && a.oldestPendingMs < 120_000);
  assert.equal((await store.nextRunAt(["a"]))?.getTime(), now - 30_000);
  assert.equal(await store.nextRunAt(["only-running", "b"]), null);

  const states = async (filter: Parameters<typeof store.listJobs>[0]) =>
    (await store.listJobs(filter)).jobs.map((j) => `${j.queue}:${j.state}`);
  assert.deepEqual(await states({ state: "running" }), ["only-running:running", "a:running"]);
  assert.deepEqual(await states({ queue: "a", state: "running" }), ["a:running"]);
  assert.deepEqual(await states({ state: "failed" }), ["a:failed"]);
  assert.deepEqual(await states({ queue: "a" }), [
    "a:failed",
    "a:completed",
    "a:running",
    "a:pending",
    "a:pending",
    "a:pending",
  ]);
  // Keyset pagination through the running jobs.
  const first = await store.listJobs({ state: "running", limit: 1 });
  assert.equal(first.jobs[0]?.queue, "only-running");
  const second = await store.listJobs({ state: "running", limit: 1, cursor: first.nextCursor ?? undefined });
  assert.equal(second.jobs[0]?.queue, "a");

  // The upgraded file takes the processing loop: claimed in order, finished, counted.
  const claimed = await store.claimJobs({ queue: "a", limit: 5, workerId: "w2", leaseMs: 60_000 });
  assert.deepEqual(
    claimed.map((c) => c.priority),
    [5, 0],
  );
  await store.finishJobs(
    claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "w2" })),
  );
  const after = (await store.stats()).find((s) => s.queue === "a");
  assert.deepEqual([after?.pending, after?.delayed, after?.running, after?.completed], [0, 1, 1, 3]);
});
