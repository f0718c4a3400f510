/**
 * ctx.job, the handler's view of its claimed job, is the same on every store: its fields, its
 * times as Dates, no lease fields, frozen. The Postgres claim makes its Dates on first read
 * (src/store/postgres/rows.ts ClaimedRow), which a copy of the claimed job alone would miss.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { defineJob } from "../../src/index.js";
import { withErrand } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";
import { describeWorker } from "./setup.js";

describeWorker((target) => {
  test("ctx.job holds the job's fields and times, without its lease", () =>
    withErrand(target, async (errand) => {
      const seen: Array<{ keys: string[]; job: Record<string, unknown>; frozen: boolean }> = [];
      const job = defineJob({
        name: "view",
        queue: "q",
        schema: z.object({ n: z.number() }),
        run: (_p, ctx) => {
          seen.push({
            keys: Object.keys(ctx.job).sort(),
            job: { ...ctx.job },
            frozen: Object.isFrozen(ctx.job),
          });
        },
      });
      const runAt = new Date(Date.now() - 60_000);
      const enqueued = await errand.enqueue(job, { n: 1 }, { priority: 3, runAt, key: "k1" });
      const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
      await waitFor(() => seen.length === 1, "the job to run");
      await worker.stop();
      const view = seen[0];
      assert.ok(view);
      assert.deepEqual(view.keys, [
        "attempt",
        "createdAt",
        "id",
        "key",
        "maxAttempts",
        "name",
        "payload",
        "priority",
        "queue",
        "runAt",
      ]);
      assert.equal(view.frozen, true);
      assert.equal(view.job.id, enqueued.id);
      assert.deepEqual(view.job.payload, { n: 1 });
      assert.equal(view.job.priority, 3);
      assert.equal(view.job.attempt, 1);
      assert.equal(view.job.key, "k1");
      assert.ok(view.job.runAt instanceof Date);
      assert.equal((view.job.runAt as Date).getTime(), enqueued.runAt.getTime());
      assert.ok(view.job.createdAt instanceof Date);
      assert.equal((view.job.createdAt as Date).getTime(), enqueued.createdAt.getTime());
    }));
});
