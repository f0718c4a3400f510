/**
 * The worker semantics of docs/semantics.md, through the public API, on every store.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { describe, test } from "node:test";
import { z } from "zod";
import {
  defineJob,
  type Errand,
  openErrand,
  PermanentError,
  RetryableError,
  ValidationError,
} from "../src/index.js";
import { testClock } from "./helpers/clock.js";
import { targets, withErrand } from "./helpers/targets.js";
import { waitFor, within } from "./helpers/wait.js";

const fast = { base: 5, max: 20, jitter: 0 };

for (const target of targets) {
  describe(`worker on ${target.name}`, { skip: target.skip }, () => {
    async function finalState(errand: Errand, id: string, states = ["completed", "failed", "cancelled"]) {
      return waitFor(
        async () => {
          const job = await errand.getJob(id);
          return job && states.includes(job.state) ? job : null;
        },
        `job ${id} to reach ${states.join("/")}`,
      );
    }

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
        assert.ok(
          done.attempts.every((a) => a.stack?.includes("connection reset") && a.worker === worker.id),
        );
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
            if (p.mode === "ratelimit")
              throw new RetryableError("429", { retryAfter: 30, rateLimited: true });
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

    test("cancel: a pending job at once, a running one through its signal", () =>
      withErrand(target, async (errand) => {
        let started = false;
        const job = defineJob({
          name: "long",
          queue: "q",
          schema: z.object({}),
          run: (_p, ctx) =>
            new Promise((_, reject) => {
              started = true;
              ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
            }),
        });
        const pending = await errand.enqueue(job, {}, { delay: "1h" });
        const cancelled = await errand.cancel(pending.id);
        assert.equal(cancelled?.state, "cancelled");
        const running = await errand.enqueue(job, {});
        const worker = errand.work(
          { q: { concurrency: 1 } },
          { pollInterval: 20, lease: 300, heartbeat: 30 },
        );
        await waitFor(() => started, "the job to start");
        await errand.cancel(running.id);
        const done = await finalState(errand, running.id);
        await worker.stop();
        assert.equal(done.state, "cancelled");
        assert.equal(done.attempts.at(-1)?.outcome, "cancelled");
        assert.equal(await errand.cancel("999999"), null);
      }));

    test("ctx.once skips side effects a previous attempt completed", () =>
      withErrand(target, async (errand) => {
        const effects: string[] = [];
        const job = defineJob({
          name: "charge",
          queue: "q",
          schema: z.object({ order: z.number() }),
          backoff: fast,
          run: async (p, ctx) => {
            const receipt = await ctx.once(`charge:${p.order}`, () => {
              effects.push(`charge ${p.order}`);
              return { receipt: `r-${p.order}` };
            });
            if (ctx.attempt === 1) throw new Error("crashed after charging");
            return receipt;
          },
        });
        const enqueued = await errand.enqueue(job, { order: 7 });
        const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
        const done = await finalState(errand, enqueued.id);
        await worker.stop();
        assert.equal(done.state, "completed");
        assert.deepEqual(effects, ["charge 7"]);
        assert.deepEqual(done.result, { receipt: "r-7" });
      }));

    test("a job whose worker died comes back after its lease and completes (outcome lost in the history)", () => {
      const clock = testClock();
      return withErrand(
        target,
        async (errand) => {
          const job = defineJob({ name: "survivor", queue: "q", schema: z.object({}), run: () => "done" });
          const enqueued = await errand.enqueue(job, {});
          // A worker that claims and then dies: it never heartbeats or finishes.
          const [claimed] = await errand.store.claimJobs({
            queue: "q",
            limit: 1,
            workerId: "dead-worker",
            leaseMs: 100,
          });
          assert.equal(claimed.id, enqueued.id);
          const worker = errand.work(
            { q: { concurrency: 1 } },
            { pollInterval: 20, lease: 300, rescueInterval: 30 },
          );
          clock.advance(101); // the dead worker's lease runs out
          const done = await finalState(errand, enqueued.id);
          await worker.stop();
          assert.equal(done.state, "completed");
          assert.deepEqual(
            done.attempts.map((a) => [a.outcome, a.worker]),
            [
              ["lost", "dead-worker"],
              ["completed", worker.id],
            ],
          );
          assert.equal(done.attempt, 2);
        },
        { clock },
      );
    });

    test("test signals: idle when nothing is due, heartbeat after leases are extended, rescued with the jobs", () => {
      const clock = testClock();
      return withErrand(
        target,
        async (errand) => {
          let release!: () => void;
          const gate = new Promise<void>((r) => (release = r));
          const job = defineJob({ name: "held", queue: "q", schema: z.object({}), run: () => gate });
          errand.register(job);
          const orphan = await errand.enqueue(job, {});
          // A dead worker's claim: its lease expires (when the test moves the store's clock) and the
          // rescuer returns the job. Until then the rescuer finds it held and the first claim finds
          // nothing (the idle signal).
          await errand.store.claimJobs({ queue: "q", limit: 1, workerId: "dead-worker", leaseMs: 300 });
          const worker = errand.work(
            { q: { concurrency: 1 } },
            { pollInterval: 5000, lease: 2000, heartbeat: 50, rescueInterval: 30 },
          );
          const idle = await within(once(worker.signals, "idle"), 5000, "the idle signal");
          assert.deepEqual(idle, ["q"]);
          clock.advance(301);
          const rescued = await within(
            (async () => {
              for (;;) {
                const [jobs] = await once(worker.signals, "rescued");
                if (jobs.some((j: { id: string }) => j.id === orphan.id)) return jobs;
              }
            })(),
            5000,
            "a rescue pass that returns the orphan",
          );
          assert.equal(rescued.length, 1);
          const running = await waitFor(async () => {
            const j = await errand.getJob(orphan.id);
            return j?.state === "running" && j.lockedBy === worker.id ? j : null;
          }, "the rescued job to run on this worker");
          clock.advance(10); // so that an extension moves lockedUntil
          await within(once(worker.signals, "heartbeat"), 5000, "a heartbeat");
          await within(once(worker.signals, "heartbeat"), 5000, "a second heartbeat");
          const extended = await errand.getJob(orphan.id);
          assert.ok(
            (extended?.lockedUntil?.getTime() ?? 0) > (running.lockedUntil?.getTime() ?? Infinity),
            "the heartbeat extended the lease",
          );
          release();
          await finalState(errand, orphan.id);
          assert.deepEqual(await worker.stop(), { clean: true, released: 0 });
        },
        { clock },
      );
    });

    test("graceful stop lets a running job finish; past the hard timeout it is released uncharged", () =>
      withErrand(target, async (errand) => {
        const starts: number[] = [];
        const job = defineJob({
          name: "sleepy",
          queue: "q",
          schema: z.object({ ms: z.number() }),
          run: async (p, ctx) => {
            starts.push(ctx.attempt);
            // This handler ignores its signal on purpose; an unref'd timer lets the test process exit.
            await new Promise((r) => setTimeout(r, p.ms).unref());
            return "finished";
          },
        });
        const short = await errand.enqueue(job, { ms: 100 });
        let worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
        await waitFor(() => starts.length === 1, "the short job to start");
        const clean = await worker.stop({ timeout: 5000 });
        assert.deepEqual(clean, { clean: true, released: 0 });
        assert.equal((await errand.getJob(short.id))?.state, "completed");

        const long = await errand.enqueue(job, { ms: 60_000 });
        worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
        await waitFor(() => starts.length === 2, "the long job to start");
        const hard = await worker.stop({ timeout: 50 });
        assert.deepEqual(hard, { clean: false, released: 1 });
        const released = await errand.getJob(long.id);
        assert.equal(released?.state, "pending");
        assert.equal(released?.attempt, 0, "the interrupted attempt is not charged");
        assert.equal(released?.attempts[0].outcome, "interrupted");
      }));

    test("delayed jobs wait for their time; the idle worker wakes for them without a full poll", () =>
      withErrand(target, async (errand) => {
        let ranAt = 0;
        const job = defineJob({
          name: "later",
          queue: "q",
          schema: z.object({}),
          run: () => {
            ranAt = Date.now();
          },
        });
        errand.register(job);
        const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 5000 });
        await within(once(worker.signals, "idle"), 5000, "the worker to find nothing due and wait");
        const t0 = Date.now();
        await errand.enqueue(job, {}, { delay: 150 });
        await waitFor(() => ranAt > 0, "the delayed job to run", 4000);
        await worker.stop();
        assert.ok(ranAt - t0 >= 140, `ran ${ranAt - t0} ms after enqueue, before its delay`);
      }));

    test("progress is visible while the job runs", () =>
      withErrand(target, async (errand) => {
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const job = defineJob({
          name: "progressive",
          queue: "q",
          schema: z.object({}),
          run: async (_p, ctx) => {
            await ctx.progress(0.5, "halfway");
            await gate;
          },
        });
        const enqueued = await errand.enqueue(job, {});
        const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
        const seen = await waitFor(async () => (await errand.getJob(enqueued.id))?.progress, "progress");
        assert.deepEqual(seen, { fraction: 0.5, message: "halfway" });
        release();
        await finalState(errand, enqueued.id);
        await worker.stop();
      }));

    test("idempotency keys return the existing job", () =>
      withErrand(target, async (errand) => {
        const job = defineJob({
          name: "once",
          queue: "q",
          schema: z.object({ n: z.number() }),
          run: () => {},
        });
        const first = await errand.enqueue(job, { n: 1 }, { key: "k" });
        const second = await errand.enqueue(job, { n: 2 }, { key: "k" });
        assert.equal(first.created, true);
        assert.equal(second.created, false);
        assert.equal(second.id, first.id);
        assert.deepEqual(second.payload, { n: 1 });
        const many = await errand.enqueueMany(job, [
          { payload: { n: 3 }, key: "k" },
          { payload: { n: 4 }, key: "k2" },
        ]);
        assert.deepEqual(
          many.map((j) => j.created),
          [false, true],
        );
        assert.equal((await errand.listJobs()).jobs.length, 2);
      }));

    test("bad input is refused with a clear error and nothing is stored", () =>
      withErrand(target, async (errand) => {
        const job = defineJob({
          name: "strict",
          queue: "q",
          schema: z.object({ n: z.number() }),
          run: () => {},
        });
        errand.register(job);
        const cases: Array<[string, () => Promise<unknown>, RegExp]> = [
          [
            "schema",
            () => errand.enqueue(job, { n: "x" } as never),
            /does not match the schema of job "strict".*n/,
          ],
          ["unknown job", () => errand.enqueue("nope", {}), /unknown job "nope"; known jobs: strict/],
          ["priority", () => errand.enqueue(job, { n: 1 }, { priority: 1.5 }), /priority must be an integer/],
          [
            "attempts",
            () => errand.enqueue(job, { n: 1 }, { maxAttempts: 0 }),
            /maxAttempts must be an integer/,
          ],
          ["runAt", () => errand.enqueue(job, { n: 1 }, { runAt: "next tuesday" }), /ISO 8601/],
          [
            "delay",
            // @ts-expect-error: "soon" is no Duration (a compile error); the run-time check is under test
            () => errand.enqueue(job, { n: 1 }, { delay: "soon" }),
            /delay must be/,
          ],
          [
            "oversized",
            () => errand.enqueue(job, { n: 1, pad: "x".repeat(1024 * 1024) } as never),
            /over the limit/,
          ],
          ["NUL", () => errand.enqueue(job, { n: 1, s: "a\u0000b" } as never), /NUL/],
          ["lone surrogate", () => errand.enqueue(job, { n: 1, s: "\ud800" } as never), /surrogate/],
          [
            "cycle",
            () =>
              errand.enqueue(
                job,
                (() => {
                  const o: Record<string, unknown> = { n: 1 };
                  o.self = o;
                  return o;
                })() as never,
              ),
            /not JSON-serialisable/,
          ],
          [
            "bulk item",
            () => errand.enqueueMany(job, [{ payload: { n: 1 } }, { payload: { n: "2" } as never }]),
            /item 1 payload/,
          ],
        ];
        for (const [what, call, message] of cases) {
          await assert.rejects(call, (err: Error) => {
            assert.ok(err instanceof ValidationError, `${what}: expected a ValidationError, got ${err}`);
            assert.match(err.message, message, what);
            return true;
          });
        }
        assert.throws(() => errand.work({ nope: {} }), /unknown queue "nope".*known queues: q/);
        assert.equal((await errand.listJobs()).jobs.length, 0, "nothing stored");
      }));

    test("a worker starts and stops in a tight loop without leaking", () =>
      withErrand(target, async (errand) => {
        const job = defineJob({ name: "noop", queue: "q", schema: z.object({}), run: () => {} });
        errand.register(job);
        for (let i = 0; i < 20; i++) {
          const worker = errand.work({ q: { concurrency: 2 } }, { pollInterval: 10, lease: 100 });
          if (i % 5 === 0) await errand.enqueue(job, {});
          const stopped = await worker.stop({ timeout: 1000 });
          assert.equal(stopped.clean, true);
        }
        const worker = errand.work({ q: {} }, { pollInterval: 10 });
        await waitFor(
          async () => (await errand.stats()).find((s) => s.queue === "q")?.completed === 4,
          "all four to run",
        );
        await worker.stop();
        assert.equal((await errand.store.listWorkers(60_000)).length, 0, "every worker unregistered");
      }));
  });
}
