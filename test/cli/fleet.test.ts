/**
 * Several `errand worker` processes on one SQLite file, as the issue checks them:
 * - `kill -9` of a worker mid-job: its jobs come back after the lease and complete; nothing lost.
 * - three workers, 2,000 jobs: every job completed exactly once (runs, side effects and the
 *   ledger agree) and no job ever ran on two workers at the same time.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { Errand, JobRecord } from "../../src/index.js";
import { nap, tally } from "../fixtures/jobs.js";
import { exitOf, FIXTURE_JOBS, inspect, type Running, scratch, start, waitFor } from "./helpers.js";

function lines(path: string): string[] {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
}

async function allJobs(errand: Errand): Promise<JobRecord[]> {
  const jobs: JobRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await errand.listJobs({ limit: 1000, ...(cursor ? { cursor } : {}) });
    jobs.push(...page.jobs);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return jobs;
}

describe("worker processes sharing one SQLite file", () => {
  const cleanups: Array<() => void | Promise<void>> = [];
  after(async () => {
    for (const c of cleanups) await c();
  });

  test("kill -9 mid-job: the jobs come back after the lease and complete, nothing lost", async () => {
    const s = scratch();
    const errand = await inspect(s.db, [nap]);
    const procs: Running[] = [];
    cleanups.push(async () => {
      for (const p of procs) p.child.kill("SIGKILL");
      await errand.close();
      s.cleanup();
    });
    const env = { ERRAND_FIXTURE_DIR: s.dir };
    const flags = [
      "--jobs",
      FIXTURE_JOBS,
      "--url",
      s.db,
      "--queue",
      "slow",
      "--concurrency",
      "4",
      "--lease",
      "2s",
    ];
    const jobs = await errand.enqueueMany(
      nap,
      Array.from({ length: 8 }, () => ({ payload: { ms: 1500 } })),
    );

    const victim = start(["worker", ...flags], env);
    procs.push(victim);
    const held = await waitFor(
      "the first worker to be running four jobs",
      async () => {
        const running = (await errand.listJobs({ state: "running" })).jobs;
        return (
          running.length === 4 && running.every((j) => j.lockedBy?.includes(`:${victim.pid}:`)) && running
        );
      },
      60_000,
    );
    victim.child.kill("SIGKILL");
    const killed = await exitOf(victim);
    assert.equal(killed.signal, "SIGKILL");

    const rescuer = start(["worker", ...flags], env);
    procs.push(rescuer);
    await waitFor(
      "all eight jobs to complete",
      async () => (await errand.listJobs({ state: "completed" })).jobs.length === 8,
      90_000,
    );
    rescuer.child.kill("SIGTERM");
    const stopped = await exitOf(rescuer);
    assert.equal(stopped.code, 0, stopped.stderr);

    const heldIds = new Set(held.map((j) => j.id));
    for (const { id } of jobs) {
      const job = await errand.getJob(id);
      assert.equal(job?.state, "completed");
      if (heldIds.has(id)) {
        assert.deepEqual(
          job?.attempts.map((a) => a.outcome),
          ["lost", "completed"],
          `job ${id} was rescued after the lease`,
        );
        assert.equal(job?.attempt, 2, "a lost attempt counts");
      } else {
        assert.deepEqual(
          job?.attempts.map((a) => a.outcome),
          ["completed"],
        );
      }
    }
    const ends = lines(join(s.dir, "naps.log")).filter((l) => l.startsWith("end "));
    assert.equal(ends.length, 8, "each nap finished once");
    assert.ok(
      ends.every((l) => l.endsWith(` ${rescuer.pid}`)),
      "the killed worker finished none",
    );
  });

  test("three workers, 2,000 jobs: each completed exactly once, never two runs at once", async () => {
    const s = scratch();
    const errand = await inspect(s.db, [tally]);
    const procs: Running[] = [];
    cleanups.push(async () => {
      for (const p of procs) p.child.kill("SIGKILL");
      await errand.close();
      s.cleanup();
    });
    const env = { ERRAND_FIXTURE_DIR: s.dir, ERRAND_LOG_LEVEL: "warn" };
    for (let i = 0; i < 3; i++) {
      procs.push(
        start(
          ["worker", "--jobs", FIXTURE_JOBS, "--url", s.db, "--queue", "bulk", "--concurrency", "8"],
          env,
        ),
      );
    }
    await waitFor(
      "three workers to register",
      async () => (await errand.store.listWorkers(60_000)).length === 3,
      60_000,
    );

    const total = 2000;
    const items = Array.from({ length: total }, (_, n) => ({ payload: { n, ms: n % 4 === 0 ? 2 : 0 } }));
    const jobs = await errand.enqueueMany(tally, items);
    assert.equal(jobs.length, total);
    await waitFor(
      "2,000 completed jobs",
      async () => (await errand.stats()).find((q) => q.queue === "bulk")?.completed === total,
      180_000,
      200,
    );
    for (const p of procs) p.child.kill("SIGTERM");
    for (const p of procs) {
      const result = await exitOf(p);
      assert.equal(result.code, 0, result.stderr);
    }

    assert.deepEqual(lines(join(s.dir, "overlaps.log")), [], "no job ran on two workers at once");
    const runs = lines(join(s.dir, "runs.log")).map((l) => l.split(" "));
    const effects = lines(join(s.dir, "effects.log")).map((l) => l.split(" ")[0]);
    const ids = jobs.map((j) => j.id).sort();
    assert.deepEqual(runs.map(([id]) => id).sort(), ids, "every job ran exactly once");
    assert.deepEqual([...effects].sort(), ids, "every side effect happened exactly once");
    const byPid = new Map<string, number>();
    for (const [, pid] of runs) byPid.set(pid, (byPid.get(pid) ?? 0) + 1);
    assert.ok(byPid.size >= 2, `the work was shared: ${JSON.stringify([...byPid])}`);

    for (const job of await allJobs(errand)) {
      assert.equal(job.state, "completed");
      assert.equal(job.attempts.length, 1, `job ${job.id} has one attempt`);
    }
    for (const { id } of jobs) {
      assert.equal(
        (await errand.store.ledgerGet({ key: `tally:${id}`, jobId: id, global: false })).found,
        true,
        `ledger entry of job ${id}`,
      );
    }
  });
});
