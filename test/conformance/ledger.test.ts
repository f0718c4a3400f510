/** Store conformance: The ledger (ctx.once) and completeInTransaction. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import { claimOne, eachStore, finish, insertOne, mustGet, rescue } from "./helpers.js";

eachStore((it) => {
  describe("ledger and completeInTransaction", () => {
    it("ledgerGet/ledgerPut: a duplicate put keeps the first value", async (store) => {
      assert.deepEqual(await store.ledgerGet("welcome:101"), { found: false });
      const value = { messageId: "m-1", to: ["a@example.com"], meta: { n: 1, ok: true } };
      await store.ledgerPut("welcome:101", "1", value);
      assert.deepEqual(await store.ledgerGet("welcome:101"), { found: true, value });
      await store.ledgerPut("welcome:101", "2", { messageId: "m-2" });
      assert.deepEqual(await store.ledgerGet("welcome:101"), { found: true, value });
      await store.ledgerPut("no-value", "1", undefined);
      const nothing = await store.ledgerGet("no-value");
      assert.equal(nothing.found, true, "a side effect that returned nothing is still recorded");
      assert.equal(nothing.value ?? null, null);
      // Two workers racing on one key: neither put fails, one value wins for good.
      await Promise.all([store.ledgerPut("race", "1", "v1"), store.ledgerPut("race", "2", "v2")]);
      const raced = await store.ledgerGet("race");
      assert.equal(raced.found, true);
      assert.ok(raced.value === "v1" || raced.value === "v2", `value ${String(raced.value)}`);
      await store.ledgerPut("race", "3", "v3");
      assert.deepEqual(await store.ledgerGet("race"), raced);
    });

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
