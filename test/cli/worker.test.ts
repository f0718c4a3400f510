/**
 * `errand worker` as a process (docs/semantics.md, Shutdown): SIGTERM during a job lets it finish (exit 0);
 * a job longer than the shutdown timeout goes back to pending with an "interrupted" attempt that
 * is not charged (exit 1); a second signal stops at once; an uncaught exception or unhandled
 * rejection exits 1 and charges the job whose code caused it (a "crashed" attempt, retried). Each case has its own SQLite file, so they run side by side.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { Errand } from "../../src/index.js";
import { crash, nap } from "../fixtures/jobs.js";
import { exitOf, FIXTURE_JOBS, inspect, type Running, scratch, start, waitFor } from "./helpers.js";

/** A store with one job, a worker serving it, and the job seen running. */
async function workerWithRunningJob(
  enqueue: (errand: Errand) => Promise<{ id: string }>,
  flags: string[],
): Promise<{ errand: Errand; proc: Running; id: string; cleanup(): Promise<void> }> {
  const s = scratch();
  const errand = await inspect(s.db, [nap, crash]);
  const { id } = await enqueue(errand);
  const proc = start(["worker", "--jobs", FIXTURE_JOBS, "--url", s.db, "--queue", "slow", ...flags], {
    ERRAND_FIXTURE_DIR: s.dir,
  });
  await waitFor(
    "the job to be running",
    async () => (await errand.getJob(id))?.state === "running" || proc.child.exitCode !== null,
    60_000,
  );
  return {
    errand,
    proc,
    id,
    cleanup: async () => {
      proc.child.kill("SIGKILL");
      await errand.close();
      s.cleanup();
    },
  };
}

describe("errand worker: signals and crashes", { concurrency: true }, () => {
  const cleanups: Array<() => Promise<void>> = [];
  after(async () => {
    for (const c of cleanups) await c();
  });

  test("SIGTERM during a job: the job finishes, exit 0", async () => {
    const w = await workerWithRunningJob((e) => e.enqueue(nap, { ms: 1500 }), ["--shutdown-timeout", "60s"]);
    cleanups.push(w.cleanup);
    w.proc.child.kill("SIGTERM");
    const result = await exitOf(w.proc, 60_000);
    assert.equal(result.code, 0, `signal ${result.signal}: ${result.stderr}`);
    assert.match(result.stderr, /SIGTERM received: finishing running jobs/);
    const job = await w.errand.getJob(w.id);
    assert.equal(job?.state, "completed");
    assert.deepEqual(
      job?.attempts.map((a) => a.outcome),
      ["completed"],
    );
  });

  test("a job longer than the shutdown timeout: back to pending, attempt recorded but not charged, exit 1", async () => {
    const w = await workerWithRunningJob(
      (e) => e.enqueue(nap, { ms: 120_000 }),
      ["--shutdown-timeout", "300ms"],
    );
    cleanups.push(w.cleanup);
    w.proc.child.kill("SIGTERM");
    const result = await exitOf(w.proc, 60_000);
    assert.equal(result.code, 1, `signal ${result.signal}: ${result.stderr}`);
    assert.match(result.stderr, /shutdown timeout reached/);
    const job = await w.errand.getJob(w.id);
    assert.equal(job?.state, "pending");
    assert.equal(job?.attempt, 0, "the interrupted attempt is not charged");
    assert.equal(job?.attempts.length, 1);
    assert.equal(job?.attempts[0].outcome, "interrupted");
    assert.equal(job?.attempts[0].kind, "interrupted");
  });

  test("a second signal stops at once: the job is released, exit 1", async () => {
    const w = await workerWithRunningJob(
      (e) => e.enqueue(nap, { ms: 120_000 }),
      ["--shutdown-timeout", "10m"],
    );
    cleanups.push(w.cleanup);
    w.proc.child.kill("SIGTERM");
    await waitFor("the graceful stop to begin", () => w.proc.stderr().includes("SIGTERM received"), 30_000);
    w.proc.child.kill("SIGINT");
    const result = await exitOf(w.proc, 60_000);
    assert.equal(result.code, 1, `signal ${result.signal}: ${result.stderr}`);
    assert.match(result.stderr, /SIGINT received again: releasing running jobs now/);
    const job = await w.errand.getJob(w.id);
    assert.equal(job?.state, "pending");
    assert.equal(job?.attempt, 0);
    assert.deepEqual(
      job?.attempts.map((a) => a.outcome),
      ["interrupted"],
    );
  });

  test("an unhandled rejection: logged, the job at fault charged, exit 1", async () => {
    const w = await workerWithRunningJob((e) => e.enqueue(crash, { how: "reject" }), []);
    cleanups.push(w.cleanup);
    const result = await exitOf(w.proc, 60_000);
    assert.equal(result.code, 1, `signal ${result.signal}: ${result.stderr}`);
    assert.match(result.stderr, new RegExp(`unhandled promise rejection from job ${w.id}: charging it`));
    assert.match(result.stderr, /boom: a promise nobody awaited/);
    const job = await w.errand.getJob(w.id);
    assert.equal(job?.state, "pending");
    assert.equal(job?.attempt, 1);
    assert.deepEqual(
      job?.attempts.map((a) => [a.outcome, a.kind]),
      [["retried", "crashed"]],
    );
  });

  test("an uncaught exception: logged, the job at fault charged, exit 1", async () => {
    const w = await workerWithRunningJob((e) => e.enqueue(crash, { how: "throw" }), []);
    cleanups.push(w.cleanup);
    const result = await exitOf(w.proc, 60_000);
    assert.equal(result.code, 1, `signal ${result.signal}: ${result.stderr}`);
    assert.match(result.stderr, new RegExp(`uncaught exception from job ${w.id}: charging it`));
    assert.match(result.stderr, /boom: a bug outside the handler's promise/);
    const job = await w.errand.getJob(w.id);
    assert.equal(job?.state, "pending");
    assert.equal(job?.attempt, 1);
    assert.deepEqual(
      job?.attempts.map((a) => [a.outcome, a.kind]),
      [["retried", "crashed"]],
    );
  });
});
