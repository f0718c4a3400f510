/**
 * A schedule's flow key: its payload is fixed, so its key is too. The process that knows the job
 * computes the key when it defines (and syncs) or adds the schedule, and stores it on the row; a
 * process that does not know the job fires the row with that key, so the per-key limits hold for
 * the slot's job whichever scheduler fired it. On every store.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob, openErrand, silentLogger } from "../../src/index.js";
import type { AnyJobDefinition } from "../../src/job.js";
import { targets } from "../helpers/targets.js";

const report = defineJob({
  name: "tenant-report",
  queue: "reports",
  schema: z.object({ tenant: z.string() }),
  concurrency: { key: (p) => p.tenant, limit: 1 },
  run: () => {},
});
const jobs = [report as unknown as AnyJobDefinition];
const FLOW = { keyConcurrency: 1 };

for (const target of targets) {
  describe(`schedule flow keys: ${target.name}`, { skip: target.skip }, () => {
    test("a slot fired by a process that does not know the job keeps the per-key limit", async () => {
      const clock = { now: Date.parse("2026-05-01T10:00:30Z") };
      const { store, cleanup } = await target.openStore({ clock: () => clock.now });
      const worker = await openErrand({ store, logger: silentLogger(), jobs });
      const other = await openErrand({ store, logger: silentLogger() }); // another service's scheduler
      try {
        worker.schedule("nightly-a", "* * * * *", report, { tenant: "a" });
        await worker.syncSchedules();
        // Tenant "a" already has its one job running.
        await worker.enqueue(report, { tenant: "a" });
        const running = await store.claimFlowJobs({
          queue: "reports",
          limit: 10,
          workerId: "w1",
          leaseMs: 60_000,
          flow: FLOW,
        });
        assert.deepEqual(
          running.jobs.map((j) => j.flowKey),
          ["a"],
        );

        clock.now = Date.parse("2026-05-01T10:01:10Z");
        assert.equal((await other.fireSchedules()).fired, 1, "the process without the job fires the slot");
        const claim = await store.claimFlowJobs({
          queue: "reports",
          limit: 10,
          workerId: "w2",
          leaseMs: 60_000,
          flow: FLOW,
        });
        assert.deepEqual(
          claim.jobs.map((j) => ({ name: j.name, flowKey: j.flowKey })),
          [],
          "tenant a is at its limit: the slot's job waits",
        );
        assert.equal(claim.held, 1);
        const [row] = await store.listSchedules();
        assert.equal(row.flowKey, "a", "the row carries the key computed from its payload");
      } finally {
        await other.close();
        await worker.close();
        await cleanup();
      }
    });

    test("addSchedule stores the key when this process knows the job, none when it does not", async () => {
      const { store, cleanup } = await target.openStore();
      const knows = await openErrand({ store, logger: silentLogger(), jobs });
      const blind = await openErrand({ store, logger: silentLogger() });
      try {
        const common = { cron: "0 3 * * *", jobName: "tenant-report", queue: "reports" };
        const keyed = await knows.addSchedule({ name: "by-hand-b", ...common, payload: { tenant: "b" } });
        assert.equal(keyed.flowKey, "b");
        const keyless = await blind.addSchedule({ name: "by-hand-c", ...common, payload: { tenant: "c" } });
        assert.equal(keyless.flowKey, null, "no definition here: no key to compute");
        // Re-added by a process that knows the job, the same schedule gains its key.
        const rekeyed = await knows.addSchedule({ name: "by-hand-c", ...common, payload: { tenant: "c" } });
        assert.equal(rekeyed.flowKey, "c");
      } finally {
        await blind.close();
        await knows.close();
        await cleanup();
      }
    });
  });
}
