/**
 * errand.waitFor and enqueueAndWait on every store: a job's result, typed by its definition;
 * a clear WaitForError when it fails for good, is cancelled or gone, or the wait ends first —
 * and then the job is untouched. The waits here use `waitRecheck: "1h"`, far past every bound
 * of this file: a wait that settles was woken by the store's notifications, not by the recheck
 * (except the last test, which loses every notification to show the recheck settles waits).
 * Settle latency is measured in bench/wait-for.ts, not asserted here.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import {
  defineJob,
  MemoryStore,
  openErrand,
  PermanentError,
  silentLogger,
  ValidationError,
  WaitForError,
} from "../../src/index.js";
import { targets } from "../helpers/targets.js";
import { waitFor as until, within } from "../helpers/wait.js";

const double = defineJob({
  name: "double",
  queue: "q",
  schema: z.object({ n: z.number() }),
  run: async ({ n }) => ({ doubled: n * 2 }),
});

const reject = defineJob({
  name: "reject",
  queue: "q",
  schema: z.object({ why: z.string() }),
  run: async ({ why }): Promise<number> => {
    throw new PermanentError(why);
  },
});

/** Never runs in these tests: its queue has no worker. */
const parked = defineJob({ name: "parked", queue: "parked", schema: z.object({}), run: async () => "ran" });

/** The WaitForError a promise rejects with. */
async function waitError(promise: Promise<unknown>): Promise<WaitForError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof WaitForError, `a WaitForError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected the wait to reject");
}

for (const target of targets) {
  describe(`waitFor on ${target.name}`, { skip: target.skip, timeout: 120_000 }, () => {
    const open = () => target.openErrand({ jobs: [double, reject, parked], waitRecheck: "1h" });

    test("resolves with the result, typed; enqueueAndWait in one call", async () => {
      const { errand, cleanup } = await open();
      try {
        const worker = errand.work({ q: { concurrency: 2 } }, { pollInterval: 20 });
        const job = await errand.enqueue(double, { n: 21 });
        const result = await within(errand.waitFor(job), 10_000, "the result");
        const doubled: number = result.doubled; // typed by double's run
        assert.equal(doubled, 42);
        assert.deepEqual(await within(errand.enqueueAndWait(double, { n: 5 }), 10_000, "enqueueAndWait"), {
          doubled: 10,
        });
        // A job already completed resolves at once; by id too.
        assert.deepEqual(await errand.waitFor<{ doubled: number }>(job.id), { doubled: 42 });
        await worker.stop();
      } finally {
        await cleanup();
      }
    });

    test("rejects when the job fails for good, is cancelled or does not exist", async () => {
      const { errand, cleanup } = await open();
      try {
        const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
        const failed = await waitError(
          within(errand.enqueueAndWait(reject, { why: "card declined" }), 10_000, "failure"),
        );
        assert.equal(failed.reason, "failed");
        assert.equal(failed.code, "ERR_JOB_FAILED");
        assert.equal(failed.job?.state, "failed");
        assert.match(failed.message, /failed for good after 1 attempt: card declined/);

        const pending = await errand.enqueue(parked, {});
        const waiting = waitError(errand.waitFor(pending));
        await errand.cancel(pending.id);
        const cancelled = await within(waiting, 10_000, "the cancellation");
        assert.equal(cancelled.reason, "cancelled");
        assert.equal(cancelled.jobId, pending.id);

        const missing = await waitError(errand.waitFor("987654321"));
        assert.equal(missing.reason, "not-found");
        await worker.stop();
      } finally {
        await cleanup();
      }
    });

    test("a timeout or an aborted signal ends the wait and leaves the job untouched", async () => {
      const { errand, cleanup } = await open();
      try {
        const job = await errand.enqueue(parked, {});
        const before = await errand.getJob(job.id);
        const timedOut = await waitError(errand.waitFor(job, { timeout: "50ms" }));
        assert.equal(timedOut.reason, "timeout");
        assert.match(timedOut.message, /did not finish within 50 ms/);

        const controller = new AbortController();
        const aborted = waitError(errand.waitFor(job, { signal: controller.signal }));
        controller.abort(new Error("the user went away"));
        const err = await aborted;
        assert.equal(err.reason, "aborted");
        assert.equal((err.cause as Error).message, "the user went away");
        await assert.rejects(errand.waitFor(job, { signal: controller.signal }), { reason: "aborted" });

        assert.deepEqual(await errand.getJob(job.id), before, "the job is as it was");
        // The job still runs and a new wait gets its result.
        const after = errand.waitFor(job);
        const worker = errand.work({ parked: { concurrency: 1 } }, { pollInterval: 20 });
        assert.equal(await within(after, 10_000, "the result after the timeouts"), "ran");
        await worker.stop();
      } finally {
        await cleanup();
      }
    });

    test("waitFor on 1,000 jobs at once: every promise settles; a failed job rejects; a timed-out wait leaves its job untouched", async () => {
      const { errand, cleanup } = await open();
      try {
        const jobs = await errand.enqueueMany(
          double,
          Array.from({ length: 999 }, (_, n) => ({ payload: { n } })),
        );
        const bad = await errand.enqueue(reject, { why: "no such account" });
        const untouched = await errand.enqueue(parked, {});
        const waits = jobs.map((job) => errand.waitFor(job));
        const badWait = waitError(errand.waitFor(bad));
        const timedOut = waitError(errand.waitFor(untouched, { timeout: "200ms" }));
        const worker = errand.work({ q: { concurrency: 20 } }, { pollInterval: 20 });
        const results = await within(Promise.all(waits), 60_000, "999 results");
        assert.deepEqual(
          results.map((r) => r.doubled),
          jobs.map((_, n) => n * 2),
        );
        assert.equal((await within(badWait, 10_000, "the failure")).reason, "failed");
        assert.equal((await timedOut).reason, "timeout");
        const still = await errand.getJob(untouched.id);
        assert.equal(still?.state, "pending");
        assert.equal(still?.attempt, 0);
        await worker.stop();
      } finally {
        await cleanup();
      }
    });

    test("bad input is a clear error", async () => {
      const { errand, cleanup } = await open();
      try {
        await assert.rejects(errand.waitFor("1", { timeout: "soon" as "1s" }), ValidationError);
        await assert.rejects(
          errand.waitFor("1", { signal: "stop" as unknown as AbortSignal }),
          /signal must be an AbortSignal/,
        );
        await assert.rejects(errand.waitFor(undefined as unknown as string), /takes a job/);
        await assert.rejects(
          errand.enqueueAndWait(double, { n: 1 }, { tx: {} } as never),
          /cannot join a transaction/,
        );
        assert.equal((await errand.listJobs({})).jobs.length, 0, "nothing stored");
      } finally {
        await cleanup();
      }
    });
  });
}

describe("waitFor and close", () => {
  test("closing the errand rejects the waits still open (reason closed)", async () => {
    const { errand, cleanup } = await targets[0].openErrand({ jobs: [parked] });
    const job = await errand.enqueue(parked, {});
    const waiting = waitError(errand.waitFor(job));
    await cleanup();
    assert.equal((await waiting).reason, "closed");
  });
});

describe("waitFor when notifications are lost", () => {
  test("the recheck finds the result: a store whose wake-ups never arrive still settles every wait", async () => {
    const store = new MemoryStore();
    // Every wake-up is lost: only the recheck (every 100 ms here) can settle a wait.
    const deaf = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === "onJobsFinished") return () => () => {};
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const errand = await openErrand({
      store: deaf,
      jobs: [double, reject],
      logger: silentLogger(),
      waitRecheck: "100ms",
    });
    try {
      const job = await errand.enqueue(double, { n: 4 });
      const bad = await errand.enqueue(reject, { why: "lost in the mail" });
      const waits = Promise.all([errand.waitFor(job), waitError(errand.waitFor(bad))]);
      const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
      const [result, err] = await within(waits, 10_000, "the recheck");
      assert.deepEqual(result, { doubled: 8 });
      assert.equal(err.reason, "failed");
      await worker.stop();
    } finally {
      await errand.close();
    }
  });
});

describe("waitFor when the store's statements fail", () => {
  test("a failed record or lookup is tried again soon, not left to the recheck", async () => {
    const store = new MemoryStore();
    // The first two records and the first lookup fail, as on a connection gone silent.
    const failures = { awaitJobs: 2, getJobs: 1 };
    const failing = new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== "function") return value;
        if (prop === "awaitJobs" || prop === "getJobs")
          return async (ids: string[]) => {
            if (failures[prop] > 0) {
              failures[prop]--;
              throw new Error(`${prop} failed on purpose`);
            }
            return value.call(target, ids);
          };
        return value.bind(target);
      },
    });
    const errand = await openErrand({
      store: failing,
      jobs: [double],
      logger: silentLogger(),
      waitRecheck: "1h",
    });
    try {
      // Finished before the wait: only a record that succeeds (its read) can settle it.
      const early = await errand.enqueue(double, { n: 1 });
      const first = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
      await until(async () => (await errand.getJob(early.id))?.state === "completed", "the early job");
      await first.stop();
      // Finishes while waited for: the lookup its wake-up asks for fails first.
      const late = await errand.enqueue(double, { n: 2 });
      const waits = Promise.all([errand.waitFor(early), errand.waitFor(late)]);
      const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
      assert.deepEqual(await within(waits, 10_000, "the retries"), [{ doubled: 2 }, { doubled: 4 }]);
      assert.deepEqual(failures, { awaitJobs: 0, getJobs: 0 }, "every planned failure happened");
      await worker.stop();
    } finally {
      await errand.close();
    }
  });
});
