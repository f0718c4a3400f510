/**
 * Store conformance: what a real application does to a graph and its keys after the fact, on
 * every store (./helpers.ts).
 *
 * - A fan-in job cancelled while its dependencies still run stays cancelled when they complete
 *   (never pending, never claimed), and a cancelled dependent retried by hand runs once: the
 *   later completion of its dependency does not make it pending again.
 * - A running dependency cancelled (its worker ends it `cancelled`) resolves its dependents by
 *   their policies, as a pending one does.
 * - A dependency pruned by retention is refused at enqueue like an id that never existed, with
 *   the id named. (A job cannot be waiting on a pruned dependency: only finished jobs are pruned,
 *   and a finish resolves its dependents in the same transaction.)
 * - An idempotency key whose job was pruned makes a new job, which then holds the key.
 * - A job with a scoped key (`unique`, `replace`, debounce) and `dependsOn` waits for its
 *   dependencies like any other. Before the fix PostgreSQL stored it `pending` without its
 *   edges (the scoped-key insert path skipped the dependency plan), so it ran before its
 *   dependency; memory and SQLite kept it `waiting`.
 */
import assert from "node:assert/strict";
import { describe } from "node:test";
import type { DependencyFailurePolicy, NewJob, Store } from "../../src/store/types.js";
import type { UniqueRule } from "../../src/unique-rule.js";
import { eachStore, finish, insertOne, mustGet, newJob } from "./helpers.js";

const SCOPES: Record<string, UniqueRule> = {
  "unique pending": { while: "pending", forMs: null, replace: false, debounce: null },
  "unique unfinished, replace": { while: "unfinished", forMs: null, replace: true, debounce: null },
  debounce: { while: "pending", forMs: null, replace: true, debounce: { delayMs: 0, maxWaitMs: null } },
};

const after = (
  ids: string[],
  onFailure: DependencyFailurePolicy = "fail",
  over: Partial<NewJob> = {},
): NewJob => newJob({ dependencies: { ids, rows: [], onFailure }, ...over });

async function claimAll(store: Store, queue = "q") {
  return store.claimJobs({ queue, limit: 100, workerId: "w1", leaseMs: 60_000 });
}

eachStore((it) => {
  describe("dependency and key edges", () => {
    it("a fan-in job cancelled while its dependencies run stays cancelled when they complete", async (store) => {
      const a = await insertOne(store);
      const b = await insertOne(store);
      const [w] = await store.insertJobs([after([a.id, b.id])]);
      const running = await claimAll(store);
      assert.deepEqual(running.map((j) => j.id).sort(), [a.id, b.id].sort());
      const cancelled = await store.cancelJob(w.job.id);
      assert.equal(cancelled?.state, "cancelled");
      for (const c of running) assert.equal(await finish(store, c, "completed", { result: c.id }), true);
      const after1 = await mustGet(store, w.job.id);
      assert.equal(after1.state, "cancelled", "the completions did not release a cancelled job");
      assert.deepEqual(await claimAll(store), [], "nothing left to claim");
      assert.equal((await mustGet(store, a.id)).state, "completed");
    });

    it("a cancelled dependent retried by hand runs once; its dependency's completion does not release it again", async (store) => {
      const a = await insertOne(store);
      const [w] = await store.insertJobs([after([a.id])]);
      const [ca] = await claimAll(store);
      assert.equal(ca.id, a.id);
      await store.cancelJob(w.job.id);
      assert.equal(await store.retryJobs({ ids: [w.job.id] }), 1);
      assert.equal((await mustGet(store, w.job.id)).state, "pending", "a person decided: it runs");
      const [cw] = await claimAll(store);
      assert.equal(cw?.id, w.job.id);
      assert.equal(await finish(store, cw, "completed", { result: "once" }), true);
      assert.equal(await finish(store, ca, "completed"), true);
      const done = await mustGet(store, w.job.id);
      assert.equal(done.state, "completed", "still completed after its dependency completed");
      assert.equal(done.attempts.length, 1, "one run");
      assert.deepEqual(await claimAll(store), [], "not pending again");
    });

    for (const [policy, state] of [
      ["fail", "failed"],
      ["cancel", "cancelled"],
    ] as const) {
      it(`a running dependency that ends cancelled resolves its dependents (${policy})`, async (store) => {
        const a = await insertOne(store);
        const [w] = await store.insertJobs([after([a.id], policy)]);
        const [ca] = await claimAll(store);
        const requested = await store.cancelJob(a.id);
        assert.equal(requested?.state, "running", "a running job learns of the cancel from its worker");
        assert.equal((await mustGet(store, w.job.id)).state, "waiting");
        assert.equal(await finish(store, ca, "cancelled"), true);
        assert.equal((await mustGet(store, a.id)).state, "cancelled");
        const dependent = await mustGet(store, w.job.id);
        assert.equal(dependent.state, state);
        assert.match(dependent.lastError ?? "", new RegExp(`dependency job ${a.id} was cancelled`));
      });
    }

    for (const [what, unique] of Object.entries(SCOPES)) {
      it(`a job with a scoped key (${what}) waits for its dependencies`, async (store) => {
        const a = await insertOne(store);
        // With a plain job in the same call: a scoped key anywhere in a batch used to drop the
        // dependencies of every job of it.
        const [plain, w] = await store.insertJobs([
          after([a.id]),
          after([a.id], "fail", { key: "k", unique }),
        ]);
        assert.equal(w.created, true);
        assert.equal(w.job.state, "waiting", "the record returned");
        assert.equal((await mustGet(store, w.job.id)).state, "waiting", "the stored job");
        assert.equal((await mustGet(store, plain.job.id)).state, "waiting", "the plain job of the batch");
        assert.deepEqual(
          (await store.getJobLinks(w.job.id)).dependencies.map((d) => d.id),
          [a.id],
        );
        const [ca] = await claimAll(store);
        assert.equal(ca.id, a.id, "only the dependency is claimable");
        assert.equal(await finish(store, ca, "completed"), true);
        assert.equal((await mustGet(store, w.job.id)).state, "pending", "released by its completion");
        assert.equal((await mustGet(store, plain.job.id)).state, "pending");
      });
    }

    it.withClock(
      "a dependency pruned by retention is refused like one that never existed, naming it",
      async (store, clock) => {
        const a = await insertOne(store);
        const [ca] = await claimAll(store);
        assert.equal(await finish(store, ca, "completed"), true);
        clock.advance(1_000);
        assert.equal(await store.pruneFinished({ completedAgeMs: 10, failedAgeMs: 10 }), 1);
        await assert.rejects(
          store.insertJobs([newJob({ name: "other" }), after([a.id])]),
          (err: Error) =>
            err.name === "ValidationError" && new RegExp(`no job with id ${a.id}\\b`).test(err.message),
        );
        assert.deepEqual((await store.listJobs({})).jobs, [], "nothing of the batch was stored");
      },
    );

    it.withClock(
      "an idempotency key whose job was pruned makes a new job, which then holds the key",
      async (store, clock) => {
        const [first] = await store.insertJobs([newJob({ key: "k-1", payload: { v: 1 } })]);
        assert.equal(first.created, true);
        const [c] = await claimAll(store);
        assert.equal(await finish(store, c, "completed"), true);
        const [again] = await store.insertJobs([newJob({ key: "k-1", payload: { v: 2 } })]);
        assert.equal(again.created, false, "a completed job still holds its key until it is pruned");
        assert.equal(again.job.id, first.job.id);
        clock.advance(1_000);
        assert.equal(await store.pruneFinished({ completedAgeMs: 10, failedAgeMs: 10 }), 1);
        const [fresh] = await store.insertJobs([newJob({ key: "k-1", payload: { v: 3 } })]);
        assert.equal(fresh.created, true);
        assert.notEqual(fresh.job.id, first.job.id);
        assert.deepEqual((await mustGet(store, fresh.job.id)).payload, { v: 3 });
        const [met] = await store.insertJobs([newJob({ key: "k-1", payload: { v: 4 } })]);
        assert.equal(met.created, false);
        assert.equal(met.job.id, fresh.job.id);
      },
    );
  });
});
