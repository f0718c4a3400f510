/**
 * Lifting adaptive flow control pauses (errand.resumeFlow / Store.resumeFlow), on every store: a
 * budget paused for years by a rate-limited answer is lifted by key, for the queue-wide budget,
 * or all at once; the count says how many were in effect (a lapsed pause is not counted, another
 * queue's stays); whyWaiting stops naming the pause; the held jobs are claimed at once — and a
 * worker waiting on the pause is woken, not left to its next poll. Bad input is a ValidationError.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import type { Errand } from "../../src/index.js";
import { defineJob, RetryableError, ValidationError } from "../../src/index.js";
import type { WaitReason } from "../../src/waiting.js";
import { targets } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";

const YEAR = 365 * 24 * 3600_000;
const schema = z.object({ tenant: z.string(), n: z.number() });
const LIMITS = { keyRate: { limit: 100, perMs: 1000 } };

/** The flow-paused reason of a job, or null when nothing of that kind holds it. */
async function flowPaused(errand: Errand, id: string) {
  const reasons = (await errand.whyWaiting(id)) ?? [];
  return (
    (reasons.find((r) => r.kind === "flow-paused") as Extract<WaitReason, { kind: "flow-paused" }>) ?? null
  );
}

/** The tenants of the jobs one flow claim takes now (sorted). */
async function claimTenants(errand: Errand): Promise<string[]> {
  const claim = await errand.store.claimFlowJobs({
    queue: "api",
    limit: 100,
    workerId: "w",
    leaseMs: 60_000,
    flow: LIMITS,
  });
  return claim.jobs.map((j) => (j.payload as { tenant: string }).tenant).sort();
}

async function pausedKeys(errand: Errand, queue: string): Promise<string[]> {
  const status = await errand.store.flowStatus({ queue, windowMs: 0 });
  return [...status.pausedUntil.keys()].sort();
}

for (const target of targets) {
  describe(`resumeFlow: ${target.name}`, { skip: target.skip, timeout: 60_000 }, () => {
    test("lifts one key, the queue-wide budget, then every pause; counts those in effect", async () => {
      const api = defineJob({
        name: "api",
        queue: "api",
        schema,
        rateLimit: { limit: 100, per: "1s", key: (p) => p.tenant },
        run: () => {},
      });
      const { errand, cleanup } = await target.openErrand({ jobs: [api] });
      try {
        const [a, b, c] = await Promise.all(
          ["a", "b", "c"].map((tenant) => errand.enqueue(api, { tenant, n: 1 })),
        );
        const pause = (key: string | null, ms = 10 * YEAR) =>
          errand.store.pauseFlow({ queue: "api", key, ms });
        await pause("a");
        await pause("b");
        await pause("c", 0); // lapsed at once: a row, but no pause in effect
        await errand.store.pauseFlow({ queue: "other", key: "a", ms: 10 * YEAR });

        assert.equal((await flowPaused(errand, a.id))?.key, "a");
        assert.equal((await flowPaused(errand, b.id))?.key, "b");
        assert.equal(await flowPaused(errand, c.id), null);

        assert.equal(await errand.resumeFlow("api", { key: "a" }), 1);
        assert.equal(await errand.resumeFlow("api", { key: "a" }), 0, "lifted already");
        assert.equal(await flowPaused(errand, a.id), null);
        assert.equal((await flowPaused(errand, b.id))?.key, "b", "another key's pause stays");
        assert.deepEqual(await claimTenants(errand), ["a", "c"], "a is claimed at once, b is still held");

        // The queue-wide budget holds every key; lifting it leaves the keys' own pauses.
        const d = await errand.enqueue(api, { tenant: "d", n: 1 });
        await pause(null);
        assert.equal((await flowPaused(errand, d.id))?.key, null);
        assert.equal(await errand.resumeFlow("api", { key: null }), 1);
        assert.equal(await flowPaused(errand, d.id), null);
        assert.equal((await flowPaused(errand, b.id))?.key, "b");
        assert.deepEqual(await claimTenants(errand), ["d"]);

        // All: b's, the queue's and a key with no job; c's lapsed pause is not counted.
        await pause(null);
        await pause("e");
        assert.equal(await errand.resumeFlow("api"), 3);
        assert.deepEqual(await pausedKeys(errand, "api"), []);
        assert.deepEqual(
          (await errand.whyWaiting(b.id))?.map((r) => r.kind),
          ["no-worker"],
          "only the absence of a worker (this test claims by hand) holds b back",
        );
        assert.deepEqual(await claimTenants(errand), ["b"]);
        assert.equal(await errand.resumeFlow("api"), 0);
        assert.deepEqual(await pausedKeys(errand, "other"), ["a"], "another queue's pause stays");
      } finally {
        await cleanup();
      }
    });

    test("a worker held by a pause years long claims at once when it is lifted", async () => {
      const ran: number[] = [];
      const api = defineJob({
        name: "api",
        queue: "api",
        schema,
        maxAttempts: 5,
        rateLimit: { limit: 100, per: "1s", key: (p) => p.tenant },
        run: (p) => {
          // An absurd but legal Retry-After: ten years.
          if (p.n === 1) throw new RetryableError("429", { rateLimited: true, retryAfter: 10 * YEAR });
          ran.push(p.n);
        },
      });
      const { errand, cleanup } = await target.openErrand({ jobs: [api] });
      try {
        const paused = new Promise<void>((resolve) => errand.once("flowPaused", () => resolve()));
        const first = await errand.enqueue(api, { tenant: "t", n: 1 });
        // The poll is far beyond the wait below: only the wake-up of resumeFlow can start job 2 in time.
        const worker = errand.work({ api: { concurrency: 2 } }, { pollInterval: 600_000 });
        try {
          await paused;
          // Job 1's outcome written (snoozed ten years, not due): the worker has no write left
          // to wake it, so once a claim held job 2 back it sleeps until a wake-up (or its poll,
          // ten minutes away). Without this wait a claim after job 1's write took job 2 whether
          // or not resumeFlow woke anyone (seen on memory and SQLite).
          await waitFor(async () => (await errand.getJob(first.id))?.state === "pending", "job 1 snoozed");
          const throttled = new Promise<void>((resolve) => errand.once("throttled", () => resolve()));
          const second = await errand.enqueue(api, { tenant: "t", n: 2 });
          await throttled;
          const reason = await waitFor(() => flowPaused(errand, second.id), "job 2 held by the pause");
          assert.ok(reason.until.getTime() > Date.now() + 9 * YEAR, "paused for the ten years asked");
          assert.deepEqual(ran, []);

          assert.equal(await errand.resumeFlow("api"), 1);
          await waitFor(
            async () => (await errand.getJob(second.id))?.state === "completed",
            "job 2 completed after the pause was lifted",
            30_000,
          );
          assert.deepEqual(ran, [2]);
        } finally {
          await worker.stop();
        }
      } finally {
        await cleanup();
      }
    });

    test("bad input is a ValidationError naming the problem", async () => {
      const { errand, cleanup } = await target.openErrand();
      try {
        const cases: Array<[() => Promise<number>, RegExp]> = [
          [() => errand.resumeFlow(""), /resumeFlow queue must be 1-128 characters/],
          [() => errand.resumeFlow(42 as unknown as string), /resumeFlow queue must be .*; got 42/],
          [
            () => errand.resumeFlow("api", { key: "" }),
            /resumeFlow key must be a flow key .* or null .*; got a string of 0/,
          ],
          [
            () => errand.resumeFlow("api", { key: 7 as unknown as string }),
            /resumeFlow key must be .*; got 7/,
          ],
          [() => errand.resumeFlow("api", { key: "x".repeat(513) }), /got a string of 513/],
          [() => errand.resumeFlow("api", { key: "a\u0000b" }), /resumeFlow key contains a NUL character/],
          [
            () => errand.resumeFlow("api", "a" as unknown as { key: string }),
            /resumeFlow options must be an object/,
          ],
        ];
        for (const [call, message] of cases) {
          await assert.rejects(call, (err: Error) => {
            assert.ok(err instanceof ValidationError, `${err}`);
            assert.match(err.message, message);
            return true;
          });
        }
        // The store refuses a malformed request too (checked.ts), before any SQL.
        await assert.rejects(
          errand.store.resumeFlow({ queue: "api", key: 5 as unknown as string }),
          ValidationError,
        );
      } finally {
        await cleanup();
      }
    });
  });
}
