/** Store conformance: Waking workers: onJobsAvailable and nextRunAt. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import { claimOne, eachStore, insertOne, nowMs, poll, sleep } from "./helpers.js";

eachStore((it) => {
  describe("onJobsAvailable", () => {
    it("calls listeners after an insert of a due job; unsubscribe stops it", async (store) => {
      const a: Array<string | null> = [];
      const b: Array<string | null> = [];
      const offA = store.onJobsAvailable((q) => a.push(q));
      const offB = store.onJobsAvailable((q) => b.push(q));
      try {
        await insertOne(store, { queue: "wake" });
        await poll("listener a to be called", async () => a.length > 0);
        await poll("listener b to be called", async () => b.length > 0);
        for (const q of [...a, ...b]) assert.ok(q === "wake" || q === null, `queue ${q}`);
        offA();
        const seenA = a.length;
        const seenB = b.length;
        await insertOne(store, { queue: "wake" });
        await poll("listener b to be called again", async () => b.length > seenB);
        await sleep(20);
        assert.equal(a.length, seenA, "an unsubscribed listener is not called");
      } finally {
        offA();
        offB();
      }
    });
  });

  describe("nextRunAt", () => {
    it("is the earliest pending run_at of the given queues", async (store) => {
      const t = await nowMs(store);
      await insertOne(store, { queue: "a", runAt: new Date(t + 10_000) });
      await insertOne(store, { queue: "a", runAt: new Date(t + 20_000) });
      await insertOne(store, { queue: "b", runAt: new Date(t + 5_000) });
      await insertOne(store, { queue: "c", runAt: new Date(t + 1_000) });
      // A running job is not pending.
      await insertOne(store, { queue: "b", runAt: new Date(t - 1_000) });
      await claimOne(store, "b");
      assert.equal((await store.nextRunAt(["a", "b"]))?.getTime(), t + 5_000);
      assert.equal((await store.nextRunAt(["a"]))?.getTime(), t + 10_000);
      assert.equal((await store.nextRunAt(["c", "a"]))?.getTime(), t + 1_000);
      assert.equal(await store.nextRunAt(["zzz"]), null);
      assert.equal(await store.nextRunAt([]), null);
    });
  });
});
