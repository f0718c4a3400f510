/**
 * What only the SQLite store has to prove about enqueue: joining the application's transaction
 * (on its handle, begun by hand, on its own second connection, through the facade), what a tx must
 * be, sharing the application's handle, and a large batch mixing keyed and keyless jobs.
 * What every store shares is in test/conformance/. Each test gets its own database file under
 * os.tmpdir().
 *
 *   node --import tsx --test test/sqlite-store/enqueue.test.ts
 */
import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import type Database from "better-sqlite3";
import { z } from "zod";
import { ValidationError } from "../../src/errors.js";
import { defineJob } from "../../src/job.js";
import { openErrand } from "../../src/open-errand.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import type { NewJob } from "../../src/store/types.js";
import { connection, count, fresh, job, tempPath } from "../helpers/sqlite.js";

// ── transactional enqueue ──────────────────────────────────────────────────────────────────

function withUsers(db: Database.Database): void {
  db.exec("CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, email TEXT)");
}

/** A migrated store on the application's own handle to a fresh file, both closed after the test. */
async function onApplicationHandle(t: TestContext) {
  const path = await tempPath(t);
  const db = connection(t, path);
  const store = openSqliteStore({ db });
  t.after(() => store.close());
  await store.migrate();
  return { db, store };
}

test("enqueue with tx joins the application's synchronous db.transaction (shared handle)", async (t) => {
  const path = await tempPath(t);
  const db = connection(t, path);
  withUsers(db);
  const store = openSqliteStore({ db });
  t.after(() => store.close());
  await store.migrate();

  let inside = -1;
  let pending: Promise<unknown> = Promise.resolve();
  db.transaction(() => {
    db.prepare("INSERT INTO users (email) VALUES (?)").run("a@example.com");
    pending = store.insertJobs([job({ payload: { email: "a@example.com" } })], db);
    // The insert happened synchronously, inside this transaction.
    inside = count(db, "SELECT count(*) FROM errand_jobs");
  })();
  await pending;
  assert.equal(inside, 1);
  assert.equal(count(db, "SELECT count(*) FROM errand_jobs"), 1);

  assert.throws(() =>
    db.transaction(() => {
      db.prepare("INSERT INTO users (email) VALUES (?)").run("b@example.com");
      pending = store.insertJobs([job({ payload: { email: "b@example.com" } })], db);
      throw new Error("business rule failed");
    })(),
  );
  await pending;
  assert.equal(count(db, "SELECT count(*) FROM users"), 1, "the business change rolled back");
  assert.equal(count(db, "SELECT count(*) FROM errand_jobs"), 1, "and the job with it");
});

test("enqueue with tx joins a transaction begun by hand, across awaits", async (t) => {
  const { db, store } = await onApplicationHandle(t);

  db.exec("BEGIN");
  const [r] = await store.insertJobs([job()], db);
  assert.equal(r.created, true);
  db.exec("ROLLBACK");
  assert.equal(await store.getJob(r.job.id), null);

  db.exec("BEGIN IMMEDIATE");
  const [kept] = await store.insertJobs([job()], db);
  db.exec("COMMIT");
  assert.equal((await store.getJob(kept.job.id))?.state, "pending");
});

test("enqueue with tx on the application's own second connection", async (t) => {
  const { path, store } = await fresh(t);
  const db = connection(t, path);
  withUsers(db);

  let pending: Promise<unknown> = Promise.resolve();
  db.transaction(() => {
    db.prepare("INSERT INTO users (email) VALUES ('c@example.com')").run();
    pending = store.insertJobs([job({ key: "welcome-c" })], db);
  })();
  await pending;
  const page = await store.listJobs({});
  assert.equal(page.jobs.length, 1);
  assert.equal(page.jobs[0].key, "welcome-c");

  assert.throws(() =>
    db.transaction(() => {
      pending = store.insertJobs([job({ key: "welcome-d" })], db);
      throw new Error("rollback");
    })(),
  );
  await pending;
  assert.equal((await store.listJobs({})).jobs.length, 1);

  // Not in a transaction: the batch gets its own on that handle.
  const [own] = await store.insertJobs([job(), job()], db).then((rs) => rs.slice(0, 1));
  assert.ok(await store.getJob(own.job.id));
});

test("errand.enqueue(..., { tx: db }) inside db.transaction through the facade", async (t) => {
  const path = await tempPath(t);
  const db = connection(t, path);
  withUsers(db);
  const welcome = defineJob({ name: "welcome", schema: z.object({ email: z.string() }), run: () => {} });
  const errand = await openErrand({ db });
  t.after(() => errand.close());

  let pending: Promise<unknown> = Promise.resolve();
  db.transaction(() => {
    db.prepare("INSERT INTO users (email) VALUES ('e@example.com')").run();
    pending = errand.enqueue(welcome, { email: "e@example.com" }, { tx: db });
  })();
  await pending;
  assert.throws(() =>
    db.transaction(() => {
      db.prepare("INSERT INTO users (email) VALUES ('f@example.com')").run();
      pending = errand.enqueue(welcome, { email: "f@example.com" }, { tx: db });
      throw new Error("rollback");
    })(),
  );
  await pending;
  const payloads = db.prepare("SELECT payload FROM errand_jobs ORDER BY id").pluck().all();
  assert.deepEqual(payloads, [JSON.stringify({ email: "e@example.com" })]);
  await errand.close();
  assert.equal(db.open, true, "errand never closes the application's handle");
});

test("a tx that is not a better-sqlite3 Database is a ValidationError naming the problem", async (t) => {
  const { store } = await fresh(t);
  for (const tx of [{}, "tx", { query: () => {} }]) {
    await assert.rejects(store.insertJobs([job()], tx), (err: unknown) => {
      assert.ok(err instanceof ValidationError);
      assert.match(err.message, /better-sqlite3 Database/);
      return true;
    });
  }
  assert.equal((await store.listJobs({})).jobs.length, 0);
});

test("closing a store that shares the application's handle leaves the handle open", async (t) => {
  const path = await tempPath(t);
  const db = connection(t, path);
  const store = openSqliteStore({ db });
  await store.migrate();
  await store.close();
  assert.equal(db.open, true);
  assert.equal(db.pragma("journal_mode", { simple: true }), "delete", "no pragma changed on a shared handle");
  await assert.rejects(store.getJob("1"), { code: "ERR_CLOSED" });
});

test("worker operations never run inside the application's open transaction", async (t) => {
  const { db, store } = await onApplicationHandle(t);
  await store.insertJobs([job(), job()]);
  const [c] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w", leaseMs: 60_000 });

  db.exec("BEGIN");
  assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w", leaseMs: 60_000 }), []);
  assert.deepEqual(await store.rescueExpiredLeases(), []);
  const lease = { id: c.id, leaseToken: c.leaseToken };
  await assert.rejects(store.extendLeases([lease], 60_000), { code: "ERR_STORE_BUSY" });
  await assert.rejects(store.finishJobs([{ ...lease, kind: "completed", worker: "w" }]), {
    code: "ERR_STORE_BUSY",
  });
  await assert.rejects(
    store.completeInTransaction(lease, "w", () => 1),
    { code: "ERR_STORE_BUSY" },
  );
  db.exec("ROLLBACK");

  assert.deepEqual(await store.finishJobs([{ ...lease, kind: "completed", worker: "w" }]), [true]);
  assert.equal((await store.claimJobs({ queue: "q", limit: 5, workerId: "w", leaseMs: 60_000 })).length, 1);
});

// ── bulk insert ────────────────────────────────────────────────────────────────────────────

test("a large batch mixing keyed and keyless jobs: ids in input order, records as stored", async (t) => {
  const { store } = await fresh(t);
  const [first] = await store.insertJobs([job({ key: "dup-0" })]);
  const batch: NewJob[] = Array.from({ length: 1234 }, (_, i) =>
    i % 97 === 5
      ? job({ key: `dup-${i % 3}`, payload: { i } }) // dup-0 exists already; dup-1/dup-2 repeat inside the batch
      : job({ payload: { i, text: "héllo ✓" }, priority: i % 4, delayMs: i % 2 ? 0 : 60_000 }),
  );
  const results = await store.insertJobs(batch);
  assert.equal(results.length, batch.length);
  let lastCreated = Number(first.job.id);
  const byKey = new Map<string, string>([["dup-0", first.job.id]]);
  for (const [i, r] of results.entries()) {
    const key = batch[i].key;
    if (key && byKey.has(key)) {
      assert.equal(r.created, false, `item ${i} is a duplicate`);
      assert.equal(r.job.id, byKey.get(key));
      continue;
    }
    assert.equal(r.created, true, `item ${i} is new`);
    assert.ok(Number(r.job.id) > lastCreated, "ids grow in input order");
    lastCreated = Number(r.job.id);
    if (key) byKey.set(key, r.job.id);
    assert.deepEqual(await store.getJob(r.job.id), r.job, `item ${i} returned as stored`);
  }
  const created = results.filter((r) => r.created).length;
  assert.equal((await store.stats())[0].pending + (await store.stats())[0].delayed, created + 1);
});
