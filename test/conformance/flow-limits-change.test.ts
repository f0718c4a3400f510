/**
 * Flow limits that change under running jobs, on every store: a limit lowered by a deploy while
 * jobs of the old one still run, and — during a rolling deploy — two processes that claim one
 * queue with different limits (work() refuses disagreeing definitions within a process; across
 * processes nothing can). Each claim obeys the limits it is given, counting every claimer's
 * jobs, so a lower concurrency binds the workers that have it; and a claim never forgets another
 * claimer's claims inside that claimer's own rate window, so a longer window holds too. A paused
 * queue also holds jobs whose run time passed long ago.
 */
import assert from "node:assert/strict";
import type { Store } from "../../src/store/types.js";
import { completeAll, eachStore, flowClaim, newJob } from "./helpers.js";

async function insert(store: Store, n: number, flowKey: string | null) {
  await store.insertJobs(Array.from({ length: n }, (_, i) => newJob({ flowKey, payload: { i } })));
}

eachStore((it) => {
  it("a concurrency limit lowered while jobs run: nothing more starts until fewer run than the new limit", async (store) => {
    await insert(store, 10, null);
    const running = (await flowClaim(store, { globalConcurrency: 5 })).jobs;
    assert.equal(running.length, 5);
    const lowered = { globalConcurrency: 2 };
    const held = await flowClaim(store, lowered);
    assert.equal(held.jobs.length, 0, "5 run, the new limit is 2");
    assert.equal(held.held, 5, "the due jobs are held, not lost");
    await completeAll(store, running.slice(0, 3));
    assert.equal((await flowClaim(store, lowered)).jobs.length, 0, "2 run: still at the new limit");
    await completeAll(store, running.slice(3, 4));
    assert.equal((await flowClaim(store, lowered)).jobs.length, 1, "1 ran: one slot free");
    const [stats] = (await store.stats()).filter((s) => s.queue === "q");
    assert.equal(stats.pending + stats.running + stats.completed, 10, "every job accounted for");
  });

  it("a per-key limit lowered while a key's jobs run binds that key alone", async (store) => {
    await insert(store, 4, "a");
    await insert(store, 4, "b");
    const first = await flowClaim(store, { keyConcurrency: 3 });
    assert.equal(first.jobs.length, 6, "three of each key");
    const second = await flowClaim(store, { keyConcurrency: 1 });
    assert.equal(second.jobs.length, 0, "each key runs 3, over the new limit 1");
    const a = first.jobs.filter((j) => j.flowKey === "a");
    await completeAll(store, a);
    const third = await flowClaim(store, { keyConcurrency: 1 });
    assert.deepEqual(
      third.jobs.map((j) => j.flowKey),
      ["a"],
      "key a's slots came back; key b still runs 3",
    );
  });

  it("two processes with different concurrency limits: each claim obeys its own, counting everyone's jobs", async (store) => {
    await insert(store, 10, null);
    const strict = { globalConcurrency: 2 };
    const loose = { globalConcurrency: 5 };
    assert.equal((await flowClaim(store, strict)).jobs.length, 2);
    assert.equal((await flowClaim(store, loose)).jobs.length, 3, "the loose one fills up to its 5");
    assert.equal((await flowClaim(store, strict)).jobs.length, 0, "the strict one sees 5 running");
    assert.equal((await flowClaim(store, loose)).jobs.length, 0, "and the loose one its limit");
  });

  it.withClock(
    "two processes with different rate windows: the short one's claims do not erase the long one's window",
    async (store, clock) => {
      await insert(store, 20, "a");
      await insert(store, 20, "b");
      const long = { keyRate: { limit: 2, perMs: 60_000 } }; // the new deploy: 2 a minute per key
      const short = { keyRate: { limit: 2, perMs: 1_000 } }; // the old one: 2 a second per key
      const first = await flowClaim(store, long);
      assert.equal(first.jobs.length, 4, "two of each key");
      clock.advance(2_000);
      // The old process claims one job: its window is 1 s, so it may...
      assert.equal((await flowClaim(store, short, 1)).jobs.length, 1);
      clock.advance(2_000);
      // ...but the new one's window still holds its own two claims of each key (and the old one's).
      const again = await flowClaim(store, long);
      assert.equal(again.jobs.length, 0, `the 1 min window is full, yet ${again.jobs.length} claimed`);
      assert.ok(again.retryInMs !== null && again.retryInMs > 50_000, `retry in ${again.retryInMs} ms`);
      clock.advance(60_000);
      assert.equal((await flowClaim(store, long)).jobs.length, 4, "a minute on, the window has room again");
    },
  );

  it.withClock(
    "the longer window is kept while its claimer claims, and lapses three of its windows after",
    async (store, clock) => {
      await insert(store, 20, "a");
      const long = { keyRate: { limit: 100, perMs: 60_000 } };
      const short = { keyRate: { limit: 100, perMs: 1_000 } };
      const kept = async () =>
        ((await store.flowStatus({ queue: "q", windowMs: 60_000 })).claims.get("a") ?? []).length;
      assert.equal((await flowClaim(store, long, 1)).jobs.length, 1); // records a 1 min window
      clock.advance(100_000);
      assert.equal((await flowClaim(store, short, 1)).jobs.length, 1);
      clock.advance(10_000);
      assert.equal((await flowClaim(store, short, 1)).jobs.length, 1);
      assert.equal(await kept(), 2, "the short claimer keeps a minute of claims while the record holds");
      clock.advance(80_000); // 190 s after the long claim: its record (3 windows) has lapsed
      assert.equal((await flowClaim(store, short, 1)).jobs.length, 1);
      assert.equal(await kept(), 1, "now the log keeps the short window only");
    },
  );

  it.withClock(
    "a paused queue holds a job whose run time passed a year ago; resume lets it run",
    async (store, clock) => {
      await store.pauseQueue("q");
      await store.insertJobs([newJob({ runAt: new Date(clock() - 365 * 86_400_000) })]);
      await insert(store, 1, "a");
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 10, workerId: "w", leaseMs: 60_000 }), []);
      assert.deepEqual((await flowClaim(store, { keyConcurrency: 1 })).jobs, []);
      assert.equal(await store.resumeQueue("q"), true);
      const claimed = await store.claimJobs({ queue: "q", limit: 10, workerId: "w", leaseMs: 60_000 });
      assert.equal(claimed.length, 2, "both run once resumed, the year-old first");
      assert.equal(claimed[0].payload && (claimed[0].payload as { i?: number }).i, undefined);
    },
  );
});
