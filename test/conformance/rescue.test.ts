/** Store conformance: Leases and the rescuer: an expired lease gives the job back (or fails it) exactly once. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import { assertWithin, claimOne, eachStore, finish, insertOne, mustGet, nowMs, rescue } from "./helpers.js";

eachStore((it) => {
  describe("leases and the rescuer", () => {
    it.withClock(
      "extendLeases moves lockedUntil and keeps a job from being rescued",
      async (store, clock) => {
        const job = await insertOne(store);
        const c = await claimOne(store, "q", 40);
        const t0 = await nowMs(store);
        const [status] = await store.extendLeases([c], 60_000);
        const t1 = await nowMs(store);
        assert.deepEqual(status, { id: job.id, held: true, cancelRequested: false });
        assertWithin((await mustGet(store, job.id)).lockedUntil, t0 + 60_000, t1 + 60_000, "lockedUntil");
        clock.advance(60); // past the original 40 ms lease
        assert.deepEqual(
          (await store.rescueExpiredLeases()).filter((r) => r.id === job.id),
          [],
        );
        assert.equal((await mustGet(store, job.id)).state, "running");
        // Shorten it again: now the rescuer takes it.
        assert.equal((await store.extendLeases([c], 30))[0].held, true);
        clock.advance(31); // past the 30 ms lease
        assert.equal((await rescue(store, job.id)).state, "pending");
      },
    );

    it.withClock(
      "rescues an expired lease to pending: outcome lost, attempt charged, old token dead",
      async (store, clock) => {
        const job = await insertOne(store, { queue: "mail", name: "send", maxAttempts: 3 });
        const longer = await insertOne(store, { queue: "mail", name: "send" });
        const c = await claimOne(store, "mail", 30, "dying-worker");
        const kept = await claimOne(store, "mail", 60_000, "live-worker");
        assert.equal(kept.id, longer.id);
        const t0 = await nowMs(store);
        clock.advance(31); // past the 30 ms lease
        const rescued = await rescue(store, job.id);
        const t1 = await nowMs(store);
        assert.deepEqual(rescued, { id: job.id, queue: "mail", name: "send", state: "pending", attempt: 1 });
        const j = await mustGet(store, job.id);
        assert.equal(j.state, "pending");
        assert.equal(j.attempt, 1);
        assert.equal(j.lockedBy, null);
        assert.equal(j.lockedUntil, null);
        // Due again at once, queued behind jobs already waiting (run_at = the rescue time, like a retry without delay).
        assertWithin(j.runAt, t0, t1, "runAt");
        assert.equal(j.attempts.length, 1);
        const h = j.attempts[0];
        assert.equal(h.outcome, "lost");
        assert.equal(h.attempt, 1);
        assert.equal(h.worker, "dying-worker");
        assert.ok(j.lastError, "lastError says the lease was lost");
        // The live lease was not touched.
        assert.equal((await mustGet(store, longer.id)).state, "running");
        assert.deepEqual(await store.rescueExpiredLeases(), []);
        // The old holder is fenced off.
        assert.equal(await finish(store, c, "completed"), false);
        assert.equal((await store.extendLeases([c], 60_000))[0].held, false);
        const again = await claimOne(store, "mail");
        assert.equal(again.id, job.id);
        assert.equal(again.attempt, 2);
      },
    );

    it("rescues to failed when attempts are spent", async (store) => {
      const job = await insertOne(store, { maxAttempts: 1 });
      await claimOne(store, "q", 30);
      const rescued = await rescue(store, job.id);
      assert.equal(rescued.state, "failed");
      assert.equal(rescued.attempt, 1);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "failed");
      assert.ok(j.finishedAt);
      assert.ok(j.lastError);
      assert.deepEqual(
        j.attempts.map((h) => h.outcome),
        ["lost"],
      );
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it.withClock("a cancel-requested job whose lease expires is cancelled", async (store, clock) => {
      const job = await insertOne(store, { maxAttempts: 5 });
      await claimOne(store, "q", 30);
      assert.equal((await store.cancelJob(job.id))?.cancelRequested, true);
      clock.advance(31); // past the 30 ms lease
      const rescued = await rescue(store, job.id);
      assert.equal(rescued.state, "cancelled");
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "cancelled");
      assert.ok(j.finishedAt);
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });
  });
});
