/**
 * The shutdown timeout is hard even when a handler blocks the event loop during the graceful
 * stop. The stop's timers run on the loop, so a handler that computes without yielding would hold
 * the process past --shutdown-timeout for as long as it computes. Here the handler sleeps 300 ms,
 * then computes for 30 s; SIGTERM arrives while it sleeps, with --shutdown-timeout 1s. The worker
 * must be gone long before the computation ends (the timeout, a second for outcomes, a second for
 * closing the store, a second of margin, and the loop still for 6 s: ~6 s after it blocks), and the job stays `running` under its lease, for a
 * rescuer to return (the lease is 60 s here, so it is still held when the test looks).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { exitOf, inspect, PROCESS_JOBS, scratch, start, startScript, waitFor } from "../cli/helpers.js";
import { spinHere } from "../fixtures/process-jobs.js";

const SPIN_MS = 30_000;

describe("a graceful stop while a handler blocks the event loop", () => {
  test("the worker exits by the shutdown timeout, not when the handler yields", async (t) => {
    const s = scratch("errand-stop-blocked-");
    const errand = await inspect(s.db, [spinHere]);
    const worker = start(
      ["worker", "--jobs", PROCESS_JOBS, "--url", s.db, "--queue", "cpu", "--concurrency", "1"].concat([
        "--lease",
        "60s",
        "--poll-interval",
        "100ms",
        "--shutdown-timeout",
        "1s",
      ]),
      { ERRAND_FIXTURE_DIR: s.dir },
    );
    try {
      const job = await errand.enqueue(spinHere, { ms: SPIN_MS, afterMs: 300 });
      await waitFor(
        "the handler to start",
        () => {
          try {
            return readFileSync(join(s.dir, "runs.log"), "utf8").includes(`start ${job.id}`);
          } catch {
            return false;
          }
        },
        30_000,
      );
      const signalled = Date.now();
      worker.child.kill("SIGTERM");
      // Bounded well under the computation: a worker that waits for the handler to yield fails here.
      const result = await exitOf(worker, SPIN_MS - 5_000);
      const tookMs = Date.now() - signalled;
      t.diagnostic(`exited ${tookMs} ms after SIGTERM`);
      assert.ok(tookMs < SPIN_MS - 5_000, `exited after ${tookMs} ms`);
      assert.equal(result.signal, "SIGKILL", `exit ${result.code} ${result.signal}\n${result.stderr}`);
      assert.match(
        result.stderr,
        /graceful stop is past its budget of \d+ ms and the event loop has not run for \d+ ms/,
      );
      const after = await errand.getJob(job.id);
      assert.equal(after?.state, "running", "left under its lease for a rescuer");
      const runs = readFileSync(join(s.dir, "runs.log"), "utf8");
      assert.ok(!runs.includes(`end ${job.id}`), "the computation was cut short");
    } finally {
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill("SIGKILL");
      await errand.close();
      s.cleanup();
    }
  });

  test("a stop that ends in time disarms it: the process lives on past its budget", async () => {
    // runUntilSignal leaves the end of the process to its caller: the backstop must not end it
    // later. The stop's budget with a 0 s timeout is 0 + 1 + 1 + 1 s; the process lives 9 s on.
    const r = await exitOf(startScript("test/fixtures/backstop-disarm.ts", { LIVE_MS: "9000" }), 60_000);
    assert.equal(r.signal, null, `killed by ${r.signal}; stderr:\n${r.stderr}`);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split("\n"), ["stopped 0", "alive"]);
  });

  test("a stop past its budget whose event loop runs is not cut", async () => {
    // The application began the stop with a longer timeout; runUntilSignal's 0 s joins it. The
    // job sleeps 10 s: far past the backstop's 3 s budget, but the loop never stops.
    const r = await exitOf(startScript("test/fixtures/backstop-slow-stop.ts", { HOLD_MS: "10000" }), 60_000);
    assert.equal(r.signal, null, `killed by ${r.signal}; stderr:\n${r.stderr}`);
    assert.equal(r.code, 0, r.stderr);
    const took = Number(/^stopped 0 after (\d+) ms$/.exec(r.stdout.trim())?.[1]);
    assert.ok(took >= 9_000, `the stop waited for the job: ${r.stdout}`);
  });
});
