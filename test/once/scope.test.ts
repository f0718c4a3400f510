/**
 * ctx.once's scope, on every store: a key is the job's own unless declared global. Before the
 * scope existed, a key was global across all jobs, so job B silently skipped its own side
 * effect because job A had used the same key (issue 17).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob } from "../../src/index.js";
import { targets } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";

for (const target of targets) {
  describe(`ctx.once scope on ${target.name}`, { skip: target.skip, timeout: 60_000 }, () => {
    test("a key is per job by default: two jobs using the same key both run their effect", async () => {
      const { errand, cleanup } = await target.openErrand();
      const sent: number[] = [];
      const notify = defineJob({
        name: "notify",
        queue: "q",
        schema: z.object({ n: z.number() }),
        run: async (p, ctx) => ctx.once("send", () => sent.push(p.n)),
      });
      try {
        errand.register(notify);
        const a = await errand.enqueue(notify, { n: 1 });
        const b = await errand.enqueue(notify, { n: 2 });
        const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
        await waitFor(async () => {
          const jobs = await Promise.all([errand.getJob(a.id), errand.getJob(b.id)]);
          return jobs.every((j) => j?.state === "completed");
        }, "both jobs completed");
        await worker.stop();
        assert.deepEqual(sent.sort(), [1, 2], "job B ran its own side effect");
      } finally {
        await cleanup();
      }
    });

    test("a retry of the same job skips a per-job effect and gets the recorded value", async () => {
      const { errand, cleanup } = await target.openErrand();
      let effects = 0;
      const flaky = defineJob({
        name: "flaky",
        queue: "q",
        maxAttempts: 2,
        backoff: ["10ms"],
        schema: z.object({}),
        run: async (_p, ctx) => {
          const id = await ctx.once("charge", () => `charge-${++effects}`);
          if (ctx.attempt === 1) throw new Error("after the effect");
          return id;
        },
      });
      try {
        errand.register(flaky);
        const job = await errand.enqueue(flaky, {});
        const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
        const done = await waitFor(async () => {
          const j = await errand.getJob(job.id);
          return j?.state === "completed" ? j : null;
        }, "completion");
        await worker.stop();
        assert.equal(effects, 1);
        assert.equal(done.result, "charge-1");
      } finally {
        await cleanup();
      }
    });

    test('{ scope: "global" } shares a key across jobs: the second job skips it', async () => {
      const { errand, cleanup } = await target.openErrand();
      const sent: number[] = [];
      const welcome = defineJob({
        name: "welcome",
        queue: "q",
        schema: z.object({ n: z.number() }),
        run: async (p, ctx) => ctx.once("welcome:101", () => sent.push(p.n), { scope: "global" }),
      });
      try {
        errand.register(welcome);
        const a = await errand.enqueue(welcome, { n: 1 });
        const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
        await waitFor(async () => (await errand.getJob(a.id))?.state === "completed", "first job");
        const b = await errand.enqueue(welcome, { n: 2 });
        const second = await waitFor(async () => {
          const j = await errand.getJob(b.id);
          return j?.state === "completed" ? j : null;
        }, "second job");
        await worker.stop();
        assert.deepEqual(sent, [1]);
        assert.equal(second.result, 1, "the second job gets the value the first recorded");
      } finally {
        await cleanup();
      }
    });

    test("a bad scope is a clear error that fails the job before the effect runs", async () => {
      const { errand, cleanup } = await target.openErrand();
      let ran = false;
      const bad = defineJob({
        name: "bad-scope",
        queue: "q",
        maxAttempts: 1,
        schema: z.object({}),
        run: async (_p, ctx) =>
          ctx.once("k", () => (ran = true), { scope: "everywhere" } as unknown as { scope: "global" }),
      });
      try {
        errand.register(bad);
        const job = await errand.enqueue(bad, {});
        const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
        const failed = await waitFor(async () => {
          const j = await errand.getJob(job.id);
          return j?.state === "failed" ? j : null;
        }, "the job failed");
        await worker.stop();
        assert.equal(ran, false);
        assert.match(failed.lastError ?? "", /scope must be "job" or "global".*"everywhere"/);
      } finally {
        await cleanup();
      }
    });
  });
}
