/**
 * PostgreSQL store: its connections — LISTEN/NOTIFY wake-ups per schema and their reconnection
 * after pg_terminate_backend, surviving every pooled connection being killed, and the error when
 * the database cannot be reached.
 *
 *   node --import tsx --test test/postgres-store/connections.test.ts
 *
 * Each file uses schemas of its own in the test database, dropped at the end (setup.ts). Without a
 * reachable server the tests are skipped with a message — or fail when CI=true.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { admin, describePostgresStore, job, migrated, open, schemaName } from "./setup.js";

/** Resolves with the first value `subscribe` hands its callback that passes `test`; rejects after `ms`. */
function nextEvent<T>(
  subscribe: (cb: (v: T) => void) => () => void,
  test: (v: T) => boolean,
  ms = 10_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no matching event within ${ms} ms`));
    }, ms);
    const stop = subscribe((v) => {
      if (!test(v)) return;
      clearTimeout(timer);
      stop();
      resolve(v);
    });
  });
}

/** Retries `fn` while it throws (a connection the pool has not yet noticed is dead), up to `tries`. */
async function eventually<T>(fn: () => Promise<T>, tries = 20): Promise<T> {
  let last: unknown;
  for (let i = 0; i < tries; i++) {
    try {
      return await fn();
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 50 * (i + 1)));
    }
  }
  throw last;
}

describePostgresStore(() => {
  describe("LISTEN/NOTIFY", () => {
    it("wakes listeners with the queue name, per schema", async () => {
      const schema = schemaName();
      const listener = await migrated(schema);
      const producer = await migrated(schema);
      const other = await migrated(); // another schema in the same database
      const seen: Array<string | null> = [];
      const stop = listener.onJobsAvailable((q) => seen.push(q));
      await listener.whenListening();
      await other.insertJobs([job("elsewhere", "x")]);
      const woke = nextEvent<string | null>(
        (cb) => listener.onJobsAvailable(cb),
        (q) => q === "mail",
      );
      await producer.insertJobs([job("mail", "a"), job("mail", "b"), job("sms", "c")]);
      assert.equal(await woke, "mail");
      // Retries wake too.
      const [c] = await producer.claimJobs({ queue: "sms", limit: 1, workerId: "w", leaseMs: 60_000 });
      const retried = nextEvent<string | null>(
        (cb) => listener.onJobsAvailable(cb),
        (q) => q === "sms",
      );
      await producer.finishJobs([
        { ...c, kind: "retry", worker: "w", error: { message: "x", kind: "retryable" } },
      ]);
      assert.equal(await retried, "sms");
      stop();
      assert.ok(!seen.includes("elsewhere"), "no cross-talk between schemas");
      assert.equal(seen.filter((q) => q === "mail").length, 1, "one notification per queue per statement");
    });

    it("reconnects after pg_terminate_backend and signals null (jobs may have been missed)", async () => {
      const schema = schemaName();
      const errors: Error[] = [];
      const listener = await migrated(schema, { onError: (e) => errors.push(e) });
      const producer = await migrated(schema);
      const stop = listener.onJobsAvailable(() => {});
      await listener.whenListening();
      const reconnected = nextEvent<string | null>(
        (cb) => listener.onJobsAvailable(cb),
        (q) => q === null,
      );
      const killed = await admin(
        async (c) =>
          (
            await c.query(
              "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
              [`errand-listen:${schema}`],
            )
          ).rowCount,
      );
      assert.equal(killed, 1);
      assert.equal(await reconnected, null);
      await listener.whenListening();
      const woke = nextEvent<string | null>(
        (cb) => listener.onJobsAvailable(cb),
        (q) => q === "after",
      );
      await producer.insertJobs([job("after", "x")]);
      assert.equal(await woke, "after");
      assert.ok(errors.length >= 1, "the drop was reported to onError");
      stop();
    });

    it("wakes in-process listeners before the LISTEN connection is up", async () => {
      const store = await migrated();
      const woke = nextEvent<string | null>(
        (cb) => store.onJobsAvailable(cb),
        (q) => q === "early",
      );
      await store.insertJobs([job("early", "x")]); // races the LISTEN
      assert.equal(await woke, "early");
    });
  });

  describe("connection loss", () => {
    it("survives every connection of its pool being killed", async () => {
      const schema = schemaName();
      const errors: Error[] = [];
      const store = await migrated(schema, { onError: (e) => errors.push(e) });
      store.onJobsAvailable(() => {});
      await store.whenListening();
      await store.insertJobs([job("k", "x")]);
      await Promise.all([store.stats(), store.getJob("1"), store.now()]); // warm several clients
      const killed = await admin(
        async (c) =>
          (
            await c.query(
              "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ANY($1)",
              [[`errand:${schema}`, `errand-listen:${schema}`]],
            )
          ).rowCount,
      );
      assert.ok((killed ?? 0) >= 2, `killed ${killed} connections`);
      const claimed = await eventually(() =>
        store.claimJobs({ queue: "k", limit: 1, workerId: "w", leaseMs: 60_000 }),
      );
      assert.equal(claimed.length, 1);
      assert.deepStrictEqual(await store.finishJobs([{ ...claimed[0], kind: "completed", worker: "w" }]), [
        true,
      ]);
      await store.whenListening();
    });

    it("throws from a method when the database cannot be reached", async () => {
      const store = open(schemaName(), { url: "postgres://postgres@127.0.0.1:1/test" });
      await assert.rejects(() => store.now(), /ECONNREFUSED|connect/);
    });
  });
});
