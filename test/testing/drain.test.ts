/**
 * errand/testing's drain and advance: jobs run through the real worker on the fake clock —
 * delays, chains, retries, snoozes, leases and schedules each at the fake moment they fall due.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { defineJob, type JobDefinition, RetryableError } from "../../src/index.js";
import { createTestErrand } from "../../src/testing/index.js";
import { within } from "../helpers/wait.js";

const times = (list: Date[]) => list.map((d) => d.toISOString());

test("drain runs what is due now and what it enqueues; a delayed job waits for the clock", async () => {
  const seen: string[] = [];
  const t = await createTestErrand({ now: "2026-02-01T00:00:00Z" });
  const second = defineJob({
    name: "second",
    schema: z.object({ n: z.number() }),
    run: ({ n }) => {
      seen.push(`second ${n}`);
    },
  });
  const first = defineJob({
    name: "first",
    schema: z.object({ n: z.number() }),
    async run({ n }) {
      seen.push(`first ${n}`);
      await t.errand.enqueue(second, { n });
    },
  });
  await t.errand.enqueue(first, { n: 1 });
  await t.errand.enqueue(first, { n: 2 }, { delay: "1h" });

  const now = await t.drain();
  assert.deepEqual(seen, ["first 1", "second 1"]);
  assert.equal(now.completed, 2);
  assert.equal(t.clock.now().toISOString(), "2026-02-01T00:00:00.000Z", "drain does not move the clock");

  t.clock.advance("59m");
  await t.drain();
  assert.deepEqual(seen, ["first 1", "second 1"]);
  t.clock.advance("1m");
  await t.drain();
  assert.deepEqual(seen, ["first 1", "second 1", "first 2", "second 2"]);
  await t.close();
});

test("advance stops at each moment something falls due, in order, and ends at now + duration", async () => {
  const ranAt: Date[] = [];
  const t = await createTestErrand({ now: "2026-02-01T00:00:00Z" });
  const tick = defineJob({
    name: "tick",
    schema: z.object({}),
    run: () => {
      ranAt.push(t.clock.now());
    },
  });
  await t.errand.enqueue(tick, {}, { delay: "3m" });
  await t.errand.enqueue(tick, {}, { delay: "1m" });
  await t.errand.enqueue(tick, {}, { runAt: "2026-02-01T00:02:30Z" });
  await t.errand.enqueue(tick, {}, { delay: "2h" });

  const result = await t.advance("1h");

  assert.deepEqual(times(ranAt), [
    "2026-02-01T00:01:00.000Z",
    "2026-02-01T00:02:30.000Z",
    "2026-02-01T00:03:00.000Z",
  ]);
  assert.equal(result.completed, 3);
  assert.equal(t.clock.now().toISOString(), "2026-02-01T01:00:00.000Z");
  await t.close();
});

test("drain({ untilIdle }) follows retries and snoozes to the end; failures are reported, not thrown", async () => {
  const ranAt: Date[] = [];
  const t = await createTestErrand({ now: "2026-02-01T00:00:00Z", jitter: false });
  const flaky = defineJob({
    name: "flaky",
    schema: z.object({}),
    maxAttempts: 4,
    backoff: { base: "10s" },
    run: (_p, ctx) => {
      ranAt.push(t.clock.now());
      if (ranAt.length === 1) ctx.snooze("5m"); // no attempt spent
      if (ctx.attempt < 3) throw new RetryableError(`not yet (${ctx.attempt})`);
      return "done";
    },
  });
  const job = await t.errand.enqueue(flaky, {});

  const result = await t.drain({ untilIdle: true });

  // Without jitter the backoff is exact: 10 s after attempt 1, 20 s after attempt 2.
  assert.deepEqual(times(ranAt), [
    "2026-02-01T00:00:00.000Z",
    "2026-02-01T00:05:00.000Z", // the snooze
    "2026-02-01T00:05:10.000Z",
    "2026-02-01T00:05:30.000Z",
  ]);
  assert.equal((await t.job(job.id)).state, "completed");
  assert.deepEqual([result.snoozed, result.retried, result.completed, result.failed], [1, 2, 1, 0]);
  assert.deepEqual(
    result.errors.map((e) => `${e.job.id}: ${e.error.message}, retried ${e.retried}`),
    [`${job.id}: not yet (1), retried true`, `${job.id}: not yet (2), retried true`],
  );
  await t.close();
});

test("a lease a dead worker left is rescued when the fake clock passes it, not before", async () => {
  const ranAt: Date[] = [];
  const t = await createTestErrand({ now: "2026-02-01T00:00:00Z" });
  const work = defineJob({
    name: "work",
    schema: z.object({}),
    run: () => {
      ranAt.push(t.clock.now());
    },
  });
  const job = await t.errand.enqueue(work, {});
  // A worker claims the job with a 15 s lease, then dies: it never heartbeats nor finishes.
  const [claimed] = await t.errand.store.claimJobs({
    queue: "default",
    limit: 1,
    workerId: "dead-worker",
    leaseMs: 15_000,
  });
  assert.equal(claimed.id, job.id);

  await t.advance("15s");
  assert.deepEqual(ranAt, [], "at the lease's last millisecond it still belongs to the dead worker");
  assert.equal((await t.job(job.id)).state, "running");

  await t.advance("1s");
  assert.deepEqual(times(ranAt), ["2026-02-01T00:00:15.001Z"]);
  const done = await t.job(job.id);
  assert.equal(done.state, "completed");
  assert.deepEqual(
    done.attempts.map((a) => `${a.outcome} ${a.worker} ${a.finishedAt}`),
    [
      "lost dead-worker 2026-02-01T00:00:15.001Z",
      `completed ${done.attempts[1].worker} 2026-02-01T00:00:15.001Z`,
    ],
  );
  await t.close();
});

test("schedules fire on the fake clock: advance visits every slot, a plain clock move fires the latest", async () => {
  const slots: string[] = [];
  const t = await createTestErrand({ now: "2026-02-01T00:00:00Z" });
  const hourly = defineJob({
    name: "hourly",
    schema: z.object({}),
    run: (_p, ctx) => {
      slots.push(`${ctx.job.runAt.toISOString()} at ${t.clock.now().toISOString()}`);
    },
  });
  t.errand.schedule("every-hour", "0 * * * *", hourly, {});

  const result = await t.advance("3h");
  assert.deepEqual(slots, [
    "2026-02-01T01:00:00.000Z at 2026-02-01T01:00:00.000Z",
    "2026-02-01T02:00:00.000Z at 2026-02-01T02:00:00.000Z",
    "2026-02-01T03:00:00.000Z at 2026-02-01T03:00:00.000Z",
  ]);
  assert.equal(result.schedulesFired, 3);

  // Moving the clock alone runs nothing; the next drain fires what is due by the schedule's
  // missed policy (default: the latest slot only), as a worker back from downtime would.
  t.clock.advance("330m");
  assert.equal(slots.length, 3);
  await t.drain();
  assert.deepEqual(slots.slice(3), ["2026-02-01T08:00:00.000Z at 2026-02-01T08:30:00.000Z"]);
  await t.close();
});

test("a handler that never settles fails drain with a message naming it, after stuckAfter of real time", async () => {
  const t = await createTestErrand({ stuckAfter: "200ms" });
  const hangs = defineJob({
    name: "hangs",
    schema: z.object({}),
    run: () => new Promise<void>(() => {}),
  });
  const job = await t.errand.enqueue(hangs, {});

  await assert.rejects(t.drain(), (err: Error) => {
    assert.match(err.message, new RegExp(`job ${job.id} "hangs" still ran after 200 ms of real time`));
    assert.match(err.message, /not setTimeout/);
    return true;
  });
  const after = await t.job(job.id);
  assert.equal(after.state, "pending", "released: pending again");
  assert.equal(after.attempt, 0, "no attempt spent");
  await t.close();
});

test("a job that enqueues itself forever stops at maxJobs with an error saying so", async () => {
  const t = await createTestErrand({ maxJobs: 50 });
  const again: JobDefinition<Record<string, never>> = defineJob({
    name: "again",
    schema: z.object({}),
    async run() {
      await t.errand.enqueue(again, {});
    },
  });
  await t.errand.enqueue(again, {});
  await assert.rejects(t.drain(), /more than 50 jobs ran in one drain; do jobs enqueue each other forever/);
  await t.close();
});

// A job that reschedules itself into the future — a snooze-until-ready poll, or an enqueue with
// a delay — is one job per moment of fake time: each drainNow runs one and finds nothing more due.
// Before the fix maxJobs was checked only while jobs were still due, so drain({ untilIdle }) and
// advance ran on past it until the batch limit it computed from maxJobs reached 0: they rejected
// with processJobs' "limit must be an integer from 1 to 10000; got 0", which says nothing of a loop.
test("a job that snoozes forever, or enqueues itself with a delay, stops at maxJobs in drain({ untilIdle }) and advance", async () => {
  const snoozer = defineJob({
    name: "snoozer",
    schema: z.object({}),
    run: async (_payload, ctx) => ctx.snooze("1m"),
  });
  const t = await createTestErrand({ maxJobs: 50 });
  await t.errand.enqueue(snoozer, {});
  await within(
    assert.rejects(t.drain({ untilIdle: true }), /more than 50 jobs ran in one drain/),
    60_000,
    "drain({ untilIdle }) to give up",
  );
  await t.close();

  const t2 = await createTestErrand({ maxJobs: 50 });
  const again: JobDefinition<Record<string, never>> = defineJob({
    name: "again-later",
    schema: z.object({}),
    async run() {
      await t2.errand.enqueue(again, {}, { delay: "1m" });
    },
  });
  await t2.errand.enqueue(again, {});
  await within(
    assert.rejects(t2.advance("30d"), /more than 50 jobs ran in one advance/),
    60_000,
    "advance to give up",
  );
  await t2.close();
});
