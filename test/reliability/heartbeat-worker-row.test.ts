/**
 * The heartbeat extends the leases of running jobs even when it cannot record the worker as
 * alive. It wrote the worker's row first and stopped at its error, so a store that refused that
 * one write (the workers table locked past the statement timeout, say) let every lease run out:
 * another worker's rescuer took the running job and ran it a second time.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { openErrand, silentLogger } from "../../src/index.js";
import type { Store } from "../../src/store/types.js";
import { leaseJobs, SHORT_LEASES } from "../helpers/lease-jobs.js";
import { targets } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";

/** The store with heartbeatWorker failing; everything else is the real store's. */
function withFailingWorkerRow(store: Store, failures: { count: number }): Store {
  return new Proxy(store, {
    get(real, prop, receiver) {
      if (prop === "heartbeatWorker")
        return async () => {
          failures.count++;
          throw new Error("canceling statement due to lock timeout");
        };
      const value = Reflect.get(real, prop, receiver);
      return typeof value === "function" ? value.bind(real) : value;
    },
  });
}

for (const target of targets) {
  describe(`heartbeat without its worker row (${target.name})`, { skip: target.skip }, () => {
    test("a job running three leases long keeps its lease and runs once", async () => {
      const base = await target.openErrand();
      const { long, idle, counter } = leaseJobs(3000);
      const failures = { count: 0 };
      const errand = await openErrand({
        store: withFailingWorkerRow(base.errand.store, failures),
        jobs: [long, idle],
        logger: silentLogger(),
      });
      try {
        const job = await errand.enqueue(long, {});
        const settings = SHORT_LEASES;
        const first = errand.work({ q: { concurrency: 1 } }, settings);
        // Another worker whose rescuer takes the job over as soon as its lease runs out.
        const second = errand.work({ other: { concurrency: 1 } }, settings);
        const done = await waitFor(
          async () => {
            const j = await errand.getJob(job.id);
            return j?.state === "completed" || j?.state === "failed" ? j : null;
          },
          "the job to end",
          20_000,
        );
        await first.stop();
        await second.stop();
        assert.ok(failures.count > 3, `the worker row's write failed ${failures.count} times`);
        assert.equal(counter.runs, 1, "the handler ran more than once: its lease ran out");
        assert.equal(done.state, "completed");
        assert.deepEqual(
          done.attempts.map((a) => [a.outcome, a.worker]),
          [["completed", first.id]],
        );
      } finally {
        await errand.close();
        await base.cleanup();
      }
    });
  });
}
