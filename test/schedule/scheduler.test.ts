/**
 * Firing schedules: missed slots (latest vs all), syncing (code is the truth, CLI-added kept),
 * and "each slot fires once" under concurrent schedulers and with three running workers.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob, type Errand, MemoryStore, openErrand, silentLogger } from "../../src/index.js";
import type { AnyJobDefinition } from "../../src/job.js";
import { MAX_SLOTS_PER_FIRE } from "../../src/schedule/scheduler.js";
import { targets } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";

const noop = defineJob({ name: "noop", queue: "q", schema: z.object({}), run: () => {} });

async function clockErrand(start: string) {
  const clock = { now: Date.parse(start) };
  const store = new MemoryStore({ clock: () => clock.now });
  const errand = await openErrand({ store, logger: silentLogger(), jobs: [asAny(noop)] });
  return { clock, errand };
}

async function keys(errand: Errand): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await errand.listJobs({ limit: 1000, cursor });
    out.push(...page.jobs.map((j) => j.key ?? ""));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out.sort();
}

describe("missed slots", () => {
  test('"latest" (the default) fires only the latest missed slot after downtime', async () => {
    const { clock, errand } = await clockErrand("2026-05-01T10:00:30Z");
    try {
      errand.schedule("every-minute", "* * * * *", noop, {});
      await errand.fireSchedules(); // syncs; next slot 10:01
      assert.deepEqual(await keys(errand), []);
      clock.now = Date.parse("2026-05-01T10:07:10Z"); // down for seven slots
      const fired = await errand.fireSchedules();
      assert.equal(fired.fired, 1);
      assert.deepEqual(await keys(errand), ["cron:every-minute:2026-05-01T10:07:00.000Z"]);
      const [row] = await errand.store.listSchedules();
      assert.equal(row.nextRunAt.toISOString(), "2026-05-01T10:08:00.000Z");
      assert.equal(row.lastSlot?.toISOString(), "2026-05-01T10:07:00.000Z");
      assert.equal((await errand.fireSchedules()).fired, 0, "nothing more is due");
    } finally {
      await errand.close();
    }
  });

  test('"all" fires every missed slot, oldest first', async () => {
    const { clock, errand } = await clockErrand("2026-05-01T10:00:30Z");
    try {
      errand.schedule("catch-up", "*/2 * * * *", noop, {}, { missed: "all" });
      await errand.fireSchedules();
      clock.now = Date.parse("2026-05-01T10:09:00Z");
      const fired = await errand.fireSchedules();
      assert.deepEqual(
        fired.slots.map((s) => s.slot.toISOString()),
        ["10:02", "10:04", "10:06", "10:08"].map((t) => `2026-05-01T${t}:00.000Z`),
      );
      assert.equal((await keys(errand)).length, 4);
      // Older slots run first: same priority, earlier run_at.
      const runAt = (await errand.listJobs()).jobs.map((j) => j.runAt.toISOString()).sort();
      assert.equal(runAt[0], "2026-05-01T10:02:00.000Z");
    } finally {
      await errand.close();
    }
  });

  test(`"all" fires at most ${MAX_SLOTS_PER_FIRE} slots per call and continues on the next`, async () => {
    const { clock, errand } = await clockErrand("2026-05-01T10:00:00.500Z");
    try {
      errand.schedule("per-second", "* * * * * *", noop, {}, { missed: "all" });
      await errand.fireSchedules();
      clock.now += 2500 * 1000;
      assert.equal((await errand.fireSchedules()).fired, MAX_SLOTS_PER_FIRE);
      assert.equal((await errand.fireSchedules()).fired, MAX_SLOTS_PER_FIRE);
      assert.equal((await errand.fireSchedules()).fired, 500);
      assert.equal((await errand.fireSchedules()).fired, 0);
      const all = await keys(errand);
      assert.equal(all.length, 2500);
      assert.equal(new Set(all).size, 2500);
    } finally {
      await errand.close();
    }
  });
});

describe("syncing", () => {
  test("the set in code is the truth; schedules added by hand stay; an unchanged schedule keeps its place in time", async () => {
    const { clock, errand } = await clockErrand("2026-05-01T10:00:30Z");
    try {
      errand.schedule("a", "*/5 * * * *", noop, {});
      errand.schedule("b", "0 * * * *", noop, {});
      await errand.syncSchedules();
      await errand.store.upsertSchedule({
        name: "by-hand",
        cron: "0 3 * * *",
        timezone: "UTC",
        jobName: "noop",
        queue: "q",
        payload: {},
        priority: 0,
        missed: "latest",
        source: "cli",
        nextRunAt: new Date("2026-05-02T03:00:00Z"),
      });
      clock.now = Date.parse("2026-05-01T10:12:00Z"); // "a" missed 10:05 and 10:10

      // A new deployment: "b" removed, "a" unchanged, "c" added.
      const next = await openErrand({ store: errand.store, logger: silentLogger(), jobs: [asAny(noop)] });
      next.schedule("a", "*/5 * * * *", noop, {});
      next.schedule("c", "0 9 * * *", noop, {}, { timezone: "Europe/Berlin" });
      await next.syncSchedules();
      const rows = await next.store.listSchedules();
      assert.deepEqual(
        rows.map((r) => [r.name, r.source]),
        [
          ["a", "code"],
          ["by-hand", "cli"],
          ["c", "code"],
        ],
      );
      const a = rows.find((r) => r.name === "a");
      assert.equal(
        a?.nextRunAt.toISOString(),
        "2026-05-01T10:05:00.000Z",
        "kept: the missed slots are still due",
      );
      assert.deepEqual(
        (await next.fireSchedules()).slots.map((s) => s.slot.toISOString()),
        ["2026-05-01T10:10:00.000Z"],
      );
      await next.close();
    } finally {
      await errand.close();
    }
  });

  test("a process that defines no schedules does not delete the others' on its own", async () => {
    const { errand } = await clockErrand("2026-05-01T10:00:30Z");
    try {
      errand.schedule("a", "*/5 * * * *", noop, {});
      await errand.fireSchedules();
      const other = await openErrand({ store: errand.store, logger: silentLogger(), jobs: [asAny(noop)] });
      await other.fireSchedules();
      const worker = other.work({ q: {} }, { pollInterval: 20 });
      await waitFor(async () => (await other.store.listWorkers(60_000)).length > 0, "the worker to register");
      await worker.stop();
      assert.deepEqual(
        (await errand.store.listSchedules()).map((s) => s.name),
        ["a"],
      );
      await other.syncSchedules(); // explicit: the empty set is the truth now
      assert.deepEqual(await errand.store.listSchedules(), []);
      await other.close();
    } finally {
      await errand.close();
    }
  });
});

for (const target of targets) {
  describe(`each slot fires once on ${target.name}`, { skip: target.skip }, () => {
    test("ten concurrent schedulers on three errands enqueue one job per slot", async () => {
      const a = await target.openErrand({ jobs: [asAny(noop)] });
      // Memory: three errands on one store; SQLite and Postgres: three connections, as three processes would.
      const where =
        target.name === "memory" ? { store: a.errand.store } : { url: a.url, ...schemaOf(a.errand) };
      const others = await Promise.all(
        [1, 2].map(() => openErrand({ ...where, logger: silentLogger(), jobs: [asAny(noop)] })),
      );
      const errands = [a.errand, ...others];
      try {
        a.errand.schedule("daily", "0 0 * * *", noop, {});
        await a.errand.syncSchedules();
        const [row] = await a.errand.store.listSchedules();
        // Pretend the schedule was last fired two days ago: one slot (today 00:00 UTC) is due.
        const past = new Date(row.nextRunAt.getTime() - 2 * 86_400_000);
        assert.ok(
          await a.errand.store.advanceSchedule({
            name: "daily",
            expectedNextRunAt: row.nextRunAt,
            nextRunAt: past,
            lastSlot: null,
          }),
        );
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => errands[i % errands.length].fireSchedules()),
        );
        const today = new Date(row.nextRunAt.getTime() - 86_400_000).toISOString();
        assert.deepEqual(await keys(a.errand), [`cron:daily:${today}`]);
        assert.equal(
          results.reduce((n, r) => n + r.fired, 0),
          1,
          "exactly one scheduler created it",
        );
        const [after] = await a.errand.store.listSchedules();
        assert.equal(after.nextRunAt.toISOString(), row.nextRunAt.toISOString());
      } finally {
        for (const e of others) await e.close();
        await a.cleanup();
      }
    });

    test("three running workers and a schedule every two seconds: each slot runs once", {
      timeout: 30_000,
    }, async () => {
      const ran: string[] = [];
      const job = defineJob({
        name: "beat",
        queue: "beats",
        schema: z.object({}),
        run: (_p, ctx) => {
          ran.push(ctx.job.key ?? "");
        },
      });
      const a = await target.openErrand({ jobs: [asAny(job)] });
      const where =
        target.name === "memory" ? { store: a.errand.store } : { url: a.url, ...schemaOf(a.errand) };
      const errands = [a.errand];
      for (let i = 0; i < 2; i++)
        errands.push(await openErrand({ ...where, logger: silentLogger(), jobs: [asAny(job)] }));
      try {
        for (const e of errands) e.schedule("beat", "*/2 * * * * *", job, {}, { missed: "all" });
        const workers = errands.map((e) => e.work({ beats: { concurrency: 2 } }, { pollInterval: 50 }));
        await waitFor(() => new Set(ran).size >= 4, "four slots to run", 20_000);
        await Promise.all(workers.map((w) => w.stop()));
        const slots = [...new Set(ran)].sort();
        assert.equal(ran.length, slots.length, `no slot ran twice: ${JSON.stringify(ran)}`);
        // Every two seconds, none skipped between the first and the last.
        const times = slots.map((k) => Date.parse(k.slice("cron:beat:".length)));
        for (let i = 1; i < times.length; i++)
          assert.equal(times[i] - times[i - 1], 2000, `consecutive slots: ${slots.join(", ")}`);
        const stored = await keys(a.errand);
        assert.deepEqual(
          stored,
          slots.concat(stored.filter((k) => !slots.includes(k))).sort(),
          "one job per slot",
        );
        assert.equal(new Set(stored).size, stored.length);
      } finally {
        for (const e of errands.slice(1)) await e.close();
        await a.cleanup();
      }
    });
  });
}

/** The Postgres schema an errand uses, so a second errand opens the same one. */
function schemaOf(errand: Errand): { schema?: string } {
  const schema = (errand.store as unknown as { schema?: unknown }).schema;
  return typeof schema === "string" ? { schema } : {};
}

/** Typed definitions are not assignable to AnyJobDefinition (the `jobs` option) without a cast. */
function asAny(def: unknown): AnyJobDefinition {
  return def as AnyJobDefinition;
}
