/**
 * waitFor across processes, on both SQL stores: this process waits, `errand worker` child
 * processes run the jobs. The waits use `waitRecheck: "1h"`, so a result that arrives was
 * carried by the store's notifications (Postgres LISTEN/NOTIFY, SQLite's commit watch).
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { openErrand, silentLogger, WaitForError } from "../../src/index.js";
import { FIXTURE_JOBS, type Running, start } from "../cli/helpers.js";
import { echo, fail } from "../fixtures/jobs.js";
import { sqlTargets } from "../helpers/targets.js";
import { within } from "../helpers/wait.js";

for (const target of sqlTargets) {
  describe(`waitFor across processes on ${target.name}`, { skip: target.skip, timeout: 120_000 }, () => {
    const cleanups: Array<() => Promise<void> | void> = [];
    after(async () => {
      for (const c of cleanups.reverse()) await c();
    });

    test("a waiter here gets results and failures of jobs run by worker processes", async () => {
      const db = await target.openStore();
      cleanups.push(() => db.cleanup());
      await db.store.close();
      const errand = await openErrand({
        url: db.url,
        ...(db.schema ? { schema: db.schema } : {}),
        jobs: [echo, fail],
        logger: silentLogger(),
        waitRecheck: "1h",
      });
      cleanups.push(() => errand.close());
      const texts = Array.from({ length: 200 }, (_, i) => `hello ${i}`);
      const jobs = await errand.enqueueMany(
        echo,
        texts.map((text) => ({ payload: { text } })),
      );
      const waits = jobs.map((job) => errand.waitFor(job));
      const failing = errand.enqueueAndWait(fail, { reason: "nope" }).then(
        () => assert.fail("the failing job resolved"),
        (e: unknown) => e,
      );

      const flags = ["--jobs", FIXTURE_JOBS, "--url", db.url, "--queue", "fast", "--concurrency", "8"];
      if (db.schema) flags.push("--schema", db.schema);
      const workers: Running[] = [start(["worker", ...flags]), start(["worker", ...flags])];
      cleanups.push(async () => {
        for (const w of workers) w.child.kill("SIGKILL");
        await Promise.all(workers.map((w) => w.exited));
      });

      const results = await within(Promise.all(waits), 60_000, "200 results from the workers");
      assert.deepEqual(
        results.map((r) => r.echoed),
        texts,
      );
      const err = await within(failing, 10_000, "the failure");
      assert.ok(err instanceof WaitForError);
      assert.equal(err.reason, "failed");
      assert.match(err.message, /nope/);
      const completed = (await errand.listJobs({ state: "completed", limit: 1000 })).jobs;
      assert.equal(completed.length, 200);
      assert.ok(
        completed.every((j) => j.attempts.every((a) => !a.worker?.includes(`:${process.pid}:`))),
        "every job ran in a worker process",
      );
    });
  });
}
