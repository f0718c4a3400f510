/**
 * Flow control, specified once for every store (./stores.ts): claimFlowJobs takes only what a
 * queue's limits allow — global and per-key concurrency, queue and per-key rate windows, paused
 * budgets — counting every claimer's jobs, and rotates among flow keys (docs/semantics.md, Flow
 * control). Times are the store's clock; waits poll with a bound, never sleep a fixed guess.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ValidationError } from "../../src/errors.js";
import { checkedStore } from "../../src/store/checked.js";
import type { ClaimedJob, FlowLimits, NewJob, Store } from "../../src/store/types.js";
import { completeAll, flowClaim } from "./helpers.js";
import { stores } from "./stores.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function newJob(over: Partial<NewJob> = {}): NewJob {
  return { queue: "q", name: "task", payload: {}, priority: 0, maxAttempts: 3, ...over };
}

/** `n` jobs of one flow key (null: none), inserted in one call. */
async function insert(store: Store, n: number, flowKey: string | null, over: Partial<NewJob> = {}) {
  const results = await store.insertJobs(
    Array.from({ length: n }, (_, i) => newJob({ flowKey, payload: { key: flowKey, i }, ...over })),
  );
  return results.map((r) => r.job.id);
}

const keysOf = (jobs: ClaimedJob[]) => jobs.map((j) => (j.payload as { key: string | null }).key);

for (const factory of stores) {
  describe(`flow control: ${factory.name}`, { skip: factory.skip || undefined }, () => {
    async function withStore(fn: (store: Store) => Promise<void>): Promise<void> {
      const opened = await factory.open();
      try {
        await fn(checkedStore(opened.store));
      } finally {
        await opened.cleanup();
      }
    }

    test("global concurrency: never more running than the limit; a finished job frees its slot", () =>
      withStore(async (store) => {
        await insert(store, 5, null);
        const first = await flowClaim(store, { globalConcurrency: 2 });
        assert.equal(first.jobs.length, 2);
        const second = await flowClaim(store, { globalConcurrency: 2 });
        assert.equal(second.jobs.length, 0, "both slots are held");
        assert.equal(second.held, 3, "three due jobs held back");
        assert.equal(second.retryInMs, null, "a concurrency cap frees when a job ends, not at a time");
        await completeAll(store, first.jobs.slice(0, 1));
        assert.equal((await flowClaim(store, { globalConcurrency: 2 })).jobs.length, 1);
        // The plain claim of the same queue still takes everything (limits are the claimer's).
        assert.equal(
          (await store.claimJobs({ queue: "q", limit: 10, workerId: "x", leaseMs: 60_000 })).length,
          2,
        );
      }));

    test("concurrent claimers together never overshoot a global limit", () =>
      withStore(async (store) => {
        await insert(store, 30, null);
        const claims = await Promise.all(
          Array.from({ length: 8 }, () => flowClaim(store, { globalConcurrency: 3 }, 2)),
        );
        assert.equal(
          claims.reduce((n, c) => n + c.jobs.length, 0),
          3,
        );
      }));

    test("per-key concurrency: each key's own cap; limit 1 is one at a time per key", () =>
      withStore(async (store) => {
        await insert(store, 3, "a");
        await insert(store, 3, "b");
        await insert(store, 2, null);
        const first = await flowClaim(store, { keyConcurrency: 1 });
        assert.deepEqual(
          keysOf(first.jobs),
          [null, "a", "b", null],
          "one of each key; jobs without a key are not capped per key",
        );
        const again = await flowClaim(store, { keyConcurrency: 1 });
        assert.equal(again.jobs.length, 0);
        assert.equal(again.held, 4);
        await completeAll(
          store,
          first.jobs.filter((j) => (j.payload as { key: string }).key === "a"),
        );
        assert.deepEqual(keysOf((await flowClaim(store, { keyConcurrency: 1 })).jobs), ["a"]);
      }));

    test("per-key and global concurrency together", () =>
      withStore(async (store) => {
        for (const key of ["a", "b", "c", "d"]) await insert(store, 3, key);
        const first = await flowClaim(store, { keyConcurrency: 2, globalConcurrency: 5 });
        assert.equal(first.jobs.length, 5);
        const perKey = new Map<string, number>();
        for (const k of keysOf(first.jobs)) perKey.set(k as string, (perKey.get(k as string) ?? 0) + 1);
        assert.ok(
          [...perKey.values()].every((n) => n <= 2),
          JSON.stringify([...perKey]),
        );
      }));

    test("a rate window: at most `limit` claims per key per window, then retryInMs says when", () =>
      withStore(async (store) => {
        await insert(store, 5, "a");
        await insert(store, 5, "b");
        const flow = { keyRate: { limit: 2, perMs: 400 } };
        const first = await flowClaim(store, flow);
        assert.deepEqual(keysOf(first.jobs).sort(), ["a", "a", "b", "b"]);
        await completeAll(store, first.jobs);
        const blocked = await flowClaim(store, flow);
        assert.equal(blocked.jobs.length, 0, "finishing does not refill a rate window");
        assert.ok(
          blocked.retryInMs !== null && blocked.retryInMs > 0 && blocked.retryInMs <= 401,
          `retryInMs ${blocked.retryInMs}`,
        );
        await sleep(blocked.retryInMs as number);
        assert.equal((await flowClaim(store, flow)).jobs.length, 4, "the window moved on");
      }));

    test("a queue-wide rate counts every key's claims", () =>
      withStore(async (store) => {
        await insert(store, 4, "a");
        await insert(store, 4, null);
        const flow = { rate: { limit: 3, perMs: 60_000 } };
        assert.equal((await flowClaim(store, flow)).jobs.length, 3);
        const blocked = await flowClaim(store, flow);
        assert.equal(blocked.jobs.length, 0);
        assert.ok(blocked.retryInMs !== null && blocked.retryInMs > 50_000, `retryInMs ${blocked.retryInMs}`);
      }));

    test("flowStatus reads running jobs, recent claims and paused budgets by key, without claiming", () =>
      withStore(async (store) => {
        await insert(store, 3, "a");
        await insert(store, 2, "b");
        await insert(store, 1, null);
        const before = (await store.now()).getTime();
        const taken = await flowClaim(store, { keyRate: { limit: 10, perMs: 60_000 } }, 4);
        assert.equal(taken.jobs.length, 4);
        await store.pauseFlow({ queue: "q", key: "b", ms: 60_000 });
        const status = await store.flowStatus({ queue: "q", windowMs: 60_000 });
        const after = (await store.now()).getTime();
        assert.ok(
          status.now.getTime() >= before && status.now.getTime() <= after,
          "now is the store's clock",
        );
        const byKey = new Map<string, number>();
        for (const j of taken.jobs) {
          const k = (j.payload as { key: string | null }).key ?? "";
          byKey.set(k, (byKey.get(k) ?? 0) + 1);
        }
        assert.deepEqual(new Map([...status.running].sort()), new Map([...byKey].sort()), "running by key");
        for (const [k, n] of byKey) {
          const times = status.claims.get(k) ?? [];
          assert.equal(times.length, n, `claims of key "${k}"`);
          for (const t of times)
            assert.ok(t >= before - 5 && t <= after + 5, "claim times are the store's clock");
        }
        assert.deepEqual([...status.pausedUntil.keys()], ["b"]);
        assert.ok((status.pausedUntil.get("b") ?? 0) >= before + 59_000, "paused for the minute");
        const none = await store.flowStatus({ queue: "q", windowMs: 0 });
        assert.equal(none.claims.size, 0, "no window, no claims");
        const again = await flowClaim(store, { keyRate: { limit: 10, perMs: 60_000 } }, 10);
        assert.equal(
          taken.jobs.length + again.jobs.length,
          5,
          "flowStatus claimed nothing (b's budget is paused: one of its jobs is left)",
        );
      }));

    test("pauseFlow pauses one key's budget (or the queue's) for every claimer, then lets go", () =>
      withStore(async (store) => {
        await insert(store, 3, "a");
        await insert(store, 3, "b");
        await store.pauseFlow({ queue: "q", key: "a", ms: 300 });
        await store.pauseFlow({ queue: "q", key: "a", ms: 10 }); // never shortens the pause
        const flow = { keyConcurrency: 10 };
        const first = await flowClaim(store, flow);
        assert.deepEqual(keysOf(first.jobs), ["b", "b", "b"]);
        assert.ok(first.retryInMs !== null && first.retryInMs <= 300, `retryInMs ${first.retryInMs}`);
        await sleep(first.retryInMs as number);
        assert.deepEqual(keysOf((await flowClaim(store, flow)).jobs), ["a", "a", "a"]);

        await insert(store, 2, "c");
        await store.pauseFlow({ queue: "q", key: null, ms: 60_000 });
        const paused = await flowClaim(store, flow);
        assert.equal(paused.jobs.length, 0, "the whole queue's budget is paused");
        assert.ok(paused.retryInMs !== null && paused.retryInMs > 50_000);
        assert.equal((await flowClaim(store, flow, 100, "other")).held, 0, "another queue is not paused");
      }));

    test("fairness: claims rotate among keys, so a small key is not stuck behind a big one", () =>
      withStore(async (store) => {
        await insert(store, 50, "a");
        await insert(store, 3, "b");
        const flow = { keyConcurrency: 100 };
        const order: (string | null)[] = [];
        for (let i = 0; i < 6; i++) {
          const one = await flowClaim(store, flow, 1);
          order.push(...keysOf(one.jobs));
          await completeAll(store, one.jobs);
        }
        assert.deepEqual(order, ["a", "b", "a", "b", "a", "b"]);
        await insert(store, 2, "c");
        assert.deepEqual(keysOf((await flowClaim(store, flow, 5)).jobs), ["c", "a", "c", "a", "a"]);
      }));

    test("rotation reaches every key, however many there are", () =>
      withStore(async (store) => {
        const keys = Array.from({ length: 150 }, (_, i) => `tenant-${String(i).padStart(3, "0")}`);
        for (const key of keys) await insert(store, 2, key);
        const seen = new Set<string>();
        for (let i = 0; i < 150; i++) {
          const { jobs } = await flowClaim(store, { keyConcurrency: 1 }, 1);
          for (const k of keysOf(jobs)) seen.add(k as string);
        }
        assert.equal(seen.size, 150, "each of 150 keys served once in 150 claims of one job");
        // Every key holds its one slot now: a big claim gets nothing, however far it looks.
        assert.equal((await flowClaim(store, { keyConcurrency: 1 }, 100)).jobs.length, 0);
      }));

    test("flow-controlled jobs without a key ('') and plain jobs (null) share the keyless group", () =>
      withStore(async (store) => {
        await insert(store, 3, "");
        await insert(store, 2, null);
        await insert(store, 2, "k");
        const { jobs } = await flowClaim(store, { keyConcurrency: 1, globalConcurrency: 10 });
        assert.equal(jobs.length, 6, "the keyless group has no per-key cap; key k has one slot");
        assert.equal(jobs.filter((j) => j.flowKey === "k").length, 1);
      }));

    test("within a key the usual order holds: priority, then run_at, then insertion", () =>
      withStore(async (store) => {
        const [low] = await insert(store, 1, "a", { priority: 0 });
        const [high] = await insert(store, 1, "a", { priority: 5 });
        await insert(store, 1, "a", { delayMs: 60_000 });
        const { jobs } = await flowClaim(store, { keyConcurrency: 5 });
        assert.deepEqual(
          jobs.map((j) => j.id),
          [high, low],
          "priority first; a job not due yet is not claimed",
        );
        assert.equal(jobs[0].flowKey, "a");
      }));

    test("a claimed job whose worker died holds its slot until its lease is rescued", () =>
      withStore(async (store) => {
        await insert(store, 2, null);
        const flow = { globalConcurrency: 1 };
        const held = await store.claimFlowJobs({ queue: "q", limit: 5, workerId: "dead", leaseMs: 50, flow });
        assert.equal(held.jobs.length, 1);
        assert.equal((await flowClaim(store, flow)).jobs.length, 0, "the slot is held while the lease runs");
        const deadline = Date.now() + 5000;
        let rescued = 0;
        while (rescued === 0 && Date.now() < deadline) {
          await sleep(20);
          rescued = (await store.rescueExpiredLeases()).length;
        }
        assert.equal(rescued, 1);
        assert.equal((await flowClaim(store, flow)).jobs.length, 1, "the slot came back with the lease");
      }));

    test("bad limits are a ValidationError naming them, on every store", () =>
      withStore(async (store) => {
        for (const flow of [
          { globalConcurrency: 0 },
          { keyConcurrency: 1.5 },
          { rate: { limit: 0, perMs: 1000 } },
          { keyRate: { limit: 1, perMs: -1 } },
        ] as FlowLimits[]) {
          await assert.rejects(flowClaim(store, flow), ValidationError, JSON.stringify(flow));
        }
        await assert.rejects(store.pauseFlow({ queue: "q", key: "a", ms: -5 }), ValidationError);
      }));
  });
}
