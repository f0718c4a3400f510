/**
 * The worker semantics of docs/semantics.md, through the public API, on every store: cancelling,
 * ctx.once across attempts, a dead worker's job coming back after its lease, the test signals, and
 * a graceful stop.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { test } from "node:test";
import { z } from "zod";
import { defineJob } from "../../src/index.js";
import { testClock } from "../helpers/clock.js";
import { withErrand } from "../helpers/targets.js";
import { waitFor, within } from "../helpers/wait.js";
import { describeWorker, fast, finalState } from "./setup.js";

describeWorker((target) => {
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
      const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20, lease: 300, heartbeat: 30 });
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
});
