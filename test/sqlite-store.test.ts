/**
 * What only the SQLite store has to prove; the behaviour every store shares is in
 * test/conformance/. Each test gets its own database file under os.tmpdir().
 *
 *   node --import tsx --test test/sqlite-store.test.ts
 */
import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { type TestContext, test } from "node:test";
import type Database from "better-sqlite3";
import { z } from "zod";
import { ValidationError } from "../src/errors.js";
import { defineJob } from "../src/job.js";
import { openErrand } from "../src/open-errand.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { LATEST_VERSION, MIGRATIONS } from "../src/store/sqlite/migrations.js";
import type { NewJob } from "../src/store/types.js";
import { testClock } from "./helpers/clock.js";
import { connection, fresh, ROOT, STORE_MODULE, tempPath } from "./helpers/sqlite.js";
import { sleep, within } from "./helpers/wait.js";

const job = (over: Partial<NewJob> = {}): NewJob => ({
  queue: "q",
  name: "task",
  payload: { n: 1 },
  priority: 0,
  maxAttempts: 3,
  ...over,
});

const count = (db: Database.Database, sql: string) => (db.prepare(sql).pluck().get() as number) ?? 0;

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
  const procs: ChildProcessWithoutNullStreams[] = [];
  const outputs: Promise<R>[] = [];
  const ready: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
      cwd: ROOT,
      env: { ...process.env, ...env, CHILD_INDEX: String(i) },
    });
    procs.push(child);
    let stdout = "";
    let stderr = "";
    let signalReady: () => void = () => {};
    ready.push(new Promise((resolve) => (signalReady = resolve)));
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.startsWith("ready\n")) signalReady();
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    outputs.push(
      new Promise((resolve, reject) => {
        child.on("error", reject);
        child.on("close", (status) => {
          if (status !== 0) return reject(new Error(`child ${i} exited ${status}: ${stderr}`));
          const last = stdout.trim().split("\n").pop() ?? "";
          try {
            resolve(JSON.parse(last) as R);
          } catch {
            reject(new Error(`child ${i} printed no result: ${stdout} ${stderr}`));
          }
        });
      }),
    );
  }
  try {
    await within(Promise.all(ready), 60_000, "child processes to start");
    for (const child of procs) child.stdin.end("go\n");
    return await within(Promise.all(outputs), 60_000, "child processes to finish");
  } finally {
    for (const child of procs) if (child.exitCode === null) child.kill();
  }
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

// ── transactional enqueue ──────────────────────────────────────────────────────────────────

function withUsers(db: Database.Database): void {
  db.exec("CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, email TEXT)");
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
  const path = await tempPath(t);
  const db = connection(t, path);
  const store = openSqliteStore({ db });
  t.after(() => store.close());
  await store.migrate();

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
  const path = await tempPath(t);
  const db = connection(t, path);
  const store = openSqliteStore({ db });
  t.after(() => store.close());
  await store.migrate();
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

// ── fencing ────────────────────────────────────────────────────────────────────────────────

test("a stale lease token can neither finish, extend, report progress nor complete in a transaction", async (t) => {
  const { store } = await fresh(t);
  const [{ job: j }] = await store.insertJobs([job()]);
  const [first] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w1", leaseMs: 60_000 });
  // Interrupted: back to pending, and claimed again by another worker with a new token.
  assert.deepEqual(
    await store.finishJobs([{ id: j.id, leaseToken: first.leaseToken, kind: "released", worker: "w1" }]),
    [true],
  );
  const [second] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w2", leaseMs: 60_000 });
  assert.ok(second.leaseToken > first.leaseToken);

  const stale = { id: j.id, leaseToken: first.leaseToken };
  assert.deepEqual(await store.finishJobs([{ ...stale, kind: "completed", worker: "w1" }]), [false]);
  assert.deepEqual(await store.extendLeases([stale], 60_000), [
    { id: j.id, held: false, cancelRequested: false },
  ]);
  assert.equal(await store.setProgress(stale, { fraction: 0.5 }), false);
  let called = false;
  assert.deepEqual(
    await store.completeInTransaction(stale, "w1", () => {
      called = true;
    }),
    { applied: false },
  );
  assert.equal(called, false);

  const row = await store.getJob(j.id);
  assert.equal(row?.state, "running");
  assert.equal(row?.lockedBy, "w2");
  assert.equal(row?.progress, null);
  assert.deepEqual(
    await store.finishJobs([{ id: j.id, leaseToken: second.leaseToken, kind: "completed", worker: "w2" }]),
    [true],
  );
});

test("a lease that expired and was rescued is lost to its old holder", async (t) => {
  const clock = testClock();
  const { store } = await fresh(t, { clock });
  const [{ job: j }] = await store.insertJobs([job({ maxAttempts: 2 })]);
  const [c] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w1", leaseMs: 20 });
  assert.deepEqual(await store.rescueExpiredLeases(), [], "the lease still runs");
  clock.advance(21);
  const rescued = await store.rescueExpiredLeases();
  assert.deepEqual(rescued, [{ id: j.id, queue: "q", name: "task", state: "pending", attempt: 1 }]);
  assert.deepEqual(
    await store.finishJobs([{ id: j.id, leaseToken: c.leaseToken, kind: "completed", worker: "w1" }]),
    [false],
  );
  const after = await store.getJob(j.id);
  assert.equal(after?.state, "pending");
  assert.equal(after?.attempts[0].outcome, "lost");
  assert.equal(after?.attempts[0].error, "lease expired: worker w1 stopped heartbeating");
});

// ── completeInTransaction ──────────────────────────────────────────────────────────────────

async function withClaimed(t: TestContext) {
  const { path, store } = await fresh(t);
  store.db.exec("CREATE TABLE effects (job_id TEXT, note TEXT)");
  const [{ job: j }] = await store.insertJobs([job()]);
  const [c] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w", leaseMs: 60_000 });
  return { path, store, id: j.id, lease: { id: c.id, leaseToken: c.leaseToken } };
}

test("completeInTransaction commits the handler's writes with the completion", async (t) => {
  const { store, id, lease } = await withClaimed(t);
  const out = await store.completeInTransaction(lease, "w", async (tx) => {
    await sleep(5);
    (tx as Database.Database).prepare("INSERT INTO effects VALUES (?, 'charged')").run(id);
    return { charged: true };
  });
  assert.deepEqual(out, { applied: true, value: { charged: true } });
  assert.equal(count(store.db, "SELECT count(*) FROM effects"), 1);
  const row = await store.getJob(id);
  assert.equal(row?.state, "completed");
  assert.deepEqual(row?.result, { charged: true });
  assert.equal(row?.attempts.at(-1)?.outcome, "completed");
});

test("completeInTransaction rolls back the handler's writes when it throws", async (t) => {
  const { store, id, lease } = await withClaimed(t);
  await assert.rejects(
    store.completeInTransaction(lease, "w", async (tx) => {
      (tx as Database.Database).prepare("INSERT INTO effects VALUES (?, 'half')").run(id);
      await store.insertJobs([job({ key: "follow-up" })], tx);
      await store.ledgerPut({ key: "side-effect", jobId: id, global: false }, 1);
      throw new Error("card declined");
    }),
    /card declined/,
  );
  assert.equal(count(store.db, "SELECT count(*) FROM effects"), 0);
  assert.equal((await store.listJobs({})).jobs.length, 1, "the follow-up job rolled back too");
  assert.deepEqual(await store.ledgerGet({ key: "side-effect", jobId: id, global: false }), { found: false });
  assert.equal((await store.getJob(id))?.state, "running", "the job keeps its lease");
  assert.deepEqual(await store.finishJobs([{ ...lease, kind: "completed", worker: "w" }]), [true]);
});

test("completeInTransaction: calls from inside fn join it, other callers wait for it", async (t) => {
  const { store, id, lease } = await withClaimed(t);
  const events: string[] = [];
  let outside: Promise<void> = Promise.resolve();
  // Another part of the process (a timer, a request handler: another async context) uses the
  // store meanwhile: it must not run inside this transaction.
  const elsewhere = AsyncLocalStorage.snapshot();
  const out = await store.completeInTransaction(lease, "w", async (tx) => {
    outside = elsewhere(() =>
      store.getJob(id).then((j) => {
        events.push(`outside saw ${j?.state}`);
      }),
    );
    const [follow] = await store.insertJobs([job({ key: "follow-up" })], tx);
    await store.ledgerPut({ key: "sent", jobId: id, global: false }, { ok: true });
    events.push(`inside saw ${(await store.getJob(id))?.state}`);
    await sleep(20);
    events.push("fn done");
    return follow.job.id;
  });
  await outside;
  assert.equal(out.applied, true);
  assert.deepEqual(events, ["inside saw running", "fn done", "outside saw completed"]);
  assert.equal((await store.getJob(String(out.value)))?.state, "pending");
  assert.deepEqual(await store.ledgerGet({ key: "sent", jobId: id, global: false }), {
    found: true,
    value: { ok: true },
  });
});

// ── the clock is SQLite's ──────────────────────────────────────────────────────────────────

test("leases and delays follow SQLite's clock, not a faked Date.now", async (t) => {
  const { store } = await fresh(t);
  const realNow = Date.now;
  /** `value` (ms) lies within [lo, hi], give or take SQLite's millisecond rounding. */
  const between = (value: number, lo: number, hi: number, what: string) =>
    assert.ok(value >= lo - 2 && value <= hi + 2, `${what}: ${value} not in [${lo}, ${hi}]`);
  Date.now = () => realNow() + 86_400_000; // a day ahead
  try {
    let before = realNow();
    const [delayed] = await store.insertJobs([job({ delayMs: 60_000 })]);
    const [due] = await store.insertJobs([job({ queue: "due" })]);
    let after = realNow();
    between(delayed.job.runAt.getTime(), before + 60_000, after + 60_000, "runAt of a delayed job");
    between(due.job.runAt.getTime(), before, after, "runAt of a due job");
    assert.deepEqual(
      await store.claimJobs({ queue: "q", limit: 1, workerId: "w", leaseMs: 1000 }),
      [],
      "not due yet",
    );

    before = realNow();
    const [c] = await store.claimJobs({ queue: "due", limit: 1, workerId: "w", leaseMs: 60_000 });
    const now = (await store.now()).getTime();
    after = realNow();
    assert.equal(c.id, due.job.id);
    between(c.lockedUntil.getTime(), before + 60_000, after + 60_000, "lease end");
    between(now, before, after, "store.now()");
    assert.deepEqual(await store.rescueExpiredLeases(), [], "the lease has not expired");
  } finally {
    Date.now = realNow;
  }
});

// ── errors surface ─────────────────────────────────────────────────────────────────────────

test("SQLITE_BUSY past busy_timeout is thrown, not swallowed", async (t) => {
  const { path, store } = await fresh(t, { busyTimeoutMs: 20 });
  await store.insertJobs([job()]);
  const other = connection(t, path);
  other.exec("BEGIN IMMEDIATE");
  await assert.rejects(store.claimJobs({ queue: "q", limit: 1, workerId: "w", leaseMs: 1000 }), {
    code: "SQLITE_BUSY",
  });
  await assert.rejects(store.insertJobs([job()]), { code: "SQLITE_BUSY" });
  other.exec("ROLLBACK");
  assert.equal((await store.claimJobs({ queue: "q", limit: 1, workerId: "w", leaseMs: 1000 })).length, 1);
});

// ── wake-ups ───────────────────────────────────────────────────────────────────────────────

test("another connection's commit wakes listeners (PRAGMA data_version); unsubscribing stops it", async (t) => {
  const { path, store } = await fresh(t, { pollIntervalMs: 10 });
  const other = openSqliteStore({ path });
  t.after(() => other.close());

  const calls: (string | null)[] = [];
  let wake: (value: string | null) => void = () => {};
  const unsubscribe = store.onJobsAvailable((queue) => {
    calls.push(queue);
    wake(queue);
  });
  const own = new Promise<string | null>((resolve) => (wake = resolve));
  await store.insertJobs([job({ queue: "mine" })]);
  assert.equal(await within(own, 2000, "an in-process wake-up"), "mine");

  const remote = new Promise<string | null>((resolve) => (wake = resolve));
  await other.insertJobs([job({ queue: "theirs" })]);
  assert.equal(await within(remote, 2000, "a wake-up from another connection"), null);

  unsubscribe();
  const seen = calls.length;
  await other.insertJobs([job({ queue: "theirs" })]);
  await sleep(60);
  assert.equal(calls.length, seen, "no calls after unsubscribe");
});
