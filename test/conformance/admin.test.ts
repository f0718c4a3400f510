/** Store conformance: Operator actions: cancelJob, retryJobs and discardJobs, pruneFinished. On every store (./helpers.ts). */
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
} from "./helpers.js";

eachStore((it) => {
  describe("cancelJob", () => {
    it("cancels a pending job at once", async (store) => {
      const job = await insertOne(store, { delayMs: 60_000 });
      const t0 = await nowMs(store);
      const cancelled = await store.cancelJob(job.id);
      const t1 = await nowMs(store);
      assert.equal(cancelled?.id, job.id);
      assert.equal(cancelled?.state, "cancelled");
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "cancelled");
      assertWithin(j.finishedAt, t0, t1, "finishedAt");
      assert.equal(j.attempt, 0);
    });

    it("requests cancellation of a running job; the holder sees it at its next heartbeat", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      assert.deepEqual(await store.extendLeases([c], 60_000), [
        { id: job.id, held: true, cancelRequested: false },
      ]);
      const r = await store.cancelJob(job.id);
      assert.equal(r?.state, "running");
      assert.equal(r?.cancelRequested, true);
      assert.equal((await mustGet(store, job.id)).cancelRequested, true);
      assert.deepEqual(await store.extendLeases([c], 60_000), [
        { id: job.id, held: true, cancelRequested: true },
      ]);
    });

    it("leaves finished jobs alone; an unknown id is null", async (store) => {
      await insertOne(store);
      const c = await claimOne(store);
      await finish(store, c, "completed", { result: 1 });
      const r = await store.cancelJob(c.id);
      assert.equal(r?.state, "completed");
      assert.equal((await mustGet(store, c.id)).state, "completed");
      assert.equal(await store.cancelJob("999999999"), null);
    });
  });

  describe("retryJobs and discardJobs", () => {
    /** Makes a failed job in `queue` with one history entry. */
    async function failedJob(store: Store, queue: string): Promise<string> {
      const job = await insertOne(store, { queue, payload: { queue } });
      const c = await claimOne(store, queue);
      assert.equal(c.id, job.id);
      assert.equal(
        await finish(store, c, "failed", { error: { message: `broken in ${queue}`, kind: "permanent" } }),
        true,
      );
      return job.id;
    }

    it("retryJobs by ids: failed → pending now, fresh attempt budget, history kept", async (store) => {
      const f1 = await failedJob(store, "a");
      const f2 = await failedJob(store, "a");
      const t0 = await nowMs(store);
      assert.equal(await store.retryJobs({ ids: [f1] }), 1);
      const t1 = await nowMs(store);
      const j = await mustGet(store, f1);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 0);
      assertWithin(j.runAt, t0, t1, "runAt");
      assert.equal(j.finishedAt, null);
      assert.deepEqual(
        j.attempts.map((h) => [h.outcome, h.error]),
        [["failed", "broken in a"]],
      );
      assert.equal((await mustGet(store, f2)).state, "failed", "only the given ids");
      const again = await claimOne(store, "a");
      assert.equal(again.id, f1);
      assert.equal(again.attempt, 1);
    });

    it("retryJobs by queue takes that queue's failed jobs only: cancelled ones stay cancelled", async (store) => {
      const a1 = await failedJob(store, "a");
      const a2 = await failedJob(store, "a");
      const b1 = await failedJob(store, "b");
      const cancelled = await insertOne(store, { queue: "a" });
      await store.cancelJob(cancelled.id);
      const pending = await insertOne(store, { queue: "a", delayMs: 60_000 });
      const done = await insertOne(store, { queue: "c" });
      await finish(store, await claimOne(store, "c"), "completed");
      assert.equal(await store.retryJobs({ queue: "a" }), 2);
      for (const id of [a1, a2]) assert.equal((await mustGet(store, id)).state, "pending");
      assert.equal((await mustGet(store, cancelled.id)).state, "cancelled", "cancelled is not in the DLQ");
      assert.equal((await mustGet(store, b1)).state, "failed");
      assert.equal(await store.retryJobs({ ids: [cancelled.id] }), 1, "a cancelled job is retried by id");
      assert.equal((await mustGet(store, cancelled.id)).state, "pending");
      assert.equal(await store.retryJobs({}), 1, "all queues: b's failed job");
      assert.equal((await mustGet(store, b1)).state, "pending");
      assert.equal(
        (await mustGet(store, pending.id)).runAt.getTime(),
        pending.runAt.getTime(),
        "pending untouched",
      );
      assert.equal(await store.retryJobs({ ids: [done.id] }), 0, "a completed job is not retried");
      assert.equal((await mustGet(store, done.id)).state, "completed");
      assert.equal(await store.retryJobs({ ids: ["999999999"] }), 0);
    });

    it("discardJobs deletes failed jobs only", async (store) => {
      const a1 = await failedJob(store, "a");
      const a2 = await failedJob(store, "a");
      const b1 = await failedJob(store, "b");
      const pending = await insertOne(store, { queue: "a", delayMs: 60_000 });
      const done = await insertOne(store, { queue: "a", key: "done" });
      await finish(store, await claimOne(store, "a"), "completed");
      assert.equal(await store.discardJobs({ ids: [a1, done.id, pending.id] }), 1);
      assert.equal(await store.getJob(a1), null);
      assert.equal((await mustGet(store, done.id)).state, "completed");
      assert.equal(await store.discardJobs({ queue: "a" }), 1);
      assert.equal(await store.getJob(a2), null);
      assert.equal((await mustGet(store, b1)).state, "failed");
      assert.equal((await mustGet(store, pending.id)).state, "pending");
      assert.equal(await store.discardJobs({ queue: "a" }), 0);
    });

    it("ids are never reused, even after the newest job is deleted", async (store) => {
      const older = await insertOne(store);
      const newest = await insertOne(store, { queue: "doomed" });
      await finish(store, await claimOne(store, "doomed"), "failed", {
        error: { message: "x", kind: "permanent" },
      });
      assert.equal(await store.discardJobs({ ids: [newest.id] }), 1);
      const next = await insertOne(store);
      assert.ok(![older.id, newest.id].includes(next.id), `a fresh id, not ${next.id} again`);
      assert.equal(await store.getJob(newest.id), null, "the deleted id stays unknown");
      assert.deepEqual(ids((await store.listJobs({})).jobs), [next.id, older.id], "newest first");
    });

    it("a discarded job's key can be used again", async (store) => {
      const job = await insertOne(store, { key: "k" });
      await finish(store, await claimOne(store), "failed", { error: { message: "x", kind: "permanent" } });
      assert.equal(await store.discardJobs({ ids: [job.id] }), 1);
      const [again] = await store.insertJobs([newJob({ key: "k" })]);
      assert.equal(again.created, true);
      assert.notEqual(again.job.id, job.id);
    });
  });

  describe("pruneFinished", () => {
    it.withClock(
      "prunes completed and cancelled past completedAgeMs, failed past failedAgeMs, never pending or running",
      async (store, clock) => {
        const [done, cancelled, failed, pending, running] = (
          await store.insertJobs([
            newJob({ queue: "done" }),
            newJob({ queue: "cancelled" }),
            newJob({ queue: "failed" }),
            newJob({ queue: "pending", runAt: new Date(Date.UTC(2000, 0, 1)) }),
            newJob({ queue: "running" }),
          ])
        ).map((r) => r.job.id);
        await finish(store, await claimOne(store, "done"), "completed");
        await finish(store, await claimOne(store, "cancelled"), "cancelled");
        await finish(store, await claimOne(store, "failed"), "failed", {
          error: { message: "x", kind: "permanent" },
        });
        await claimOne(store, "running");

        // Everything finished just now: a long retention keeps it.
        assert.equal(await store.pruneFinished({ completedAgeMs: 60_000, failedAgeMs: 60_000 }), 0);
        clock.advance(40);
        assert.equal(await store.pruneFinished({ completedAgeMs: 10, failedAgeMs: 3_600_000 }), 2);
        assert.equal(await store.getJob(done), null);
        assert.equal(await store.getJob(cancelled), null);
        assert.equal((await mustGet(store, failed)).state, "failed", "the dead-letter queue is kept longer");
        assert.equal(await store.pruneFinished({ completedAgeMs: 3_600_000, failedAgeMs: 10 }), 1);
        assert.equal(await store.getJob(failed), null);
        assert.equal(await store.pruneFinished({ completedAgeMs: 0, failedAgeMs: 0 }), 0);
        assert.equal((await mustGet(store, pending)).state, "pending");
        assert.equal((await mustGet(store, running)).state, "running");
      },
    );
  });
});
