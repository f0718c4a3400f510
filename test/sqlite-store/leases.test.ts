/**
 * What only the SQLite store has to prove about leases: fencing of stale and lost leases,
 * completeInTransaction, and leases and delays on SQLite's clock.
 * What every store shares is in test/conformance/. Each test gets its own database file under
 * os.tmpdir().
 *
 *   node --import tsx --test test/sqlite-store/leases.test.ts
 */
import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { type TestContext, test } from "node:test";
import type Database from "better-sqlite3";
import { testClock } from "../helpers/clock.js";
import { count, fresh, job } from "../helpers/sqlite.js";
import { sleep } from "../helpers/wait.js";

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
