/**
 * The SQLite flow claim's short path (store/sqlite/flow.ts, claimUnkeyed): a queue with no
 * pending job that has a flow key, whose limits leave room for the whole claim, is claimed with
 * CLAIM_JOBS instead of being planned. It must take what the plan would — the first due jobs in
 * claim order, as claimJobs takes them — and still write the claim to the rate log.
 *
 *   node --import tsx --test test/sqlite-flow-claim.test.ts
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ClaimedJob, FlowLimits, NewJob } from "../src/store/types.js";
import { fresh } from "./helpers/sqlite.js";

const job = (i: number, over: Partial<NewJob> = {}): NewJob => ({
  queue: "q",
  name: "n",
  payload: { i },
  priority: i % 3,
  maxAttempts: 3,
  ...over,
});
/** Twelve due jobs over three priorities, one not due yet. */
const JOBS = [...Array.from({ length: 12 }, (_, i) => job(i)), job(12, { priority: 9, delayMs: 60_000 })];
const order = (jobs: ClaimedJob[]) => jobs.map((j) => (j.payload as { i: number }).i);

for (const flow of [
  { globalConcurrency: 1000 },
  { rate: { limit: 1000, perMs: 60_000 } },
  { globalConcurrency: 1000, rate: { limit: 1000, perMs: 60_000 } },
] satisfies FlowLimits[]) {
  test(`a limit that does not bind claims what claimJobs claims, in its order: ${JSON.stringify(flow)}`, async (t) => {
    const plain = (await fresh(t)).store;
    const limited = (await fresh(t)).store;
    await plain.insertJobs(JOBS);
    await limited.insertJobs(JOBS);
    const req = { queue: "q", limit: 5, workerId: "w", leaseMs: 60_000 };
    for (let round = 0; round < 3; round++) {
      const expected = await plain.claimJobs(req);
      const claim = await limited.claimFlowJobs({ ...req, flow });
      assert.deepEqual(order(claim.jobs), order(expected), `round ${round}`);
      assert.deepEqual(
        claim.jobs.map((j) => j.flowKey),
        claim.jobs.map(() => null),
      );
      assert.equal(claim.held, 0);
      assert.equal(claim.retryInMs, null);
    }
  });
}

test("claims taken on the short path count in the rate window", async (t) => {
  const { store } = await fresh(t);
  await store.insertJobs(Array.from({ length: 10 }, (_, i) => job(i)));
  const flow = { rate: { limit: 5, perMs: 60_000 } };
  const req = { queue: "q", workerId: "w", leaseMs: 60_000, flow };
  assert.equal((await store.claimFlowJobs({ ...req, limit: 3 })).jobs.length, 3, "room 5 for a claim of 3");
  const second = await store.claimFlowJobs({ ...req, limit: 3 });
  assert.equal(second.jobs.length, 2, "the window holds 3 claims already");
  assert.equal(second.held, 1);
  const third = await store.claimFlowJobs({ ...req, limit: 3 });
  assert.equal(third.jobs.length, 0, "the window is full");
  assert.ok(third.retryInMs !== null && third.retryInMs > 0, `retryInMs ${third.retryInMs}`);
  const status = await store.flowStatus({ queue: "q", windowMs: 60_000 });
  assert.equal(status.claims.get("")?.length, 5);
});

test("a keyed pending job sends the claim to the plan: the keys rotate", async (t) => {
  const { store } = await fresh(t);
  await store.insertJobs([
    job(0, { priority: 0 }),
    job(1, { priority: 0 }),
    job(2, { priority: 0, flowKey: "k" }),
  ]);
  const { jobs } = await store.claimFlowJobs({
    queue: "q",
    limit: 2,
    workerId: "w",
    leaseMs: 60_000,
    flow: { globalConcurrency: 1000 },
  });
  // claimJobs would take jobs 0 and 1; the plan takes one of the keyless group, then key k's.
  assert.deepEqual(order(jobs), [0, 2]);
  assert.deepEqual(
    jobs.map((j) => j.flowKey),
    [null, "k"],
  );
});

// The per-key walk reads each key's head (its first pending job in claim order); a claim that
// needs one job per key takes the head without reading the key again — but only a due head.
test("a key whose first pending job is not due yet gives its first due one", async (t) => {
  const { store } = await fresh(t);
  const keys = ["k0", "k1", "k2", "k3"];
  await store.insertJobs(
    keys.flatMap((flowKey, k) => [
      job(10 * k, { flowKey, priority: 9, delayMs: 60_000 }),
      job(10 * k + 1, { flowKey, priority: 0 }),
      job(10 * k + 2, { flowKey, priority: 0 }),
    ]),
  );
  const req = { queue: "q", limit: 4, workerId: "w", leaseMs: 60_000, flow: { keyConcurrency: 100 } };
  const claim = await store.claimFlowJobs(req);
  assert.deepEqual(order(claim.jobs), [1, 11, 21, 31], "one due job per key, in rotation");
  assert.deepEqual(
    claim.jobs.map((j) => j.flowKey),
    keys,
  );
  const next = await store.claimFlowJobs(req);
  assert.deepEqual(order(next.jobs), [2, 12, 22, 32], "the delayed heads stay pending");
});
