/**
 * Store conformance: what waitFor stands on (result-waiters.ts). getJobs reads jobs by id in one
 * call; awaitJobs answers the jobs as they are and, from then on, each one's move to a final
 * state (completed, failed, cancelled — by a worker's outcome, completeInTransaction, a cancel, a
 * rescue) reaches onJobsFinished with its id, or null ("look at all of them"). On every store.
 */
import assert from "node:assert/strict";
import { describe } from "node:test";
import type { Store } from "../../src/store/types.js";
import { claimOne, eachStore, finish, insertOne, poll, rescue } from "./helpers.js";

/** Subscribes to onJobsFinished and says whether `id` was signalled (by id or by null) since. */
function signals(store: Store): { saw(id: string): boolean; stop(): void } {
  const seen = new Set<string>();
  let all = false;
  const stop = store.onJobsFinished((ids) => {
    if (ids === null) all = true;
    else for (const id of ids) seen.add(id);
  });
  return { saw: (id) => all || seen.has(id), stop };
}

eachStore((it) => {
  describe("waitFor's store operations", () => {
    it("getJobs reads jobs by id: unknown and malformed ids are left out, a repeated id comes once", async (store) => {
      const a = await insertOne(store, { payload: { n: 1 } });
      const b = await insertOne(store, { payload: { n: 2 } });
      const jobs = await store.getJobs([b.id, "999999999", a.id, "not-an-id", b.id]);
      assert.deepEqual(jobs.map((j) => j.id).sort(), [a.id, b.id].sort());
      assert.deepEqual(jobs.find((j) => j.id === a.id)?.payload, { n: 1 });
      assert.deepEqual(await store.getJobs([]), []);
    });

    it("awaitJobs answers the jobs as they are; unawaitJobs lets go", async (store) => {
      const a = await insertOne(store);
      const jobs = await store.awaitJobs([a.id, "999999999"]);
      assert.deepEqual(
        jobs.map((j) => [j.id, j.state]),
        [[a.id, "pending"]],
      );
      await store.unawaitJobs([a.id, "999999999"]);
      await store.unawaitJobs([]);
    });

    it("a completion, a failure and a cancel of awaited jobs reach onJobsFinished", async (store) => {
      const listener = signals(store);
      try {
        const done = await insertOne(store);
        const dead = await insertOne(store);
        const cancelled = await insertOne(store, { queue: "other" });
        const inTx = await insertOne(store);
        await store.awaitJobs([done.id, dead.id, cancelled.id, inTx.id]);
        const c1 = await claimOne(store);
        assert.equal(await finish(store, c1, "completed", { result: { ok: 1 } }), true);
        await poll("the completion's signal", async () => listener.saw(done.id));
        const c2 = await claimOne(store);
        assert.equal(
          await finish(store, c2, "failed", { error: { message: "no", kind: "permanent" } }),
          true,
        );
        await poll("the failure's signal", async () => listener.saw(dead.id));
        await store.cancelJob(cancelled.id);
        await poll("the cancel's signal", async () => listener.saw(cancelled.id));
        const c4 = await claimOne(store);
        assert.equal((await store.completeInTransaction(c4, "w1", () => "tx")).applied, true);
        await poll("completeInTransaction's signal", async () => listener.saw(inTx.id));
        const [completed] = await store.getJobs([done.id]);
        assert.deepEqual(completed.result, { ok: 1 });
      } finally {
        listener.stop();
      }
    });

    it.withClock(
      "a rescue that fails an awaited job for good reaches onJobsFinished",
      async (store, clock) => {
        const listener = signals(store);
        try {
          const job = await insertOne(store, { maxAttempts: 1 });
          await store.awaitJobs([job.id]);
          await claimOne(store, "q", 30);
          clock.advance(31);
          assert.equal((await rescue(store, job.id)).state, "failed");
          await poll("the rescue's signal", async () => listener.saw(job.id));
        } finally {
          listener.stop();
        }
      },
    );
  });
});
