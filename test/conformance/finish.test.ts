/** Store conformance: finishJobs: every outcome kind and what it does to the job, its attempts and its history. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import {
  assertWithin,
  claimOne,
  eachStore,
  finish,
  insertOne,
  mustGet,
  newJob,
  nowMs,
  rescue,
} from "./helpers.js";

eachStore((it) => {
  describe("finishJobs outcomes", () => {
    it("completed in one batch: results and worker ids with quotes, backslashes, braces, commas and NULL come back as given", async (store) => {
      const results: unknown[] = [
        'say "hi"',
        'back\\slash \\" end\\',
        "{a,b}",
        "NULL",
        null,
        { 'k,"}': ["\\", "{", "}", ","] },
        "",
        " spaced ",
      ];
      const worker = 'w "quoted" \\ {x,y} NULL';
      for (const _ of results) await insertOne(store);
      const claimed = await store.claimJobs({
        queue: "q",
        limit: results.length,
        workerId: worker,
        leaseMs: 60_000,
      });
      assert.equal(claimed.length, results.length);
      const applied = await store.finishJobs(
        claimed.map((c, i) => ({
          id: c.id,
          leaseToken: c.leaseToken,
          kind: "completed" as const,
          result: results[i],
          worker,
        })),
      );
      assert.deepEqual(
        applied,
        results.map(() => true),
      );
      for (const [i, c] of claimed.entries()) {
        const done = await mustGet(store, c.id);
        assert.equal(done.state, "completed");
        assert.deepEqual(done.result, results[i]);
        assert.equal(done.attempts.at(-1)?.worker, worker);
      }
    });

    it("completed: result, finishedAt and a history entry", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store, "q", 60_000, "w-done");
      const started = (await mustGet(store, job.id)).startedAt;
      const t0 = await nowMs(store);
      const result = { sent: true, ids: [1, 2], note: "ok ✓" };
      assert.equal(await finish(store, c, "completed", { result, worker: "w-done" }), true);
      const t1 = await nowMs(store);
      const done = await mustGet(store, job.id);
      assert.equal(done.state, "completed");
      assert.deepEqual(done.result, result);
      assert.equal(done.attempt, 1);
      assertWithin(done.finishedAt, t0, t1, "finishedAt");
      assert.equal(done.lockedBy, null);
      assert.equal(done.lockedUntil, null);
      assert.equal(done.attempts.length, 1);
      const h = done.attempts[0];
      assert.equal(h.attempt, 1);
      assert.equal(h.outcome, "completed");
      assert.equal(h.worker, "w-done");
      assert.equal(Date.parse(h.startedAt), started?.getTime());
      assertWithin(h.finishedAt, t0, t1, "history finishedAt");
      assert.equal(h.error, undefined);
    });

    it("retry: pending again at now + delay, attempt still charged, error in history", async (store) => {
      const job = await insertOne(store, { maxAttempts: 3 });
      const c = await claimOne(store);
      const t0 = await nowMs(store);
      const error = {
        message: "smtp said 451",
        stack: "Error: smtp said 451\n    at send",
        kind: "retryable" as const,
      };
      assert.equal(await finish(store, c, "retry", { delayMs: 60_000, error }), true);
      const t1 = await nowMs(store);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 1, "the failed attempt stays charged");
      assertWithin(j.runAt, t0 + 60_000, t1 + 60_000, "runAt");
      assert.equal(j.lastError, "smtp said 451");
      assert.equal(j.finishedAt, null);
      assert.equal(j.lockedBy, null);
      assert.equal(j.attempts.length, 1);
      const h = j.attempts[0];
      assert.equal(h.outcome, "retried");
      assert.equal(h.attempt, 1);
      assert.equal(h.error, "smtp said 451");
      assert.equal(h.stack, error.stack);
      assert.equal(h.kind, "retryable");
      assert.equal(Date.parse(h.retryAt ?? ""), j.runAt.getTime());
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("retry with no delay is due at once and the next claim is attempt 2", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      assert.equal(await finish(store, c, "retry", { error: { message: "boom", kind: "unknown" } }), true);
      const again = await claimOne(store);
      assert.equal(again.id, job.id);
      assert.equal(again.attempt, 2);
    });

    it("failed: into the dead-letter queue with its error", async (store) => {
      const job = await insertOne(store, { payload: { keep: "me" } });
      const c = await claimOne(store);
      const t0 = await nowMs(store);
      assert.equal(
        await finish(store, c, "failed", { error: { message: "bad address", kind: "permanent" } }),
        true,
      );
      const t1 = await nowMs(store);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "failed");
      assert.equal(j.lastError, "bad address");
      assert.deepEqual(j.payload, { keep: "me" });
      assertWithin(j.finishedAt, t0, t1, "finishedAt");
      assert.deepEqual(
        j.attempts.map((h) => [h.outcome, h.error, h.kind]),
        [["failed", "bad address", "permanent"]],
      );
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("snoozed: pending at now + delay, attempt not charged", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      const t0 = await nowMs(store);
      assert.equal(await finish(store, c, "snoozed", { delayMs: 30_000 }), true);
      const t1 = await nowMs(store);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 0);
      assertWithin(j.runAt, t0 + 30_000, t1 + 30_000, "runAt");
      assert.deepEqual(
        j.attempts.map((h) => [h.outcome, h.attempt]),
        [["snoozed", 1]],
      );
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("released: pending now, attempt not charged, recorded as interrupted", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      const t0 = await nowMs(store);
      assert.equal(await finish(store, c, "released", { worker: "shutting-down" }), true);
      const t1 = await nowMs(store);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 0);
      assertWithin(j.runAt, t0, t1, "runAt");
      assert.deepEqual(
        j.attempts.map((h) => [h.outcome, h.worker]),
        [["interrupted", "shutting-down"]],
      );
      const again = await claimOne(store);
      assert.equal(again.id, job.id);
      assert.equal(again.attempt, 1, "the interrupted execution was not charged");
    });

    it("cancelled: terminal with a history entry", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      assert.equal(await finish(store, c, "cancelled"), true);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "cancelled");
      assert.ok(j.finishedAt);
      assert.deepEqual(
        j.attempts.map((h) => h.outcome),
        ["cancelled"],
      );
    });

    it("a cancel requested while running turns a retry into cancelled; a completion stays completed", async (store) => {
      const [r1, r2] = await store.insertJobs([newJob({ payload: 1 }), newJob({ payload: 2 })]);
      const [c1, c2] = await store.claimJobs({ queue: "q", limit: 2, workerId: "w1", leaseMs: 60_000 });
      assert.deepEqual([c1.id, c2.id], [r1.job.id, r2.job.id]);
      for (const c of [c1, c2]) {
        const requested = await store.cancelJob(c.id);
        assert.equal(requested?.state, "running");
        assert.equal(requested?.cancelRequested, true);
      }
      assert.equal(
        await finish(store, c1, "retry", { error: { message: "aborted", kind: "cancelled" } }),
        true,
      );
      assert.equal(await finish(store, c2, "completed", { result: "did it anyway" }), true);
      const j1 = await mustGet(store, c1.id);
      assert.equal(j1.state, "cancelled");
      assert.deepEqual(
        j1.attempts.map((h) => h.outcome),
        ["cancelled"],
      );
      assert.equal(j1.cancelRequested, false);
      const j2 = await mustGet(store, c2.id);
      assert.equal(j2.state, "completed");
      assert.equal(j2.result, "did it anyway");
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it.withClock(
      "maxAttempts counts executions: snooze and release are free, retry and lost are charged",
      async (store, clock) => {
        const job = await insertOne(store, { maxAttempts: 2 });
        let c = await claimOne(store);
        assert.deepEqual([c.attempt, c.maxAttempts], [1, 2]);
        assert.equal(await finish(store, c, "snoozed", { delayMs: 0 }), true);
        c = await claimOne(store);
        assert.equal(c.attempt, 1);
        assert.equal(await finish(store, c, "released"), true);
        c = await claimOne(store);
        assert.equal(c.attempt, 1);
        assert.equal(
          await finish(store, c, "retry", { delayMs: 0, error: { message: "e1", kind: "unknown" } }),
          true,
        );
        c = await claimOne(store, "q", 30);
        assert.equal(c.attempt, 2, "the last allowed attempt");
        clock.advance(31); // past the 30 ms lease
        const rescued = await rescue(store, job.id);
        assert.equal(rescued.state, "failed", "a lost last attempt spends the budget");
        const j = await mustGet(store, job.id);
        assert.equal(j.state, "failed");
        assert.equal(j.attempt, 2);
        assert.deepEqual(
          j.attempts.map((h) => [h.outcome, h.attempt]),
          [
            ["snoozed", 1],
            ["interrupted", 1],
            ["retried", 1],
            ["lost", 2],
          ],
        );
      },
    );
  });
});
