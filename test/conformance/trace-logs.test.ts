/**
 * Store conformance: the trace context stored at enqueue (handed back by every claim) and the
 * job log kept in each attempt's history entry. On every store (./helpers.ts).
 */
import assert from "node:assert/strict";
import { describe } from "node:test";
import type { JobLogLine } from "../../src/index.js";
import type { FlowLimits } from "../../src/store/types.js";
import { claimOne, eachStore, finish, insertOne, mustGet, newJob } from "./helpers.js";

const CONTEXT = JSON.stringify({ traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" });

const lines = (n: number, extra: Partial<JobLogLine> = {}): JobLogLine[] =>
  Array.from({ length: n }, (_, i) => ({
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    level: "info" as const,
    msg: `line ${i} é ✓`,
    ...extra,
  }));

eachStore((it) => {
  describe("trace context", () => {
    it("a claim hands back the trace context stored at enqueue; none is null", async (store) => {
      const inserted = await store.insertJobs([
        newJob({ traceContext: CONTEXT }),
        newJob(),
        newJob({ key: "k1", traceContext: CONTEXT }),
        newJob({ key: "k2" }),
      ]);
      assert.ok(inserted.every((r) => r.created));
      const claimed = await store.claimJobs({ queue: "q", limit: 10, workerId: "w1", leaseMs: 60_000 });
      const byId = new Map(claimed.map((c) => [c.id, c.traceContext]));
      assert.deepEqual(
        inserted.map((r) => byId.get(r.job.id)),
        [CONTEXT, null, CONTEXT, null],
      );
    });

    it("a duplicate key keeps the first job's trace context", async (store) => {
      await insertOne(store, { key: "same" });
      const [again] = await store.insertJobs([newJob({ key: "same", traceContext: CONTEXT })]);
      assert.equal(again.created, false);
      assert.equal((await claimOne(store)).traceContext, null);
    });

    it("a flow-controlled claim hands it back too", async (store) => {
      await insertOne(store, { traceContext: CONTEXT, flowKey: "tenant-1" });
      const flow: FlowLimits = { globalConcurrency: 5 };
      const claim = await store.claimFlowJobs({
        queue: "q",
        limit: 5,
        workerId: "w1",
        leaseMs: 60_000,
        flow,
      });
      assert.equal(claim.jobs.length, 1);
      assert.equal(claim.jobs[0].traceContext, CONTEXT);
    });
  });

  describe("job logs", () => {
    it("each attempt's entry keeps its own lines; an attempt without lines has none", async (store) => {
      const job = await insertOne(store, { maxAttempts: 3 });
      const first = await claimOne(store);
      const failing = lines(2, { fields: { userId: 7, nested: { ok: true, none: null } } });
      assert.equal(
        await finish(store, first, "retry", {
          delayMs: 0,
          error: { message: "boom", kind: "unknown" },
          logs: failing,
        }),
        true,
      );
      const second = await claimOne(store);
      assert.equal(
        await finish(store, second, "retry", { delayMs: 0, error: { message: "again", kind: "unknown" } }),
        true,
      );
      const third = await claimOne(store);
      const done = [...lines(1, { level: "warn" }), { ...lines(1)[0], msg: "truncated", dropped: 3 }];
      assert.equal(await finish(store, third, "completed", { result: { ok: 1 }, logs: done }), true);
      const record = await mustGet(store, job.id);
      assert.equal(record.state, "completed");
      assert.deepEqual(
        record.attempts.map((a) => [a.outcome, a.logs]),
        [
          ["retried", failing],
          ["retried", undefined],
          ["completed", done],
        ],
      );
    });

    it("a plain completion with lines keeps them; one without keeps none", async (store) => {
      const a = await insertOne(store);
      const b = await insertOne(store);
      const claimed = await store.claimJobs({ queue: "q", limit: 2, workerId: "w1", leaseMs: 60_000 });
      const logs = lines(3);
      const applied = await store.finishJobs(
        claimed.map((c) => ({
          id: c.id,
          leaseToken: c.leaseToken,
          kind: "completed" as const,
          result: null,
          worker: "w1",
          ...(c.id === a.id ? { logs } : {}),
        })),
      );
      assert.deepEqual(applied, [true, true]);
      const withLogs = await mustGet(store, a.id);
      assert.deepEqual(
        withLogs.attempts.map((x) => [x.outcome, x.worker, x.logs]),
        [["completed", "w1", logs]],
      );
      const without = await mustGet(store, b.id);
      assert.deepEqual(
        without.attempts.map((x) => [x.outcome, x.logs]),
        [["completed", undefined]],
      );
    });

    it("completeInTransaction writes the lines it is given into the completing entry", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      const logs = lines(2);
      const r = await store.completeInTransaction(
        c,
        "w-tx",
        async () => ({ wrote: 1 }),
        () => logs,
      );
      assert.equal(r.applied, true);
      const record = await mustGet(store, job.id);
      assert.deepEqual(
        record.attempts.map((x) => [x.outcome, x.logs]),
        [["completed", logs]],
      );
    });

    it("a failed job keeps its lines in the dead-letter queue", async (store) => {
      const job = await insertOne(store, { maxAttempts: 1 });
      const c = await claimOne(store);
      const logs = lines(1, { level: "error", msg: "giving up" });
      await finish(store, c, "failed", { error: { message: "bad", kind: "permanent" }, logs });
      const record = await mustGet(store, job.id);
      assert.equal(record.state, "failed");
      assert.deepEqual(record.attempts[0].logs, logs);
    });
  });
});
