/**
 * The worker semantics of docs/semantics.md, through the public API, on every store: the order
 * jobs run in, and what each outcome of a handler does — retries with backoff, permanent errors, a
 * payload that no longer matches, timeouts, snoozes and rate limits.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { defineJob, openErrand, PermanentError, RetryableError } from "../../src/index.js";
import { withErrand } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";
import { describeWorker, fast, finalState } from "./setup.js";

describeWorker((target) => {
  test("runs higher priority first, FIFO within a priority", () =>
    withErrand(target, async (errand) => {
      const seen: string[] = [];
      const job = defineJob({
        name: "order",
        queue: "q",
        schema: z.object({ tag: z.string() }),
        run: (p) => {
          seen.push(p.tag);
        },
      });
      for (const [tag, priority] of [
        ["low-1", 1],
        ["high-1", 10],
        ["mid", 5],
        ["high-2", 10],
        ["low-2", 1],
      ] as const) {
        await errand.enqueue(job, { tag }, { priority });
      }
      const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 50 });
      await waitFor(() => seen.length === 5, "five jobs to run");
      await worker.stop();
      assert.deepEqual(seen, ["high-1", "high-2", "mid", "low-1", "low-2"]);
    }));

  test("transient errors retry with backoff until maxAttempts, each attempt in the history", () =>
    withErrand(target, async (errand) => {
      const job = defineJob({
        name: "flaky",
        queue: "q",
        schema: z.object({}),
        maxAttempts: 3,
        backoff: fast,
        run: () => {
          throw Object.assign(new Error("connection reset"), { code: "ECONNRESET" });
        },
      });
      const retrying: number[] = [];
      errand.on("retrying", (e) => retrying.push(e.job.attempt));
      const enqueued = await errand.enqueue(job, {});
      const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
      const done = await finalState(errand, enqueued.id);
      await worker.stop();
      assert.equal(done.state, "failed");
      assert.equal(done.attempt, 3);
      assert.deepEqual(
        done.attempts.map((a) => [a.attempt, a.outcome, a.kind, a.error]),
        [
          [1, "retried", "retryable", "connection reset"],
          [2, "retried", "retryable", "connection reset"],
          [3, "failed", "retryable", "connection reset"],
        ],
      );
      assert.ok(done.attempts.every((a) => a.stack?.includes("connection reset") && a.worker === worker.id));
      assert.deepEqual(retrying, [1, 2]);
      assert.equal(done.lastError, "connection reset");
    }));

  test("a PermanentError fails at once; a classify hook can fail unknown errors", () =>
    withErrand(target, async (errand) => {
      const permanent = defineJob({
        name: "perm",
        queue: "q",
        schema: z.object({}),
        maxAttempts: 5,
        run: () => {
          throw new PermanentError("card declined");
        },
      });
      const classified = defineJob({
        name: "classified",
        queue: "q",
        schema: z.object({}),
        maxAttempts: 5,
        classify: (err) => ((err as Error).message.includes("404") ? "fail" : undefined),
        run: () => {
          throw new Error("HTTP 404 not found");
        },
      });
      const a = await errand.enqueue(permanent, {});
      const b = await errand.enqueue(classified, {});
      const worker = errand.work({ q: { concurrency: 2 } }, { pollInterval: 20 });
      const [da, db] = [await finalState(errand, a.id), await finalState(errand, b.id)];
      await worker.stop();
      assert.equal(da.state, "failed");
      assert.equal(da.attempts.length, 1);
      assert.equal(da.attempts[0].kind, "permanent");
      assert.equal(db.state, "failed");
      assert.equal(db.attempts.length, 1);
    }));

  test("a payload that no longer matches the schema fails without retry", () =>
    withErrand(target, async (errand) => {
      const loose = defineJob({
        name: "evolving",
        queue: "q",
        schema: z.object({ n: z.any() }),
        run: () => {},
      });
      const strict = defineJob({
        name: "evolving",
        queue: "q",
        schema: z.object({ n: z.number() }),
        maxAttempts: 4,
        run: () => {},
      });
      const enqueued = await errand.enqueue(loose, { n: "not a number" });
      // A second process with the newer definition: a fresh registry on the same store.
      const newer = await openErrand({ store: errand.store, jobs: [strict], logger: errand.log });
      const worker = newer.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
      const done = await finalState(errand, enqueued.id);
      await worker.stop();
      assert.equal(done.state, "failed");
      assert.equal(done.attempts.length, 1);
      assert.equal(done.attempts[0].kind, "validation");
    }));

  test("a timeout aborts ctx.signal and retries; a handler that ignores the signal still frees its slot", () =>
    withErrand(target, async (errand) => {
      let aborted = 0;
      const job = defineJob({
        name: "slow",
        queue: "q",
        schema: z.object({ ignore: z.boolean() }),
        timeout: 50,
        maxAttempts: 2,
        backoff: fast,
        run: (p, ctx) =>
          new Promise((_, reject) => {
            ctx.signal.addEventListener("abort", () => {
              aborted++;
              if (!p.ignore) reject(ctx.signal.reason);
            });
          }),
      });
      const a = await errand.enqueue(job, { ignore: false });
      const b = await errand.enqueue(job, { ignore: true });
      const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
      const [da, db] = [await finalState(errand, a.id), await finalState(errand, b.id)];
      await worker.stop({ timeout: 100 });
      for (const done of [da, db]) {
        assert.equal(done.state, "failed");
        assert.deepEqual(
          done.attempts.map((x) => [x.outcome, x.kind]),
          [
            ["retried", "timeout"],
            ["failed", "timeout"],
          ],
        );
      }
      assert.equal(aborted, 4);
    }));

  test("snooze and rate limits run again later without spending an attempt; retryAfter overrides backoff", () =>
    withErrand(target, async (errand) => {
      const calls = new Map<string, number>();
      const job = defineJob({
        name: "snoozy",
        queue: "q",
        schema: z.object({ mode: z.enum(["snooze", "ratelimit", "retryafter"]) }),
        maxAttempts: 2,
        backoff: { base: "1h" },
        run: (p, ctx) => {
          const n = (calls.get(p.mode) ?? 0) + 1;
          calls.set(p.mode, n);
          if (n > 1) return "ok";
          if (p.mode === "snooze") ctx.snooze(30);
          if (p.mode === "ratelimit") throw new RetryableError("429", { retryAfter: 30, rateLimited: true });
          throw new RetryableError("busy", { retryAfter: 30 });
        },
      });
      const ids = await Promise.all(
        (["snooze", "ratelimit", "retryafter"] as const).map(
          async (mode) => (await errand.enqueue(job, { mode })).id,
        ),
      );
      const worker = errand.work({ q: { concurrency: 3 } }, { pollInterval: 20 });
      const done = await Promise.all(ids.map((id) => finalState(errand, id)));
      await worker.stop();
      const [snooze, ratelimit, retryafter] = done;
      assert.equal(snooze.state, "completed");
      assert.deepEqual(
        snooze.attempts.map((a) => a.outcome),
        ["snoozed", "completed"],
      );
      assert.equal(snooze.attempt, 1, "a snooze spends no attempt");
      assert.equal(ratelimit.state, "completed");
      assert.deepEqual(
        ratelimit.attempts.map((a) => a.outcome),
        ["snoozed", "completed"],
      );
      assert.equal(ratelimit.attempt, 1);
      assert.equal(retryafter.state, "completed", "retryAfter of 30ms replaced the 1h backoff");
      assert.deepEqual(
        retryafter.attempts.map((a) => a.outcome),
        ["retried", "completed"],
      );
      assert.equal(retryafter.attempt, 2);
    }));
});
