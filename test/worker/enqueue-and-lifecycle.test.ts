/**
 * The worker semantics of docs/semantics.md, through the public API, on every store: delayed jobs
 * and the idle worker's wake-up, progress, idempotency keys, bad input refused with nothing stored,
 * and a worker started and stopped in a tight loop.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { test } from "node:test";
import { z } from "zod";
import { defineJob, ValidationError } from "../../src/index.js";
import { withErrand } from "../helpers/targets.js";
import { waitFor, within } from "../helpers/wait.js";
import { describeWorker, finalState } from "./setup.js";

describeWorker((target) => {
  test("delayed jobs wait for their time; the idle worker wakes for them without a full poll", () =>
    withErrand(target, async (errand) => {
      let ranAt = 0;
      const job = defineJob({
        name: "later",
        queue: "q",
        schema: z.object({}),
        run: () => {
          ranAt = Date.now();
        },
      });
      errand.register(job);
      const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 5000 });
      await within(once(worker.signals, "idle"), 5000, "the worker to find nothing due and wait");
      const t0 = Date.now();
      await errand.enqueue(job, {}, { delay: 150 });
      await waitFor(() => ranAt > 0, "the delayed job to run", 4000);
      await worker.stop();
      assert.ok(ranAt - t0 >= 140, `ran ${ranAt - t0} ms after enqueue, before its delay`);
    }));

  test("progress is visible while the job runs", () =>
    withErrand(target, async (errand) => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const job = defineJob({
        name: "progressive",
        queue: "q",
        schema: z.object({}),
        run: async (_p, ctx) => {
          await ctx.progress(0.5, "halfway");
          await gate;
        },
      });
      const enqueued = await errand.enqueue(job, {});
      const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
      const seen = await waitFor(async () => (await errand.getJob(enqueued.id))?.progress, "progress");
      assert.deepEqual(seen, { fraction: 0.5, message: "halfway" });
      release();
      await finalState(errand, enqueued.id);
      await worker.stop();
    }));

  test("idempotency keys return the existing job", () =>
    withErrand(target, async (errand) => {
      const job = defineJob({
        name: "once",
        queue: "q",
        schema: z.object({ n: z.number() }),
        run: () => {},
      });
      const first = await errand.enqueue(job, { n: 1 }, { key: "k" });
      const second = await errand.enqueue(job, { n: 2 }, { key: "k" });
      assert.equal(first.created, true);
      assert.equal(second.created, false);
      assert.equal(second.id, first.id);
      assert.deepEqual(second.payload, { n: 1 });
      const many = await errand.enqueueMany(job, [
        { payload: { n: 3 }, key: "k" },
        { payload: { n: 4 }, key: "k2" },
      ]);
      assert.deepEqual(
        many.map((j) => j.created),
        [false, true],
      );
      assert.equal((await errand.listJobs()).jobs.length, 2);
    }));

  test("bad input is refused with a clear error and nothing is stored", () =>
    withErrand(target, async (errand) => {
      const job = defineJob({
        name: "strict",
        queue: "q",
        schema: z.object({ n: z.number() }),
        run: () => {},
      });
      errand.register(job);
      const cases: Array<[string, () => Promise<unknown>, RegExp]> = [
        [
          "schema",
          () => errand.enqueue(job, { n: "x" } as never),
          /does not match the schema of job "strict".*n/,
        ],
        ["unknown job", () => errand.enqueue("nope", {}), /unknown job "nope"; known jobs: strict/],
        ["priority", () => errand.enqueue(job, { n: 1 }, { priority: 1.5 }), /priority must be an integer/],
        [
          "attempts",
          () => errand.enqueue(job, { n: 1 }, { maxAttempts: 0 }),
          /maxAttempts must be an integer/,
        ],
        ["runAt", () => errand.enqueue(job, { n: 1 }, { runAt: "next tuesday" }), /ISO 8601/],
        [
          "delay",
          // @ts-expect-error: "soon" is no Duration (a compile error); the run-time check is under test
          () => errand.enqueue(job, { n: 1 }, { delay: "soon" }),
          /delay must be/,
        ],
        [
          "oversized",
          () => errand.enqueue(job, { n: 1, pad: "x".repeat(1024 * 1024) } as never),
          /over the limit/,
        ],
        ["NUL", () => errand.enqueue(job, { n: 1, s: "a\u0000b" } as never), /NUL/],
        ["lone surrogate", () => errand.enqueue(job, { n: 1, s: "\ud800" } as never), /surrogate/],
        [
          "cycle",
          () =>
            errand.enqueue(
              job,
              (() => {
                const o: Record<string, unknown> = { n: 1 };
                o.self = o;
                return o;
              })() as never,
            ),
          /not JSON-serialisable/,
        ],
        [
          "bulk item",
          () => errand.enqueueMany(job, [{ payload: { n: 1 } }, { payload: { n: "2" } as never }]),
          /item 1 payload/,
        ],
      ];
      for (const [what, call, message] of cases) {
        await assert.rejects(call, (err: Error) => {
          assert.ok(err instanceof ValidationError, `${what}: expected a ValidationError, got ${err}`);
          assert.match(err.message, message, what);
          return true;
        });
      }
      assert.throws(() => errand.work({ nope: {} }), /unknown queue "nope".*known queues: q/);
      assert.equal((await errand.listJobs()).jobs.length, 0, "nothing stored");
    }));

  test("a worker starts and stops in a tight loop without leaking", () =>
    withErrand(target, async (errand) => {
      const job = defineJob({ name: "noop", queue: "q", schema: z.object({}), run: () => {} });
      errand.register(job);
      for (let i = 0; i < 20; i++) {
        const worker = errand.work({ q: { concurrency: 2 } }, { pollInterval: 10, lease: 100 });
        if (i % 5 === 0) await errand.enqueue(job, {});
        const stopped = await worker.stop({ timeout: 1000 });
        assert.equal(stopped.clean, true);
      }
      const worker = errand.work({ q: {} }, { pollInterval: 10 });
      await waitFor(
        async () => (await errand.stats()).find((s) => s.queue === "q")?.completed === 4,
        "all four to run",
      );
      await worker.stop();
      assert.equal((await errand.store.listWorkers(60_000)).length, 0, "every worker unregistered");
    }));
});
