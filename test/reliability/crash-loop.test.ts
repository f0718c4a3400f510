/**
 * A job that crashes its worker does not loop forever (issue 12, item 5). `poison` leaves a
 * rejected promise nobody awaits, which crashes `errand worker` (exit 1, by design); this test
 * is the supervisor that restarts it. The crash is charged to poison (AsyncLocalStorage tells
 * its code apart), so after its two attempts it is in the dead-letter queue; its neighbours,
 * interrupted by each crash, are not charged and complete; and the restarts stop being needed.
 * A crash no job's code caused (`tripwire` arms a module-level timer) charges every job it
 * interrupts once.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { exitOf, inspect, PROCESS_JOBS, scratch, start, waitFor } from "../cli/helpers.js";
import { neighbour, poison, tripwire } from "../fixtures/process-jobs.js";

/** Far more runs than poison's two crashes and a clean run need. */
const MAX_RUNS = 6;

const s = scratch("errand-crash-loop-");
after(() => s.cleanup());

test("a poison job ends failed after its attempts; its neighbours complete; restarts stop", async () => {
  const errand = await inspect(s.db, [poison, neighbour]);
  try {
    const bad = await errand.enqueue(poison, {});
    const good = await Promise.all([1, 2, 3].map(() => errand.enqueue(neighbour, { ms: 1500 })));
    const settled = async () => {
      const jobs = await Promise.all([bad, ...good].map((j) => errand.getJob(j.id)));
      return jobs[0]?.state === "failed" && jobs.slice(1).every((j) => j?.state === "completed");
    };
    const exits: (number | null)[] = [];
    const stderrs: string[] = [];
    let stoppedByUs = false;
    for (let run = 1; run <= MAX_RUNS && !stoppedByUs; run++) {
      const proc = start(
        ["worker", "--jobs", PROCESS_JOBS, "--url", s.db, "--concurrency", "4", "--poll-interval", "100ms"],
        { ERRAND_FIXTURE_DIR: s.dir },
      );
      const why = await waitFor(
        "the worker to crash or every job to settle",
        async () => (proc.child.exitCode !== null ? "exited" : (await settled()) ? "settled" : false),
        60_000,
      );
      if (why === "settled") {
        proc.child.kill("SIGTERM");
        stoppedByUs = true;
      }
      const result = await exitOf(proc, 30_000);
      exits.push(result.code);
      stderrs.push(result.stderr);
    }
    assert.ok(stoppedByUs, `still crashing after ${MAX_RUNS} runs (exit codes ${exits.join(", ")})`);
    assert.deepEqual(exits, [1, 1, 0], "two crashes (poison's two attempts), then a clean run");
    for (const stderr of stderrs.slice(0, 2))
      assert.match(stderr, new RegExp(`unhandled promise rejection from job ${bad.id}: charging it`));

    const poisoned = await errand.getJob(bad.id);
    assert.equal(poisoned?.state, "failed");
    assert.deepEqual(
      poisoned?.attempts.map((a) => [a.outcome, a.kind]),
      [
        ["retried", "crashed"],
        ["failed", "crashed"],
      ],
    );
    assert.match(poisoned?.attempts[0].error ?? "", /poison: a promise nobody awaited/);
    for (const { id } of good) {
      const job = await errand.getJob(id);
      assert.equal(job?.state, "completed");
      assert.equal(job?.attempt, 1, "a neighbour is not charged for poison's crashes");
    }
  } finally {
    await errand.close();
  }
});

test("a crash from no job's code charges every running job once", async () => {
  const t = scratch("errand-crash-any-");
  const errand = await inspect(t.db, [tripwire, neighbour]);
  try {
    const jobs = [
      await errand.enqueue(tripwire, {}),
      ...(await Promise.all([1, 2].map(() => errand.enqueue(neighbour, { ms: 5000 })))),
    ];
    const proc = start(["worker", "--jobs", PROCESS_JOBS, "--url", t.db, "--concurrency", "4"], {
      ERRAND_FIXTURE_DIR: t.dir,
    });
    const result = await exitOf(proc, 60_000);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /uncaught exception \(from no known job\): charging every running job/);
    for (const { id } of jobs) {
      const job = await errand.getJob(id);
      assert.equal(job?.state, "pending");
      assert.deepEqual(
        job?.attempts.map((a) => [a.outcome, a.kind]),
        [["retried", "crashed"]],
        `job ${job?.name}`,
      );
    }
  } finally {
    await errand.close();
    t.cleanup();
  }
});
