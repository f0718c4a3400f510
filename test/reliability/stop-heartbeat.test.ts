/**
 * A graceful stop keeps the leases of the jobs it waits for alive. The heartbeat used to pause
 * with the other background services when a stop began, so a job running longer than one lease
 * into the stop (defaults: 15 s lease, 30 s shutdown timeout) was rescued and run a second time
 * by another worker while its first run was still going.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { leaseJobs, SHORT_LEASES } from "../helpers/lease-jobs.js";
import { targets, withErrand } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";

for (const target of targets) {
  describe(`stop keeps running jobs' leases (${target.name})`, { skip: target.skip }, () => {
    test("a job running three leases into a graceful stop is not rescued by another worker", () =>
      withErrand(target, async (errand) => {
        const { long, idle, counter } = leaseJobs(3500);
        errand.register(long);
        errand.register(idle);
        const job = await errand.enqueue(long, {});
        const settings = SHORT_LEASES;
        const first = errand.work({ q: { concurrency: 1 } }, settings);
        // The handler itself, not the row's state: a claimed job is "running" in the store while it
        // waits in the read-ahead buffer, and a stop begun then returns it unstarted (a CI run
        // on Postgres caught that: the handler ran 0 times).
        await waitFor(() => counter.runs === 1, "the handler to start");
        const stopped = first.stop({ timeout: 10_000 });
        // Another worker whose rescuer would take the job over as soon as its lease ran out.
        const second = errand.work({ other: { concurrency: 1 } }, settings);
        const result = await stopped;
        await second.stop();
        const done = await errand.getJob(job.id);
        assert.equal(result.clean, true);
        assert.equal(counter.runs, 1, "the handler ran more than once");
        assert.equal(done?.state, "completed");
        assert.deepEqual(
          done?.attempts.map((a) => [a.outcome, a.worker]),
          [["completed", first.id]],
        );
      }));
  });
}
