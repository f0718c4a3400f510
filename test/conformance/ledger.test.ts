/** Store conformance: The ledger (ctx.once) and completeInTransaction. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import { claimOne, eachStore, finish, insertOne, mustGet, rescue } from "./helpers.js";

eachStore((it) => {
  describe("ledger and completeInTransaction", () => {
    const global = (key: string, jobId: string) => ({ key, jobId, global: true });
    const own = (key: string, jobId: string) => ({ key, jobId, global: false });

    it("ledgerGet/ledgerPut: a duplicate put keeps the first value", async (store) => {
      assert.deepEqual(await store.ledgerGet(global("welcome:101", "1")), { found: false });
      const value = { messageId: "m-1", to: ["a@example.com"], meta: { n: 1, ok: true } };
      await store.ledgerPut(global("welcome:101", "1"), value);
      assert.deepEqual(await store.ledgerGet(global("welcome:101", "1")), { found: true, value });
      await store.ledgerPut(global("welcome:101", "2"), { messageId: "m-2" });
      assert.deepEqual(await store.ledgerGet(global("welcome:101", "2")), { found: true, value });
      await store.ledgerPut(global("no-value", "1"), undefined);
      const nothing = await store.ledgerGet(global("no-value", "1"));
      assert.equal(nothing.found, true, "a side effect that returned nothing is still recorded");
      assert.equal(nothing.value ?? null, null);
      // Two workers racing on one key: neither put fails, one value wins for good.
      await Promise.all([
        store.ledgerPut(global("race", "1"), "v1"),
        store.ledgerPut(global("race", "2"), "v2"),
      ]);
      const raced = await store.ledgerGet(global("race", "3"));
      assert.equal(raced.found, true);
      assert.ok(raced.value === "v1" || raced.value === "v2", `value ${String(raced.value)}`);
      await store.ledgerPut(global("race", "3"), "v3");
      assert.deepEqual(await store.ledgerGet(global("race", "3")), raced);
    });

    it("a per-job key is the job's own; a global one is shared", async (store) => {
      await store.ledgerPut(own("send", "1"), "from 1");
      assert.deepEqual(await store.ledgerGet(own("send", "1")), { found: true, value: "from 1" });
      assert.deepEqual(await store.ledgerGet(own("send", "2")), { found: false }, "job 2 has not sent");
      assert.deepEqual(await store.ledgerGet(global("send", "1")), { found: false }, "not a global entry");
      await store.ledgerPut(own("send", "2"), "from 2");
      assert.deepEqual(await store.ledgerGet(own("send", "2")), { found: true, value: "from 2" });
      await store.ledgerPut(own("send", "1"), "again");
      assert.deepEqual(await store.ledgerGet(own("send", "1")), { found: true, value: "from 1" });
      // A global entry with the same key lives beside them.
      await store.ledgerPut(global("send", "3"), "shared");
      assert.deepEqual(await store.ledgerGet(global("send", "4")), { found: true, value: "shared" });
      assert.deepEqual(await store.ledgerGet(own("send", "1")), { found: true, value: "from 1" });
    });

    it("a per-job read finds a global entry its own job recorded (entries from before scopes), not another job's", async (store) => {
      await store.ledgerPut(global("charge", "7"), { charged: 7 });
      assert.deepEqual(await store.ledgerGet(own("charge", "7")), { found: true, value: { charged: 7 } });
      assert.deepEqual(await store.ledgerGet(own("charge", "8")), { found: false });
      // Its own scope's entry comes first.
      await store.ledgerPut(own("charge", "7"), { charged: "own" });
      assert.deepEqual(await store.ledgerGet(own("charge", "7")), { found: true, value: { charged: "own" } });
    });

    it.withClock(
      "a job's own entries are deleted with the job (pruned or discarded); global ones by age",
      async (store, clock) => {
        const kept = await insertOne(store);
        const done = await insertOne(store);
        const dead = await insertOne(store, { maxAttempts: 1 });
        for (const job of [kept, done, dead]) await store.ledgerPut(own("k", job.id), job.id);
        await store.ledgerPut(global("g-old", done.id), "old");
        const c1 = await claimOne(store);
        assert.equal(c1.id, kept.id);
        const c2 = await claimOne(store);
        assert.equal(await finish(store, c2, "completed"), true);
        const c3 = await claimOne(store);
        assert.equal(await finish(store, c3, "failed", { error: { message: "x", kind: "permanent" } }), true);
        clock.advance(2_000);
        await store.ledgerPut(global("g-new", done.id), "new");

        // Young jobs and entries stay.
        assert.equal(
          await store.pruneFinished({ completedAgeMs: 60_000, failedAgeMs: 60_000, globalOnceAgeMs: 60_000 }),
          0,
        );
        assert.equal((await store.ledgerGet(own("k", done.id))).found, true);
        assert.equal((await store.ledgerGet(global("g-old", "9"))).found, true);

        // Without globalOnceAgeMs global entries are kept; the completed job goes with its entry.
        assert.equal(await store.pruneFinished({ completedAgeMs: 1_000, failedAgeMs: 60_000 }), 1);
        assert.deepEqual(await store.ledgerGet(own("k", done.id)), { found: false });
        assert.equal((await store.ledgerGet(global("g-old", "9"))).found, true);
        assert.equal((await store.ledgerGet(own("k", dead.id))).found, true);

        // Global entries past their age go; younger ones stay; the running job's entry is untouched.
        await store.pruneFinished({ completedAgeMs: 60_000, failedAgeMs: 60_000, globalOnceAgeMs: 1_000 });
        assert.deepEqual(await store.ledgerGet(global("g-old", "9")), { found: false });
        assert.deepEqual(await store.ledgerGet(global("g-new", "9")), { found: true, value: "new" });

        // Discarding a failed job deletes its entries too.
        assert.equal(await store.discardJobs({ ids: [dead.id] }), 1);
        assert.deepEqual(await store.ledgerGet(own("k", dead.id)), { found: false });
        assert.deepEqual(await store.ledgerGet(own("k", kept.id)), { found: true, value: kept.id });
      },
    );

    it("completeInTransaction completes the job with the value as result", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      let calls = 0;
      const r = await store.completeInTransaction(c, "w-tx", async () => {
        calls++;
        return { wrote: 3 };
      });
      assert.deepEqual(r, { applied: true, value: { wrote: 3 } });
      assert.equal(calls, 1);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "completed");
      assert.deepEqual(j.result, { wrote: 3 });
      assert.deepEqual(
        j.attempts.map((h) => [h.outcome, h.worker]),
        [["completed", "w-tx"]],
      );
      assert.equal(await finish(store, c, "completed"), false, "the lease is gone");
    });

    it.withClock(
      "completeInTransaction with a stale lease applies nothing; a throwing fn leaves the job running",
      async (store, clock) => {
        const job = await insertOne(store);
        const stale = await claimOne(store, "q", 30);
        clock.advance(31); // past the 30 ms lease
        await rescue(store, job.id);
        const current = await claimOne(store);
        const r = await store.completeInTransaction(stale, "w-old", () => "nope");
        assert.equal(r.applied, false);
        const j = await mustGet(store, job.id);
        assert.equal(j.state, "running");
        assert.equal(j.attempt, 2);
        assert.equal(j.attempts.length, 1);

        await assert.rejects(
          store.completeInTransaction(current, "w1", () => {
            throw new Error("business write failed");
          }),
          /business write failed/,
        );
        const after = await mustGet(store, job.id);
        assert.equal(after.state, "running");
        assert.equal(after.attempts.length, 1);
        assert.equal(
          await finish(store, current, "retry", {
            error: { message: "business write failed", kind: "unknown" },
          }),
          true,
        );
      },
    );
  });
});
