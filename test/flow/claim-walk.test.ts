/**
 * The Postgres flow claim decides as migration 11's function did, claim by claim, over seeded
 * random queues built to reach every branch of the key walk (sql/flow-claim-function.ts, rewritten
 * by migration 12): keys whose first job in claim order is not due while later ones are (a
 * high-priority job scheduled later), keys with no due job, few keys with a share of several
 * jobs each, the rotation wrapping past the last key, keys without room (their jobs counted in
 * `held`), paused keys and queues, per-key and queue rate windows, the keyless group (null and
 * ''), and running jobs finished between claims. Each claim's jobs (in order), `held`, and
 * whether `retryInMs` is set must be what claim-walk.expected.json recorded from migration 11's
 * function (commit ffbe8d0).
 *
 * The memory store is no oracle here: it counts `held` over all of a key's due jobs where the
 * SQL stores count their candidates, and it fills a claim from a key's later rounds where the
 * Postgres candidates (a share per key) can leave the claim short (seed 30: 7 jobs, not 8).
 *
 *   node --import tsx --test test/flow/claim-walk.test.ts
 *   RECORD=1 node --import tsx --test test/flow/claim-walk.test.ts   (rewrites the expected file)
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { describe, test } from "node:test";
import { checkedStore } from "../../src/store/checked.js";
import type { ClaimedJob, FlowLimits, NewJob, Store } from "../../src/store/types.js";
import { type StoreFactory, stores } from "../conformance/stores.js";

const SCENARIOS = 40;
const CLAIMS = 10;

/** mulberry32: the same scenario from the same seed, on every store. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Scenario {
  jobs: NewJob[];
  flow: FlowLimits;
  pauses: (string | null)[];
  /** Per claim: its limit, and which running jobs (by a draw each) finish after it. */
  claims: { limit: number; finishDraws: number[] }[];
}

function scenario(seed: number, now: number): Scenario {
  const r = random(seed);
  const pick = <T>(list: T[]): T => list[Math.floor(r() * list.length)];
  const keyCount = 1 + Math.floor(r() * 12);
  const keys: (string | null)[] = Array.from(
    { length: keyCount },
    (_, i) => `k${String(i).padStart(2, "0")}`,
  );
  if (r() < 0.4) keys.push(null);
  if (r() < 0.3) keys.push("");
  const jobs: NewJob[] = [];
  for (const key of keys) {
    const n = 1 + Math.floor(r() * 6);
    const laterOnly = r() < 0.15; // a key with no due job
    for (let i = 0; i < n; i++) {
      const later = laterOnly || r() < 0.3;
      jobs.push({
        queue: "q",
        name: "task",
        payload: { i: 0, key },
        priority: pick([0, 0, 5]),
        maxAttempts: 3,
        // Explicit times, the same on every store: due ones spread over the last minute (claim
        // order within a priority), later ones an hour ahead.
        runAt: new Date(later ? now + 3_600_000 + i : now - 60_000 + Math.floor(r() * 50_000)),
        flowKey: key,
      });
    }
  }
  // Shuffled, so ids (the last tie-break) do not follow keys.
  for (let i = jobs.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [jobs[i], jobs[j]] = [jobs[j], jobs[i]];
  }
  jobs.forEach((job, i) => {
    job.payload = { i, key: job.flowKey };
  });
  const flow: FlowLimits = {};
  if (r() < 0.7) flow.keyConcurrency = pick([1, 2, 3, 100]);
  if (r() < 0.3) flow.globalConcurrency = pick([3, 8, 100]);
  if (r() < 0.3) flow.keyRate = { limit: pick([1, 2, 4]), perMs: 3_600_000 };
  if (r() < 0.2) flow.rate = { limit: pick([5, 12]), perMs: 3_600_000 };
  if (Object.keys(flow).length === 0) flow.keyConcurrency = 100;
  const pauses = r() < 0.25 ? [pick(keys.filter((k) => k !== ""))] : [];
  const claims = Array.from({ length: CLAIMS }, () => ({
    limit: pick([1, 2, 3, 5, 8, 20]),
    finishDraws: Array.from({ length: 30 }, () => r()),
  }));
  return { jobs, flow, pauses, claims };
}

interface Outcome {
  jobs: number[];
  held: number;
  retries: boolean;
}

/** Runs one scenario on a fresh store: each claim's outcome. */
async function run(factory: StoreFactory, s: Scenario): Promise<Outcome[]> {
  const opened = await factory.open();
  try {
    const store: Store = checkedStore(opened.store);
    await store.insertJobs(s.jobs);
    for (const key of s.pauses) await store.pauseFlow({ queue: "q", key, ms: 3_600_000 });
    let running: ClaimedJob[] = [];
    const outcomes: Outcome[] = [];
    for (const [n, claim] of s.claims.entries()) {
      const got = await store.claimFlowJobs({
        queue: "q",
        limit: claim.limit,
        workerId: `w${n}`,
        leaseMs: 600_000,
        flow: s.flow,
      });
      outcomes.push({
        jobs: got.jobs.map((j) => (j.payload as { i: number }).i),
        held: got.held,
        retries: got.retryInMs !== null,
      });
      // Finish about half the running jobs, chosen by the scenario's draws (in payload order).
      running = [...running, ...got.jobs].sort(
        (a, b) => (a.payload as { i: number }).i - (b.payload as { i: number }).i,
      );
      const done = running.filter((_, i) => claim.finishDraws[i % claim.finishDraws.length] < 0.5);
      running = running.filter((j) => !done.includes(j));
      if (done.length > 0) {
        await store.finishJobs(
          done.map((j) => ({ id: j.id, leaseToken: j.leaseToken, kind: "completed" as const, worker: "w" })),
        );
      }
    }
    return outcomes;
  } finally {
    await opened.cleanup();
  }
}

const postgres = stores.find((f) => f.name === "postgres") as StoreFactory;
const expectedFile = new URL("./claim-walk.expected.json", import.meta.url);

describe("flow_claim decides as migration 11's function did (PostgreSQL)", {
  skip: postgres.skip || undefined,
}, () => {
  test(`${SCENARIOS} seeded random queues, ${CLAIMS} claims each`, async () => {
    const now = Date.now();
    const outcomes: Record<string, Outcome[]> = {};
    let sawFirstNotDue = 0;
    for (let seed = 1; seed <= SCENARIOS; seed++) {
      const s = scenario(seed, now);
      outcomes[seed] = await run(postgres, s);
      // The scenarios must reach the branch the walk treats apart: a key whose first job in
      // claim order is not due while a later one is.
      const byKey = new Map<string | null | undefined, NewJob[]>();
      for (const job of s.jobs) byKey.set(job.flowKey, [...(byKey.get(job.flowKey) ?? []), job]);
      for (const [key, list] of byKey) {
        if (key === null || key === "") continue;
        const first = [...list].sort(
          (a, b) => b.priority - a.priority || Number(a.runAt) - Number(b.runAt),
        )[0];
        if (Number(first.runAt) > now && list.some((j) => Number(j.runAt) <= now)) sawFirstNotDue++;
      }
    }
    assert.ok(sawFirstNotDue >= 5, `keys whose first job is not due: ${sawFirstNotDue}`);
    if (process.env.RECORD === "1") writeFileSync(expectedFile, `${JSON.stringify(outcomes)}\n`);
    const expected = JSON.parse(readFileSync(expectedFile, "utf8")) as Record<string, Outcome[]>;
    for (let seed = 1; seed <= SCENARIOS; seed++) {
      assert.deepEqual(
        outcomes[seed],
        expected[seed],
        `seed ${seed}: ${JSON.stringify(scenario(seed, now).flow)}`,
      );
    }
  });
});
