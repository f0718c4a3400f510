/** Store conformance: Reads: listJobs, stats and throughput. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import type { Store } from "../../src/store/types.js";
import { claimOne, eachStore, finish, ids, insertOne, newJob, nowMs, SLACK_MS } from "./helpers.js";

eachStore((it) => {
  describe("listJobs, stats and throughput", () => {
    async function sample(store: Store) {
      const one = await insertOne(store, {
        queue: "a",
        name: "x",
        payload: { text: "alpha needle-one" },
        key: "k-1",
      });
      const two = await insertOne(store, {
        queue: "a",
        name: "y",
        payload: { text: "beta" },
        key: "order-77",
      });
      const three = await insertOne(store, { queue: "b", name: "x", payload: { text: "gamma" } });
      const four = await insertOne(store, { queue: "b", name: "y", payload: { text: "needle-one again" } });
      // Higher priorities, so the claims below take five then six.
      const five = await insertOne(store, { queue: "a", name: "x", payload: { n: 5 }, priority: 10 });
      const six = await insertOne(store, { queue: "a", name: "x", payload: { n: 6 }, priority: 9 });
      assert.equal((await claimOne(store, "a")).id, five.id);
      const c6 = await claimOne(store, "a");
      assert.equal(c6.id, six.id);
      await finish(store, c6, "completed");
      return { one: one.id, two: two.id, three: three.id, four: four.id, five: five.id, six: six.id };
    }

    it("filters by queue, state, name and search; newest first", async (store) => {
      const j = await sample(store);
      const list = async (filter: Parameters<Store["listJobs"]>[0]) =>
        ids((await store.listJobs({ limit: 100, ...filter })).jobs);
      assert.deepEqual(await list({}), [j.six, j.five, j.four, j.three, j.two, j.one]);
      assert.deepEqual(await list({ queue: "a" }), [j.six, j.five, j.two, j.one]);
      assert.deepEqual(await list({ state: "running" }), [j.five]);
      assert.deepEqual(await list({ state: "completed" }), [j.six]);
      assert.deepEqual(await list({ state: "pending", queue: "b" }), [j.four, j.three]);
      assert.deepEqual(await list({ name: "y" }), [j.four, j.two]);
      assert.deepEqual(await list({ queue: "a", name: "x" }), [j.six, j.five, j.one]);
      assert.deepEqual(await list({ search: "needle-one" }), [j.four, j.one], "payload text");
      assert.deepEqual(await list({ search: "order-7" }), [j.two], "key substring");
      assert.ok((await list({ search: j.three })).includes(j.three), "id");
      assert.deepEqual(await list({ search: "no-such-thing-anywhere" }), []);
      assert.deepEqual(await list({ queue: "nope" }), []);
      const page = await store.listJobs({ queue: "a", state: "completed" });
      assert.equal(page.jobs[0].state, "completed");
      assert.equal(page.nextCursor, null);
    });

    it("cursor pagination visits every job exactly once", async (store) => {
      const j = await sample(store);
      const all = [j.six, j.five, j.four, j.three, j.two, j.one];
      for (const [limit, filter, expected] of [
        [2, {}, all],
        [4, {}, all],
        [1, {}, all],
        [100, {}, all],
        [3, { queue: "a" }, [j.six, j.five, j.two, j.one]],
        [1, { name: "y" }, [j.four, j.two]],
      ] as const) {
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let pages = 0; ; pages++) {
          assert.ok(pages < 20, "pagination terminates");
          const page = await store.listJobs({ ...filter, limit, cursor });
          assert.ok(page.jobs.length <= limit, "a page holds at most limit jobs");
          seen.push(...ids(page.jobs));
          if (page.nextCursor === null) break;
          assert.equal(typeof page.nextCursor, "string");
          cursor = page.nextCursor;
        }
        assert.deepEqual(seen, expected, `limit ${limit} ${JSON.stringify(filter)}`);
      }
      await assert.rejects(store.listJobs({ cursor: "not a cursor!" }), "a malformed cursor is rejected");
    });

    it("stats counts per queue and state, delayed apart from pending", async (store) => {
      const t = await nowMs(store);
      await insertOne(store, { queue: "a", runAt: new Date(t - 5_000) }); // due, 5 s old
      await insertOne(store, { queue: "a" }); // due now
      await insertOne(store, { queue: "a", delayMs: 60_000 }); // delayed
      const toRun = await insertOne(store, { queue: "a", priority: 5 });
      const toComplete = await insertOne(store, { queue: "a", priority: 4 });
      const toFail = await insertOne(store, { queue: "a", priority: 3 });
      const toCancel = await insertOne(store, { queue: "a", delayMs: 60_000 });
      await insertOne(store, { queue: "b" });
      await insertOne(store, { queue: "c", delayMs: 60_000 });
      assert.equal((await claimOne(store, "a")).id, toRun.id);
      const c = await claimOne(store, "a");
      assert.equal(c.id, toComplete.id);
      await finish(store, c, "completed");
      const f = await claimOne(store, "a");
      assert.equal(f.id, toFail.id);
      await finish(store, f, "failed", { error: { message: "x", kind: "permanent" } });
      await store.cancelJob(toCancel.id);

      const stats = await store.stats();
      const byQueue = new Map(stats.map((s) => [s.queue, s]));
      assert.deepEqual([...byQueue.keys()].sort(), ["a", "b", "c"]);
      const a = byQueue.get("a");
      assert.ok(a);
      const { oldestPendingMs, ...counts } = a;
      assert.deepEqual(counts, {
        queue: "a",
        waiting: 0,
        pending: 2,
        delayed: 1,
        running: 1,
        completed: 1,
        failed: 1,
        cancelled: 1,
        completedLastHour: 1,
        failedLastHour: 1,
        completedLastDay: 1,
        failedLastDay: 1,
      });
      assert.ok(
        oldestPendingMs !== null && oldestPendingMs >= 5_000 - SLACK_MS && oldestPendingMs < 60_000,
        `oldestPendingMs ${oldestPendingMs}`,
      );
      const b = byQueue.get("b");
      assert.deepEqual([b?.pending, b?.delayed, b?.running, b?.completed], [1, 0, 0, 0]);
      const cq = byQueue.get("c");
      assert.deepEqual([cq?.pending, cq?.delayed, cq?.oldestPendingMs], [0, 1, null]);
    });

    it("throughput buckets completed and failed per queue", async (store) => {
      await store.insertJobs([
        newJob({ queue: "a" }),
        newJob({ queue: "a" }),
        newJob({ queue: "a" }),
        newJob({ queue: "b" }),
      ]);
      const [x, y, z] = await store.claimJobs({ queue: "a", limit: 3, workerId: "w1", leaseMs: 60_000 });
      await finish(store, x, "completed");
      await finish(store, y, "completed");
      await finish(store, z, "failed", { error: { message: "x", kind: "permanent" } });
      await finish(store, await claimOne(store, "b"), "completed");
      const now = await nowMs(store);
      const buckets = await store.throughput(3_600_000, 60_000);
      const sum = (queue: string, field: "completed" | "failed") =>
        buckets.filter((bk) => bk.queue === queue).reduce((n, bk) => n + bk[field], 0);
      assert.deepEqual(
        [sum("a", "completed"), sum("a", "failed"), sum("b", "completed"), sum("b", "failed")],
        [2, 1, 1, 0],
      );
      for (const bk of buckets) {
        assert.ok(bk.at instanceof Date);
        assert.equal(bk.at.getTime() % 60_000, 0, "buckets start on a bucket boundary");
        assert.ok(bk.at.getTime() <= now + SLACK_MS && bk.at.getTime() > now - 3_600_000 - 60_000);
      }
      assert.equal(
        new Set(buckets.map((bk) => `${bk.queue}@${bk.at.getTime()}`)).size,
        buckets.length,
        "one bucket per queue and time",
      );
    });
  });
});
