/**
 * processJobs: a bounded one-shot run through the worker's own executor and completer.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob, PermanentError, ValidationError } from "../../src/index.js";
import { testClock } from "../helpers/clock.js";
import { targets, withErrand } from "../helpers/targets.js";
import { within } from "../helpers/wait.js";

for (const target of targets) {
  describe(`processJobs on ${target.name}`, { skip: target.skip }, () => {
    test("claims at most `limit` due jobs, runs them, and reports what is still due", () =>
      withErrand(target, async (errand) => {
        const ran: number[] = [];
        const job = defineJob({
          name: "work",
          queue: "q",
          schema: z.object({ n: z.number() }),
          run: (p) => void ran.push(p.n),
        });
        for (let n = 0; n < 5; n++) await errand.enqueue(job, { n });
        await errand.enqueue(job, { n: 99 }, { delay: "1h" }); // not due
        const first = await errand.processJobs({ limit: 3 });
        assert.equal(first.claimed, 3);
        assert.equal(first.completed, 3);
        assert.equal(first.stillDue, 2);
        assert.deepEqual(ran, [0, 1, 2]);
        const second = await errand.processJobs({ limit: 100 });
        assert.deepEqual(
          { claimed: second.claimed, completed: second.completed, stillDue: second.stillDue },
          { claimed: 2, completed: 2, stillDue: 0 },
        );
        const stats = (await errand.stats()).find((s) => s.queue === "q");
        assert.equal(stats?.completed, 5);
        assert.equal(stats?.delayed, 1);
        assert.equal((await errand.store.listWorkers(60_000)).length, 0, "the one-shot worker unregistered");
      }));

    test("counts retries and failures, through the executor's classification", () =>
      withErrand(target, async (errand) => {
        const job = defineJob({
          name: "mixed",
          queue: "q",
          schema: z.object({ kind: z.string() }),
          maxAttempts: 2,
          backoff: ["1h"],
          run: (p) => {
            if (p.kind === "permanent") throw new PermanentError("no");
            if (p.kind === "transient") throw Object.assign(new Error("reset"), { code: "ECONNRESET" });
          },
        });
        for (const kind of ["ok", "permanent", "transient", "ok"]) await errand.enqueue(job, { kind });
        const result = await errand.processJobs();
        assert.deepEqual(
          {
            claimed: result.claimed,
            completed: result.completed,
            retried: result.retried,
            failed: result.failed,
            stillDue: result.stillDue,
          },
          { claimed: 4, completed: 2, retried: 1, failed: 1, stillDue: 0 },
        );
        assert.equal((await errand.listJobs({ state: "failed" })).jobs.length, 1);
      }));

    test("stops claiming when the time budget is spent, and finishes what it claimed", () =>
      withErrand(target, async (errand) => {
        const job = defineJob({
          name: "slow",
          queue: "q",
          schema: z.object({}),
          run: () => new Promise((r) => setTimeout(r, 120)),
        });
        for (let i = 0; i < 10; i++) await errand.enqueue(job, {});
        const result = await errand.processJobs({ limit: 100, concurrency: 1, timeBudget: 200 });
        assert.ok(result.claimed >= 1 && result.claimed <= 3, `claimed ${result.claimed}`);
        assert.equal(result.completed, result.claimed, "everything claimed was finished");
        assert.equal(result.stillDue, 10 - result.claimed);
        assert.equal((await errand.listJobs({ state: "running" })).jobs.length, 0);
      }));

    test("a job still running past the finish timeout is released to pending, attempt not charged", () =>
      withErrand(target, async (errand) => {
        const job = defineJob({
          name: "stuck",
          queue: "q",
          schema: z.object({}),
          run: (_p, ctx) =>
            new Promise((_r, reject) =>
              ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
            ),
        });
        const { id } = await errand.enqueue(job, {});
        const result = await errand.processJobs({ timeBudget: 500, finishTimeout: 50 });
        assert.equal(result.claimed, 1);
        assert.equal(result.released, 1);
        assert.equal(result.stillDue, 1);
        const after = await errand.getJob(id);
        assert.equal(after?.state, "pending");
        assert.equal(after?.attempts.at(-1)?.outcome, "interrupted");
      }));

    // errand serve closes its errand on SIGTERM: close() closed the store under a tick in flight,
    // so its job's outcome could not be written (left running, later charged as lost) and the
    // run failed on the closed store.
    test("close() during a run stops it like a worker: its jobs finish or are released, then the store closes", () =>
      withErrand(target, async (errand) => {
        let started = 0;
        const slow = defineJob({
          name: "slow",
          queue: "q",
          schema: z.object({ ms: z.number() }),
          run: (p, ctx) =>
            new Promise<void>((resolve, reject) => {
              started++;
              const timer = setTimeout(resolve, p.ms);
              ctx.signal.addEventListener("abort", () => {
                clearTimeout(timer);
                reject(ctx.signal.reason);
              });
            }),
        });
        await errand.enqueue(slow, { ms: 300 });
        await errand.enqueue(slow, { ms: 60_000 });
        const run = errand.processJobs({ timeBudget: "20s" });
        const deadline = Date.now() + 10_000;
        while (started < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        assert.equal(started, 2);
        await errand.close({ timeout: "1s" });
        const result = await run;
        assert.deepEqual(
          {
            claimed: result.claimed,
            completed: result.completed,
            released: result.released,
            stillDue: result.stillDue,
          },
          { claimed: 2, completed: 1, released: 1, stillDue: 1 },
        );
      }));

    test("close() refuses a bad timeout and leaves the errand open", () =>
      withErrand(target, async (errand) => {
        // @ts-expect-error: "soon" is no Duration (a compile error); the run-time check is under test
        await assert.rejects(errand.close({ timeout: "soon" }), /timeout/);
        await assert.rejects(errand.close({ timeout: "30d" }), /timeout must be at most/);
        // @ts-expect-error: an unknown field (a compile error); the run-time check is under test
        await assert.rejects(errand.close({ timeuot: "1s" }), /timeuot/);
        const job = defineJob({ name: "a", queue: "q", schema: z.object({}), run: () => {} });
        const { id } = await errand.enqueue(job, {});
        assert.equal((await errand.getJob(id))?.state, "pending", "still open");
      }));

    test("ends at its deadline even when every slot holds a job that does not finish", () =>
      withErrand(target, async (errand) => {
        // As many due jobs as slots: the claim loop found no free slot and used to wait for one
        // forever, past the deadline, so the run (an HTTP tick) never answered.
        const job = defineJob({
          name: "stuck",
          queue: "q",
          schema: z.object({}),
          run: () => new Promise<void>(() => {}),
        });
        const ids = [(await errand.enqueue(job, {})).id, (await errand.enqueue(job, {})).id];
        const result = await within(
          errand.processJobs({ concurrency: 2, timeBudget: 300, finishTimeout: 50 }),
          20_000,
          "processJobs to end past its deadline",
        );
        assert.equal(result.claimed, 2);
        assert.equal(result.released, 2);
        for (const id of ids) assert.equal((await errand.getJob(id))?.state, "pending");
      }));

    test("rescues a job a killed tick left running, then runs it in the same call", () => {
      const clock = testClock();
      return withErrand(
        target,
        async (errand) => {
          const job = defineJob({ name: "again", queue: "q", schema: z.object({}), run: () => "done" });
          errand.register(job);
          const { id } = await errand.enqueue(job, {});
          // A previous tick's process claimed it and died: its lease runs out.
          const [claimed] = await errand.store.claimJobs({
            queue: "q",
            limit: 1,
            workerId: "killed-tick",
            leaseMs: 50,
          });
          assert.equal(claimed.id, id);
          clock.advance(71); // the lease runs out
          assert.ok(
            (await errand.store.now()).getTime() > claimed.lockedUntil.getTime() + 20,
            "the lease expired",
          );
          const result = await errand.processJobs();
          assert.deepEqual([result.claimed, result.completed], [1, 1]);
          assert.deepEqual(
            (await errand.getJob(id))?.attempts.map((a) => a.outcome),
            ["lost", "completed"],
          );
        },
        { clock },
      );
    });

    // A tick's budget is shared by its queues: a queue whose loop found the rest reserved by
    // another queue's claim ended for good, so its due jobs were never claimed, tick after tick
    // (limit 5 over 2 queues; the default 100 over 12), though the limit was not reached.
    test("every queue of a tick gets its due jobs while the limit is not reached", () =>
      withErrand(target, async (errand) => {
        const make = (n: number) =>
          defineJob({
            name: `j${n}`,
            queue: `q${String(n).padStart(2, "0")}`,
            schema: z.object({}),
            run: () => {},
          });
        const jobs = Array.from({ length: 12 }, (_, n) => make(n));
        for (const job of jobs) errand.register(job as never);
        await errand.enqueue(jobs[1], {});
        const small = await errand.processJobs({ limit: 5, queues: ["q00", "q01"] });
        assert.deepEqual({ claimed: small.claimed, stillDue: small.stillDue }, { claimed: 1, stillDue: 0 });
        await errand.enqueue(jobs[11], {});
        const many = await errand.processJobs();
        assert.deepEqual({ claimed: many.claimed, stillDue: many.stillDue }, { claimed: 1, stillDue: 0 });
        // More queues than claims: a queue offered none waits for what the empty ones give back.
        for (const n of [11, 3, 7, 0, 9]) {
          await errand.enqueue(jobs[n], {});
          const tick = await errand.processJobs({ limit: 2 });
          assert.deepEqual({ claimed: tick.claimed, stillDue: tick.stillDue }, { claimed: 1, stillDue: 0 });
        }
      }));

    // More queues with backlogs than the limit: each tick serves some of them, never always the same.
    test("queues with more backlog than a tick's limit are all served over a few ticks", () =>
      withErrand(target, async (errand) => {
        const jobs = Array.from({ length: 20 }, (_, n) =>
          defineJob({
            name: `b${n}`,
            queue: `b${String(n).padStart(2, "0")}`,
            schema: z.object({}),
            run: () => {},
          }),
        );
        for (const job of jobs) {
          errand.register(job as never);
          await errand.enqueueMany(
            job,
            Array.from({ length: 100 }, () => ({ payload: {} })),
          );
        }
        // Each tick serves 5 of the 20 queues, from a random one on: a queue is left out of 60
        // ticks with probability (3/4)^60, 3e-8. Served in order, the last 15 waited 20 ticks each.
        const served = new Set<string>();
        let ticks = 0;
        while (served.size < 20 && ticks < 60) {
          const before = await errand.stats();
          const run = await errand.processJobs({ limit: 5 });
          assert.equal(run.claimed, 5);
          for (const q of await errand.stats())
            if (q.completed > (before.find((b) => b.queue === q.queue)?.completed ?? 0)) served.add(q.queue);
          ticks++;
        }
        assert.equal(
          served.size,
          20,
          `after ${ticks} ticks of 5, queues served: ${[...served].sort().join(" ")}`,
        );
      }));

    test("refuses unknown queues and bad limits", () =>
      withErrand(target, async (errand) => {
        errand.register(defineJob({ name: "a", queue: "q", schema: z.object({}), run: () => {} }) as never);
        await assert.rejects(
          errand.processJobs({ queues: ["nope"] }),
          (err: Error) => err instanceof ValidationError && /unknown queue "nope"/.test(err.message),
        );
        await assert.rejects(errand.processJobs({ limit: 0 }), /limit must be an integer from 1/);
        // @ts-expect-error: "soon" is no Duration (a compile error); the run-time check is under test
        await assert.rejects(errand.processJobs({ timeBudget: "soon" }), /timeBudget/);
      }));
  });
}
