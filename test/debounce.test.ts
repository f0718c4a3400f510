/**
 * Debounce in real time with a real worker, on every store: 100 enqueues over 3 s with
 * `delay: "1s", maxWait: "2s"` run twice, each run with the latest payload enqueued before it
 * started. The first job cannot wait past 2 s after its first enqueue (maxWait), so it runs while
 * enqueues go on; the ones after its start make a second job, which runs 1 s after the last.
 * (The same rules on a test clock: test/conformance/unique.test.ts.)
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob } from "../src/index.js";
import { targets, withErrand } from "./helpers/targets.js";
import { sleep, waitFor } from "./helpers/wait.js";

const ENQUEUES = 100;
const SPAN_MS = 3000;

for (const target of targets) {
  describe(`debounce on ${target.name}`, { skip: target.skip }, () => {
    test("100 enqueues over 3 s with delay 1s, maxWait 2s run twice, each with the latest payload at its time", () => {
      const runs: Array<{ id: string; n: number }> = [];
      const collapse = defineJob({
        name: "collapse",
        queue: "debounced",
        schema: z.object({ n: z.number() }),
        debounce: { key: "search-index", delay: "1s", maxWait: "2s" },
        run: (payload, ctx) => {
          runs.push({ id: ctx.job.id, n: payload.n });
        },
      });
      return withErrand(target, async (errand) => {
        errand.register(collapse);
        const worker = errand.work({ debounced: { concurrency: 1 } });
        try {
          // Each enqueue starts on its schedule, whether or not the one before has finished: a slow
          // store (a loaded machine) must not stretch the 3 s. Enqueues in flight together apply in
          // the order they lock the job; a job holds the payload of the last one applied.
          const start = Date.now();
          const pending: Array<Promise<{ id: string; n: number; created: boolean }>> = [];
          for (let n = 0; n < ENQUEUES; n++) {
            await sleep(Math.max(0, start + (n * SPAN_MS) / (ENQUEUES - 1) - Date.now()));
            pending.push(
              errand.enqueue(collapse, { n }).then((job) => ({ id: job.id, n, created: job.created })),
            );
          }
          const enqueued = await Promise.all(pending);
          const ids = [...new Set(enqueued.map((e) => e.id))];
          await waitFor(
            async () =>
              (await Promise.all(ids.map((id) => errand.getJob(id)))).every((j) => j?.state === "completed"),
            "every debounced job to complete",
            30_000,
          );
          await sleep(200); // nothing else runs afterwards
          assert.equal(ids.length, 2, `two jobs: ${JSON.stringify(ids)}`);
          assert.equal(enqueued.filter((e) => e.created).length, 2);
          assert.equal(runs.length, 2, `ran twice: ${JSON.stringify(runs)}`);
          assert.deepEqual(
            runs.map((r) => r.id),
            ids,
          );
          for (const run of runs) {
            const stored = await errand.getJob(run.id);
            assert.deepEqual(stored?.payload, { n: run.n }, `job ${run.id} ran with its last payload`);
            const into = enqueued.filter((e) => e.id === run.id).map((e) => e.n);
            // The latest: the last enqueue into it, give or take the few in flight at that moment.
            assert.ok(
              run.n >= Math.max(...into) - 3,
              `job ${run.id} ran with ${run.n}, enqueued ${into.join(",")}`,
            );
          }
          assert.ok(runs[1].n >= ENQUEUES - 4, `the second run has one of the last payloads: ${runs[1].n}`);
          // The first job waited its maxWait, no more: due 2 s after its first enqueue.
          const first = await errand.getJob(ids[0]);
          assert.ok(first);
          assert.equal(first.runAt.getTime() - first.createdAt.getTime(), 2000);
        } finally {
          await worker.stop();
        }
      });
    });
  });
}
