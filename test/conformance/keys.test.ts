/** Store conformance: Idempotency keys: one job per key and queue while it lives. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import { claimOne, eachStore, finish, ids, insertOne, newJob } from "./helpers.js";

eachStore((it) => {
  describe("idempotency keys", () => {
    it("the same (queue, key) returns the existing job and creates nothing", async (store) => {
      const first = await insertOne(store, { key: "welcome-1", payload: { v: 1 } });
      const [again] = await store.insertJobs([newJob({ key: "welcome-1", payload: { v: 2 }, priority: 9 })]);
      assert.equal(again.created, false);
      assert.equal(again.job.id, first.id);
      assert.deepEqual(again.job.payload, { v: 1 });
      assert.equal(again.job.priority, 0);
      const page = await store.listJobs({ limit: 100 });
      assert.deepEqual(ids(page.jobs), [first.id]);
    });

    it("the same key on another queue creates a new job; null keys never collide", async (store) => {
      const a = await insertOne(store, { queue: "a", key: "k" });
      const [b] = await store.insertJobs([newJob({ queue: "b", key: "k" })]);
      assert.equal(b.created, true);
      assert.notEqual(b.job.id, a.id);
      const nulls = await store.insertJobs([newJob({ key: null }), newJob({ key: null }), newJob()]);
      assert.deepEqual(
        nulls.map((r) => r.created),
        [true, true, true],
      );
      assert.equal((await store.listJobs({ limit: 100 })).jobs.length, 5);
    });

    it("a key still matches a finished job", async (store) => {
      const job = await insertOne(store, { key: "once" });
      const c = await claimOne(store);
      assert.equal(await finish(store, c, "completed"), true);
      const [again] = await store.insertJobs([newJob({ key: "once" })]);
      assert.equal(again.created, false);
      assert.equal(again.job.id, job.id);
      assert.equal(again.job.state, "completed");
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("20 concurrent inserts with one key create exactly one job", async (store) => {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.insertJobs([newJob({ key: "race", payload: { i } })])),
      );
      const flat = results.map((r) => r[0]);
      assert.equal(flat.filter((r) => r.created).length, 1, "exactly one created");
      assert.equal(new Set(flat.map((r) => r.job.id)).size, 1, "all got the same job");
      assert.equal((await store.listJobs({ queue: "q", limit: 100 })).jobs.length, 1);
    });
  });
});
