/**
 * errand/testing's clock and jitter: the fake clock moves only forward and only when told, and
 * backoff jitter is drawn from a seed, so the same test computes the same retry times every run.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { compileBackoff } from "../../src/backoff.js";
import { defineJob, ValidationError } from "../../src/index.js";
import { createTestErrand, FakeClock } from "../../src/testing/index.js";

test("the fake clock starts where told (a fixed instant by default) and moves only forward", () => {
  assert.equal(new FakeClock().now().toISOString(), "2026-01-01T00:00:00.000Z");
  const clock = new FakeClock("2026-03-01T10:00:00+01:00");
  assert.equal(clock.now().toISOString(), "2026-03-01T09:00:00.000Z");
  assert.equal(clock.advance("90m").toISOString(), "2026-03-01T10:30:00.000Z");
  assert.equal(clock.set(Date.parse("2026-03-02T00:00:00Z")).toISOString(), "2026-03-02T00:00:00.000Z");
  const { now, advance } = clock; // bound: can be handed to application code
  advance(1000);
  assert.equal(now().toISOString(), "2026-03-02T00:00:01.000Z");

  assert.throws(
    () => clock.set("2026-03-01T00:00:00Z"),
    (err: Error) =>
      err instanceof ValidationError &&
      err.message ===
        "the fake clock only moves forward: it is 2026-03-02T00:00:01.000Z, asked for 2026-03-01T00:00:00.000Z",
  );
  assert.throws(() => clock.advance("5 minutes" as never), /clock.advance must be a number of milliseconds/);
  assert.throws(() => new FakeClock("2026-02-30T00:00:00Z"), /now must be an ISO 8601 time/);
  assert.throws(() => new FakeClock(Number.NaN), /now must be a finite number of ms/);
});

/** The delays of a job's retries (retryAt − finishedAt), under a test errand with `options`. */
async function retryDelays(options: { seed?: number; jitter?: boolean }): Promise<number[]> {
  const t = await createTestErrand(options);
  const failing = defineJob({
    name: "failing",
    schema: z.object({}),
    maxAttempts: 5,
    backoff: { base: "1m", jitter: 0.5 },
    run: () => {
      throw new Error("no");
    },
  });
  const job = await t.errand.enqueue(failing, {});
  await t.drain({ untilIdle: true });
  const { attempts } = await t.job(job.id);
  await t.close();
  return attempts
    .filter((a) => a.retryAt)
    .map((a) => Date.parse(a.retryAt as string) - Date.parse(a.finishedAt));
}

test("jitter is seeded: the same seed gives the same retry delays, another seed others, all within the jitter", async () => {
  const first = await retryDelays({});
  assert.equal(first.length, 4);
  assert.deepEqual(await retryDelays({}), first, "same (default) seed, same delays");
  assert.deepEqual(await retryDelays({ seed: 1 }), first, "the default seed is 1");
  const other = await retryDelays({ seed: 7 });
  assert.notDeepEqual(other, first);
  for (const delays of [first, other]) {
    delays.forEach((ms, i) => {
      const base = 60_000 * 2 ** i;
      assert.ok(ms >= base * 0.5 && ms <= base * 1.5, `retry ${i + 1}: ${ms} ms against ${base} ± 50 %`);
    });
  }
  assert.deepEqual(await retryDelays({ jitter: false }), [60_000, 120_000, 240_000, 480_000]);
});

test("outside errand/testing the backoff still draws from Math.random; a random passed in replaces it", () => {
  const backoff = compileBackoff({ base: 1000, jitter: 0.2 });
  assert.equal(
    backoff(1, () => 0),
    800,
  );
  assert.equal(
    backoff(1, () => 1),
    1200,
  );
  assert.equal(
    backoff(3, () => 0.5),
    4000,
  );
  const realRandom = Math.random;
  try {
    Math.random = () => 0;
    assert.equal(compileBackoff({ base: 1000, jitter: 0.2 })(1), 800);
  } finally {
    Math.random = realRandom;
  }
});
