/** Store conformance: The workers registry: register, heartbeat, unregister, list the live ones. On every store (./helpers.ts). */
import assert from "node:assert/strict";
import { describe } from "node:test";
import { assertWithin, eachStore, nowMs } from "./helpers.js";

eachStore((it) => {
  describe("workers registry", () => {
    it.withClock("register, heartbeat, stale workers drop out, unregister", async (store, clock) => {
      const t0 = await nowMs(store);
      await store.registerWorker({
        id: "w-1",
        host: "host-a",
        pid: 101,
        queues: { emails: 2, reports: 1 },
        running: 0,
        processed: 0,
      });
      await store.registerWorker({
        id: "w-2",
        host: "host-b",
        pid: 202,
        queues: { emails: 1 },
        running: 1,
        processed: 3,
      });
      const t1 = await nowMs(store);
      const all = await store.listWorkers(60_000);
      assert.deepEqual(all.map((w) => w.id).sort(), ["w-1", "w-2"]);
      const w1 = all.find((w) => w.id === "w-1");
      assert.ok(w1);
      assert.deepEqual(
        { host: w1.host, pid: w1.pid, queues: w1.queues, running: w1.running, processed: w1.processed },
        { host: "host-a", pid: 101, queues: { emails: 2, reports: 1 }, running: 0, processed: 0 },
      );
      assertWithin(w1.startedAt, t0, t1, "startedAt");
      assertWithin(w1.lastHeartbeatAt, t0, t1, "lastHeartbeatAt");

      clock.advance(150);
      // w-2 last beat 150 ms ago, so a 100 ms window does not hold it; w-1 beats right before the look.
      await store.heartbeatWorker("w-1", 2, 17);
      const live = await store.listWorkers(100);
      assert.ok(!live.some((w) => w.id === "w-2"), "w-2 has not beaten for 150 ms: stale");
      assert.deepEqual(
        live.map((w) => w.id),
        ["w-1"],
      );
      assert.deepEqual([live[0].running, live[0].processed], [2, 17]);
      assert.ok(live[0].lastHeartbeatAt.getTime() > w1.lastHeartbeatAt.getTime());
      assert.equal(live[0].startedAt.getTime(), w1.startedAt.getTime());

      await store.unregisterWorker("w-1");
      assert.deepEqual(
        (await store.listWorkers(60_000)).map((w) => w.id),
        ["w-2"],
      );
    });
  });
});
