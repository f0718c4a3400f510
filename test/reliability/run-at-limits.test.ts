/**
 * Run times the stores cannot hold are refused before anything is stored, with the same limits
 * on every store: impossible calendar dates (2026-02-30, T24:00) instead of rolling over, run
 * times past year 9999, delays over 100 years. Through the API on memory, SQLite and Postgres,
 * and through the CLI (`--run-at`, `--delay`) on SQLite and Postgres.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { z } from "zod";
import type { Backoff } from "../../src/backoff.js";
import type { Duration } from "../../src/duration.js";
import { defineJob, type Errand, RetryableError, ValidationError } from "../../src/index.js";
import { FIXTURE_JOBS, hasStack, inspect, run, scratch } from "../cli/helpers.js";
import { dropSchema, freshSchemaName, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";
import { targets, withErrand } from "../helpers/targets.js";

const task = defineJob({ name: "task", queue: "q", schema: z.object({ n: z.number() }), run: () => {} });

const IMPOSSIBLE = [
  "2026-02-30",
  "2026-02-29T10:00:00Z", // 2026 is no leap year
  "2026-04-31T09:00:00Z",
  "2026-01-31T24:00:00Z",
  "2026-01-31T24:00",
  "2026-01-31T23:60:00Z",
  "2026-01-31T23:59:60Z",
  "2026-00-10",
  "2026-01-31T09:00:00+24:00",
];

const YEAR_MS = 365.25 * 86_400_000;

async function count(errand: Errand): Promise<number> {
  return (await errand.listJobs({ limit: 1000 })).jobs.length;
}

for (const target of targets) {
  describe(`run times and delays on ${target.name}`, { skip: target.skip }, () => {
    test("an impossible date is a ValidationError naming it, not a rolled-over date", () =>
      withErrand(target, async (errand) => {
        for (const runAt of IMPOSSIBLE) {
          await assert.rejects(
            errand.enqueue(task, { n: 1 }, { runAt }),
            (err: unknown) => err instanceof ValidationError && err.message.includes(JSON.stringify(runAt)),
            runAt,
          );
          await assert.rejects(
            errand.enqueueMany(task, [{ payload: { n: 1 } }, { payload: { n: 2 }, runAt }]),
            (err: unknown) =>
              err instanceof ValidationError && /^item 1/.test(err.message) && err.message.includes(runAt),
            runAt,
          );
        }
        assert.equal(await count(errand), 0);
        // Real dates still pass, the leap day of a leap year among them.
        const leap = await errand.enqueue(task, { n: 1 }, { runAt: "2028-02-29T23:59:59.999Z" });
        assert.equal(leap.runAt.toISOString(), "2028-02-29T23:59:59.999Z");
        const offset = await errand.enqueue(task, { n: 2 }, { runAt: "2030-12-31T23:00:00-05:30" });
        assert.equal(offset.runAt.toISOString(), "2031-01-01T04:30:00.000Z");
      }));

    test("a run time after year 9999 or an invalid Date is refused, naming it", () =>
      withErrand(target, async (errand) => {
        for (const runAt of [new Date("+010000-01-01T00:00:00Z"), new Date(8.64e15), new Date(Number.NaN)]) {
          await assert.rejects(
            errand.enqueue(task, { n: 1 }, { runAt }),
            (err: unknown) =>
              err instanceof ValidationError && /runAt/.test(err.message) && /9999/.test(err.message),
            String(runAt),
          );
        }
        assert.equal(await count(errand), 0);
        const last = await errand.enqueue(task, { n: 1 }, { runAt: new Date("9999-12-31T23:59:59.999Z") });
        assert.equal((await errand.getJob(last.id))?.runAt.toISOString(), "9999-12-31T23:59:59.999Z");
      }));

    test("a delay over 100 years is refused, naming it, on every store alike", () =>
      withErrand(target, async (errand) => {
        for (const delay of ["99999999999d", "36526d", 8.64e15, 100 * YEAR_MS + 1] as Duration[]) {
          await assert.rejects(
            errand.enqueue(task, { n: 1 }, { delay }),
            (err: unknown) =>
              err instanceof ValidationError && /delay/.test(err.message) && /100 years/.test(err.message),
            String(delay),
          );
          await assert.rejects(
            errand.enqueueMany(task, [{ payload: { n: 1 }, delay }]),
            (err: unknown) => err instanceof ValidationError && /^item 0/.test(err.message),
          );
        }
        assert.equal(await count(errand), 0);
        const far = await errand.enqueue(task, { n: 1 }, { delay: "36525d" });
        const inYears = (far.runAt.getTime() - far.createdAt.getTime()) / YEAR_MS;
        assert.ok(Math.abs(inYears - 100) < 0.001, `runAt ${far.runAt.toISOString()}`);
      }));
  });
}

/** Handlers asking for a delay past the limit: a snooze, a RetryableError's retryAfter. */
const snoozeForever = defineJob({
  name: "snooze-forever",
  queue: "q",
  schema: z.object({}),
  maxAttempts: 1,
  run: (_payload, ctx) => ctx.snooze("99999999999d"),
});
const retryForever = defineJob({
  name: "retry-forever",
  queue: "q",
  schema: z.object({}),
  maxAttempts: 1,
  run: () => {
    throw new RetryableError("rate limited", { retryAfter: "36526d", rateLimited: true });
  },
});

for (const target of targets) {
  describe(`delays a handler asks for on ${target.name}`, { skip: target.skip }, () => {
    test("a snooze or retryAfter over 100 years fails the attempt with a clear error; the job is not stuck", () =>
      withErrand(target, async (errand) => {
        errand.register(snoozeForever, retryForever);
        const snoozed = await errand.enqueue(snoozeForever, {});
        const retried = await errand.enqueue(retryForever, {});
        const result = await errand.processJobs({ limit: 10, finishTimeout: "10s" });
        assert.equal(result.claimed, 2);
        assert.equal(result.failed, 2, JSON.stringify(result));
        const a = await errand.getJob(snoozed.id);
        assert.equal(a?.state, "failed");
        assert.match(a?.lastError ?? "", /snooze delay must be at most 100 years/);
        const b = await errand.getJob(retried.id);
        assert.equal(b?.state, "failed");
        assert.match(b?.lastError ?? "", /retryAfter must be at most 100 years/);
      }));
  });
}

test("a backoff over 100 years is refused when the job is defined", () => {
  const define = (backoff: Backoff) =>
    defineJob({ name: "b", queue: "q", schema: z.object({}), backoff, run: () => {} });
  assert.throws(() => define(["1s", "36526d"]), /backoff\[1\] must be at most 100 years/);
  assert.throws(() => define({ base: "1s", max: "99999999999d" }), /backoff.max must be at most 100 years/);
  assert.doesNotThrow(() => define({ base: "1s", max: "36525d" }));
});

describe("the CLI refuses the same run times and delays", () => {
  const s = scratch();
  after(() => s.cleanup());
  const enqueue = (url: string[], ...args: string[]) => [
    "enqueue",
    "echo",
    "--jobs",
    FIXTURE_JOBS,
    ...url,
    "--payload",
    '{"text":"t"}',
    ...args,
  ];

  test("--run-at with an impossible date: exit 2, the value named", async () => {
    for (const value of ["2026-02-30", "2026-01-31T24:00:00Z"]) {
      const result = await run(enqueue(["--url", s.db], "--run-at", value));
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /--run-at/);
      assert.ok(result.stderr.includes(value), result.stderr);
      assert.equal(hasStack(result.stderr), false);
    }
    const errand = await inspect(s.db);
    try {
      assert.equal(await count(errand), 0);
    } finally {
      await errand.close();
    }
  });

  test("--delay 99999999999d on SQLite: a one-line error, nothing stored", async () => {
    const result = await run(enqueue(["--url", s.db], "--delay", "99999999999d"));
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /delay/);
    assert.match(result.stderr, /100 years/);
    assert.equal(hasStack(result.stderr), false, result.stderr);
    const errand = await inspect(s.db);
    try {
      assert.equal(await count(errand), 0);
    } finally {
      await errand.close();
    }
  });

  test("--delay 99999999999d on Postgres: no raw 'interval out of range', nothing stored", async (t) => {
    const skip = await skipUnlessPostgres();
    if (skip) return t.skip(skip);
    const schema = freshSchemaName();
    t.after(() => dropSchema(schema));
    const url = ["--url", postgresUrl(), "--schema", schema];
    assert.equal((await run(["migrate", ...url])).code, 0);
    const result = await run(enqueue(url, "--delay", "99999999999d"));
    assert.equal(result.code, 1, result.stderr);
    assert.doesNotMatch(result.stderr, /interval out of range/);
    assert.match(result.stderr, /100 years/);
    assert.equal(hasStack(result.stderr), false, result.stderr);
    const listed = await run(["jobs", "list", ...url, "--json"]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(JSON.parse(listed.stdout).jobs ?? JSON.parse(listed.stdout), []);
  });
});
