/**
 * Store conformance: dependencies (store/dependency-plan.ts). A job with unfinished dependencies
 * is `waiting` and never claimed; the finish of its last dependency makes it pending in the same
 * transaction; a dependency that fails for good or is cancelled resolves it by its policy; a
 * stale finish resolves nothing. On every store (./helpers.ts).
 */
import assert from "node:assert/strict";
import { describe } from "node:test";
import type { DependencyFailurePolicy, NewJob, Store } from "../../src/store/types.js";
import { claimOne, eachStore, finish, insertOne, mustGet, newJob, rescue } from "./helpers.js";

const after = (
  ids: string[],
  rows: number[] = [],
  onFailure: DependencyFailurePolicy = "fail",
  over: Partial<NewJob> = {},
): NewJob => newJob({ dependencies: { ids, rows, onFailure }, ...over });

async function claimAll(store: Store, queue = "q") {
  return store.claimJobs({ queue, limit: 100, workerId: "w1", leaseMs: 60_000 });
}

async function runToCompletion(store: Store, id: string, result: unknown = null) {
  const claimed = await claimAll(store);
  const c = claimed.find((j) => j.id === id);
  assert.ok(c, `job ${id} was claimable (claimed ${claimed.map((j) => j.id).join(",") || "nothing"})`);
  for (const other of claimed) if (other !== c) await store.returnJobs([other]);
  assert.equal(await finish(store, c, "completed", { result }), true);
}

eachStore((it) => {
  describe("dependencies", () => {
    it("a job waits, unclaimable, until every dependency completed; then it is pending", async (store) => {
      const a = await insertOne(store);
      const b = await insertOne(store);
      const [w] = await store.insertJobs([after([a.id, b.id])]);
      assert.equal(w.created, true);
      assert.equal(w.job.state, "waiting");
      assert.equal((await mustGet(store, w.job.id)).state, "waiting");
      const first = await claimAll(store);
      assert.deepEqual(first.map((j) => j.id).sort(), [a.id, b.id].sort(), "the waiting job is not claimed");
      assert.equal(await finish(store, first[0], "completed", { result: { n: 1 } }), true);
      assert.equal((await mustGet(store, w.job.id)).state, "waiting", "one of two dependencies done");
      assert.equal(await finish(store, first[1], "completed", { result: { n: 2 } }), true);
      assert.equal((await mustGet(store, w.job.id)).state, "pending");
      const [c] = await claimAll(store);
      assert.equal(c.id, w.job.id);
      const links = await store.getJobLinks(w.job.id);
      assert.deepEqual(
        links.dependencies.map((d) => [d.id, d.state, d.result]),
        [
          [first[0].id, "completed", { n: 1 }],
          [first[1].id, "completed", { n: 2 }],
        ].sort((x, y) => Number(x[0]) - Number(y[0])),
      );
      assert.deepEqual(
        (await store.getJobLinks(a.id)).dependents.map((d) => d.id),
        [w.job.id],
      );
    });

    it("a batch's rows depend on earlier rows (a flow): fan-out and fan-in, with node names", async (store) => {
      const rows: NewJob[] = [
        newJob({ node: "root" }),
        newJob({ node: "left", dependencies: { ids: [], rows: [0], onFailure: "fail" } }),
        newJob({ node: "right", dependencies: { ids: [], rows: [0], onFailure: "fail" } }),
        newJob({ node: "join", dependencies: { ids: [], rows: [1, 2], onFailure: "fail" } }),
      ];
      const r = await store.insertJobs(rows);
      assert.deepEqual(
        r.map((x) => x.job.state),
        ["pending", "waiting", "waiting", "waiting"],
      );
      await runToCompletion(store, r[0].job.id, "root!");
      assert.equal((await mustGet(store, r[1].job.id)).state, "pending");
      assert.equal((await mustGet(store, r[2].job.id)).state, "pending");
      await runToCompletion(store, r[1].job.id, "L");
      assert.equal((await mustGet(store, r[3].job.id)).state, "waiting");
      await runToCompletion(store, r[2].job.id, "R");
      assert.equal((await mustGet(store, r[3].job.id)).state, "pending");
      const deps = (await store.getJobLinks(r[3].job.id)).dependencies;
      assert.deepEqual(
        deps.map((d) => [d.node, d.result]),
        [
          ["left", "L"],
          ["right", "R"],
        ],
      );
    });

    it("a dependency already completed counts at insert: the job is pending at once", async (store) => {
      const a = await insertOne(store);
      await runToCompletion(store, a.id);
      const [w] = await store.insertJobs([after([a.id])]);
      assert.equal(w.job.state, "pending");
      assert.equal((await mustGet(store, w.job.id)).state, "pending");
    });

    it("a dependency that does not exist: a clear error, nothing stored", async (store) => {
      const a = await insertOne(store);
      await assert.rejects(
        store.insertJobs([newJob({ name: "other" }), after([a.id, "987654321"])]),
        (err: Error) => err.name === "ValidationError" && /no job with id 987654321/.test(err.message),
      );
      const page = await store.listJobs({});
      assert.deepEqual(
        page.jobs.map((j) => j.id),
        [a.id],
        "nothing of the batch was stored",
      );
      assert.deepEqual((await store.getJobLinks(a.id)).dependents, []);
    });

    for (const [policy, state] of [
      ["fail", "failed"],
      ["cancel", "cancelled"],
    ] as const) {
      it(`policy ${policy}: a dependency failing for good ${state === "failed" ? "fails" : "cancels"} its dependents, down the graph`, async (store) => {
        const a = await insertOne(store, { maxAttempts: 1 });
        const other = await insertOne(store);
        const r = await store.insertJobs([
          after([a.id, other.id], [], policy),
          newJob({ dependencies: { ids: [], rows: [0], onFailure: policy } }),
        ]);
        const c = await claimOne(store);
        assert.equal(c.id, a.id);
        assert.equal(
          await finish(store, c, "failed", { error: { message: "boom", kind: "permanent" } }),
          true,
        );
        for (const x of r) {
          const j = await mustGet(store, x.job.id);
          assert.equal(j.state, state);
          assert.ok(j.finishedAt);
          assert.match(
            j.lastError ?? "",
            x === r[0]
              ? new RegExp(`dependency job ${a.id} failed`)
              : /dependency job \d+ (failed|was cancelled)/,
          );
        }
        // The other dependency finishing later changes nothing.
        await runToCompletion(store, other.id);
        assert.equal((await mustGet(store, r[0].job.id)).state, state);
      });
    }

    it("policy run: the dependent runs once every dependency finished, even one that failed", async (store) => {
      const a = await insertOne(store, { maxAttempts: 1 });
      const b = await insertOne(store);
      const [w] = await store.insertJobs([after([a.id, b.id], [], "run")]);
      const claimed = await claimAll(store);
      const ca = claimed.find((j) => j.id === a.id);
      const cb = claimed.find((j) => j.id === b.id);
      assert.ok(ca && cb);
      assert.equal(await finish(store, ca, "failed", { error: { message: "x", kind: "permanent" } }), true);
      assert.equal((await mustGet(store, w.job.id)).state, "waiting");
      assert.equal(await finish(store, cb, "completed"), true);
      assert.equal((await mustGet(store, w.job.id)).state, "pending");
    });

    it("cancelling a waiting job, or a pending dependency, resolves the graph", async (store) => {
      const a = await insertOne(store);
      const r = await store.insertJobs([after([a.id], [], "cancel"), after([a.id], [], "fail")]);
      await store.cancelJob(r[0].job.id);
      assert.equal((await mustGet(store, r[0].job.id)).state, "cancelled");
      await store.cancelJob(a.id);
      const failed = await mustGet(store, r[1].job.id);
      assert.equal(failed.state, "failed");
      assert.match(failed.lastError ?? "", new RegExp(`dependency job ${a.id} was cancelled`));
    });

    it("a dependency already failed at insert: the policy applies at once", async (store) => {
      const a = await insertOne(store, { maxAttempts: 1 });
      const c = await claimOne(store);
      await finish(store, c, "failed", { error: { message: "x", kind: "permanent" } });
      const r = await store.insertJobs([
        after([a.id], [], "fail"),
        after([a.id], [], "cancel"),
        after([a.id], [], "run"),
      ]);
      assert.deepEqual(
        r.map((x) => x.job.state),
        ["failed", "cancelled", "pending"],
      );
      for (const x of r) assert.equal((await mustGet(store, x.job.id)).state, x.job.state);
    });

    it("a retry or a stale finish of a dependency releases nothing", async (store) => {
      const a = await insertOne(store, { maxAttempts: 3 });
      const [w] = await store.insertJobs([after([a.id])]);
      const c1 = await claimOne(store, "q", 40);
      await rescue(store, a.id);
      assert.equal((await mustGet(store, w.job.id)).state, "waiting", "a lost lease is a retry");
      const c2 = await claimOne(store);
      assert.equal(await finish(store, c1, "completed"), false, "stale finish fenced off");
      assert.equal((await mustGet(store, w.job.id)).state, "waiting");
      assert.equal(await finish(store, c2, "retry", { delayMs: 0 }), true);
      assert.equal((await mustGet(store, w.job.id)).state, "waiting");
      const c3 = await claimOne(store);
      assert.equal(await finish(store, c3, "completed"), true);
      assert.equal((await mustGet(store, w.job.id)).state, "pending");
    });

    it("a lease that expires with the attempts spent fails the dependency and its dependents", async (store) => {
      const a = await insertOne(store, { maxAttempts: 1 });
      const [w] = await store.insertJobs([after([a.id])]);
      await claimOne(store, "q", 40);
      const rescued = await rescue(store, a.id);
      assert.equal(rescued.state, "failed");
      assert.equal((await mustGet(store, w.job.id)).state, "failed");
    });

    it("completing in a transaction releases dependents with the completion", async (store) => {
      const a = await insertOne(store);
      const [w] = await store.insertJobs([after([a.id])]);
      const c = await claimOne(store);
      const done = await store.completeInTransaction(c, "w1", () => 7);
      assert.equal(done.applied, true);
      assert.equal((await mustGet(store, w.job.id)).state, "pending");
      assert.equal((await store.getJobLinks(w.job.id)).dependencies[0].result, 7);
    });

    it("a dependency added to a running job is resolved by that job's finish", async (store) => {
      const a = await insertOne(store);
      const c = await claimOne(store);
      const [w] = await store.insertJobs([after([a.id])]);
      assert.equal(w.job.state, "waiting");
      assert.equal(await finish(store, c, "completed"), true);
      assert.equal((await mustGet(store, w.job.id)).state, "pending");
    });

    it("stats count waiting jobs apart", async (store) => {
      const a = await insertOne(store);
      await store.insertJobs([after([a.id]), after([a.id])]);
      const [s] = await store.stats();
      assert.equal(s.waiting, 2);
      assert.equal(s.pending, 1);
    });
  });
});
