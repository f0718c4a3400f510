/**
 * A schedule's flow key: its payload is fixed, so its key is too. The process that knows the job
 * computes the key when it defines (and syncs) or adds the schedule, and stores it on the row; a
 * process that does not know the job fires the row with that key, so the per-key limits hold for
 * the slot's job whichever scheduler fired it. On every store.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { z } from "zod";
import { createLogger, defineJob, openErrand, silentLogger, ValidationError } from "../../src/index.js";
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

/** A logger whose JSON lines are kept for the test to read. */
function capturingLogger() {
  const lines: Array<{ level: number; msg: string; schedule?: string }> = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n")) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ pretty: false, level: "info", destination }), lines };
}

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

    test("a process that knows a keyed job warns once about a schedule stored without its key", async () => {
      const clock = { now: Date.parse("2026-05-01T10:00:30Z") };
      const { store, cleanup } = await target.openStore({ clock: () => clock.now });
      const { logger, lines } = capturingLogger();
      const blind = await openErrand({ store, logger: silentLogger() });
      const knows = await openErrand({ store, logger, jobs });
      try {
        await blind.addSchedule({
          name: "by-hand-d",
          cron: "* * * * *",
          jobName: "tenant-report",
          queue: "reports",
          payload: { tenant: "d" },
        });
        const warnings = () => lines.filter((l) => /stored flow key is missing or stale/.test(l.msg));
        for (const at of ["2026-05-01T10:01:10Z", "2026-05-01T10:02:10Z"]) {
          clock.now = Date.parse(at);
          assert.equal((await knows.fireSchedules()).fired, 1);
        }
        // This process enqueues under the key it computes, and says once that others would not.
        const claim = await store.claimFlowJobs({
          queue: "reports",
          limit: 10,
          workerId: "w",
          leaseMs: 60_000,
          flow: FLOW,
        });
        assert.deepEqual(
          claim.jobs.map((j) => j.flowKey),
          ["d"],
        );
        assert.deepEqual(
          warnings().map((l) => l.schedule),
          ["by-hand-d"],
        );
      } finally {
        await knows.close();
        await blind.close();
        await cleanup();
      }
    });
  });
}

test("a schedule whose payload the key function refuses is a ValidationError at definition", async () => {
  const picky = defineJob({
    name: "picky",
    queue: "reports",
    schema: z.object({ tenant: z.string() }),
    concurrency: {
      key: (p) => {
        if (p.tenant === "") throw new Error("no tenant");
        return p.tenant;
      },
      limit: 1,
    },
    run: () => {},
  });
  const errand = await openErrand({ url: "memory:", logger: silentLogger() });
  try {
    assert.throws(
      () => errand.schedule("empty-tenant", "0 3 * * *", picky, { tenant: "" }),
      (err: Error) =>
        err instanceof ValidationError &&
        /payload of schedule "empty-tenant": the flow key function of job "picky" threw: no tenant/.test(
          err.message,
        ),
    );
    await errand.syncSchedules();
    assert.deepEqual(await errand.listSchedules(), [], "nothing defined, nothing stored");
  } finally {
    await errand.close();
  }
});
