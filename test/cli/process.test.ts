/**
 * runUntilSignal in-process, on the memory store: signals are emitted on `process` (the
 * listeners run exactly as for a real signal), and every listener it installed is gone
 * afterwards. Crashes are tested with real processes in worker.test.ts (the test runner
 * itself fails a test on an unhandled rejection in its process).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { defineJob, openErrand, silentLogger, type Worker } from "../../src/index.js";
import { runUntilSignal } from "../../src/worker/process.js";
import { waitFor } from "./helpers.js";

const hold = defineJob({
  name: "hold",
  queue: "q",
  schema: z.object({ ms: z.number() }),
  async run({ ms }, ctx) {
    await sleep(ms, undefined, { signal: ctx.signal });
  },
});

const EVENTS = ["SIGTERM", "SIGINT", "uncaughtException", "unhandledRejection"] as const;
const counts = () => EVENTS.map((e) => process.listenerCount(e));

async function setup(ms: number) {
  const errand = await openErrand({
    url: "memory:",
    logger: silentLogger(),
    jobs: [hold],
  });
  const job = await errand.enqueue(hold, { ms });
  return { errand, job };
}

describe("runUntilSignal", () => {
  test("an abort stops gracefully: the job finishes, exit code 0, no listener left", async () => {
    const before = counts();
    const { errand, job } = await setup(200);
    const stop = new AbortController();
    const done = runUntilSignal(() => errand.work(), errand, { signal: stop.signal, shutdownTimeout: "10s" });
    assert.deepEqual(
      counts(),
      before.map((n) => n + 1),
      "one listener per event while running",
    );
    await waitFor("the job to run", async () => (await errand.getJob(job.id))?.state === "running");
    const running = await errand.getJob(job.id);
    stop.abort();
    const report = await done;
    assert.equal(report.exitCode, 0);
    assert.equal(report.clean, true);
    assert.equal(report.cause, "abort");
    assert.equal(running?.state, "running");
    assert.deepEqual(counts(), before, "listeners removed");
  });

  test("SIGTERM then a second signal: released at once, exit code 1", async () => {
    const before = counts();
    const { errand, job } = await setup(60_000);
    let worker: Worker | undefined;
    const done = runUntilSignal(() => (worker = errand.work()), errand, {
      shutdownTimeout: "10m",
      close: false,
    });
    await waitFor("the job to run", async () => (await errand.getJob(job.id))?.state === "running");
    process.emit("SIGTERM", "SIGTERM");
    await waitFor("the graceful stop to begin", () => worker?.isStopping === true);
    process.emit("SIGINT", "SIGINT");
    const report = await done;
    assert.equal(report.exitCode, 1);
    assert.equal(report.forced, true);
    assert.equal(report.signal, "SIGTERM");
    assert.equal(report.released, 1);
    const after = await errand.getJob(job.id);
    assert.equal(after?.state, "pending");
    assert.equal(after?.attempt, 0);
    assert.deepEqual(
      after?.attempts.map((a) => a.outcome),
      ["interrupted"],
    );
    assert.deepEqual(counts(), before);
    await errand.close();
  });

  test("a worker that cannot start: the error is thrown and no listener is left", async () => {
    const before = counts();
    const errand = await openErrand({ url: "memory:", logger: silentLogger() });
    await assert.rejects(
      runUntilSignal(() => errand.work(["nope"]), errand),
      /unknown queue "nope"/,
    );
    assert.deepEqual(counts(), before);
    await errand.close();
  });
});
