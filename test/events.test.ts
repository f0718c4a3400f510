/**
 * The worker's job events, in the order a handler's life runs: `started` before the handler's
 * first line, then the outcome's event, on every store.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob, type JobEvent } from "../src/index.js";
import { targets } from "./helpers/targets.js";
import { waitFor } from "./helpers/wait.js";

for (const target of targets) {
  describe(`job events on ${target.name}`, { skip: target.skip, timeout: 60_000 }, () => {
    test("started comes before the handler runs, then completed or retrying", async () => {
      const { errand, cleanup } = await target.openErrand();
      const seen: string[] = [];
      const flaky = defineJob({
        name: "flaky",
        queue: "q",
        maxAttempts: 2,
        backoff: ["10ms"],
        schema: z.object({ n: z.number() }),
        run: async (p, ctx) => {
          seen.push(`run ${p.n}/${ctx.job.attempt}`);
          if (ctx.job.attempt === 1) throw new Error("once");
          return { n: p.n };
        },
      });
      const record = (event: string) => (e: JobEvent) =>
        seen.push(`${event} ${(e.job.payload as { n: number }).n}/${e.job.attempt}`);
      errand.on("started", (e) => {
        assert.ok(e.startedAt instanceof Date, "started carries startedAt");
        record("started")(e);
      });
      errand.on("retrying", record("retrying"));
      errand.on("completed", record("completed"));
      try {
        errand.register(flaky);
        const job = await errand.enqueue(flaky, { n: 7 });
        const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
        await waitFor(async () => (await errand.getJob(job.id))?.state === "completed", "completion");
        await worker.stop();
        assert.deepEqual(seen, [
          "started 7/1",
          "run 7/1",
          "retrying 7/1",
          "started 7/2",
          "run 7/2",
          "completed 7/2",
        ]);
      } finally {
        await cleanup();
      }
    });
  });
}
