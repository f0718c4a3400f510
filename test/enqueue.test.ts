/**
 * The enqueue path through the public API, on every store: what enqueue and enqueueMany return
 * (the store's records with `created`, no copies), the "enqueued" event, payloads checked once
 * and handed to the store as JSON text, and refusals that name the item.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { z } from "zod";
import { defineJob, type Errand, type JobRecord, ValidationError } from "../src/index.js";
import { targets, withErrand } from "./helpers/targets.js";

const task = defineJob({
  name: "task",
  queue: "q",
  schema: z.object({ n: z.number(), when: z.string().optional(), note: z.string().optional() }),
  run: () => {},
});

/** A validator that answers later (Standard Schema allows a promise), refusing negative n. */
const later: StandardSchemaV1<{ n: number }> = {
  "~standard": {
    version: 1,
    vendor: "test",
    validate: async (value) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      const n = (value as { n?: unknown }).n;
      return typeof n === "number" && n >= 0 ? { value: { n } } : { issues: [{ message: "n must be ≥ 0" }] };
    },
  },
};
const slow = defineJob({ name: "slow", queue: "q", schema: later, run: () => {} });

async function count(errand: Errand): Promise<number> {
  return (await errand.listJobs({ limit: 1000 })).jobs.length;
}

for (const target of targets) {
  describe(`enqueue on ${target.name}`, { skip: target.skip }, () => {
    test("enqueueMany returns each job as getJob reads it, with created, in input order", () =>
      withErrand(target, async (errand) => {
        const existing = await errand.enqueue(task, { n: 0 }, { key: "old" });
        const at = new Date(Date.now() + 3_600_000);
        const jobs = await errand.enqueueMany(task, [
          // A Date becomes its ISO text, an undefined field disappears: the JSON form is stored.
          { payload: { n: 1, when: new Date("2026-01-31T09:00:00Z") as never, note: undefined } },
          { payload: { n: 2 }, key: "new", priority: 5 },
          { payload: { n: 3 }, key: "old" },
          { payload: { n: 4 }, runAt: at, maxAttempts: 7 },
          { payload: { n: 5 }, key: "new" },
          { payload: { n: 6 }, delay: "1h" },
        ]);
        assert.deepEqual(
          jobs.map((j) => j.created),
          [true, true, false, true, false, true],
        );
        assert.deepEqual(
          jobs.map((j) => (j.payload as { n: number }).n),
          [1, 2, 0, 4, 2, 6],
        );
        assert.deepStrictEqual(jobs[0].payload, { n: 1, when: "2026-01-31T09:00:00.000Z" });
        assert.equal(jobs[2].id, existing.id);
        assert.equal(jobs[4].id, jobs[1].id);
        assert.equal(jobs[1].priority, 5);
        assert.equal(jobs[3].runAt.getTime(), at.getTime());
        assert.equal(jobs[3].maxAttempts, 7);
        for (const job of jobs) {
          const { created, replaced, ...record } = job;
          assert.equal(typeof created, "boolean");
          assert.equal(replaced, false);
          assert.deepStrictEqual(record, await errand.getJob(job.id), `job ${job.id}`);
        }
        // Each result is an object of its own, even for one key returned twice.
        assert.equal(new Set(jobs).size, jobs.length);
        (jobs[4].payload as { n: number }).n = 99;
        assert.equal((jobs[1].payload as { n: number }).n, 2);
        assert.equal(await count(errand), 5);

        const one = await errand.enqueue(task, { n: 7 }, { priority: -3 });
        const { created, replaced, ...record } = one;
        assert.equal(created, true);
        assert.equal(replaced, false);
        assert.deepStrictEqual(record, await errand.getJob(one.id));
      }));

    test("the enqueued event gets the jobs created, the very records returned", () =>
      withErrand(target, async (errand) => {
        const seen: JobRecord[][] = [];
        errand.on("enqueued", (jobs) => seen.push(jobs));
        const jobs = await errand.enqueueMany(task, [
          { payload: { n: 1 }, key: "a" },
          { payload: { n: 2 }, key: "a" },
          { payload: { n: 3 } },
        ]);
        const again = await errand.enqueue(task, { n: 4 }, { key: "a" });
        const single = await errand.enqueue(task, { n: 5 });
        assert.equal(again.created, false);
        assert.equal(seen.length, 2, "one event per call that created something");
        assert.deepEqual(seen[0], [jobs[0], jobs[2]]);
        assert.equal(seen[0][0], jobs[0]);
        assert.equal(seen[0][1], jobs[2]);
        assert.equal(seen[1][0], single);
      }));

    test("a bad payload in a batch is refused naming the item and what is wrong; nothing is stored", () =>
      withErrand(target, async (errand) => {
        const cases: Array<[unknown, RegExp]> = [
          [{ n: 1, "k\u0000": 1 }, /^item 2 payload key contains a NUL character/],
          [{ n: 1, note: "a\u0000b" }, /^item 2 payload string contains a NUL character/],
          [{ n: 1, note: "x\ud800" }, /^item 2 payload string contains a lone UTF-16 surrogate/],
          [{ n: 1, "\udc00": 1 }, /^item 2 payload key contains a lone UTF-16 surrogate/],
          [{ n: 1, note: "x".repeat(1024 * 1024) }, /^item 2 payload is \d+ bytes, over the limit/],
        ];
        for (const [bad, message] of cases) {
          await assert.rejects(
            errand.enqueueMany(task, [
              { payload: { n: 0 } },
              { payload: { n: 1 } },
              { payload: bad as never },
            ]),
            (err: Error) => err instanceof ValidationError && message.test(err.message),
            String(message),
          );
        }
        // Escaped-looking text is just text.
        const ok = await errand.enqueue(task, { n: 1, note: "C:\\u0000\\ud800" });
        assert.deepEqual((await errand.getJob(ok.id))?.payload, { n: 1, note: "C:\\u0000\\ud800" });
        assert.equal(await count(errand), 1);
      }));

    test("an async schema: every item is checked before anything is stored", () =>
      withErrand(target, async (errand) => {
        const jobs = await errand.enqueueMany(slow, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
        assert.deepEqual(
          jobs.map((j) => j.payload),
          [{ n: 1 }, { n: 2 }],
        );
        await assert.rejects(
          errand.enqueueMany(slow, [{ payload: { n: 3 } }, { payload: { n: -1 } }]),
          /item 1 payload does not match the schema of job "slow": n must be ≥ 0/,
        );
        // Item 0 is being checked (and will fail) when item 1's options are refused: that
        // refusal is the answer, and item 0's later failure is no unhandled rejection.
        await assert.rejects(
          errand.enqueueMany(slow, [{ payload: { n: -5 } }, { payload: { n: 1 }, priority: 0.5 }]),
          /item 1 payload: priority must be an integer/,
        );
        await new Promise((resolve) => setTimeout(resolve, 20));
        assert.equal(await count(errand), 2);
      }));
  });
}
