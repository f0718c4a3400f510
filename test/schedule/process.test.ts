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
