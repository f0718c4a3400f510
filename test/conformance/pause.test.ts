/**
 * Pause and resume, specified once for every store (./stores.ts): a paused queue's claims take
 * nothing, on every connection and process, until it is resumed; resuming wakes its workers; a
 * paused schedule is never due; "how many jobs are ahead" counts in claim order. The worker's
 * side (jobs claimed before the pause are not started after it) is in the second half, through
 * the facade on each store.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob } from "../../src/job.js";
import { openErrand } from "../../src/open-errand.js";
import { checkedStore } from "../../src/store/checked.js";
import type { NewJob, ScheduleInput, Store } from "../../src/store/types.js";
import { poll, sleep } from "./helpers.js";
import { type StoreFactory, stores } from "./stores.js";

function newJob(over: Partial<NewJob> = {}): NewJob {
  return { queue: "q", name: "task", payload: {}, priority: 0, maxAttempts: 3, ...over };
}

function schedule(name: string, over: Partial<ScheduleInput> = {}): ScheduleInput {
  return {
    name,
    cron: "* * * * *",
    timezone: "UTC",
    jobName: "report",
    queue: "reports",
    payload: {},
    priority: 0,
    missed: "latest",
    source: "cli",
    nextRunAt: new Date(Date.UTC(2020, 0, 1)),
    ...over,
  };
}

for (const factory of stores) {
  describe(`pause: ${factory.name}`, { skip: factory.skip || false }, () => suite(factory));
}

function suite(factory: StoreFactory): void {
  const it = (title: string, fn: (store: Store) => Promise<void>) =>
    test(title, async () => {
      const { store, cleanup } = await factory.open();
      try {
        await fn(checkedStore(store));
      } finally {
        await cleanup();
      }
    });

  describe("queues", () => {
    it("a paused queue with flow limits gives nothing to claimFlowJobs either; resume gives them back", async (store) => {
      await store.insertJobs([
        newJob({ queue: "limited", flowKey: "a" }),
        newJob({ queue: "limited", flowKey: "b" }),
      ]);
      const flow = { globalConcurrency: 5, keyConcurrency: 2 };
      const claim = () =>
        store.claimFlowJobs({ queue: "limited", limit: 10, workerId: "w", leaseMs: 60_000, flow });
      await store.pauseQueue("limited");
      assert.deepEqual((await claim()).jobs, [], "nothing claimed while paused");
      const [stats] = (await store.stats()).filter((s) => s.queue === "limited");
      assert.equal(stats.pending, 2, "both jobs stay pending");
      await store.resumeQueue("limited");
      assert.equal((await claim()).jobs.length, 2);
    });

    it("a paused queue's claims take nothing; other queues are untouched; resume gives them back", async (store) => {
      await store.insertJobs([
        newJob({ queue: "emails" }),
        newJob({ queue: "emails" }),
        newJob({ queue: "other" }),
      ]);
      const t0 = (await store.now()).getTime();
      const pause = await store.pauseQueue("emails");
      const t1 = (await store.now()).getTime();
      assert.equal(pause.queue, "emails");
      assert.ok(
        pause.pausedAt.getTime() >= t0 - 5 && pause.pausedAt.getTime() <= t1 + 5,
        "pausedAt is the store's now",
      );
      assert.equal(await store.isQueuePaused("emails"), true);
      assert.equal(await store.isQueuePaused("other"), false);
      assert.deepEqual(
        await store.claimJobs({ queue: "emails", limit: 10, workerId: "w", leaseMs: 60_000 }),
        [],
      );
      assert.equal(
        (await store.claimJobs({ queue: "other", limit: 10, workerId: "w", leaseMs: 60_000 })).length,
        1,
      );
      const [stats] = (await store.stats()).filter((s) => s.queue === "emails");
      assert.equal(stats.pending, 2, "the paused queue's jobs stay pending, charged nothing");

      assert.equal(await store.resumeQueue("emails"), true);
      assert.equal(await store.isQueuePaused("emails"), false);
      const claimed = await store.claimJobs({ queue: "emails", limit: 10, workerId: "w", leaseMs: 60_000 });
      assert.equal(claimed.length, 2);
      assert.ok(
        claimed.every((j) => j.attempt === 1),
        "no attempt was spent while paused",
      );
    });

    it("pausing twice keeps the first pausedAt; resuming an unpaused queue answers false", async (store) => {
      const first = await store.pauseQueue("emails");
      await sleep(15);
      const second = await store.pauseQueue("emails");
      assert.equal(second.pausedAt.getTime(), first.pausedAt.getTime());
      assert.equal(await store.resumeQueue("emails"), true);
      assert.equal(await store.resumeQueue("emails"), false);
      assert.equal(await store.resumeQueue("never-seen"), false);
    });

    it("any queue name may be paused, even one with no jobs yet; listPausedQueues lists them by name", async (store) => {
      await store.pauseQueue("zeta");
      await store.pauseQueue("alpha");
      const listed = await store.listPausedQueues();
      assert.deepEqual(
        listed.map((p) => p.queue),
        ["alpha", "zeta"],
      );
      assert.ok(listed.every((p) => p.pausedAt instanceof Date));
      // Jobs enqueued into a paused queue wait too.
      await store.insertJobs([newJob({ queue: "alpha" })]);
      assert.deepEqual(
        await store.claimJobs({ queue: "alpha", limit: 1, workerId: "w", leaseMs: 60_000 }),
        [],
      );
      await store.resumeQueue("alpha");
      assert.deepEqual(
        (await store.listPausedQueues()).map((p) => p.queue),
        ["zeta"],
      );
    });

    it("resume wakes the queue's listeners", async (store) => {
      await store.pauseQueue("wake");
      const seen: Array<string | null> = [];
      const off = store.onJobsAvailable((q) => seen.push(q));
      try {
        await store.resumeQueue("wake");
        await poll("a wake-up after resume", async () => seen.some((q) => q === "wake" || q === null), 5000);
      } finally {
        off();
      }
    });

    it("a bad queue name is a ValidationError", async (store) => {
      await assert.rejects(store.pauseQueue(""), { name: "ValidationError" });
      await assert.rejects(store.resumeQueue(undefined as unknown as string), { name: "ValidationError" });
    });
  });

  describe("schedules", () => {
    it("a paused schedule is never due and keeps its place; resume makes it due again", async (store) => {
      await store.upsertSchedule(schedule("minutely"));
      assert.deepEqual(
        (await store.dueSchedules()).map((s) => s.name),
        ["minutely"],
      );
      const paused = await store.setSchedulePaused("minutely", true);
      assert.ok(paused?.pausedAt instanceof Date, "the paused row says since when");
      assert.deepEqual(await store.dueSchedules(), []);
      const again = await store.setSchedulePaused("minutely", true);
      assert.equal(
        again?.pausedAt?.getTime(),
        paused.pausedAt.getTime(),
        "pausing twice keeps the first time",
      );
      // A re-sync from code (a worker restarting) keeps the pause.
      await store.syncSchedules([schedule("minutely", { source: "code" })]);
      assert.ok((await store.listSchedules())[0].pausedAt instanceof Date);
      const resumed = await store.setSchedulePaused("minutely", false);
      assert.equal(resumed?.pausedAt, null);
      assert.equal(resumed?.nextRunAt.getTime(), Date.UTC(2020, 0, 1), "its next slot is where it was");
      assert.deepEqual(
        (await store.dueSchedules()).map((s) => s.name),
        ["minutely"],
      );
    });

    it("an unknown schedule answers null", async (store) => {
      assert.equal(await store.setSchedulePaused("nope", true), null);
      assert.equal(await store.setSchedulePaused("nope", false), null);
    });
  });

  describe("countJobsAhead", () => {
    it("counts the due pending jobs before a job in claim order, up to the cap", async (store) => {
      const t = (await store.now()).getTime();
      const jobs = (
        await store.insertJobs([
          newJob({ runAt: new Date(t - 3000) }), // 0
          newJob({ runAt: new Date(t - 2000), priority: 5 }), // 1: ahead of everyone at priority 0
          newJob({ runAt: new Date(t - 1000) }), // 2
          newJob({ runAt: new Date(t + 60_000), priority: 9 }), // 3: not due, never ahead
          newJob({ queue: "other", runAt: new Date(t - 5000), priority: 9 }), // 4: another queue
          newJob({ runAt: new Date(t - 1000) }), // 5: same run_at as 2, inserted later
        ])
      ).map((r) => r.job);
      const ahead = (i: number, cap = 100) => store.countJobsAhead(jobs[i], cap);
      assert.equal(await ahead(1), 0);
      assert.equal(await ahead(0), 1);
      assert.equal(await ahead(2), 2);
      assert.equal(await ahead(5), 3);
      assert.equal(await ahead(5, 2), 2, "capped");
      // A running job is not waiting in line.
      await store.claimJobs({ queue: "q", limit: 1, workerId: "w", leaseMs: 60_000 });
      assert.equal(await ahead(5), 2);
    });
  });

  describe("a paused schedule through the scheduler", () => {
    const withErrand = (
      title: string,
      fn: (errand: Awaited<ReturnType<typeof openErrand>>, store: Store) => Promise<void>,
    ) =>
      test(title, async () => {
        const { store, cleanup } = await factory.open();
        const errand = await openErrand({ store });
        try {
          await fn(errand, store);
        } finally {
          await errand.close();
          await cleanup();
        }
      });
    const minutesAgo = async (store: Store, n: number) => {
      const now = (await store.now()).getTime();
      return new Date(Math.floor(now / 60_000) * 60_000 - n * 60_000);
    };
    const slotJobs = async (errand: Awaited<ReturnType<typeof openErrand>>) =>
      (await errand.listJobs({ queue: "reports", limit: 1000 })).jobs.map((j) => j.key).sort();

    withErrand(
      "paused, it fires nothing; resumed with missed: latest, the latest missed slot fires once",
      async (errand, store) => {
        await store.upsertSchedule(schedule("minutely", { nextRunAt: await minutesAgo(store, 5) }));
        await errand.setSchedulePaused("minutely", true);
        assert.equal((await errand.fireSchedules()).fired, 0);
        assert.deepEqual(await slotJobs(errand), []);
        await errand.setSchedulePaused("minutely", false);
        const fired = await errand.fireSchedules();
        assert.equal(fired.fired, 1, "only the latest missed slot");
        assert.equal((await errand.fireSchedules()).fired, 0, "and never twice");
        assert.equal((await slotJobs(errand)).length, 1);
      },
    );

    withErrand("resumed with missed: all, each missed slot fires once", async (errand, store) => {
      await store.upsertSchedule(
        schedule("catch-up", { missed: "all", nextRunAt: await minutesAgo(store, 4) }),
      );
      await errand.setSchedulePaused("catch-up", true);
      assert.equal((await errand.fireSchedules()).fired, 0);
      await errand.setSchedulePaused("catch-up", false);
      const fired = await errand.fireSchedules();
      assert.ok(
        fired.fired === 5 || fired.fired === 6,
        `the slots from 4 minutes ago to now: ${fired.fired}`,
      );
      assert.equal((await errand.fireSchedules()).fired, 0);
      const keys = await slotJobs(errand);
      assert.equal(new Set(keys).size, keys.length, "one job per slot");
    });

    withErrand(
      "run now enqueues the job at once, paused or not, and leaves the next slot alone",
      async (errand, store) => {
        const next = new Date(Date.UTC(2031, 5, 1));
        await store.upsertSchedule(schedule("monthly", { nextRunAt: next, payload: { kind: "now" } }));
        await errand.setSchedulePaused("monthly", true);
        const ran = await errand.runScheduleNow("monthly");
        assert.equal(ran.created, true);
        const job = await errand.getJob(ran.jobId);
        assert.equal(job?.name, "report");
        assert.equal(job?.queue, "reports");
        assert.deepEqual(job?.payload, { kind: "now" });
        assert.match(job?.key ?? "", /^cron:monthly:now:/);
        const row = (await errand.listSchedules())[0];
        assert.equal(row.nextRunAt.getTime(), next.getTime(), "the next slot did not move");
        assert.ok(row.pausedAt, "still paused");
      },
    );

    withErrand(
      "an unknown schedule is a ValidationError naming the known ones; nothing changes",
      async (errand, store) => {
        await store.upsertSchedule(schedule("known"));
        for (const act of [
          () => errand.setSchedulePaused("nope", true),
          () => errand.setSchedulePaused("nope", false),
          () => errand.runScheduleNow("nope"),
        ]) {
          await assert.rejects(act(), (err: Error) => {
            assert.equal(err.name, "ValidationError");
            assert.match(err.message, /unknown schedule "nope"; known: known/);
            return true;
          });
        }
        assert.equal((await errand.listSchedules())[0].pausedAt, null);
        assert.equal((await errand.listJobs({})).jobs.length, 0);
      },
    );

    withErrand("a bad queue name to pause is a ValidationError; nothing is paused", async (errand) => {
      await assert.rejects(errand.pauseQueue("no spaces"), { name: "ValidationError" });
      await assert.rejects(errand.resumeQueue(""), { name: "ValidationError" });
      assert.deepEqual(await errand.pausedQueues(), []);
    });
  });

  describe("workers obey a pause", () => {
    test("a worker of a paused queue with due jobs waits for the resume, it does not spin", async () => {
      const { store, cleanup } = await factory.open();
      let claims = 0;
      const claimJobs = store.claimJobs.bind(store);
      store.claimJobs = (req) => {
        claims++;
        return claimJobs(req);
      };
      const ran: number[] = [];
      const job = defineJob({
        name: "paused-idle",
        queue: "idle",
        schema: z.object({ n: z.number() }),
        async run({ n }) {
          ran.push(n);
        },
      });
      const errand = await openErrand({ store, jobs: [job] });
      try {
        await errand.pauseQueue("idle");
        await errand.enqueueMany(
          job,
          Array.from({ length: 5 }, (_, n) => ({ payload: { n } })),
        );
        const worker = errand.work({ idle: { concurrency: 2 } }, { pollInterval: "200ms" });
        try {
          await sleep(1000);
          assert.deepEqual(ran, []);
          assert.ok(claims <= 15, `${claims} claims in a second at a poll interval of 200 ms`);
          await errand.resumeQueue("idle");
          await poll("the jobs to run after resume", async () => ran.length === 5, 5000);
        } finally {
          await worker.stop();
        }
      } finally {
        await errand.close();
        await cleanup();
      }
    });

    test("after pauseQueue returns no handler starts, buffered jobs included; resume drains the rest", async () => {
      const { store, cleanup } = await factory.open();
      const starts: number[] = [];
      const slow = defineJob({
        name: "paused-slow",
        queue: "paced",
        schema: z.object({ n: z.number() }),
        async run() {
          starts.push(performance.now());
          await sleep(20);
        },
      });
      const errand = await openErrand({ store, jobs: [slow] });
      const worker = errand.work({ paced: { concurrency: 2 } }, { readAhead: "2s" });
      try {
        await errand.enqueueMany(
          slow,
          Array.from({ length: 60 }, (_, n) => ({ payload: { n } })),
        );
        await poll("the read-ahead to fill", async () => starts.length >= 12, 5000);
        await errand.pauseQueue("paced");
        const paused = performance.now();
        await sleep(400);
        const late = starts.filter((t) => t > paused);
        assert.deepEqual(late, [], "no handler started after pauseQueue returned");
        const before = starts.length;
        assert.ok(before < 60, `the pause held jobs back (${before} started)`);
        await poll("the held-back jobs to be back in pending", async () => {
          const held = (await errand.stats()).find((s) => s.queue === "paced");
          return held && held.running === 0 && held.pending + held.completed === 60;
        });
        await errand.resumeQueue("paced");
        await poll("the backlog to drain after resume", async () => starts.length >= 60, 15_000);
      } finally {
        await worker.stop();
        await errand.close();
        await cleanup();
      }
    });
  });
}
