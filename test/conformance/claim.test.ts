/** Store conformance: claimJobs and returnJobs: which jobs a worker gets, in which order, and handing them back unstarted. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import type { Store } from "../../src/store/types.js";
import {
  assertWithin,
  claimOne,
  eachStore,
  finish,
  ids,
  insertOne,
  mustGet,
  newJob,
  nowMs,
  poll,
} from "./helpers.js";

eachStore((it) => {
  describe("claimJobs", () => {
    /** The same layout in a queue: the expected claim order is B E C A D F. */
    async function layout(store: Store, queue: string): Promise<string[]> {
      const base = (await nowMs(store)) - 10_000;
      const insert = async (label: string, priority: number, offset: number) =>
        (await insertOne(store, { queue, name: label, priority, runAt: new Date(base + offset) })).id;
      const A = await insert("A", 0, 2);
      const B = await insert("B", 5, 3);
      const C = await insert("C", 0, 1);
      const D = await insert("D", 0, 2); // same priority and run_at as A, inserted after it
      const E = await insert("E", 5, 3); // same as B, inserted after it
      const F = await insert("F", -1, 0);
      return [B, E, C, A, D, F];
    }

    it("takes higher priority first, then earlier run_at, then insertion order", async (store) => {
      const expected = await layout(store, "one-by-one");
      const got: string[] = [];
      for (let i = 0; i < expected.length; i++) got.push((await claimOne(store, "one-by-one")).id);
      assert.deepEqual(got, expected);
      assert.deepEqual(
        await store.claimJobs({ queue: "one-by-one", limit: 1, workerId: "w1", leaseMs: 60_000 }),
        [],
      );

      const expected2 = await layout(store, "all-at-once");
      const all = await store.claimJobs({
        queue: "all-at-once",
        limit: 100,
        workerId: "w1",
        leaseMs: 60_000,
      });
      assert.deepEqual(ids(all), expected2, "one claim returns its jobs in order");
    });

    it("priority never preempts: a running job stays running when a higher one arrives", async (store) => {
      await insertOne(store, { priority: 0 });
      const low = await claimOne(store);
      const high = await insertOne(store, { priority: 100 });
      assert.equal((await mustGet(store, low.id)).state, "running");
      assert.equal((await claimOne(store)).id, high.id);
    });

    it("does not claim a delayed job before it is due, then does", async (store) => {
      const later = await insertOne(store, { delayMs: 150 });
      await insertOne(store, { delayMs: 3_600_000 });
      const early = await store.claimJobs({ queue: "q", limit: 10, workerId: "w1", leaseMs: 60_000 });
      const t1 = await nowMs(store);
      // Only meaningful if the claim surely ran before run_at (a loaded machine may be slower than 150 ms).
      if (t1 < later.runAt.getTime()) assert.deepEqual(early, [], "nothing due yet");
      const claimed =
        early.length > 0
          ? early
          : await poll("the delayed job to become due", async () => {
              const got = await store.claimJobs({ queue: "q", limit: 10, workerId: "w1", leaseMs: 60_000 });
              return got.length ? got : undefined;
            });
      assert.deepEqual(ids(claimed), [later.id], "the job an hour ahead is never claimed");
      const stored = await mustGet(store, later.id);
      assert.ok(
        stored.startedAt && stored.startedAt.getTime() >= later.runAt.getTime(),
        "claimed no earlier than run_at",
      );
    });

    it("respects limit and leaves other queues untouched", async (store) => {
      for (let i = 0; i < 5; i++) await insertOne(store, { queue: "mine", payload: { i } });
      const other = await insertOne(store, { queue: "other" });
      assert.deepEqual(
        await store.claimJobs({ queue: "mine", limit: 0, workerId: "w1", leaseMs: 60_000 }),
        [],
      );
      const two = await store.claimJobs({ queue: "mine", limit: 2, workerId: "w1", leaseMs: 60_000 });
      assert.equal(two.length, 2);
      const rest = await store.claimJobs({ queue: "mine", limit: 10, workerId: "w1", leaseMs: 60_000 });
      assert.equal(rest.length, 3);
      assert.deepEqual(
        await store.claimJobs({ queue: "nobody", limit: 10, workerId: "w1", leaseMs: 60_000 }),
        [],
      );
      const untouched = await mustGet(store, other.id);
      assert.equal(untouched.state, "pending");
      assert.equal(untouched.attempt, 0);
    });

    it("charges an attempt, locks the job and hands out a lease", async (store) => {
      const job = await insertOne(store, {
        queue: "q",
        name: "n",
        payload: { a: [1] },
        priority: 3,
        maxAttempts: 5,
        key: "k",
      });
      const t0 = await nowMs(store);
      const c = await claimOne(store, "q", 60_000, "worker-7");
      const t1 = await nowMs(store);
      assert.equal(c.id, job.id);
      assert.equal(c.queue, "q");
      assert.equal(c.name, "n");
      assert.deepEqual(c.payload, { a: [1] });
      assert.equal(c.priority, 3);
      assert.equal(c.attempt, 1);
      assert.equal(c.maxAttempts, 5);
      assert.equal(c.key, "k");
      assert.equal(c.runAt.getTime(), job.runAt.getTime());
      assert.equal(c.createdAt.getTime(), job.createdAt.getTime());
      assert.equal(typeof c.leaseToken, "number");
      assertWithin(c.lockedUntil, t0 + 60_000, t1 + 60_000, "lockedUntil");

      const stored = await mustGet(store, job.id);
      assert.equal(stored.state, "running");
      assert.equal(stored.attempt, 1);
      assert.equal(stored.lockedBy, "worker-7");
      assert.equal(stored.lockedUntil?.getTime(), c.lockedUntil.getTime());
      assertWithin(stored.startedAt, t0, t1, "startedAt");
      assert.deepEqual(stored.attempts, [], "history grows when an attempt ends, not when it starts");
    });

    it("concurrent claims never return the same job", async (store) => {
      await store.insertJobs(Array.from({ length: 10 }, (_, i) => newJob({ payload: { i } })));
      const batches = await Promise.all(
        Array.from({ length: 4 }, (_, w) =>
          store.claimJobs({ queue: "q", limit: 3, workerId: `w${w}`, leaseMs: 60_000 }),
        ),
      );
      const seen = batches.flat().map((c) => c.id);
      assert.equal(new Set(seen).size, seen.length, "no job claimed twice");
      assert.ok(seen.length <= 10);
      const rest = await store.claimJobs({ queue: "q", limit: 10, workerId: "w9", leaseMs: 60_000 });
      const all = [...seen, ...ids(rest)];
      assert.equal(new Set(all).size, 10, "every job claimed exactly once");
      assert.equal(all.length, 10);
    });
  });

  describe("returnJobs (claimed, never started)", () => {
    it("puts jobs back as if never claimed: same place in line, attempt not counted, no history", async (store) => {
      const first = await insertOne(store, { payload: "first" });
      const second = await insertOne(store, { payload: "second" });
      const before = await mustGet(store, first.id);
      const claimed = await store.claimJobs({ queue: "q", limit: 2, workerId: "w1", leaseMs: 60_000 });
      assert.deepEqual(
        claimed.map((c) => c.id),
        [first.id, second.id],
      );
      assert.equal(await store.returnJobs(claimed), 2);
      const after = await mustGet(store, first.id);
      assert.equal(after.state, "pending");
      assert.equal(after.attempt, 0);
      assert.deepEqual(after.attempts, []);
      assert.equal(after.startedAt, null);
      assert.equal(after.lockedBy, null);
      assert.equal(after.lockedUntil, null);
      assert.equal(after.runAt.getTime(), before.runAt.getTime(), "run_at kept");
      // Claimed again, in the same order, with fresh tokens; the returned tokens are dead.
      const again = await store.claimJobs({ queue: "q", limit: 2, workerId: "w2", leaseMs: 60_000 });
      assert.deepEqual(
        again.map((c) => [c.id, c.attempt]),
        [
          [first.id, 1],
          [second.id, 1],
        ],
      );
      assert.notEqual(again[0].leaseToken, claimed[0].leaseToken);
      assert.equal(await store.returnJobs(claimed), 0, "stale tokens return nothing");
      assert.equal((await mustGet(store, first.id)).state, "running");
    });

    it("keeps earlier attempts: a retried job returned keeps its history and attempt count", async (store) => {
      const job = await insertOne(store, { maxAttempts: 5 });
      const c1 = await claimOne(store);
      assert.equal(
        await finish(store, c1, "retry", { delayMs: 0, error: { message: "flaky", kind: "retryable" } }),
        true,
      );
      const c2 = await claimOne(store);
      assert.equal(c2.attempt, 2);
      assert.equal(await store.returnJobs([c2]), 1);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 1);
      assert.equal(j.attempts.length, 1);
      assert.equal(j.attempts[0].outcome, "retried");
      assert.equal((await claimOne(store)).attempt, 2);
    });

    it("a job whose cancel was requested while it waited ends cancelled", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      await store.cancelJob(job.id);
      const t0 = await nowMs(store);
      assert.equal(await store.returnJobs([c]), 1);
      const t1 = await nowMs(store);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "cancelled");
      assert.equal(j.cancelRequested, false);
      assert.equal(j.attempt, 0);
      assertWithin(j.finishedAt, t0, t1, "finishedAt");
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("ignores finished jobs, unknown ids and an empty list", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      assert.equal(await finish(store, c, "completed"), true);
      assert.equal(await store.returnJobs([c, { id: "999999999", leaseToken: 1 }]), 0);
      assert.equal(await store.returnJobs([]), 0);
      assert.equal((await mustGet(store, job.id)).state, "completed");
    });
  });
});
