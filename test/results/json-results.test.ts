/**
 * Results and ctx.once values a store holds as JSON, on every store: what a handler returns is
 * stored and read back as its JSON form — a Date as its ISO text, NaN and Infinity as null,
 * `undefined` in an array as null, a function property dropped, a `toJSON` applied, a Map as
 * `{}` — the same on memory (the store of errand/testing) as on SQLite and PostgreSQL, so a
 * unit test sees what production reads. waitFor resolves with it, the job is `completed` with
 * its lease cleared, and a retry's `ctx.once` gets the value the SQL stores give back.
 *
 * Before the fix the memory store kept a structured clone: waitFor answered a Date, a Map, NaN
 * and -0 where SQLite and PostgreSQL answered a string, {}, null and 0; and a result holding a
 * function or a `toJSON` method (which JSON drops or applies, but structuredClone refuses) left
 * its job `completed` with a null result, still locked, without a finish time — a waitFor on it
 * never settled (it timed out after 20 s) and nothing was logged.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob } from "../../src/index.js";
import { createTestErrand } from "../../src/testing/index.js";
import { targets } from "../helpers/targets.js";
import { within } from "../helpers/wait.js";

class Money {
  constructor(
    readonly amount: number,
    readonly currency: string,
  ) {}
  format(): string {
    return `${this.amount} ${this.currency}`;
  }
}

/** What a handler returns, and the JSON form every store gives back. */
const RESULTS: Record<string, { make: () => unknown; stored: unknown }> = {
  date: {
    make: () => ({ at: new Date("2026-01-01T00:00:00Z") }),
    stored: { at: "2026-01-01T00:00:00.000Z" },
  },
  nan: { make: () => Number.NaN, stored: null },
  infinity: {
    make: () => ({ x: Number.POSITIVE_INFINITY, y: -Number.POSITIVE_INFINITY }),
    stored: { x: null, y: null },
  },
  negativeZero: { make: () => ({ z: -0 }), stored: { z: 0 } },
  undefinedInArray: { make: () => [1, undefined, 3], stored: [1, null, 3] },
  undefinedProperty: { make: () => ({ a: undefined, b: 1 }), stored: { b: 1 } },
  functionProperty: { make: () => ({ ok: true, done: () => 1 }), stored: { ok: true } },
  toJSON: { make: () => ({ secret: "s", toJSON: () => ({ shown: 1 }) }), stored: { shown: 1 } },
  map: { make: () => ({ m: new Map([["a", 1]]), s: new Set([1]) }), stored: { m: {}, s: {} } },
  classInstance: { make: () => new Money(3, "EUR"), stored: { amount: 3, currency: "EUR" } },
  buffer: { make: () => ({ b: Buffer.from("hi") }), stored: { b: { type: "Buffer", data: [104, 105] } } },
};

const odd = defineJob({
  name: "odd-result",
  queue: "odd",
  maxAttempts: 1,
  schema: z.object({ what: z.string() }),
  run: async ({ what }) => RESULTS[what].make(),
});

/** Records a Date through ctx.once, fails its first attempt, and returns what the retry's ctx.once gave. */
const onceDate = defineJob({
  name: "once-date",
  queue: "odd",
  maxAttempts: 2,
  backoff: ["1ms"],
  schema: z.object({}),
  async run(_payload, ctx) {
    const value = await ctx.once("stamp", async () => ({
      at: new Date("2026-02-03T04:05:06Z"),
      n: Number.NaN,
    }));
    if (ctx.attempt === 1) throw new Error("first attempt fails after its effect");
    return { seen: value, type: typeof (value as { at: unknown }).at };
  },
});

for (const target of targets) {
  describe(`results as JSON on ${target.name}`, { skip: target.skip, timeout: 120_000 }, () => {
    test("waitFor and getJob give each result's JSON form; the job is completed and unlocked", async () => {
      const { errand, cleanup } = await target.openErrand({ jobs: [odd], waitRecheck: "1h" });
      const worker = errand.work({ odd: { concurrency: 4 } }, { pollInterval: 50, lease: "5s" });
      try {
        const jobs = await Promise.all(
          Object.keys(RESULTS).map(async (what) => ({ what, job: await errand.enqueue(odd, { what }) })),
        );
        for (const { what, job } of jobs) {
          const result = await within(errand.waitFor(job, { timeout: "20s" }), 25_000, `waitFor(${what})`);
          assert.deepEqual(result, RESULTS[what].stored, `waitFor of ${what}`);
          assert.ok(Object.is((result as { z?: number })?.z ?? 0, 0), `${what}: no -0`);
          const record = await errand.getJob(job.id);
          assert.equal(record?.state, "completed", what);
          assert.deepEqual(record?.result, RESULTS[what].stored, `getJob of ${what}`);
          assert.equal(record?.lockedBy, null, `${what}: lease cleared`);
          assert.ok(record?.finishedAt instanceof Date, `${what}: finishedAt set`);
        }
      } finally {
        await within(worker.stop(), 15_000, "worker.stop()");
        await cleanup();
      }
    });

    test("a retry's ctx.once gives back the JSON form of the first attempt's value", async () => {
      const { errand, cleanup } = await target.openErrand({ jobs: [onceDate], waitRecheck: "1h" });
      const worker = errand.work({ odd: { concurrency: 1 } }, { pollInterval: 50, lease: "5s" });
      try {
        const job = await errand.enqueue(onceDate, {});
        const result = await within(errand.waitFor(job, { timeout: "20s" }), 25_000, "waitFor(once-date)");
        assert.deepEqual(result, { seen: { at: "2026-02-03T04:05:06.000Z", n: null }, type: "string" });
      } finally {
        await within(worker.stop(), 15_000, "worker.stop()");
        await cleanup();
      }
    });
  });
}

test("errand/testing reads results as production does: a Date result is its ISO text", async () => {
  const t = await createTestErrand({ now: "2026-03-01T00:00:00Z" });
  try {
    const job = await t.errand.enqueue(odd, { what: "date" });
    const functions = await t.errand.enqueue(odd, { what: "functionProperty" });
    await t.drain();
    assert.deepEqual((await t.errand.getJob(job.id))?.result, { at: "2026-01-01T00:00:00.000Z" });
    const record = await t.errand.getJob(functions.id);
    assert.equal(record?.state, "completed");
    assert.deepEqual(record?.result, { ok: true });
  } finally {
    await t.close();
  }
});
