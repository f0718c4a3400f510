/** Store conformance: insertJobs: what a stored job looks like, payloads, delays and batches. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import { assertWithin, eachStore, ids, insertOne, mustGet, newJob, nowMs } from "./helpers.js";

eachStore((it) => {
  describe("insertJobs", () => {
    it("returns the stored record with every field, payload round-tripped", async (store) => {
      const payload = {
        text: 'héllo wörld — 日本語 🚀 "quoted" \\ back',
        nested: { list: [1, "two", { three: [true, false, null] }], empty: {}, n: -12.5 },
        emptyList: [],
        zero: 0,
      };
      const t0 = await nowMs(store);
      const [r] = await store.insertJobs([
        { queue: "emails", name: "send-email", payload, priority: 7, maxAttempts: 4, key: "welcome-101" },
      ]);
      const t1 = await nowMs(store);
      assert.equal(r.created, true);
      const job = r.job;
      assert.equal(typeof job.id, "string");
      assert.ok(job.id.length > 0);
      assert.equal(job.queue, "emails");
      assert.equal(job.name, "send-email");
      assert.equal(job.state, "pending");
      assert.equal(job.priority, 7);
      assert.equal(job.attempt, 0);
      assert.equal(job.maxAttempts, 4);
      assert.equal(job.key, "welcome-101");
      assert.deepEqual(job.payload, payload);
      assert.deepEqual(job.attempts, []);
      assertWithin(job.runAt, t0, t1, "runAt");
      assertWithin(job.createdAt, t0, t1, "createdAt");
      assert.equal(job.result ?? null, null);
      assert.equal(job.progress, null);
      assert.equal(job.lastError, null);
      assert.equal(job.startedAt, null);
      assert.equal(job.finishedAt, null);
      assert.equal(job.lockedBy, null);
      assert.equal(job.lockedUntil, null);
      assert.equal(job.cancelRequested, false);
      // What insert returned is what is stored.
      assert.deepEqual(await store.getJob(job.id), job);
    });

    it("stores a job without key with key null; getJob of an unknown id is null", async (store) => {
      const job = await insertOne(store, { payload: "just a string" });
      assert.equal(job.key, null);
      assert.equal((await mustGet(store, job.id)).payload, "just a string");
      assert.equal(await store.getJob("999999999"), null);
    });

    it("delayMs and runAt set the due time", async (store) => {
      const t0 = await nowMs(store);
      const delayed = await insertOne(store, { delayMs: 5_000 });
      const t1 = await nowMs(store);
      assertWithin(delayed.runAt, t0 + 5_000, t1 + 5_000, "runAt of delayMs 5000");

      const at = new Date(t0 + 3_600_000);
      const scheduled = await insertOne(store, { runAt: at });
      assert.equal(scheduled.runAt.getTime(), at.getTime());
      assert.equal((await mustGet(store, scheduled.id)).runAt.getTime(), at.getTime());

      const past = new Date(t0 - 60_000);
      const overdue = await insertOne(store, { runAt: past });
      assert.equal(overdue.runAt.getTime(), past.getTime());

      // Only the overdue one is due.
      const claimed = await store.claimJobs({ queue: "q", limit: 10, workerId: "w1", leaseMs: 60_000 });
      assert.deepEqual(ids(claimed), [overdue.id]);
    });

    it("a bulk insert returns results in input order", async (store) => {
      const inputs = [3, 1, 4, 1, 5, 9, 2, 6].map((n, i) =>
        newJob({ name: `task-${i}`, payload: { i, n }, priority: n, queue: i % 2 ? "odd" : "even" }),
      );
      const results = await store.insertJobs(inputs);
      assert.equal(results.length, inputs.length);
      results.forEach((r, i) => {
        assert.equal(r.created, true);
        assert.deepEqual(r.job.payload, { i, n: inputs[i].priority });
        assert.equal(r.job.name, `task-${i}`);
        assert.equal(r.job.queue, inputs[i].queue);
      });
      assert.equal(new Set(ids(results.map((r) => r.job))).size, inputs.length, "distinct ids");
      assert.deepEqual(await store.insertJobs([]), []);
    });

    it("a key repeated within one batch creates one job", async (store) => {
      const results = await store.insertJobs([
        newJob({ key: "dup", payload: { n: 1 } }),
        newJob({ key: "other", payload: { n: 2 } }),
        newJob({ key: "dup", payload: { n: 3 } }),
      ]);
      assert.deepEqual(
        results.map((r) => r.created),
        [true, true, false],
      );
      assert.equal(results[2].job.id, results[0].job.id);
      assert.deepEqual(results[2].job.payload, { n: 1 });
      assert.equal((await store.listJobs({ limit: 100 })).jobs.length, 2);
    });

    it("with payloadJson, stores that text and never serialises payload again", async (store) => {
      // A payload that throws if serialised: the store must take the text it was given.
      const handedOver = {
        toJSON() {
          throw new Error("payload serialised again");
        },
      };
      const [r] = await store.insertJobs([
        newJob({ payload: handedOver, payloadJson: '{"text":"as given","n":[1,2]}' }),
      ]);
      assert.equal(r.created, true);
      assert.deepEqual((await mustGet(store, r.job.id)).payload, { text: "as given", n: [1, 2] });
      // Records are the caller's: changing one changes neither the store nor another record.
      const [a, b] = await store.insertJobs([
        newJob({ payload: { v: [1] }, payloadJson: '{"v":[1]}' }),
        newJob({ payload: { v: [2] } }),
      ]);
      (a.job.payload as { v: number[] }).v.push(9);
      (b.job.payload as { v: number[] }).v.push(9);
      a.job.runAt.setTime(0);
      assert.deepEqual((await mustGet(store, a.job.id)).payload, { v: [1] });
      assert.deepEqual((await mustGet(store, b.job.id)).payload, { v: [2] });
      assert.notEqual((await mustGet(store, a.job.id)).runAt.getTime(), 0);
    });

    it("a batch of 12,000 spanning several statements: input order, keys colliding across them", async (store) => {
      // 0-4,999 without keys; then every third job without key and the others keyed
      // `key-(i mod 4,500)`: the key of 5,002 comes back at 9,502 (the same statement on Postgres,
      // 5,000 rows each), the key of 5,501 at 10,001 (the next one). Every tenth job is at a
      // fixed time, every tenth delayed.
      const t0 = await nowMs(store);
      const at = new Date(t0 + 3_600_000);
      const keyOf = (i: number) => (i < 5_000 || i % 3 === 0 ? null : `key-${i % 4_500}`);
      const inputs = Array.from({ length: 12_000 }, (_, i) =>
        newJob({
          payload: { i },
          // Half the jobs come as errand's enqueue sends them, with their JSON text.
          ...(i % 2 ? { payloadJson: JSON.stringify({ i }) } : {}),
          key: keyOf(i),
          ...(i % 10 === 1 ? { runAt: at } : {}),
          ...(i % 10 === 2 ? { delayMs: 60_000 } : {}),
          priority: i % 3,
        }),
      );
      const results = await store.insertJobs(inputs);
      assert.equal(results.length, inputs.length);
      const firstOfKey = new Map<string, number>();
      let lastNewId = -1n;
      let created = 0;
      results.forEach((r, i) => {
        const key = keyOf(i);
        const first = key === null ? undefined : firstOfKey.get(key);
        if (first === undefined) {
          if (key !== null) firstOfKey.set(key, i);
          assert.equal(r.created, true, `job ${i} created`);
          assert.deepEqual(r.job.payload, { i });
          assert.equal(r.job.key, key);
          assert.equal(r.job.priority, i % 3);
          assert.ok(BigInt(r.job.id) > lastNewId, `job ${i}: ids follow input order`);
          lastNewId = BigInt(r.job.id);
          created++;
        } else {
          assert.equal(r.created, false, `job ${i} repeats the key of job ${first}`);
          assert.equal(r.job.id, results[first].job.id);
          assert.deepEqual(r.job.payload, { i: first });
        }
      });
      assert.equal(created, 7_333 + 3_000, "every job without key, one per key");
      assert.equal(results[9_502].job.id, results[5_002].job.id);
      assert.equal(results[10_001].job.id, results[5_501].job.id);
      for (const i of [0, 1, 2, 5_002, 9_502, 5_501, 10_001, 11_999]) {
        const job = results[i].job;
        assert.deepEqual(await store.getJob(job.id), job, `job ${i} as stored`);
      }
      assert.equal(results[1].job.runAt.getTime(), at.getTime());
      assertWithin(results[2].job.runAt, t0 + 60_000, (await nowMs(store)) + 60_000, "runAt of delayMs");
      const [stats] = await store.stats();
      assert.equal(stats.pending + stats.delayed, created, "stats count every new job once");
      assert.equal(stats.delayed, 2_067, "the new jobs at a fixed time or delayed");
    });
  });
});
