/**
 * A handler that blocks the event loop past its lease (issue 12, item 7). On the event loop
 * (`spin-here`) the heartbeat cannot run while it computes: the worker logs a warning that names
 * the job. In a worker thread (`spin-thread`, runInThread) the loop stays free, so the lease is
 * kept: with two workers serving the queue the job runs once, completes once, one history entry.
 * Leases are 2 s (a heartbeat every 667 ms, margin for a loaded machine) and the computation
 * 5 s, well past them.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { exitOf, inspect, PROCESS_JOBS, type Running, scratch, start, waitFor } from "../cli/helpers.js";
import { spinHere, spinThreaded } from "../fixtures/process-jobs.js";

const SPIN_MS = 5000;

function worker(db: string, dir: string): Running {
  return start(
    ["worker", "--jobs", PROCESS_JOBS, "--url", db, "--queue", "cpu", "--concurrency", "1"].concat([
      "--lease",
      "2s",
      "--poll-interval",
      "100ms",
    ]),
    { ERRAND_FIXTURE_DIR: dir },
  );
}

async function stopAll(procs: Running[]): Promise<void> {
  for (const p of procs) p.child.kill("SIGTERM");
  for (const p of procs) await exitOf(p, 30_000);
}

describe("a handler that blocks the event loop", { concurrency: true }, () => {
  const cleanups: Array<() => void> = [];
  after(() => {
    for (const c of cleanups) c();
  });

  test("on the event loop: a warning names the job", async () => {
    const s = scratch("errand-blocked-");
    cleanups.push(s.cleanup);
    const errand = await inspect(s.db, [spinHere]);
    const procs: Running[] = [];
    try {
      const job = await errand.enqueue(spinHere, { ms: SPIN_MS });
      procs.push(worker(s.db, s.dir));
      const line = await waitFor(
        "the event-loop warning",
        () =>
          procs[0]
            .stderr()
            .split("\n")
            .find((l) => l.includes("event loop blocked")),
        60_000,
      );
      assert.match(line, new RegExp(`spin-here ${job.id}`));
      assert.match(line, /runInThread/);
    } finally {
      await stopAll(procs);
      await errand.close();
    }
  });

  test("in a thread (runInThread): the lease is kept, two workers do not both run it", async () => {
    const s = scratch("errand-thread-");
    cleanups.push(s.cleanup);
    const errand = await inspect(s.db, [spinThreaded]);
    const procs: Running[] = [];
    try {
      const job = await errand.enqueue(spinThreaded, { ms: SPIN_MS });
      procs.push(worker(s.db, s.dir), worker(s.db, s.dir));
      const done = await waitFor(
        "the job to finish",
        async () => {
          const j = await errand.getJob(job.id);
          return j?.state === "completed" || j?.state === "failed" ? j : false;
        },
        60_000,
      );
      await stopAll(procs);
      assert.equal(done.state, "completed");
      assert.deepEqual(
        done.attempts.map((a) => a.outcome),
        ["completed"],
      );
      assert.deepEqual(done.result, { spun: SPIN_MS });
      const runs = readFileSync(join(s.dir, "runs.log"), "utf8").trim().split("\n");
      assert.equal(runs.filter((l) => l.startsWith("start")).length, 1, runs.join("\n"));
    } finally {
      await stopAll(procs);
      await errand.close();
    }
  });
});
