/**
 * The worker's read-ahead (src/worker/producer.ts): jobs claimed beyond the free slots
 * wait in a local buffer. Claimed-but-unstarted jobs must go back untouched at stop, a cancel must
 * reach them without running them, and each still runs once. On every store.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob, type Errand } from "../src/index.js";
import { workerSettings } from "../src/worker/options.js";
import { targets, withErrand } from "./helpers/targets.js";
import { sleep, waitFor } from "./helpers/wait.js";

/**
 * 30 short jobs (5 ms each, so the rate is measured), then a blocker that holds the only slot
 * until `release()`, then 20 more: with a long read-ahead the worker claims the later ones while
 * the blocker runs.
 */
function scenario(errand: Errand) {
  const ran: number[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let blockerStarted = false;
  const job = defineJob({
    name: "step",
    queue: "q",
    schema: z.object({ n: z.number(), block: z.boolean() }),
    run: async ({ n, block }, ctx) => {
      ran.push(n);
      if (!block) return sleep(5);
      blockerStarted = true;
      await Promise.race([released, new Promise((resolve) => ctx.signal.addEventListener("abort", resolve))]);
    },
  });
  errand.register(job);
  const enqueueAll = async () => {
    const ids: string[] = [];
    for (let n = 0; n < 51; n++) {
      // Descending priority: the claim order is n = 0, 1, 2, …; the blocker is n = 30.
      const created = await errand.enqueue(job, { n, block: n === 30 }, { priority: 100 - n });
      ids.push(created.id);
    }
    return ids;
  };
  return { ran, release, enqueueAll, blockerStarted: () => blockerStarted };
}

const WORKER = {
  readAhead: "10s",
  batchSize: 50,
  pollInterval: 50,
  lease: "3s",
  heartbeat: "100ms",
} as const;

for (const target of targets) {
  describe(`read-ahead on ${target.name}`, { skip: target.skip }, () => {
    test("jobs claimed but not started go back untouched at stop: no attempt, no history, same order", () =>
      withErrand(target, async (errand) => {
        const s = scenario(errand);
        const ids = await s.enqueueAll();
        const worker = errand.work({ q: { concurrency: 1 } }, WORKER);
        await waitFor(s.blockerStarted, "the blocker to start");
        // Buffered jobs are held (state running) while only one runs.
        const running = await waitFor(async () => {
          const n = (await errand.stats()).find((q) => q.queue === "q")?.running ?? 0;
          return n > 1 ? n : null;
        }, "jobs to be claimed ahead of the busy slot");
        assert.ok(running > 1, `${running} held with one slot`);
        const stopping = worker.stop({ timeout: "5s" });
        s.release();
        await stopping;
        const notRun = ids.filter((_, n) => !s.ran.includes(n));
        assert.ok(notRun.length > 0, "some jobs were never started");
        for (const id of notRun) {
          const job = await errand.getJob(id);
          assert.equal(job?.state, "pending", `job ${id} is pending again`);
          assert.equal(job?.attempt, 0, `job ${id} was not charged`);
          assert.deepEqual(job?.attempts, [], `job ${id} has no history entry`);
          assert.equal(job?.lockedBy, null);
        }
        // A new worker runs the rest in the original order, each once.
        const before = s.ran.length;
        const next = errand.work({ q: { concurrency: 1 } }, WORKER);
        await waitFor(() => s.ran.length === 51, "every job to run");
        await next.stop();
        assert.deepEqual(
          s.ran.slice(before),
          [...s.ran.slice(before)].sort((a, b) => a - b),
        );
        assert.deepEqual(
          [...s.ran].sort((a, b) => a - b),
          Array.from({ length: 51 }, (_, n) => n),
          "each job ran exactly once",
        );
      }));

    test("a cancel reaches a buffered job at the next heartbeat: cancelled without running", () =>
      withErrand(target, async (errand) => {
        const s = scenario(errand);
        const ids = await s.enqueueAll();
        const worker = errand.work({ q: { concurrency: 1 } }, WORKER);
        await waitFor(s.blockerStarted, "the blocker to start");
        const buffered = await waitFor(async () => {
          const page = await errand.listJobs({ queue: "q", state: "running", limit: 100 });
          return page.jobs.find((j) => j.id !== ids[30]) ?? null;
        }, "a job claimed ahead");
        const cancelled = await errand.cancel(buffered.id);
        assert.equal(cancelled?.state, "running", "a held job gets a cancel request");
        const done = await waitFor(async () => {
          const job = await errand.getJob(buffered.id);
          return job?.state === "cancelled" ? job : null;
        }, "the buffered job to be cancelled");
        s.release();
        await waitFor(() => s.ran.length === 50, "every other job to run");
        await worker.stop();
        const n = ids.indexOf(buffered.id);
        assert.ok(!s.ran.includes(n), "the cancelled job never ran");
        assert.equal(done.attempt, 0);
        assert.deepEqual(done.attempts, []);
      }));
  });
}

describe("the default claim size", () => {
  test("1,000 jobs on PostgreSQL (a round trip spread over more jobs), 500 on SQLite and in memory", () => {
    assert.equal(workerSettings({}, false, "postgres").batchSize, 1000);
    assert.equal(workerSettings({}, false, "sqlite").batchSize, 500);
    assert.equal(workerSettings({}, false, "memory").batchSize, 500);
    assert.equal(workerSettings({ batchSize: 20 }, false, "postgres").batchSize, 20);
  });
});
