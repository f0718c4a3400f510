/**
 * Store conformance: scoped keys (NewJob.unique, store/unique.ts). Each enqueue judges the job
 * holding its key by its own rule: a duplicate while that job's state is within `while` (and it
 * is younger than `forMs`); otherwise the holder gives the key up for good and a new job is
 * inserted. `replace` gives a pending duplicate the new payload and run time; debounce caps that
 * run time at the holder's creation + maxWait. On every store (./helpers.ts).
 */
import assert from "node:assert/strict";
import { describe } from "node:test";
import type { Store, UniqueRule } from "../../src/store/types.js";
import { assertWithin, claimOne, eachStore, finish, insertOne, mustGet, newJob, nowMs } from "./helpers.js";

const rule = (over: Partial<UniqueRule> = {}): UniqueRule => ({
  while: "retained",
  forMs: null,
  replace: false,
  debounce: null,
  ...over,
});

async function enqueue(store: Store, unique: UniqueRule | null, payload: unknown = {}, over = {}) {
  const [r] = await store.insertJobs([newJob({ key: "k", unique, payload, ...over })]);
  return r;
}

/** A job holding key "k", taken to `state` ("pending", "running" or a finished one). */
async function holder(store: Store, state: "pending" | "running" | "completed" | "failed" | "cancelled") {
  const job = await insertOne(store, { key: "k", payload: { v: "old" } });
  if (state === "pending") return job;
  if (state === "cancelled") {
    await store.cancelJob(job.id);
    return job;
  }
  const claimed = await claimOne(store);
  if (state !== "running") assert.equal(await finish(store, claimed, state), true);
  return job;
}

const STATES = ["pending", "running", "completed", "failed", "cancelled"] as const;
const COUNTS: Record<UniqueRule["while"], readonly string[]> = {
  pending: ["pending"],
  unfinished: ["pending", "running"],
  retained: STATES,
};

eachStore((it) => {
  describe("scoped keys (unique)", () => {
    for (const scope of ["pending", "unfinished", "retained"] as const) {
      for (const state of STATES) {
        const counts = COUNTS[scope].includes(state);
        it(`while "${scope}": a ${state} job with the key ${counts ? "is a duplicate" : "gives the key up to a new job"}`, async (store) => {
          const old = await holder(store, state);
          const again = await enqueue(
            store,
            rule({ while: scope, forMs: scope === "retained" ? 3_600_000 : null }),
            {
              v: "new",
            },
          );
          assert.equal(again.created, !counts);
          assert.equal(again.replaced ?? false, false);
          if (counts) assert.equal(again.job.id, old.id);
          else {
            assert.notEqual(again.job.id, old.id);
            assert.deepEqual(again.job.payload, { v: "new" });
            // The old job keeps its key and its state; it just no longer holds the key.
            const kept = await mustGet(store, old.id);
            assert.equal(kept.key, "k");
            assert.equal(kept.state, state);
          }
          // Whatever happened, a plain enqueue of the key now meets the job holding it.
          const plain = await enqueue(store, null);
          assert.equal(plain.created, false);
          assert.equal(plain.job.id, again.job.id);
        });
      }
    }

    it.withClock("for: only a job created less than `for` ago is a duplicate", async (store, clock) => {
      const first = await enqueue(store, rule({ forMs: 1000 }));
      clock.advance(999);
      const within = await enqueue(store, rule({ forMs: 1000 }));
      assert.equal(within.created, false);
      assert.equal(within.job.id, first.job.id);
      clock.advance(1);
      const past = await enqueue(store, rule({ forMs: 1000 }));
      assert.equal(past.created, true);
      assert.equal((await mustGet(store, first.job.id)).state, "pending", "the old job is untouched");
      // A plain enqueue (retained, no window) now matches the new holder.
      assert.equal((await enqueue(store, null)).job.id, past.job.id);
    });

    it("replace: a pending duplicate takes the new payload, run time and priority", async (store) => {
      const old = await holder(store, "pending");
      const before = await nowMs(store);
      const again = await enqueue(
        store,
        rule({ while: "unfinished", replace: true }),
        { v: "new" },
        {
          delayMs: 60_000,
          priority: 7,
        },
      );
      const after = await nowMs(store);
      assert.equal(again.created, false);
      assert.equal(again.replaced, true);
      assert.equal(again.job.id, old.id);
      assert.deepEqual(again.job.payload, { v: "new" });
      assert.equal(again.job.priority, 7);
      assertWithin(again.job.runAt, before + 60_000, after + 60_000, "runAt");
      const stored = await mustGet(store, old.id);
      assert.deepEqual(stored.payload, { v: "new" });
      assert.equal(stored.priority, 7);
      assert.equal(stored.runAt.getTime(), again.job.runAt.getTime());
      assert.equal(stored.createdAt.getTime(), old.createdAt.getTime(), "still the first enqueue's job");
    });

    it("replace: a running duplicate cannot be replaced — it is returned unchanged", async (store) => {
      const old = await holder(store, "running");
      const again = await enqueue(store, rule({ while: "unfinished", replace: true }), { v: "new" });
      assert.equal(again.created, false);
      assert.equal(again.replaced ?? false, false);
      assert.equal(again.job.id, old.id);
      assert.deepEqual((await mustGet(store, old.id)).payload, { v: "old" });
      // Under "pending" the running job does not count: the new payload gets a job of its own.
      const pending = await enqueue(store, rule({ while: "pending", replace: true }), { v: "newer" });
      assert.equal(pending.created, true);
      assert.deepEqual(pending.job.payload, { v: "newer" });
    });

    it("a job that gave its key up and goes back to pending never collides with the new holder", async (store) => {
      const old = await holder(store, "pending");
      const claimed = await claimOne(store);
      const fresh = await enqueue(store, rule({ while: "pending" }));
      assert.equal(fresh.created, true);
      // The old job's retry makes it pending again next to the new holder: allowed, not an error.
      assert.equal(await finish(store, claimed, "retry", { delayMs: 0 }), true);
      assert.equal((await mustGet(store, old.id)).state, "pending");
      const again = await enqueue(store, rule({ while: "pending" }));
      assert.equal(again.created, false);
      assert.equal(again.job.id, fresh.job.id, "the holder is the new job");
      // The dead-letter path too: fail the old job for good and retry it by hand.
      const [c] = (await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 })).filter(
        (j) => j.id === old.id,
      );
      assert.equal(await finish(store, c, "failed"), true);
      assert.equal(await store.retryJobs({ ids: [old.id] }), 1);
      assert.equal((await mustGet(store, old.id)).state, "pending");
    });

    it("in one batch, later items meet the earlier ones: replace keeps one job with the last payload", async (store) => {
      const r = rule({ while: "pending", replace: true });
      const results = await store.insertJobs([
        newJob({ key: "k", unique: r, payload: { n: 1 } }),
        newJob({ key: "other", payload: { n: 0 } }),
        newJob({ key: "k", unique: r, payload: { n: 2 } }),
        newJob({ key: "k", unique: r, payload: { n: 3 } }),
      ]);
      assert.deepEqual(
        results.map((x) => [x.created, x.replaced ?? false]),
        [
          [true, false],
          [true, false],
          [false, true],
          [false, true],
        ],
      );
      assert.equal(results[2].job.id, results[0].job.id);
      assert.deepEqual((await mustGet(store, results[0].job.id)).payload, { n: 3 });
      assert.equal((await store.listJobs({ limit: 100 })).jobs.length, 2);
    });

    it.withClock(
      "debounce: each enqueue moves the run time to now + delay, never past first + maxWait",
      async (store, clock) => {
        const debounce = rule({
          while: "pending",
          replace: true,
          debounce: { delayMs: 1000, maxWaitMs: 2500 },
        });
        const t0 = await nowMs(store);
        const first = await enqueue(store, debounce, { n: 1 }, { delayMs: 1000 });
        assert.equal(first.created, true);
        assert.equal(first.job.runAt.getTime(), t0 + 1000);
        clock.advance(800);
        const second = await enqueue(store, debounce, { n: 2 }, { delayMs: 1000 });
        assert.equal(second.replaced, true);
        assert.equal(second.job.runAt.getTime(), t0 + 1800);
        clock.advance(1200); // t0 + 2000: now + delay would pass first + maxWait
        const third = await enqueue(store, debounce, { n: 3 }, { delayMs: 1000 });
        assert.equal(third.job.runAt.getTime(), t0 + 2500);
        assert.deepEqual(third.job.payload, { n: 3 });
        // Once it runs, the next enqueue starts a new debounced job.
        clock.advance(500);
        const running = await claimOne(store);
        assert.equal(running.id, first.job.id);
        assert.deepEqual(running.payload, { n: 3 });
        const next = await enqueue(store, debounce, { n: 4 }, { delayMs: 1000 });
        assert.equal(next.created, true);
        assert.equal(next.job.runAt.getTime(), t0 + 2500 + 1000);
      },
    );

    it("20 concurrent enqueues against a finished holder under while pending create exactly one job", async (store) => {
      const old = await holder(store, "completed");
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => enqueue(store, rule({ while: "pending" }), { i })),
      );
      assert.equal(results.filter((r) => r.created).length, 1, "exactly one created");
      assert.equal(new Set(results.map((r) => r.job.id)).size, 1, "all got the same job");
      assert.notEqual(results[0].job.id, old.id);
      assert.equal((await store.listJobs({ limit: 100 })).jobs.length, 2);
    });

    it("a job waiting for its dependencies has not started: a duplicate under while pending and unfinished, never replaced", async (store) => {
      const dependency = await insertOne(store);
      const [waiting] = await store.insertJobs([
        newJob({
          key: "k",
          payload: { v: "old" },
          dependencies: { ids: [dependency.id], rows: [], onFailure: "fail" },
        }),
      ]);
      assert.equal(waiting.job.state, "waiting");
      for (const scope of ["pending", "unfinished"] as const) {
        const again = await enqueue(store, rule({ while: scope, replace: true }), { v: "new" });
        assert.equal(again.created, false, `while ${scope}`);
        assert.notEqual(again.replaced, true, `while ${scope}: a waiting job keeps its payload`);
        assert.equal(again.job.id, waiting.job.id);
      }
      assert.deepEqual((await mustGet(store, waiting.job.id)).payload, { v: "old" });
    });
  });
});
