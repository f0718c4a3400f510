/**
 * SQLite migration 9 rebuilds errand_jobs so that its state CHECK allows 'waiting' (SQLite cannot
 * alter a constraint): a database as the version before it left it, holding jobs, is upgraded in
 * place — rows, indexes, triggers and the AUTOINCREMENT counter kept (an id of a pruned job is
 * never given again) — and then stores waiting jobs.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import Database from "better-sqlite3";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { MIGRATIONS } from "../src/store/sqlite/migrations.js";
import { applyMigrationsBelow, tempPath } from "./helpers/sqlite.js";

test("an old database is rebuilt with the waiting state: rows, indexes and ids kept", async (t) => {
  const path = await tempPath(t);
  const db = new Database(path);
  // The version that rebuilds the table is the one with a `before` step (widenStateCheck).
  const rebuild = MIGRATIONS.find((m) => m.before !== undefined)?.version as number;
  assert.equal(rebuild, 9);
  applyMigrationsBelow(db, rebuild);
  const insert = db.prepare(
    "INSERT INTO errand_jobs (queue, name, state, max_attempts, run_at, payload, created_at, flow_key) VALUES ('q', 'old', ?, 3, 0, '{\"n\":1}', 0, ?)",
  );
  insert.run("pending", null);
  insert.run("completed", "k");
  insert.run("failed", null);
  db.prepare("DELETE FROM errand_jobs WHERE id = 3").run(); // pruned: id 3 must never come back
  const schemaOf = (on: Database.Database) =>
    on
      .prepare(
        "SELECT type, name FROM sqlite_schema WHERE type IN ('index', 'trigger') AND tbl_name = 'errand_jobs' AND sql IS NOT NULL ORDER BY type, name",
      )
      .all();
  const before = schemaOf(db);
  assert.ok(
    before.some((o) => (o as { type: string }).type === "trigger"),
    "the ledger's delete trigger exists before",
  );
  assert.throws(
    () => db.prepare("UPDATE errand_jobs SET state = 'waiting' WHERE id = 1").run(),
    /CHECK constraint/,
  );
  db.close();

  const store = openSqliteStore({ path });
  t.after(() => store.close());
  await store.migrate();
  const [a, b] = [await store.getJob("1"), await store.getJob("2")];
  assert.equal(a?.state, "pending");
  assert.deepEqual(a?.payload, { n: 1 });
  assert.equal(b?.state, "completed");
  const [w] = await store.insertJobs([
    {
      queue: "q",
      name: "new",
      payload: {},
      priority: 0,
      maxAttempts: 3,
      dependencies: { ids: ["1"], rows: [], onFailure: "fail" },
    },
  ]);
  assert.equal(w.job.id, "4", "ids continue after the pruned job's");
  assert.equal(w.job.state, "waiting");
  const check = new Database(path, { readonly: true });
  t.after(() => check.close());
  const after = schemaOf(check).filter(
    (o) => (o as { name: string }).name !== "errand_jobs_forget_dependencies",
  );
  assert.deepEqual(after, before, "every index and trigger of the table is back");
  assert.equal(check.prepare("SELECT flow_key FROM errand_jobs WHERE id = 2").pluck().get(), "k");
});
