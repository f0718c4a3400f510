/**
 * The Store conformance suite: the contract of src/store/types.ts and docs/semantics.md,
 * specified once and run against every store listed in ./stores.ts.
 *
 * Rules every test here keeps, so the suite runs unchanged on memory, SQLite and Postgres:
 * - each test opens its own store and cleans it up;
 * - "now" is the store's clock (`store.now()`), never the test's — SQL stores use the
 *   database clock — so time checks bracket an operation between two `store.now()` reads;
 * - time passes for real but briefly: leases of 30–80 ms, and any wait for a time-based
 *   transition polls with a bounded helper (`poll`) instead of sleeping a fixed time;
 * - ids are opaque strings, payloads are JSON values (jsonb may reorder keys and
 *   reformat text, so searches look for words, not JSON syntax).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ValidationError } from "../../src/errors.js";
import type { JobRecord } from "../../src/job.js";
import { checkedStore } from "../../src/store/checked.js";
import type {
  ClaimedJob,
  NewJob,
  Outcome,
  OutcomeKind,
  ScheduleInput,
  Store,
} from "../../src/store/types.js";
import { type StoreFactory, stores } from "./stores.js";

// ---------------------------------------------------------------- helpers

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Calls `fn` until it returns something truthy; fails after `timeoutMs`. */
async function poll<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 3000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
}

/** Timestamps from SQL stores may be rounded to the millisecond (or stored with µs and read back truncated). */
const SLACK_MS = 5;

function assertWithin(actual: Date | string | null | undefined, lo: number, hi: number, what: string): void {
  assert.ok(actual !== null && actual !== undefined, `${what} is set`);
  const t = typeof actual === "string" ? Date.parse(actual) : actual.getTime();
  assert.ok(!Number.isNaN(t), `${what} is a valid time: ${String(actual)}`);
  assert.ok(
    t >= lo - SLACK_MS && t <= hi + SLACK_MS,
    `${what} = ${new Date(t).toISOString()} not within [${new Date(lo).toISOString()}, ${new Date(hi).toISOString()}]`,
  );
}

const nowMs = async (store: Store) => (await store.now()).getTime();

function newJob(over: Partial<NewJob> = {}): NewJob {
  return { queue: "q", name: "task", payload: {}, priority: 0, maxAttempts: 3, ...over };
}

async function insertOne(store: Store, over: Partial<NewJob> = {}): Promise<JobRecord> {
  const [r] = await store.insertJobs([newJob(over)]);
  assert.equal(r.created, true);
  return r.job;
}

async function mustGet(store: Store, id: string): Promise<JobRecord> {
  const job = await store.getJob(id);
  assert.ok(job, `job ${id} exists`);
  return job;
}

async function claimOne(store: Store, queue = "q", leaseMs = 60_000, workerId = "w1"): Promise<ClaimedJob> {
  const claimed = await store.claimJobs({ queue, limit: 1, workerId, leaseMs });
  assert.equal(claimed.length, 1, `one job claimed from ${queue}`);
  return claimed[0];
}

async function finish(
  store: Store,
  lease: { id: string; leaseToken: number },
  kind: OutcomeKind,
  extra: Partial<Outcome> = {},
): Promise<boolean> {
  const [applied] = await store.finishJobs([
    { id: lease.id, leaseToken: lease.leaseToken, kind, worker: "w1", ...extra },
  ]);
  return applied;
}

/** Waits until the rescuer has taken `id` back (its lease must be short), and returns what it reported. */
async function rescue(store: Store, id: string) {
  return poll(`the rescuer to take job ${id} back`, async () =>
    (await store.rescueExpiredLeases()).find((r) => r.id === id),
  );
}

const ids = (jobs: Array<{ id: string }>) => jobs.map((j) => j.id);

function schedule(name: string, over: Partial<ScheduleInput> = {}): ScheduleInput {
  return {
    name,
    cron: "*/5 * * * *",
    timezone: "UTC",
    jobName: "report",
    queue: "reports",
    payload: { kind: "daily", tags: ["é", "ü"] },
    priority: 0,
    missed: "latest",
    source: "code",
    nextRunAt: new Date(Date.UTC(2030, 0, 1, 0, 0, 0)),
    ...over,
  };
}

// ---------------------------------------------------------------- the suite

for (const factory of stores) {
  describe(factory.name, { skip: factory.skip || false }, () => suite(factory));
}

function suite(factory: StoreFactory): void {
  /** A test with a fresh store of its own. */
  const it = (title: string, fn: (store: Store) => Promise<void>) =>
    test(title, async () => {
      const { store, cleanup } = await factory.open();
      try {
        await fn(store);
      } finally {
        await cleanup();
      }
    });

  // ------------------------------------------------------------ 1. insertJobs

  describe("insertJobs", () => {
    it("returns the stored record with every field, payload round-tripped", async (store) => {
      const payload = {
        text: 'héllo wörld — 日本語 🚀 "quoted" \\ back',
        nested: { list: [1, "two", { three: [true, false, null] }], empty: {}, n: -12.5 },
        emptyList: [],
        zero: 0,
      };
      const t0 = await nowMs(store);
      const [r] = await store.insertJobs([
        { queue: "emails", name: "send-email", payload, priority: 7, maxAttempts: 4, key: "welcome-101" },
      ]);
      const t1 = await nowMs(store);
      assert.equal(r.created, true);
      const job = r.job;
      assert.equal(typeof job.id, "string");
      assert.ok(job.id.length > 0);
      assert.equal(job.queue, "emails");
      assert.equal(job.name, "send-email");
      assert.equal(job.state, "pending");
      assert.equal(job.priority, 7);
      assert.equal(job.attempt, 0);
      assert.equal(job.maxAttempts, 4);
      assert.equal(job.key, "welcome-101");
      assert.deepEqual(job.payload, payload);
      assert.deepEqual(job.attempts, []);
      assertWithin(job.runAt, t0, t1, "runAt");
      assertWithin(job.createdAt, t0, t1, "createdAt");
      assert.equal(job.result ?? null, null);
      assert.equal(job.progress, null);
      assert.equal(job.lastError, null);
      assert.equal(job.startedAt, null);
      assert.equal(job.finishedAt, null);
      assert.equal(job.lockedBy, null);
      assert.equal(job.lockedUntil, null);
      assert.equal(job.cancelRequested, false);
      // What insert returned is what is stored.
      assert.deepEqual(await store.getJob(job.id), job);
    });

    it("stores a job without key with key null; getJob of an unknown id is null", async (store) => {
      const job = await insertOne(store, { payload: "just a string" });
      assert.equal(job.key, null);
      assert.equal((await mustGet(store, job.id)).payload, "just a string");
      assert.equal(await store.getJob("999999999"), null);
    });

    it("delayMs and runAt set the due time", async (store) => {
      const t0 = await nowMs(store);
      const delayed = await insertOne(store, { delayMs: 5_000 });
      const t1 = await nowMs(store);
      assertWithin(delayed.runAt, t0 + 5_000, t1 + 5_000, "runAt of delayMs 5000");

      const at = new Date(t0 + 3_600_000);
      const scheduled = await insertOne(store, { runAt: at });
      assert.equal(scheduled.runAt.getTime(), at.getTime());
      assert.equal((await mustGet(store, scheduled.id)).runAt.getTime(), at.getTime());

      const past = new Date(t0 - 60_000);
      const overdue = await insertOne(store, { runAt: past });
      assert.equal(overdue.runAt.getTime(), past.getTime());

      // Only the overdue one is due.
      const claimed = await store.claimJobs({ queue: "q", limit: 10, workerId: "w1", leaseMs: 60_000 });
      assert.deepEqual(ids(claimed), [overdue.id]);
    });

    it("a bulk insert returns results in input order", async (store) => {
      const inputs = [3, 1, 4, 1, 5, 9, 2, 6].map((n, i) =>
        newJob({ name: `task-${i}`, payload: { i, n }, priority: n, queue: i % 2 ? "odd" : "even" }),
      );
      const results = await store.insertJobs(inputs);
      assert.equal(results.length, inputs.length);
      results.forEach((r, i) => {
        assert.equal(r.created, true);
        assert.deepEqual(r.job.payload, { i, n: inputs[i].priority });
        assert.equal(r.job.name, `task-${i}`);
        assert.equal(r.job.queue, inputs[i].queue);
      });
      assert.equal(new Set(ids(results.map((r) => r.job))).size, inputs.length, "distinct ids");
      assert.deepEqual(await store.insertJobs([]), []);
    });

    it("a key repeated within one batch creates one job", async (store) => {
      const results = await store.insertJobs([
        newJob({ key: "dup", payload: { n: 1 } }),
        newJob({ key: "other", payload: { n: 2 } }),
        newJob({ key: "dup", payload: { n: 3 } }),
      ]);
      assert.deepEqual(
        results.map((r) => r.created),
        [true, true, false],
      );
      assert.equal(results[2].job.id, results[0].job.id);
      assert.deepEqual(results[2].job.payload, { n: 1 });
      assert.equal((await store.listJobs({ limit: 100 })).jobs.length, 2);
    });

    it("with payloadJson, stores that text and never serialises payload again", async (store) => {
      // A payload that throws if serialised: the store must take the text it was given.
      const handedOver = {
        toJSON() {
          throw new Error("payload serialised again");
        },
      };
      const [r] = await store.insertJobs([
        newJob({ payload: handedOver, payloadJson: '{"text":"as given","n":[1,2]}' }),
      ]);
      assert.equal(r.created, true);
      assert.deepEqual((await mustGet(store, r.job.id)).payload, { text: "as given", n: [1, 2] });
      // Records are the caller's: changing one changes neither the store nor another record.
      const [a, b] = await store.insertJobs([
        newJob({ payload: { v: [1] }, payloadJson: '{"v":[1]}' }),
        newJob({ payload: { v: [2] } }),
      ]);
      (a.job.payload as { v: number[] }).v.push(9);
      (b.job.payload as { v: number[] }).v.push(9);
      a.job.runAt.setTime(0);
      assert.deepEqual((await mustGet(store, a.job.id)).payload, { v: [1] });
      assert.deepEqual((await mustGet(store, b.job.id)).payload, { v: [2] });
      assert.notEqual((await mustGet(store, a.job.id)).runAt.getTime(), 0);
    });

    it("a batch of 12,000 spanning several statements: input order, keys colliding across them", async (store) => {
      // 0-4,999 without keys; then every third job without key and the others keyed
      // `key-(i mod 4,500)`: the key of 5,002 comes back at 9,502 (the same statement on Postgres,
      // 5,000 rows each), the key of 5,501 at 10,001 (the next one). Every tenth job is at a
      // fixed time, every tenth delayed.
      const t0 = await nowMs(store);
      const at = new Date(t0 + 3_600_000);
      const keyOf = (i: number) => (i < 5_000 || i % 3 === 0 ? null : `key-${i % 4_500}`);
      const inputs = Array.from({ length: 12_000 }, (_, i) =>
        newJob({
          payload: { i },
          // Half the jobs come as errand's enqueue sends them, with their JSON text.
          ...(i % 2 ? { payloadJson: JSON.stringify({ i }) } : {}),
          key: keyOf(i),
          ...(i % 10 === 1 ? { runAt: at } : {}),
          ...(i % 10 === 2 ? { delayMs: 60_000 } : {}),
          priority: i % 3,
        }),
      );
      const results = await store.insertJobs(inputs);
      assert.equal(results.length, inputs.length);
      const firstOfKey = new Map<string, number>();
      let lastNewId = -1n;
      let created = 0;
      results.forEach((r, i) => {
        const key = keyOf(i);
        const first = key === null ? undefined : firstOfKey.get(key);
        if (first === undefined) {
          if (key !== null) firstOfKey.set(key, i);
          assert.equal(r.created, true, `job ${i} created`);
          assert.deepEqual(r.job.payload, { i });
          assert.equal(r.job.key, key);
          assert.equal(r.job.priority, i % 3);
          assert.ok(BigInt(r.job.id) > lastNewId, `job ${i}: ids follow input order`);
          lastNewId = BigInt(r.job.id);
          created++;
        } else {
          assert.equal(r.created, false, `job ${i} repeats the key of job ${first}`);
          assert.equal(r.job.id, results[first].job.id);
          assert.deepEqual(r.job.payload, { i: first });
        }
      });
      assert.equal(created, 7_333 + 3_000, "every job without key, one per key");
      assert.equal(results[9_502].job.id, results[5_002].job.id);
      assert.equal(results[10_001].job.id, results[5_501].job.id);
      for (const i of [0, 1, 2, 5_002, 9_502, 5_501, 10_001, 11_999]) {
        const job = results[i].job;
        assert.deepEqual(await store.getJob(job.id), job, `job ${i} as stored`);
      }
      assert.equal(results[1].job.runAt.getTime(), at.getTime());
      assertWithin(results[2].job.runAt, t0 + 60_000, (await nowMs(store)) + 60_000, "runAt of delayMs");
      const [stats] = await store.stats();
      assert.equal(stats.pending + stats.delayed, created, "stats count every new job once");
      assert.equal(stats.delayed, 2_067, "the new jobs at a fixed time or delayed");
    });
  });

  // ------------------------------------------------------------ 2. idempotency

  describe("idempotency keys", () => {
    it("the same (queue, key) returns the existing job and creates nothing", async (store) => {
      const first = await insertOne(store, { key: "welcome-1", payload: { v: 1 } });
      const [again] = await store.insertJobs([newJob({ key: "welcome-1", payload: { v: 2 }, priority: 9 })]);
      assert.equal(again.created, false);
      assert.equal(again.job.id, first.id);
      assert.deepEqual(again.job.payload, { v: 1 });
      assert.equal(again.job.priority, 0);
      const page = await store.listJobs({ limit: 100 });
      assert.deepEqual(ids(page.jobs), [first.id]);
    });

    it("the same key on another queue creates a new job; null keys never collide", async (store) => {
      const a = await insertOne(store, { queue: "a", key: "k" });
      const [b] = await store.insertJobs([newJob({ queue: "b", key: "k" })]);
      assert.equal(b.created, true);
      assert.notEqual(b.job.id, a.id);
      const nulls = await store.insertJobs([newJob({ key: null }), newJob({ key: null }), newJob()]);
      assert.deepEqual(
        nulls.map((r) => r.created),
        [true, true, true],
      );
      assert.equal((await store.listJobs({ limit: 100 })).jobs.length, 5);
    });

    it("a key still matches a finished job", async (store) => {
      const job = await insertOne(store, { key: "once" });
      const c = await claimOne(store);
      assert.equal(await finish(store, c, "completed"), true);
      const [again] = await store.insertJobs([newJob({ key: "once" })]);
      assert.equal(again.created, false);
      assert.equal(again.job.id, job.id);
      assert.equal(again.job.state, "completed");
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("20 concurrent inserts with one key create exactly one job", async (store) => {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.insertJobs([newJob({ key: "race", payload: { i } })])),
      );
      const flat = results.map((r) => r[0]);
      assert.equal(flat.filter((r) => r.created).length, 1, "exactly one created");
      assert.equal(new Set(flat.map((r) => r.job.id)).size, 1, "all got the same job");
      assert.equal((await store.listJobs({ queue: "q", limit: 100 })).jobs.length, 1);
    });
  });

  // ------------------------------------------------------------ 3. claim order

  describe("claimJobs", () => {
    /** The same layout in a queue: the expected claim order is B E C A D F. */
    async function layout(store: Store, queue: string): Promise<string[]> {
      const base = (await nowMs(store)) - 10_000;
      const insert = async (label: string, priority: number, offset: number) =>
        (await insertOne(store, { queue, name: label, priority, runAt: new Date(base + offset) })).id;
      const A = await insert("A", 0, 2);
      const B = await insert("B", 5, 3);
      const C = await insert("C", 0, 1);
      const D = await insert("D", 0, 2); // same priority and run_at as A, inserted after it
      const E = await insert("E", 5, 3); // same as B, inserted after it
      const F = await insert("F", -1, 0);
      return [B, E, C, A, D, F];
    }

    it("takes higher priority first, then earlier run_at, then insertion order", async (store) => {
      const expected = await layout(store, "one-by-one");
      const got: string[] = [];
      for (let i = 0; i < expected.length; i++) got.push((await claimOne(store, "one-by-one")).id);
      assert.deepEqual(got, expected);
      assert.deepEqual(
        await store.claimJobs({ queue: "one-by-one", limit: 1, workerId: "w1", leaseMs: 60_000 }),
        [],
      );

      const expected2 = await layout(store, "all-at-once");
      const all = await store.claimJobs({
        queue: "all-at-once",
        limit: 100,
        workerId: "w1",
        leaseMs: 60_000,
      });
      assert.deepEqual(ids(all), expected2, "one claim returns its jobs in order");
    });

    it("priority never preempts: a running job stays running when a higher one arrives", async (store) => {
      await insertOne(store, { priority: 0 });
      const low = await claimOne(store);
      const high = await insertOne(store, { priority: 100 });
      assert.equal((await mustGet(store, low.id)).state, "running");
      assert.equal((await claimOne(store)).id, high.id);
    });

    it("does not claim a delayed job before it is due, then does", async (store) => {
      const later = await insertOne(store, { delayMs: 150 });
      await insertOne(store, { delayMs: 3_600_000 });
      const early = await store.claimJobs({ queue: "q", limit: 10, workerId: "w1", leaseMs: 60_000 });
      const t1 = await nowMs(store);
      // Only meaningful if the claim surely ran before run_at (a loaded machine may be slower than 150 ms).
      if (t1 < later.runAt.getTime()) assert.deepEqual(early, [], "nothing due yet");
      const claimed =
        early.length > 0
          ? early
          : await poll("the delayed job to become due", async () => {
              const got = await store.claimJobs({ queue: "q", limit: 10, workerId: "w1", leaseMs: 60_000 });
              return got.length ? got : undefined;
            });
      assert.deepEqual(ids(claimed), [later.id], "the job an hour ahead is never claimed");
      const stored = await mustGet(store, later.id);
      assert.ok(
        stored.startedAt && stored.startedAt.getTime() >= later.runAt.getTime(),
        "claimed no earlier than run_at",
      );
    });

    it("respects limit and leaves other queues untouched", async (store) => {
      for (let i = 0; i < 5; i++) await insertOne(store, { queue: "mine", payload: { i } });
      const other = await insertOne(store, { queue: "other" });
      assert.deepEqual(
        await store.claimJobs({ queue: "mine", limit: 0, workerId: "w1", leaseMs: 60_000 }),
        [],
      );
      const two = await store.claimJobs({ queue: "mine", limit: 2, workerId: "w1", leaseMs: 60_000 });
      assert.equal(two.length, 2);
      const rest = await store.claimJobs({ queue: "mine", limit: 10, workerId: "w1", leaseMs: 60_000 });
      assert.equal(rest.length, 3);
      assert.deepEqual(
        await store.claimJobs({ queue: "nobody", limit: 10, workerId: "w1", leaseMs: 60_000 }),
        [],
      );
      const untouched = await mustGet(store, other.id);
      assert.equal(untouched.state, "pending");
      assert.equal(untouched.attempt, 0);
    });

    it("charges an attempt, locks the job and hands out a lease", async (store) => {
      const job = await insertOne(store, {
        queue: "q",
        name: "n",
        payload: { a: [1] },
        priority: 3,
        maxAttempts: 5,
        key: "k",
      });
      const t0 = await nowMs(store);
      const c = await claimOne(store, "q", 60_000, "worker-7");
      const t1 = await nowMs(store);
      assert.equal(c.id, job.id);
      assert.equal(c.queue, "q");
      assert.equal(c.name, "n");
      assert.deepEqual(c.payload, { a: [1] });
      assert.equal(c.priority, 3);
      assert.equal(c.attempt, 1);
      assert.equal(c.maxAttempts, 5);
      assert.equal(c.key, "k");
      assert.equal(c.runAt.getTime(), job.runAt.getTime());
      assert.equal(c.createdAt.getTime(), job.createdAt.getTime());
      assert.equal(typeof c.leaseToken, "number");
      assertWithin(c.lockedUntil, t0 + 60_000, t1 + 60_000, "lockedUntil");

      const stored = await mustGet(store, job.id);
      assert.equal(stored.state, "running");
      assert.equal(stored.attempt, 1);
      assert.equal(stored.lockedBy, "worker-7");
      assert.equal(stored.lockedUntil?.getTime(), c.lockedUntil.getTime());
      assertWithin(stored.startedAt, t0, t1, "startedAt");
      assert.deepEqual(stored.attempts, [], "history grows when an attempt ends, not when it starts");
    });

    it("concurrent claims never return the same job", async (store) => {
      await store.insertJobs(Array.from({ length: 10 }, (_, i) => newJob({ payload: { i } })));
      const batches = await Promise.all(
        Array.from({ length: 4 }, (_, w) =>
          store.claimJobs({ queue: "q", limit: 3, workerId: `w${w}`, leaseMs: 60_000 }),
        ),
      );
      const seen = batches.flat().map((c) => c.id);
      assert.equal(new Set(seen).size, seen.length, "no job claimed twice");
      assert.ok(seen.length <= 10);
      const rest = await store.claimJobs({ queue: "q", limit: 10, workerId: "w9", leaseMs: 60_000 });
      const all = [...seen, ...ids(rest)];
      assert.equal(new Set(all).size, 10, "every job claimed exactly once");
      assert.equal(all.length, 10);
    });
  });

  // ------------------------------------------------------------ 4. fencing

  describe("fencing by lease token", () => {
    it("a stale token (after rescue and re-claim) changes nothing; the current token works", async (store) => {
      const job = await insertOne(store, { maxAttempts: 5 });
      const stale = await claimOne(store, "q", 30, "old-worker");
      await rescue(store, job.id);
      const current = await claimOne(store, "q", 60_000, "new-worker");
      assert.equal(current.id, job.id);
      assert.equal(current.attempt, 2);
      assert.notEqual(current.leaseToken, stale.leaseToken, "a fresh lease token");
      const before = await mustGet(store, job.id);

      for (const kind of ["completed", "retry", "failed", "snoozed", "released", "cancelled"] as const) {
        assert.equal(
          await finish(store, stale, kind, { result: "stale" }),
          false,
          `stale ${kind} is fenced off`,
        );
      }
      const [status] = await store.extendLeases([stale], 60_000);
      assert.deepEqual({ id: status.id, held: status.held }, { id: job.id, held: false });
      assert.equal(await store.setProgress(stale, { fraction: 0.5, message: "stale" }), false);
      const [applied] = await store.finishJobs([{ ...stale, kind: "completed", worker: "old-worker" }]);
      assert.equal(applied, false);
      assert.deepEqual(await mustGet(store, job.id), before, "nothing changed");

      // The current holder is unaffected.
      assert.equal(await store.setProgress(current, { fraction: 0.25, message: "a quarter" }), true);
      assert.deepEqual((await mustGet(store, job.id)).progress, { fraction: 0.25, message: "a quarter" });
      const [held] = await store.extendLeases([current], 60_000);
      assert.equal(held.held, true);
      assert.equal(await finish(store, current, "completed", { result: 42, worker: "new-worker" }), true);
      const done = await mustGet(store, job.id);
      assert.equal(done.state, "completed");
      assert.equal(done.result, 42);
    });

    it("a finished job's token is dead; a batch applies each outcome on its own", async (store) => {
      await store.insertJobs([newJob({ payload: 1 }), newJob({ payload: 2 }), newJob({ payload: 3 })]);
      const [a, b, c] = await store.claimJobs({ queue: "q", limit: 3, workerId: "w1", leaseMs: 60_000 });
      assert.equal(await finish(store, b, "completed"), true);
      const applied = await store.finishJobs([
        { id: a.id, leaseToken: a.leaseToken, kind: "completed", worker: "w1" },
        { id: b.id, leaseToken: b.leaseToken, kind: "failed", worker: "w1" },
        { id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "w1" },
        { id: c.id, leaseToken: c.leaseToken, kind: "failed", worker: "w1" },
      ]);
      assert.deepEqual(applied, [true, false, true, false]);
      assert.equal((await mustGet(store, b.id)).state, "completed");
      assert.equal((await mustGet(store, b.id)).attempts.length, 1);
      assert.equal((await mustGet(store, c.id)).state, "completed");
      assert.equal(await store.setProgress(b, { fraction: 1 }), false);
      assert.equal((await store.extendLeases([b], 60_000))[0].held, false);
      assert.equal((await store.extendLeases([{ id: "999999999", leaseToken: 1 }], 60_000))[0].held, false);
    });
  });

  describe("finishJobs: one job twice in a batch", () => {
    it("a stale lease and the current one of the same job: only the current applies, in either order", async (store) => {
      for (const staleFirst of [true, false]) {
        const job = await insertOne(store, { payload: staleFirst ? "stale first" : "current first" });
        const [old] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w1", leaseMs: 60_000 });
        assert.equal(old?.id, job.id);
        assert.equal(await store.returnJobs([old as ClaimedJob]), 1);
        const [now] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w2", leaseMs: 60_000 });
        assert.equal(now?.id, job.id);
        assert.notEqual(now?.leaseToken, old?.leaseToken);
        const stale = {
          id: job.id,
          leaseToken: (old as ClaimedJob).leaseToken,
          kind: "failed" as const,
          worker: "w1",
        };
        const current = {
          id: job.id,
          leaseToken: (now as ClaimedJob).leaseToken,
          kind: "completed" as const,
          worker: "w2",
        };
        const applied = await store.finishJobs(staleFirst ? [stale, current] : [current, stale]);
        assert.deepEqual(applied, staleFirst ? [false, true] : [true, false]);
        const done = await mustGet(store, job.id);
        assert.equal(done.state, "completed");
        assert.equal(done.attempts.at(-1)?.worker, "w2");
      }
    });
  });

  describe("returnJobs (claimed, never started)", () => {
    it("puts jobs back as if never claimed: same place in line, attempt not counted, no history", async (store) => {
      const first = await insertOne(store, { payload: "first" });
      const second = await insertOne(store, { payload: "second" });
      const before = await mustGet(store, first.id);
      const claimed = await store.claimJobs({ queue: "q", limit: 2, workerId: "w1", leaseMs: 60_000 });
      assert.deepEqual(
        claimed.map((c) => c.id),
        [first.id, second.id],
      );
      assert.equal(await store.returnJobs(claimed), 2);
      const after = await mustGet(store, first.id);
      assert.equal(after.state, "pending");
      assert.equal(after.attempt, 0);
      assert.deepEqual(after.attempts, []);
      assert.equal(after.startedAt, null);
      assert.equal(after.lockedBy, null);
      assert.equal(after.lockedUntil, null);
      assert.equal(after.runAt.getTime(), before.runAt.getTime(), "run_at kept");
      // Claimed again, in the same order, with fresh tokens; the returned tokens are dead.
      const again = await store.claimJobs({ queue: "q", limit: 2, workerId: "w2", leaseMs: 60_000 });
      assert.deepEqual(
        again.map((c) => [c.id, c.attempt]),
        [
          [first.id, 1],
          [second.id, 1],
        ],
      );
      assert.notEqual(again[0].leaseToken, claimed[0].leaseToken);
      assert.equal(await store.returnJobs(claimed), 0, "stale tokens return nothing");
      assert.equal((await mustGet(store, first.id)).state, "running");
    });

    it("keeps earlier attempts: a retried job returned keeps its history and attempt count", async (store) => {
      const job = await insertOne(store, { maxAttempts: 5 });
      const c1 = await claimOne(store);
      assert.equal(
        await finish(store, c1, "retry", { delayMs: 0, error: { message: "flaky", kind: "retryable" } }),
        true,
      );
      const c2 = await claimOne(store);
      assert.equal(c2.attempt, 2);
      assert.equal(await store.returnJobs([c2]), 1);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 1);
      assert.equal(j.attempts.length, 1);
      assert.equal(j.attempts[0].outcome, "retried");
      assert.equal((await claimOne(store)).attempt, 2);
    });

    it("a job whose cancel was requested while it waited ends cancelled", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      await store.cancelJob(job.id);
      const t0 = await nowMs(store);
      assert.equal(await store.returnJobs([c]), 1);
      const t1 = await nowMs(store);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "cancelled");
      assert.equal(j.cancelRequested, false);
      assert.equal(j.attempt, 0);
      assertWithin(j.finishedAt, t0, t1, "finishedAt");
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("ignores finished jobs, unknown ids and an empty list", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      assert.equal(await finish(store, c, "completed"), true);
      assert.equal(await store.returnJobs([c, { id: "999999999", leaseToken: 1 }]), 0);
      assert.equal(await store.returnJobs([]), 0);
      assert.equal((await mustGet(store, job.id)).state, "completed");
    });
  });

  // ------------------------------------------------------------ 5. outcomes

  describe("finishJobs outcomes", () => {
    it("completed: result, finishedAt and a history entry", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store, "q", 60_000, "w-done");
      const started = (await mustGet(store, job.id)).startedAt;
      const t0 = await nowMs(store);
      const result = { sent: true, ids: [1, 2], note: "ok ✓" };
      assert.equal(await finish(store, c, "completed", { result, worker: "w-done" }), true);
      const t1 = await nowMs(store);
      const done = await mustGet(store, job.id);
      assert.equal(done.state, "completed");
      assert.deepEqual(done.result, result);
      assert.equal(done.attempt, 1);
      assertWithin(done.finishedAt, t0, t1, "finishedAt");
      assert.equal(done.lockedBy, null);
      assert.equal(done.lockedUntil, null);
      assert.equal(done.attempts.length, 1);
      const h = done.attempts[0];
      assert.equal(h.attempt, 1);
      assert.equal(h.outcome, "completed");
      assert.equal(h.worker, "w-done");
      assert.equal(Date.parse(h.startedAt), started?.getTime());
      assertWithin(h.finishedAt, t0, t1, "history finishedAt");
      assert.equal(h.error, undefined);
    });

    it("retry: pending again at now + delay, attempt still charged, error in history", async (store) => {
      const job = await insertOne(store, { maxAttempts: 3 });
      const c = await claimOne(store);
      const t0 = await nowMs(store);
      const error = {
        message: "smtp said 451",
        stack: "Error: smtp said 451\n    at send",
        kind: "retryable" as const,
      };
      assert.equal(await finish(store, c, "retry", { delayMs: 60_000, error }), true);
      const t1 = await nowMs(store);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 1, "the failed attempt stays charged");
      assertWithin(j.runAt, t0 + 60_000, t1 + 60_000, "runAt");
      assert.equal(j.lastError, "smtp said 451");
      assert.equal(j.finishedAt, null);
      assert.equal(j.lockedBy, null);
      assert.equal(j.attempts.length, 1);
      const h = j.attempts[0];
      assert.equal(h.outcome, "retried");
      assert.equal(h.attempt, 1);
      assert.equal(h.error, "smtp said 451");
      assert.equal(h.stack, error.stack);
      assert.equal(h.kind, "retryable");
      assert.equal(Date.parse(h.retryAt ?? ""), j.runAt.getTime());
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("retry with no delay is due at once and the next claim is attempt 2", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      assert.equal(await finish(store, c, "retry", { error: { message: "boom", kind: "unknown" } }), true);
      const again = await claimOne(store);
      assert.equal(again.id, job.id);
      assert.equal(again.attempt, 2);
    });

    it("failed: into the dead-letter queue with its error", async (store) => {
      const job = await insertOne(store, { payload: { keep: "me" } });
      const c = await claimOne(store);
      const t0 = await nowMs(store);
      assert.equal(
        await finish(store, c, "failed", { error: { message: "bad address", kind: "permanent" } }),
        true,
      );
      const t1 = await nowMs(store);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "failed");
      assert.equal(j.lastError, "bad address");
      assert.deepEqual(j.payload, { keep: "me" });
      assertWithin(j.finishedAt, t0, t1, "finishedAt");
      assert.deepEqual(
        j.attempts.map((h) => [h.outcome, h.error, h.kind]),
        [["failed", "bad address", "permanent"]],
      );
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("snoozed: pending at now + delay, attempt not charged", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      const t0 = await nowMs(store);
      assert.equal(await finish(store, c, "snoozed", { delayMs: 30_000 }), true);
      const t1 = await nowMs(store);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 0);
      assertWithin(j.runAt, t0 + 30_000, t1 + 30_000, "runAt");
      assert.deepEqual(
        j.attempts.map((h) => [h.outcome, h.attempt]),
        [["snoozed", 1]],
      );
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("released: pending now, attempt not charged, recorded as interrupted", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      const t0 = await nowMs(store);
      assert.equal(await finish(store, c, "released", { worker: "shutting-down" }), true);
      const t1 = await nowMs(store);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 0);
      assertWithin(j.runAt, t0, t1, "runAt");
      assert.deepEqual(
        j.attempts.map((h) => [h.outcome, h.worker]),
        [["interrupted", "shutting-down"]],
      );
      const again = await claimOne(store);
      assert.equal(again.id, job.id);
      assert.equal(again.attempt, 1, "the interrupted execution was not charged");
    });

    it("cancelled: terminal with a history entry", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      assert.equal(await finish(store, c, "cancelled"), true);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "cancelled");
      assert.ok(j.finishedAt);
      assert.deepEqual(
        j.attempts.map((h) => h.outcome),
        ["cancelled"],
      );
    });

    it("a cancel requested while running turns a retry into cancelled; a completion stays completed", async (store) => {
      const [r1, r2] = await store.insertJobs([newJob({ payload: 1 }), newJob({ payload: 2 })]);
      const [c1, c2] = await store.claimJobs({ queue: "q", limit: 2, workerId: "w1", leaseMs: 60_000 });
      assert.deepEqual([c1.id, c2.id], [r1.job.id, r2.job.id]);
      for (const c of [c1, c2]) {
        const requested = await store.cancelJob(c.id);
        assert.equal(requested?.state, "running");
        assert.equal(requested?.cancelRequested, true);
      }
      assert.equal(
        await finish(store, c1, "retry", { error: { message: "aborted", kind: "cancelled" } }),
        true,
      );
      assert.equal(await finish(store, c2, "completed", { result: "did it anyway" }), true);
      const j1 = await mustGet(store, c1.id);
      assert.equal(j1.state, "cancelled");
      assert.deepEqual(
        j1.attempts.map((h) => h.outcome),
        ["cancelled"],
      );
      assert.equal(j1.cancelRequested, false);
      const j2 = await mustGet(store, c2.id);
      assert.equal(j2.state, "completed");
      assert.equal(j2.result, "did it anyway");
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("maxAttempts counts executions: snooze and release are free, retry and lost are charged", async (store) => {
      const job = await insertOne(store, { maxAttempts: 2 });
      let c = await claimOne(store);
      assert.deepEqual([c.attempt, c.maxAttempts], [1, 2]);
      assert.equal(await finish(store, c, "snoozed", { delayMs: 0 }), true);
      c = await claimOne(store);
      assert.equal(c.attempt, 1);
      assert.equal(await finish(store, c, "released"), true);
      c = await claimOne(store);
      assert.equal(c.attempt, 1);
      assert.equal(
        await finish(store, c, "retry", { delayMs: 0, error: { message: "e1", kind: "unknown" } }),
        true,
      );
      c = await claimOne(store, "q", 30);
      assert.equal(c.attempt, 2, "the last allowed attempt");
      const rescued = await rescue(store, job.id);
      assert.equal(rescued.state, "failed", "a lost last attempt spends the budget");
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "failed");
      assert.equal(j.attempt, 2);
      assert.deepEqual(
        j.attempts.map((h) => [h.outcome, h.attempt]),
        [
          ["snoozed", 1],
          ["interrupted", 1],
          ["retried", 1],
          ["lost", 2],
        ],
      );
    });
  });

  // ------------------------------------------------------------ 6. leases

  describe("leases and the rescuer", () => {
    it("extendLeases moves lockedUntil and keeps a job from being rescued", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store, "q", 40);
      const t0 = await nowMs(store);
      const [status] = await store.extendLeases([c], 60_000);
      const t1 = await nowMs(store);
      assert.deepEqual(status, { id: job.id, held: true, cancelRequested: false });
      assertWithin((await mustGet(store, job.id)).lockedUntil, t0 + 60_000, t1 + 60_000, "lockedUntil");
      await sleep(60); // past the original 40 ms lease
      assert.deepEqual(
        (await store.rescueExpiredLeases()).filter((r) => r.id === job.id),
        [],
      );
      assert.equal((await mustGet(store, job.id)).state, "running");
      // Shorten it again: now the rescuer takes it.
      assert.equal((await store.extendLeases([c], 30))[0].held, true);
      assert.equal((await rescue(store, job.id)).state, "pending");
    });

    it("rescues an expired lease to pending: outcome lost, attempt charged, old token dead", async (store) => {
      const job = await insertOne(store, { queue: "mail", name: "send", maxAttempts: 3 });
      const longer = await insertOne(store, { queue: "mail", name: "send" });
      const c = await claimOne(store, "mail", 30, "dying-worker");
      const kept = await claimOne(store, "mail", 60_000, "live-worker");
      assert.equal(kept.id, longer.id);
      const t0 = await nowMs(store);
      const rescued = await rescue(store, job.id);
      const t1 = await nowMs(store);
      assert.deepEqual(rescued, { id: job.id, queue: "mail", name: "send", state: "pending", attempt: 1 });
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 1);
      assert.equal(j.lockedBy, null);
      assert.equal(j.lockedUntil, null);
      // Due again at once, queued behind jobs already waiting (run_at = the rescue time, like a retry without delay).
      assertWithin(j.runAt, t0, t1, "runAt");
      assert.equal(j.attempts.length, 1);
      const h = j.attempts[0];
      assert.equal(h.outcome, "lost");
      assert.equal(h.attempt, 1);
      assert.equal(h.worker, "dying-worker");
      assert.ok(j.lastError, "lastError says the lease was lost");
      // The live lease was not touched.
      assert.equal((await mustGet(store, longer.id)).state, "running");
      assert.deepEqual(await store.rescueExpiredLeases(), []);
      // The old holder is fenced off.
      assert.equal(await finish(store, c, "completed"), false);
      assert.equal((await store.extendLeases([c], 60_000))[0].held, false);
      const again = await claimOne(store, "mail");
      assert.equal(again.id, job.id);
      assert.equal(again.attempt, 2);
    });

    it("rescues to failed when attempts are spent", async (store) => {
      const job = await insertOne(store, { maxAttempts: 1 });
      await claimOne(store, "q", 30);
      const rescued = await rescue(store, job.id);
      assert.equal(rescued.state, "failed");
      assert.equal(rescued.attempt, 1);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "failed");
      assert.ok(j.finishedAt);
      assert.ok(j.lastError);
      assert.deepEqual(
        j.attempts.map((h) => h.outcome),
        ["lost"],
      );
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });

    it("a cancel-requested job whose lease expires is cancelled", async (store) => {
      const job = await insertOne(store, { maxAttempts: 5 });
      await claimOne(store, "q", 30);
      assert.equal((await store.cancelJob(job.id))?.cancelRequested, true);
      const rescued = await rescue(store, job.id);
      assert.equal(rescued.state, "cancelled");
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "cancelled");
      assert.ok(j.finishedAt);
      assert.deepEqual(await store.claimJobs({ queue: "q", limit: 5, workerId: "w1", leaseMs: 60_000 }), []);
    });
  });

  // ------------------------------------------------------------ 7. cancelJob

  describe("cancelJob", () => {
    it("cancels a pending job at once", async (store) => {
      const job = await insertOne(store, { delayMs: 60_000 });
      const t0 = await nowMs(store);
      const cancelled = await store.cancelJob(job.id);
      const t1 = await nowMs(store);
      assert.equal(cancelled?.id, job.id);
      assert.equal(cancelled?.state, "cancelled");
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "cancelled");
      assertWithin(j.finishedAt, t0, t1, "finishedAt");
      assert.equal(j.attempt, 0);
    });

    it("requests cancellation of a running job; the holder sees it at its next heartbeat", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      assert.deepEqual(await store.extendLeases([c], 60_000), [
        { id: job.id, held: true, cancelRequested: false },
      ]);
      const r = await store.cancelJob(job.id);
      assert.equal(r?.state, "running");
      assert.equal(r?.cancelRequested, true);
      assert.equal((await mustGet(store, job.id)).cancelRequested, true);
      assert.deepEqual(await store.extendLeases([c], 60_000), [
        { id: job.id, held: true, cancelRequested: true },
      ]);
    });

    it("leaves finished jobs alone; an unknown id is null", async (store) => {
      await insertOne(store);
      const c = await claimOne(store);
      await finish(store, c, "completed", { result: 1 });
      const r = await store.cancelJob(c.id);
      assert.equal(r?.state, "completed");
      assert.equal((await mustGet(store, c.id)).state, "completed");
      assert.equal(await store.cancelJob("999999999"), null);
    });
  });

  // ------------------------------------------------------------ 8. retryJobs / discardJobs

  describe("retryJobs and discardJobs", () => {
    /** Makes a failed job in `queue` with one history entry. */
    async function failedJob(store: Store, queue: string): Promise<string> {
      const job = await insertOne(store, { queue, payload: { queue } });
      const c = await claimOne(store, queue);
      assert.equal(c.id, job.id);
      assert.equal(
        await finish(store, c, "failed", { error: { message: `broken in ${queue}`, kind: "permanent" } }),
        true,
      );
      return job.id;
    }

    it("retryJobs by ids: failed → pending now, fresh attempt budget, history kept", async (store) => {
      const f1 = await failedJob(store, "a");
      const f2 = await failedJob(store, "a");
      const t0 = await nowMs(store);
      assert.equal(await store.retryJobs({ ids: [f1] }), 1);
      const t1 = await nowMs(store);
      const j = await mustGet(store, f1);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 0);
      assertWithin(j.runAt, t0, t1, "runAt");
      assert.equal(j.finishedAt, null);
      assert.deepEqual(
        j.attempts.map((h) => [h.outcome, h.error]),
        [["failed", "broken in a"]],
      );
      assert.equal((await mustGet(store, f2)).state, "failed", "only the given ids");
      const again = await claimOne(store, "a");
      assert.equal(again.id, f1);
      assert.equal(again.attempt, 1);
    });

    it("retryJobs by queue takes that queue's failed jobs only: cancelled ones stay cancelled", async (store) => {
      const a1 = await failedJob(store, "a");
      const a2 = await failedJob(store, "a");
      const b1 = await failedJob(store, "b");
      const cancelled = await insertOne(store, { queue: "a" });
      await store.cancelJob(cancelled.id);
      const pending = await insertOne(store, { queue: "a", delayMs: 60_000 });
      const done = await insertOne(store, { queue: "c" });
      await finish(store, await claimOne(store, "c"), "completed");
      assert.equal(await store.retryJobs({ queue: "a" }), 2);
      for (const id of [a1, a2]) assert.equal((await mustGet(store, id)).state, "pending");
      assert.equal((await mustGet(store, cancelled.id)).state, "cancelled", "cancelled is not in the DLQ");
      assert.equal((await mustGet(store, b1)).state, "failed");
      assert.equal(await store.retryJobs({ ids: [cancelled.id] }), 1, "a cancelled job is retried by id");
      assert.equal((await mustGet(store, cancelled.id)).state, "pending");
      assert.equal(await store.retryJobs({}), 1, "all queues: b's failed job");
      assert.equal((await mustGet(store, b1)).state, "pending");
      assert.equal(
        (await mustGet(store, pending.id)).runAt.getTime(),
        pending.runAt.getTime(),
        "pending untouched",
      );
      assert.equal(await store.retryJobs({ ids: [done.id] }), 0, "a completed job is not retried");
      assert.equal((await mustGet(store, done.id)).state, "completed");
      assert.equal(await store.retryJobs({ ids: ["999999999"] }), 0);
    });

    it("discardJobs deletes failed jobs only", async (store) => {
      const a1 = await failedJob(store, "a");
      const a2 = await failedJob(store, "a");
      const b1 = await failedJob(store, "b");
      const pending = await insertOne(store, { queue: "a", delayMs: 60_000 });
      const done = await insertOne(store, { queue: "a", key: "done" });
      await finish(store, await claimOne(store, "a"), "completed");
      assert.equal(await store.discardJobs({ ids: [a1, done.id, pending.id] }), 1);
      assert.equal(await store.getJob(a1), null);
      assert.equal((await mustGet(store, done.id)).state, "completed");
      assert.equal(await store.discardJobs({ queue: "a" }), 1);
      assert.equal(await store.getJob(a2), null);
      assert.equal((await mustGet(store, b1)).state, "failed");
      assert.equal((await mustGet(store, pending.id)).state, "pending");
      assert.equal(await store.discardJobs({ queue: "a" }), 0);
    });

    it("ids are never reused, even after the newest job is deleted", async (store) => {
      const older = await insertOne(store);
      const newest = await insertOne(store, { queue: "doomed" });
      await finish(store, await claimOne(store, "doomed"), "failed", {
        error: { message: "x", kind: "permanent" },
      });
      assert.equal(await store.discardJobs({ ids: [newest.id] }), 1);
      const next = await insertOne(store);
      assert.ok(![older.id, newest.id].includes(next.id), `a fresh id, not ${next.id} again`);
      assert.equal(await store.getJob(newest.id), null, "the deleted id stays unknown");
      assert.deepEqual(ids((await store.listJobs({})).jobs), [next.id, older.id], "newest first");
    });

    it("a discarded job's key can be used again", async (store) => {
      const job = await insertOne(store, { key: "k" });
      await finish(store, await claimOne(store), "failed", { error: { message: "x", kind: "permanent" } });
      assert.equal(await store.discardJobs({ ids: [job.id] }), 1);
      const [again] = await store.insertJobs([newJob({ key: "k" })]);
      assert.equal(again.created, true);
      assert.notEqual(again.job.id, job.id);
    });
  });

  // ------------------------------------------------------------ 9. pruneFinished

  describe("pruneFinished", () => {
    it("prunes completed and cancelled past completedAgeMs, failed past failedAgeMs, never pending or running", async (store) => {
      const [done, cancelled, failed, pending, running] = (
        await store.insertJobs([
          newJob({ queue: "done" }),
          newJob({ queue: "cancelled" }),
          newJob({ queue: "failed" }),
          newJob({ queue: "pending", runAt: new Date(Date.UTC(2000, 0, 1)) }),
          newJob({ queue: "running" }),
        ])
      ).map((r) => r.job.id);
      await finish(store, await claimOne(store, "done"), "completed");
      await finish(store, await claimOne(store, "cancelled"), "cancelled");
      await finish(store, await claimOne(store, "failed"), "failed", {
        error: { message: "x", kind: "permanent" },
      });
      await claimOne(store, "running");

      // Everything finished just now: a long retention keeps it.
      assert.equal(await store.pruneFinished({ completedAgeMs: 60_000, failedAgeMs: 60_000 }), 0);
      await sleep(40);
      assert.equal(await store.pruneFinished({ completedAgeMs: 10, failedAgeMs: 3_600_000 }), 2);
      assert.equal(await store.getJob(done), null);
      assert.equal(await store.getJob(cancelled), null);
      assert.equal((await mustGet(store, failed)).state, "failed", "the dead-letter queue is kept longer");
      assert.equal(await store.pruneFinished({ completedAgeMs: 3_600_000, failedAgeMs: 10 }), 1);
      assert.equal(await store.getJob(failed), null);
      assert.equal(await store.pruneFinished({ completedAgeMs: 0, failedAgeMs: 0 }), 0);
      assert.equal((await mustGet(store, pending)).state, "pending");
      assert.equal((await mustGet(store, running)).state, "running");
    });
  });

  // ------------------------------------------------------------ 10. listJobs, stats, throughput

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

  // ------------------------------------------------------------ 11. ledger and completeInTransaction

  describe("ledger and completeInTransaction", () => {
    it("ledgerGet/ledgerPut: a duplicate put keeps the first value", async (store) => {
      assert.deepEqual(await store.ledgerGet("welcome:101"), { found: false });
      const value = { messageId: "m-1", to: ["a@example.com"], meta: { n: 1, ok: true } };
      await store.ledgerPut("welcome:101", "1", value);
      assert.deepEqual(await store.ledgerGet("welcome:101"), { found: true, value });
      await store.ledgerPut("welcome:101", "2", { messageId: "m-2" });
      assert.deepEqual(await store.ledgerGet("welcome:101"), { found: true, value });
      await store.ledgerPut("no-value", "1", undefined);
      const nothing = await store.ledgerGet("no-value");
      assert.equal(nothing.found, true, "a side effect that returned nothing is still recorded");
      assert.equal(nothing.value ?? null, null);
      // Two workers racing on one key: neither put fails, one value wins for good.
      await Promise.all([store.ledgerPut("race", "1", "v1"), store.ledgerPut("race", "2", "v2")]);
      const raced = await store.ledgerGet("race");
      assert.equal(raced.found, true);
      assert.ok(raced.value === "v1" || raced.value === "v2", `value ${String(raced.value)}`);
      await store.ledgerPut("race", "3", "v3");
      assert.deepEqual(await store.ledgerGet("race"), raced);
    });

    it("completeInTransaction completes the job with the value as result", async (store) => {
      const job = await insertOne(store);
      const c = await claimOne(store);
      let calls = 0;
      const r = await store.completeInTransaction(c, "w-tx", async () => {
        calls++;
        return { wrote: 3 };
      });
      assert.deepEqual(r, { applied: true, value: { wrote: 3 } });
      assert.equal(calls, 1);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "completed");
      assert.deepEqual(j.result, { wrote: 3 });
      assert.deepEqual(
        j.attempts.map((h) => [h.outcome, h.worker]),
        [["completed", "w-tx"]],
      );
      assert.equal(await finish(store, c, "completed"), false, "the lease is gone");
    });

    it("completeInTransaction with a stale lease applies nothing; a throwing fn leaves the job running", async (store) => {
      const job = await insertOne(store);
      const stale = await claimOne(store, "q", 30);
      await rescue(store, job.id);
      const current = await claimOne(store);
      const r = await store.completeInTransaction(stale, "w-old", () => "nope");
      assert.equal(r.applied, false);
      const j = await mustGet(store, job.id);
      assert.equal(j.state, "running");
      assert.equal(j.attempt, 2);
      assert.equal(j.attempts.length, 1);

      await assert.rejects(
        store.completeInTransaction(current, "w1", () => {
          throw new Error("business write failed");
        }),
        /business write failed/,
      );
      const after = await mustGet(store, job.id);
      assert.equal(after.state, "running");
      assert.equal(after.attempts.length, 1);
      assert.equal(
        await finish(store, current, "retry", {
          error: { message: "business write failed", kind: "unknown" },
        }),
        true,
      );
    });
  });

  // ------------------------------------------------------------ 12. schedules

  describe("schedules", () => {
    it("upsert, list, remove; every field round-trips", async (store) => {
      const s = schedule("nightly", { timezone: "Europe/Berlin", priority: 4, missed: "all", source: "cli" });
      await store.upsertSchedule(s);
      await store.upsertSchedule(schedule("hourly", { cron: "0 * * * *" }));
      const list = await store.listSchedules();
      assert.deepEqual(list.map((x) => x.name).sort(), ["hourly", "nightly"]);
      const got = list.find((x) => x.name === "nightly");
      assert.ok(got);
      const { lastFiredAt, lastSlot, createdAt, ...rest } = got;
      assert.deepEqual(rest, s);
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
        schedule("kept", { nextRunAt: T2, payload: { v: "new" }, priority: 7 }), // same cron + timezone
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

  // ------------------------------------------------------------ 13. workers registry

  describe("workers registry", () => {
    it("register, heartbeat, stale workers drop out, unregister", async (store) => {
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

      await sleep(150);
      // w-2 last beat ≥ 150 ms ago, so a 100 ms window never holds it; w-1 beats right before
      // each look (retried in case a loaded machine lets 100 ms pass between the two calls).
      const live = await poll("w-1 to be listed right after its heartbeat", async () => {
        await store.heartbeatWorker("w-1", 2, 17);
        const seen = await store.listWorkers(100);
        assert.ok(!seen.some((w) => w.id === "w-2"), "w-2 has not beaten for 150 ms: stale");
        return seen.length > 0 ? seen : undefined;
      });
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

  // ------------------------------------------------------------ 14. onJobsAvailable

  describe("onJobsAvailable", () => {
    it("calls listeners after an insert of a due job; unsubscribe stops it", async (store) => {
      const a: Array<string | null> = [];
      const b: Array<string | null> = [];
      const offA = store.onJobsAvailable((q) => a.push(q));
      const offB = store.onJobsAvailable((q) => b.push(q));
      try {
        await insertOne(store, { queue: "wake" });
        await poll("listener a to be called", async () => a.length > 0);
        await poll("listener b to be called", async () => b.length > 0);
        for (const q of [...a, ...b]) assert.ok(q === "wake" || q === null, `queue ${q}`);
        offA();
        const seenA = a.length;
        const seenB = b.length;
        await insertOne(store, { queue: "wake" });
        await poll("listener b to be called again", async () => b.length > seenB);
        await sleep(20);
        assert.equal(a.length, seenA, "an unsubscribed listener is not called");
      } finally {
        offA();
        offB();
      }
    });
  });

  // ------------------------------------------------------------ 15. nextRunAt

  describe("nextRunAt", () => {
    it("is the earliest pending run_at of the given queues", async (store) => {
      const t = await nowMs(store);
      await insertOne(store, { queue: "a", runAt: new Date(t + 10_000) });
      await insertOne(store, { queue: "a", runAt: new Date(t + 20_000) });
      await insertOne(store, { queue: "b", runAt: new Date(t + 5_000) });
      await insertOne(store, { queue: "c", runAt: new Date(t + 1_000) });
      // A running job is not pending.
      await insertOne(store, { queue: "b", runAt: new Date(t - 1_000) });
      await claimOne(store, "b");
      assert.equal((await store.nextRunAt(["a", "b"]))?.getTime(), t + 5_000);
      assert.equal((await store.nextRunAt(["a"]))?.getTime(), t + 10_000);
      assert.equal((await store.nextRunAt(["c", "a"]))?.getTime(), t + 1_000);
      assert.equal(await store.nextRunAt(["zzz"]), null);
      assert.equal(await store.nextRunAt([]), null);
    });
  });
}

// ---------------------------------------------------------------- checked arguments

/**
 * src/store/checked.ts wraps every store errand opens: the arguments it refuses are refused the
 * same way on every backend (before, `throughput(1h, 0)` threw on Postgres and answered NaN buckets
 * in memory), and a refused call changes nothing.
 */
for (const factory of stores) {
  describe(`${factory.name}: arguments checked by checkedStore`, { skip: factory.skip || false }, () => {
    const itChecked = (title: string, fn: (store: Store) => Promise<void>) =>
      test(title, async () => {
        const { store, cleanup } = await factory.open();
        try {
          await fn(checkedStore(store));
        } finally {
          await cleanup();
        }
      });

    itChecked(
      "refuses bad arguments with a ValidationError naming them, and changes nothing",
      async (store) => {
        const waiting = await insertOne(store, { queue: "q" });
        const dead = await insertOne(store, { queue: "dlq" });
        await finish(store, await claimOne(store, "dlq"), "failed", {
          error: { message: "x", kind: "permanent" },
        });
        const refused: Array<[string, () => Promise<unknown>, RegExp]> = [
          ["throughput bucket 0", () => store.throughput(3_600_000, 0), /bucketMs/],
          ["throughput bucket NaN", () => store.throughput(3_600_000, Number.NaN), /bucketMs/],
          ["throughput since < 0", () => store.throughput(-1, 60_000), /sinceMs/],
          [
            "claim limit 0",
            () => store.claimJobs({ queue: "q", limit: 0, workerId: "w1", leaseMs: 60_000 }),
            /limit/,
          ],
          [
            "claim limit 1.5",
            () => store.claimJobs({ queue: "q", limit: 1.5, workerId: "w1", leaseMs: 60_000 }),
            /limit/,
          ],
          [
            "claim lease 0",
            () => store.claimJobs({ queue: "q", limit: 1, workerId: "w1", leaseMs: 0 }),
            /leaseMs/,
          ],
          [
            "claim lease < 0",
            () => store.claimJobs({ queue: "q", limit: 1, workerId: "w1", leaseMs: -5 }),
            /leaseMs/,
          ],
          [
            "claim no queue",
            () => store.claimJobs({ queue: "", limit: 1, workerId: "w1", leaseMs: 60_000 }),
            /queue/,
          ],
          ["extend lease < 0", () => store.extendLeases([], -1), /leaseMs/],
          ["listWorkers NaN", () => store.listWorkers(Number.NaN), /staleMs/],
          [
            "prune age < 0",
            () => store.pruneFinished({ completedAgeMs: -1, failedAgeMs: 0 }),
            /completedAgeMs/,
          ],
          [
            "prune age Infinity",
            () => store.pruneFinished({ completedAgeMs: 0, failedAgeMs: Infinity }),
            /failedAgeMs/,
          ],
          ["listJobs limit 0", () => store.listJobs({ limit: 0 }), /limit/],
          [
            "retry ids not an array",
            () => store.retryJobs({ ids: dead.id as never }),
            /ids must be an array/,
          ],
          ["discard ids holding null", () => store.discardJobs({ ids: [null as never] }), /ids/],
          ["discard queue not a string", () => store.discardJobs({ queue: 5 as never }), /queue/],
          ["getJob without id", () => store.getJob(undefined as never), /job id/],
        ];
        for (const [what, call, message] of refused) {
          await assert.rejects(call, (err: Error) => {
            assert.ok(err instanceof ValidationError, `${what}: a ValidationError, got ${err}`);
            assert.match(err.message, message, what);
            return true;
          });
        }
        assert.equal((await store.getJob(waiting.id))?.state, "pending", "no refused claim took the job");
        assert.equal(
          (await store.getJob(dead.id))?.state,
          "failed",
          "no refused retry or discard touched the DLQ",
        );
      },
    );

    itChecked("accepts a job id given as a number, and a well-formed call as before", async (store) => {
      const job = await insertOne(store, { queue: "q" });
      assert.ok(/^\d+$/.test(job.id), `ids are decimal strings here: ${job.id}`);
      assert.equal((await store.getJob(Number(job.id) as never))?.id, job.id);
      assert.deepEqual(await store.throughput(3_600_000, 60_000), []);
      assert.equal(
        (await store.claimJobs({ queue: "q", limit: 1, workerId: "w1", leaseMs: 60_000 })).length,
        1,
      );
    });
  });
}
