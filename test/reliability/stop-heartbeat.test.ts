/**
 * A graceful stop keeps the leases of the jobs it waits for alive. The heartbeat used to pause
 * with the other background services when a stop began, so a job running longer than one lease
 * into the stop (defaults: 15 s lease, 30 s shutdown timeout) was rescued and run a second time
 * by another worker while its first run was still going.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob } from "../../src/index.js";
import { targets, withErrand } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";

for (const target of targets) {
  describe(`stop keeps running jobs' leases (${target.name})`, { skip: target.skip }, () => {
    // Leases of 1 s, renewed every 100 ms: with 300 ms leases a heartbeat delayed by a loaded
    // machine (CI at load 20+) let the rescuer take the job, and the test failed for that reason.
    test("a job running three leases into a graceful stop is not rescued by another worker", () =>
      withErrand(target, async (errand) => {
        let runs = 0;
        const long = defineJob({
          name: "long",
          queue: "q",
          schema: z.object({}),
          async run() {
            runs++;
            await new Promise((r) => setTimeout(r, 3500));
            return "done";
          },
        });
        const idle = defineJob({ name: "idle", queue: "other", schema: z.object({}), run: () => null });
        errand.register(long);
        errand.register(idle);
        const job = await errand.enqueue(long, {});
        const settings = { pollInterval: 20, lease: 1000, heartbeat: 100, rescueInterval: 30 };
        const first = errand.work({ q: { concurrency: 1 } }, settings);
        await waitFor(async () => (await errand.getJob(job.id))?.state === "running", "the job to start");
        const stopped = first.stop({ timeout: 10_000 });
        // Another worker whose rescuer would take the job over as soon as its lease ran out.
        const second = errand.work({ other: { concurrency: 1 } }, settings);
        const result = await stopped;
        await second.stop();
        const done = await errand.getJob(job.id);
        assert.equal(result.clean, true);
        assert.equal(runs, 1, "the handler ran more than once");
        assert.equal(done?.state, "completed");
        assert.deepEqual(
          done?.attempts.map((a) => [a.outcome, a.worker]),
          [["completed", first.id]],
        );
      }));
  });
}
