/** Store conformance: Schedules: sync, upsert, due, advance (one winner), remove. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import { eachStore, nowMs, schedule } from "./helpers.js";

eachStore((it) => {
  describe("schedules", () => {
    it("upsert, list, remove; every field round-trips", async (store) => {
      const s = schedule("nightly", {
        timezone: "Europe/Berlin",
        priority: 4,
        missed: "all",
        source: "cli",
        flowKey: "tenant-é",
      });
      await store.upsertSchedule(s);
      await store.upsertSchedule(schedule("hourly", { cron: "0 * * * *" }));
      const list = await store.listSchedules();
      assert.deepEqual(list.map((x) => x.name).sort(), ["hourly", "nightly"]);
      const got = list.find((x) => x.name === "nightly");
      assert.ok(got);
      const { lastFiredAt, lastSlot, createdAt, pausedAt, ...rest } = got;
      assert.deepEqual(rest, s);
      assert.equal(pausedAt, null);
      assert.equal(lastFiredAt, null);
      assert.equal(lastSlot, null);
      assert.ok(createdAt instanceof Date);

      await store.upsertSchedule(
        schedule("hourly", {
          cron: "30 * * * *",
          nextRunAt: new Date(Date.UTC(2031, 0, 1)),
          payload: { v: 2 },
        }),
      );
      const hourly = (await store.listSchedules()).find((x) => x.name === "hourly");
      assert.equal(hourly?.cron, "30 * * * *");
      assert.deepEqual(hourly?.payload, { v: 2 });
      assert.equal(hourly?.flowKey, null, "no key given: none");
      await store.upsertSchedule(schedule("hourly", { cron: "30 * * * *", flowKey: "k2" }));
      assert.equal((await store.listSchedules()).find((x) => x.name === "hourly")?.flowKey, "k2");
      assert.equal(hourly?.nextRunAt.getTime(), Date.UTC(2031, 0, 1));

      assert.equal(await store.removeSchedule("hourly"), true);
      assert.equal(await store.removeSchedule("hourly"), false);
      assert.deepEqual(
        (await store.listSchedules()).map((x) => x.name),
        ["nightly"],
      );
    });

    it("syncSchedules replaces code schedules, keeps cli ones and the position of unchanged ones", async (store) => {
      const T1 = new Date(Date.UTC(2030, 0, 1));
      const T2 = new Date(Date.UTC(2030, 6, 1));
      const T3 = new Date(Date.UTC(2031, 0, 1));
      await store.syncSchedules([
        schedule("kept", { nextRunAt: T1 }),
        schedule("dropped"),
        schedule("retimed", { nextRunAt: T1 }),
      ]);
      await store.upsertSchedule(schedule("by-hand", { source: "cli", nextRunAt: T1 }));
      await store.syncSchedules([
        schedule("kept", { nextRunAt: T2, payload: { v: "new" }, priority: 7, flowKey: "t-1" }), // same cron + timezone
        schedule("retimed", { cron: "0 3 * * *", nextRunAt: T3 }), // cron changed
        schedule("added", { nextRunAt: T3 }),
      ]);
      const byName = new Map((await store.listSchedules()).map((s) => [s.name, s]));
      assert.deepEqual([...byName.keys()].sort(), ["added", "by-hand", "kept", "retimed"]);
      assert.equal(
        byName.get("kept")?.nextRunAt.getTime(),
        T1.getTime(),
        "unchanged cron keeps its next run",
      );
      assert.deepEqual(byName.get("kept")?.payload, { v: "new" }, "other fields follow the code");
      assert.equal(byName.get("kept")?.flowKey, "t-1", "the flow key follows the code");
      assert.equal(byName.get("kept")?.priority, 7);
      assert.equal(byName.get("retimed")?.nextRunAt.getTime(), T3.getTime());
      assert.equal(byName.get("retimed")?.cron, "0 3 * * *");
      assert.equal(byName.get("by-hand")?.source, "cli");
      await store.syncSchedules([schedule("kept", { timezone: "America/New_York", nextRunAt: T3 })]);
      const after = await store.listSchedules();
      assert.deepEqual(after.map((s) => s.name).sort(), ["by-hand", "kept"]);
      assert.equal(
        after.find((s) => s.name === "kept")?.nextRunAt.getTime(),
        T3.getTime(),
        "a new time zone moves it",
      );
      await store.syncSchedules([]);
      assert.deepEqual(
        (await store.listSchedules()).map((s) => s.name),
        ["by-hand"],
      );
    });

    it("dueSchedules returns those whose next run is due", async (store) => {
      const t = await nowMs(store);
      await store.upsertSchedule(schedule("due", { nextRunAt: new Date(t - 60_000) }));
      await store.upsertSchedule(schedule("due-cli", { nextRunAt: new Date(t - 1), source: "cli" }));
      await store.upsertSchedule(schedule("later", { nextRunAt: new Date(t + 60_000) }));
      assert.deepEqual((await store.dueSchedules()).map((s) => s.name).sort(), ["due", "due-cli"]);
    });

    it("advanceSchedule is a compare-and-set; of two concurrent advances exactly one wins", async (store) => {
      const t = await nowMs(store);
      const expected = new Date(t - 60_000);
      const slot = new Date(t - 60_000);
      const next = new Date(t + 240_000);
      await store.upsertSchedule(schedule("tick", { nextRunAt: expected }));
      const results = await Promise.all([
        store.advanceSchedule({ name: "tick", expectedNextRunAt: expected, nextRunAt: next, lastSlot: slot }),
        store.advanceSchedule({
          name: "tick",
          expectedNextRunAt: expected,
          nextRunAt: new Date(t + 300_000),
          lastSlot: slot,
        }),
      ]);
      assert.equal(results.filter(Boolean).length, 1, `exactly one wins: ${results}`);
      const s = (await store.listSchedules()).find((x) => x.name === "tick");
      assert.equal(s?.nextRunAt.getTime(), results[0] ? next.getTime() : t + 300_000);
      assert.equal(s?.lastSlot?.getTime(), slot.getTime());
      assert.ok(s?.lastFiredAt instanceof Date);
      // A stale expectation loses; the current one wins; unknown names lose.
      assert.equal(
        await store.advanceSchedule({
          name: "tick",
          expectedNextRunAt: expected,
          nextRunAt: next,
          lastSlot: slot,
        }),
        false,
      );
      const current = s?.nextRunAt ?? next;
      const later = new Date(t + 600_000);
      assert.equal(
        await store.advanceSchedule({
          name: "tick",
          expectedNextRunAt: current,
          nextRunAt: later,
          lastSlot: null,
        }),
        true,
      );
      const s2 = (await store.listSchedules()).find((x) => x.name === "tick");
      assert.equal(s2?.nextRunAt.getTime(), later.getTime());
      assert.equal(s2?.lastSlot?.getTime(), slot.getTime(), "advancing without a slot keeps the last one");
      assert.deepEqual(await store.dueSchedules(), []);
      assert.equal(
        await store.advanceSchedule({
          name: "nope",
          expectedNextRunAt: later,
          nextRunAt: later,
          lastSlot: null,
        }),
        false,
      );
    });
  });
});
