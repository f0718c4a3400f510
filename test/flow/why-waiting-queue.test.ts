/**
 * "Why isn't my job running?" for the limits of a whole queue, on every store: a job held back by
 * `globalConcurrency`, by a queue-wide rate window, or by its queue's budget paused by a
 * rate-limited answer of a job without a key is told so (key null, the queue named) — the
 * per-key reasons are in ./why-waiting.test.ts. The state is made with the store's own claims
 * and pauses, so nothing waits on a worker.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob, type Errand } from "../../src/index.js";
import type { WaitReason } from "../../src/waiting.js";
import { targets, withErrand } from "../helpers/targets.js";

const schema = z.object({ n: z.number() });
const capped = defineJob({ name: "capped", queue: "capped", schema, globalConcurrency: 2, run: () => {} });
const paced = defineJob({
  name: "paced",
  queue: "paced",
  schema,
  rateLimit: { limit: 2, per: "1m" },
  run: () => {},
});

async function reason<K extends WaitReason["kind"]>(errand: Errand, id: string, kind: K) {
  const reasons = (await errand.whyWaiting(id)) ?? [];
  const found = reasons.find((r) => r.kind === kind);
  assert.ok(found, `a "${kind}" reason; got ${reasons.map((r) => r.kind).join(", ")}`);
  return found as Extract<WaitReason, { kind: K }>;
}

const claim = (errand: Errand, queue: string, flow: object) =>
  errand.store.claimFlowJobs({ queue, limit: 10, workerId: "w", leaseMs: 600_000, flow });

for (const target of targets) {
  describe(`why a job waits for its queue's limits: ${target.name}`, {
    skip: target.skip || undefined,
  }, () => {
    test("globalConcurrency reached: the queue runs n jobs, its limit", () =>
      withErrand(
        target,
        async (errand) => {
          await errand.enqueueMany(capped, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
          const third = await errand.enqueue(capped, { n: 3 });
          assert.equal((await claim(errand, "capped", { globalConcurrency: 2 })).jobs.length, 2);
          const r = await reason(errand, third.id, "concurrency-capped");
          assert.equal(r.key, null);
          assert.match(r.message, /^queue "capped" runs 2 jobs, its concurrency limit of 2$/);
        },
        { jobs: [capped] },
      ));

    test("a queue-wide rate window full: named with when the next may start", () =>
      withErrand(
        target,
        async (errand) => {
          await errand.enqueueMany(paced, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
          const third = await errand.enqueue(paced, { n: 3 });
          const before = (await errand.store.now()).getTime();
          assert.equal((await claim(errand, "paced", { rate: { limit: 2, perMs: 60_000 } })).jobs.length, 2);
          const r = await reason(errand, third.id, "rate-limited");
          assert.equal(r.key, null);
          const wait = r.until.getTime() - before;
          assert.ok(
            wait > 55_000 && wait <= 61_000,
            `the window frees a minute after the claims (${wait} ms)`,
          );
        },
        { jobs: [paced] },
      ));

    test("the queue's budget paused by a rate-limited answer of a job without a key", () =>
      withErrand(
        target,
        async (errand) => {
          const job = await errand.enqueue(capped, { n: 1 });
          await errand.store.pauseFlow({ queue: "capped", key: null, ms: 600_000 });
          const r = await reason(errand, job.id, "flow-paused");
          assert.equal(r.key, null);
          assert.match(r.message, /^the budget of queue "capped" is paused by a rate-limited answer until /);
        },
        { jobs: [capped] },
      ));
  });
}
