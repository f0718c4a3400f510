/**
 * What only the SQLite store has to prove, on migrations and several processes sharing one file:
 * migrate is idempotent, the handle's pragmas, several processes or connections migrating one new
 * file, and a key enqueued concurrently by several processes.
 * What every store shares is in test/conformance/. Each test gets its own database file under
 * os.tmpdir().
 *
 *   node --import tsx --test test/sqlite-store/migrations.test.ts
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { LATEST_VERSION, MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { releasedTogether } from "../helpers/processes.js";
import { connection, count, fresh, STORE_MODULE, tempPath } from "../helpers/sqlite.js";

// ── child processes ──────────────────────────────────────────────────────────────────────

/**
 * Starts `n` node processes running `body` (an ES module; `openSqliteStore`, `env` and `go`
 * are in scope). Each opens nothing until every one of them is up: they print "ready", wait for
 * "go" on stdin — a barrier, so their work overlaps — and print one JSON line as their result.
 */
async function children<R>(n: number, body: string, env: Record<string, string>): Promise<R[]> {
  const code = `
    const { openSqliteStore } = await import(${JSON.stringify(STORE_MODULE)});
    const env = process.env;
    const go = () => new Promise((resolve) => process.stdin.once("data", resolve));
    process.stdout.write("ready\\n");
    await go();
    ${body}
  `;
  return releasedTogether<R>(n, ["--import", "tsx", "--input-type=module", "-e", code], { env });
}

// ── migrations ─────────────────────────────────────────────────────────────────────────────

test("migrate is idempotent and records each version once", async (t) => {
  const { path, store } = await fresh(t);
  await store.migrate();
  await store.migrate();
  const again = openSqliteStore({ path });
  await again.migrate();
  await again.close();

  const db = connection(t, path);
  const versions = db.prepare("SELECT version FROM errand_migrations ORDER BY version").pluck().all();
  assert.deepEqual(
    versions,
    MIGRATIONS.map((m) => m.version),
  );
  assert.equal(versions.at(-1), LATEST_VERSION);
  const tables = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'errand_%' ORDER BY name")
    .pluck()
    .all();
  assert.deepEqual(tables, [
    "errand_flow_claims",
    "errand_flow_cursors",
    "errand_flow_pauses",
    "errand_flow_windows",
    "errand_job_dependencies",
    "errand_jobs",
    "errand_ledger",
    "errand_migrations",
    "errand_paused_queues",
    "errand_schedules",
    "errand_workers",
  ]);
});

test("a handle errand opens is in WAL mode with busy_timeout and synchronous=NORMAL", async (t) => {
  const { store } = await fresh(t);
  assert.equal(store.db.pragma("journal_mode", { simple: true }), "wal");
  assert.equal(store.db.pragma("busy_timeout", { simple: true }), 5000);
  assert.equal(store.db.pragma("synchronous", { simple: true }), 1);
});

test("several processes migrating one new file at once all succeed, and the schema is applied once", async (t) => {
  const path = await tempPath(t);
  const results = await children<{ versions: number[] }>(
    4,
    `
      const store = openSqliteStore({ path: env.DB_PATH });
      await store.migrate();
      const versions = store.db.prepare("SELECT version FROM errand_migrations ORDER BY version").pluck().all();
      await store.insertJobs([{ queue: "q", name: "t", payload: null, priority: 0, maxAttempts: 1 }]);
      await store.close();
      console.log(JSON.stringify({ versions }));
    `,
    { DB_PATH: path },
  );
  const expected = MIGRATIONS.map((m) => m.version);
  for (const r of results) assert.deepEqual(r.versions, expected);
  const db = connection(t, path);
  assert.equal(count(db, "SELECT count(*) FROM errand_migrations"), MIGRATIONS.length);
  assert.equal(count(db, "SELECT count(*) FROM errand_jobs"), 4);
});

test("several connections in one process migrate the same file", async (t) => {
  const path = await tempPath(t);
  const stores = Array.from({ length: 5 }, () => openSqliteStore({ path }));
  t.after(() => Promise.all(stores.map((s) => s.close())));
  await Promise.all(stores.map((s) => s.migrate()));
  assert.equal(count(stores[0].db, "SELECT count(*) FROM errand_migrations"), MIGRATIONS.length);
});

// ── idempotency across processes ───────────────────────────────────────────────────────────

test("a key enqueued concurrently by several processes creates one job", async (t) => {
  const { path } = await fresh(t);
  const keys = 60;
  const results = await children<{ created: number; ids: string[] }>(
    3,
    `
      const store = openSqliteStore({ path: env.DB_PATH });
      const ids = [];
      let created = 0;
      for (let i = 0; i < ${keys}; i++) {
        const [r] = await store.insertJobs([
          { queue: "q", name: "t", payload: { from: env.CHILD_INDEX }, priority: 0, maxAttempts: 1, key: "k" + i },
        ]);
        if (r.created) created++;
        ids.push(r.job.id);
      }
      // And the whole set again in one batch: nothing new.
      const again = await store.insertJobs(ids.map((_, i) => (
        { queue: "q", name: "t", payload: null, priority: 0, maxAttempts: 1, key: "k" + i }
      )));
      if (again.some((r, i) => r.created || r.job.id !== ids[i])) throw new Error("batch re-insert created or moved a job");
      await store.close();
      console.log(JSON.stringify({ created, ids }));
    `,
    { DB_PATH: path },
  );
  assert.equal(
    results.reduce((sum, r) => sum + r.created, 0),
    keys,
    "each key created exactly once over all processes",
  );
  for (const r of results)
    assert.deepEqual(r.ids, results[0].ids, "every process got the same job for each key");
  const db = connection(t, path);
  assert.equal(count(db, "SELECT count(*) FROM errand_jobs"), keys);
});
