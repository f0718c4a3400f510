/** Store conformance: Fencing by lease token: a write with a lease that is no longer current changes nothing. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import type { ClaimedJob } from "../../src/store/types.js";
import { claimOne, eachStore, finish, insertOne, mustGet, newJob, rescue } from "./helpers.js";

eachStore((it) => {
  describe("fencing by lease token", () => {
    it.withClock(
      "a stale token (after rescue and re-claim) changes nothing; the current token works",
      async (store, clock) => {
        const job = await insertOne(store, { maxAttempts: 5 });
        const stale = await claimOne(store, "q", 30, "old-worker");
        clock.advance(31); // past the 30 ms lease
        await rescue(store, job.id);
        const current = await claimOne(store, "q", 60_000, "new-worker");
        assert.equal(current.id, job.id);
        assert.equal(current.attempt, 2);
        assert.notEqual(current.leaseToken, stale.leaseToken, "a fresh lease token");
        const before = await mustGet(store, job.id);

        for (const kind of ["completed", "retry", "failed", "snoozed", "released", "cancelled"] as const) {
          assert.equal(
            await finish(store, stale, kind, { result: "stale" }),
            false,
            `stale ${kind} is fenced off`,
          );
        }
        const [status] = await store.extendLeases([stale], 60_000);
        assert.deepEqual({ id: status.id, held: status.held }, { id: job.id, held: false });
        assert.equal(await store.setProgress(stale, { fraction: 0.5, message: "stale" }), false);
        const [applied] = await store.finishJobs([{ ...stale, kind: "completed", worker: "old-worker" }]);
        assert.equal(applied, false);
        assert.deepEqual(await mustGet(store, job.id), before, "nothing changed");

        // The current holder is unaffected.
        assert.equal(await store.setProgress(current, { fraction: 0.25, message: "a quarter" }), true);
        assert.deepEqual((await mustGet(store, job.id)).progress, { fraction: 0.25, message: "a quarter" });
        const [held] = await store.extendLeases([current], 60_000);
        assert.equal(held.held, true);
        assert.equal(await finish(store, current, "completed", { result: 42, worker: "new-worker" }), true);
        const done = await mustGet(store, job.id);
        assert.equal(done.state, "completed");
        assert.equal(done.result, 42);
      },
    );

    it("a finished job's token is dead; a batch applies each outcome on its own", async (store) => {
      await store.insertJobs([newJob({ payload: 1 }), newJob({ payload: 2 }), newJob({ payload: 3 })]);
      const [a, b, c] = await store.claimJobs({ queue: "q", limit: 3, workerId: "w1", leaseMs: 60_000 });
      assert.equal(await finish(store, b, "completed"), true);
      const applied = await store.finishJobs([
        { id: a.id, leaseToken: a.leaseToken, kind: "completed", worker: "w1" },
        { id: b.id, leaseToken: b.leaseToken, kind: "failed", worker: "w1" },
        { id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "w1" },
        { id: c.id, leaseToken: c.leaseToken, kind: "failed", worker: "w1" },
      ]);
      assert.deepEqual(applied, [true, false, true, false]);
      assert.equal((await mustGet(store, b.id)).state, "completed");
      assert.equal((await mustGet(store, b.id)).attempts.length, 1);
      assert.equal((await mustGet(store, c.id)).state, "completed");
      assert.equal(await store.setProgress(b, { fraction: 1 }), false);
      assert.equal((await store.extendLeases([b], 60_000))[0].held, false);
      assert.equal((await store.extendLeases([{ id: "999999999", leaseToken: 1 }], 60_000))[0].held, false);
    });

    it("a batch of many plain completions among fenced ones, a job finished twice and another worker's: each applies as if alone, in order", async (store) => {
      await store.insertJobs(Array.from({ length: 7 }, (_, i) => newJob({ payload: i })));
      const claimed = await store.claimJobs({ queue: "q", limit: 7, workerId: "w1", leaseMs: 60_000 });
      assert.equal(claimed.length, 7);
      const [a, b, c, d, e, f, g] = claimed as [ClaimedJob, ...ClaimedJob[]] & ClaimedJob[];
      assert.equal(await finish(store, b, "completed", { result: "first", worker: "w1" }), true);
      const plain = (job: ClaimedJob, result: unknown, worker = "w1") => ({
        id: job.id,
        leaseToken: job.leaseToken,
        kind: "completed" as const,
        result,
        worker,
      });
      const applied = await store.finishJobs([
        plain(a, { n: 1 }),
        plain(b, "second"), // b's lease ended with its first completion
        {
          id: c.id,
          leaseToken: c.leaseToken,
          kind: "failed",
          worker: "w1",
          error: { message: "no", kind: "permanent" },
        },
        plain(c, "after failed"),
        plain(d, 'quote " and \\'),
        plain(e, null, "w2"),
        plain(f, [1, 2]),
        { ...plain(g, "stale"), leaseToken: g.leaseToken + 1 },
        plain(f, "again"),
      ]);
      assert.deepEqual(applied, [true, false, true, false, true, true, true, false, false]);
      const state = async (job: ClaimedJob) => {
        const got = await mustGet(store, job.id);
        return [got.state, got.result, got.attempts.at(-1)?.worker];
      };
      assert.deepEqual(await state(a), ["completed", { n: 1 }, "w1"]);
      assert.deepEqual(await state(b), ["completed", "first", "w1"]);
      assert.equal((await mustGet(store, c.id)).state, "failed");
      assert.deepEqual(await state(d), ["completed", 'quote " and \\', "w1"]);
      assert.deepEqual(await state(e), ["completed", null, "w2"]);
      assert.deepEqual(await state(f), ["completed", [1, 2], "w1"]);
      assert.equal((await mustGet(store, g.id)).state, "running");
      assert.equal((await mustGet(store, a.id)).attempts.length, 1);
    });

    it("a stale lease and the current one of the same job: only the current applies, in either order", async (store) => {
      for (const staleFirst of [true, false]) {
        const job = await insertOne(store, { payload: staleFirst ? "stale first" : "current first" });
        const [old] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w1", leaseMs: 60_000 });
        assert.equal(old?.id, job.id);
        assert.equal(await store.returnJobs([old as ClaimedJob]), 1);
        const [now] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w2", leaseMs: 60_000 });
        assert.equal(now?.id, job.id);
        assert.notEqual(now?.leaseToken, old?.leaseToken);
        const stale = {
          id: job.id,
          leaseToken: (old as ClaimedJob).leaseToken,
          kind: "failed" as const,
          worker: "w1",
        };
        const current = {
          id: job.id,
          leaseToken: (now as ClaimedJob).leaseToken,
          kind: "completed" as const,
          worker: "w2",
        };
        const applied = await store.finishJobs(staleFirst ? [stale, current] : [current, stale]);
        assert.deepEqual(applied, staleFirst ? [false, true] : [true, false]);
        const done = await mustGet(store, job.id);
        assert.equal(done.state, "completed");
        assert.equal(done.attempts.at(-1)?.worker, "w2");
      }
    });
  });
});
