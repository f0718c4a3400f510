/**
 * Store conformance: operating queues — actOnJobs (one bounded batch of a bulk action by filter),
 * deadLetterGroups and recentTimings. On every store (./helpers.ts).
 */
import assert from "node:assert/strict";
import { describe } from "node:test";
import type { Store } from "../../src/store/types.js";
import { claimOne, eachStore, finish, insertOne, mustGet } from "./helpers.js";

/** A failed job of `queue` whose error message is `message`. */
async function failedJob(
  store: Store,
  queue: string,
  message: string,
  payload: unknown = {},
): Promise<string> {
  const job = await insertOne(store, { queue, payload });
  const c = await claimOne(store, queue);
  assert.equal(c.id, job.id);
  assert.equal(await finish(store, c, "failed", { error: { message, kind: "permanent" } }), true);
  return job.id;
}

eachStore((it) => {
  describe("actOnJobs", () => {
    it("retries at most `limit` failed jobs matching the search (error message or payload), newest first", async (store) => {
      const timeouts = [];
      for (let i = 0; i < 5; i++) timeouts.push(await failedJob(store, "a", `timeout talking to host ${i}`));
      const other = await failedJob(store, "a", "bad card");
      const byPayload = await failedJob(store, "a", "bad card", { customer: "timeout-co" });
      const elsewhere = await failedJob(store, "b", "timeout talking to host 9");

      assert.equal(await store.actOnJobs({ action: "retry", queue: "a", search: "timeout", limit: 4 }), 4);
      // Newest first: the payload match and the four newest timeouts; the oldest timeout is left.
      assert.equal((await mustGet(store, byPayload)).state, "pending");
      for (const id of timeouts.slice(2)) assert.equal((await mustGet(store, id)).state, "pending");
      assert.equal((await mustGet(store, timeouts[0])).state, "failed");
      const retried = await mustGet(store, timeouts[4]);
      assert.equal(retried.attempt, 0);
      assert.equal(retried.attempts.length, 1, "history kept");
      assert.equal((await mustGet(store, timeouts[1])).state, "failed");

      assert.equal(await store.actOnJobs({ action: "retry", queue: "a", search: "timeout", limit: 4 }), 2);
      assert.equal(await store.actOnJobs({ action: "retry", queue: "a", search: "timeout", limit: 4 }), 0);
      assert.equal((await mustGet(store, other)).state, "failed");
      assert.equal((await mustGet(store, elsewhere)).state, "failed", "another queue is left alone");
    });

    it("discards failed jobs only, and cancels pending ones (due or delayed) but never running ones", async (store) => {
      const failed = await failedJob(store, "a", "boom");
      const due = await insertOne(store, { queue: "a" });
      const delayed = await insertOne(store, { queue: "a", delayMs: 60_000 });
      const running = await insertOne(store, { queue: "a" });
      const stillPending = await insertOne(store, { queue: "b" });
      // claimOne takes the oldest due job: `due`; swap so `running` is the one claimed.
      const c = await claimOne(store, "a");
      assert.equal(c.id, due.id);

      assert.equal(await store.actOnJobs({ action: "discard", limit: 10 }), 1);
      assert.equal(await store.getJob(failed), null);
      assert.equal(await store.actOnJobs({ action: "cancel", queue: "a", limit: 10 }), 2);
      assert.equal((await mustGet(store, delayed.id)).state, "cancelled");
      assert.equal((await mustGet(store, running.id)).state, "cancelled");
      const held = await mustGet(store, due.id);
      assert.equal(held.state, "running");
      assert.equal(held.cancelRequested, false);
      assert.equal((await mustGet(store, stillPending.id)).state, "pending");
      assert.notEqual((await mustGet(store, delayed.id)).finishedAt, null);
    });
  });

  describe("deadLetterGroups", () => {
    it("groups failed jobs by error message, most first, with first and last seen", async (store) => {
      await failedJob(store, "a", "timeout");
      await failedJob(store, "b", "timeout");
      await failedJob(store, "a", "bad card");
      await failedJob(store, "a", "timeout");
      const groups = await store.deadLetterGroups();
      assert.deepEqual(
        groups.map((g) => [g.error, g.count]),
        [
          ["timeout", 3],
          ["bad card", 1],
        ],
      );
      assert.ok(groups[0].firstSeen.getTime() <= groups[0].lastSeen.getTime());
      const onlyA = await store.deadLetterGroups("a");
      assert.deepEqual(
        onlyA.map((g) => [g.error, g.count]),
        [
          ["timeout", 2],
          ["bad card", 1],
        ],
      );
      assert.deepEqual(await store.deadLetterGroups("none"), []);
    });

    it("groups long messages by their first 200 characters", async (store) => {
      await failedJob(store, "a", `${"x".repeat(200)}-one`);
      await failedJob(store, "a", `${"x".repeat(200)}-two`);
      const groups = await store.deadLetterGroups("a");
      assert.deepEqual(
        groups.map((g) => [g.error, g.count]),
        [["x".repeat(200), 2]],
      );
    });
  });

  describe("recentTimings", () => {
    it("answers run and wait times of jobs finished within the window, newest first, up to limit", async (store) => {
      for (const queue of ["a", "b", "a"]) {
        await insertOne(store, { queue });
        const c = await claimOne(store, queue);
        await finish(store, c, "completed", { result: null });
      }
      await insertOne(store, { queue: "a" }); // pending: no timing
      const all = await store.recentTimings(3_600_000, 100);
      assert.deepEqual(
        all.map((t) => t.queue),
        ["a", "b", "a"].reverse(),
      );
      for (const t of all) {
        assert.ok(t.runMs >= 0 && t.waitMs >= 0);
        assert.ok(Number.isFinite(t.runMs) && Number.isFinite(t.waitMs));
      }
      assert.equal((await store.recentTimings(3_600_000, 2)).length, 2);
    });
  });
});
