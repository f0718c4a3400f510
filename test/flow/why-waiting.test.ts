/**
 * "Why isn't my job running?" for flow control: errand.whyWaiting names the limit that holds a
 * due job back — its key's concurrency cap (with how many run), its key's rate window (with when
 * the next may start) or its key's budget paused by a rate-limited answer — on every store.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob, RetryableError } from "../../src/index.js";
import type { WaitReason } from "../../src/waiting.js";
import { targets } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";

const schema = z.object({ tenant: z.string(), n: z.number() });
const byTenant = (p: { tenant: string }) => p.tenant;

for (const target of targets) {
  describe(`why a job waits under flow control: ${target.name}`, {
    skip: target.skip,
    timeout: 60_000,
  }, () => {
    test("a key's concurrency cap, its rate window and its paused budget are each named", async () => {
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const serial = defineJob({
        name: "serial",
        queue: "serial",
        schema,
        concurrency: { key: byTenant, limit: 1 },
        run: () => held,
      });
      const paced = defineJob({
        name: "paced",
        queue: "paced",
        schema,
        rateLimit: { limit: 1, per: "1m", key: byTenant },
        run: () => {},
      });
      const api = defineJob({
        name: "api",
        queue: "api",
        schema,
        maxAttempts: 5,
        rateLimit: { limit: 100, per: "1s", key: byTenant },
        run: ({ tenant }) => {
          if (tenant === "t4") return; // another key: its budget stays open
          throw new RetryableError("429 from the API", { rateLimited: true, retryAfter: "1m" });
        },
      });
      const { errand, cleanup } = await target.openErrand({ jobs: [serial, paced, api] });
      const pausedByTheApi = new Promise<void>((resolve) => errand.once("flowPaused", () => resolve()));
      const reasons = async <K extends WaitReason["kind"]>(id: string, kind: K) =>
        waitFor(
          async () =>
            ((await errand.whyWaiting(id))?.find((r) => r.kind === kind) as Extract<
              WaitReason,
              { kind: K }
            >) ?? null,
          `a "${kind}" reason for job ${id}`,
          15_000,
        );
      try {
        const [, serialSecond] = await Promise.all([
          errand.enqueue(serial, { tenant: "t1", n: 1 }),
          errand.enqueue(serial, { tenant: "t1", n: 2 }),
        ]);
        const pacedFirst = await errand.enqueue(paced, { tenant: "t2", n: 1 });
        const pacedSecond = await errand.enqueue(paced, { tenant: "t2", n: 2 });
        await errand.enqueue(api, { tenant: "t3", n: 1 }); // answered with a 429
        const worker = errand.work(
          { serial: { concurrency: 5 }, paced: { concurrency: 5 }, api: { concurrency: 5 } },
          { pollInterval: 50 },
        );
        try {
          const capped = await reasons(serialSecond.id, "concurrency-capped");
          assert.deepEqual(
            {
              key: capped.key,
              running: (capped as { running: number }).running,
              limit: (capped as { limit: number }).limit,
            },
            { key: "t1", running: 1, limit: 1 },
          );
          assert.match(capped.message, /key "t1" of queue "serial" runs 1 job, its concurrency limit of 1/);

          await waitFor(
            async () => (await errand.getJob(pacedFirst.id))?.state === "completed",
            "the first paced job",
          );
          const limited = await reasons(pacedSecond.id, "rate-limited");
          assert.equal(limited.key, "t2");
          const until = limited.until.getTime();
          const first = (await errand.getJob(pacedFirst.id))?.startedAt?.getTime() ?? 0;
          assert.ok(
            Math.abs(until - (first + 60_000)) < 5_000,
            `the window frees a minute after the first start (${until - first} ms)`,
          );

          await pausedByTheApi; // the first api job's 429 paused key t3's budget
          const apiSecond = await errand.enqueue(api, { tenant: "t3", n: 2 });
          const paused = await reasons(apiSecond.id, "flow-paused");
          assert.equal(paused.key, "t3");
          assert.match(
            paused.message,
            /budget of key "t3" of queue "api" is paused by a rate-limited answer until/,
          );
          // Another key's job runs while t3's budget is paused. (Asking whyWaiting about it raced
          // the worker: once claimed and answered with a 429 it paused its own key's budget.)
          const other = await errand.enqueue(api, { tenant: "t4", n: 1 });
          await waitFor(
            async () => (await errand.getJob(other.id))?.state === "completed",
            "another key's job runs while t3's budget is paused",
          );
          assert.equal(
            (await errand.whyWaiting(apiSecond.id))?.some((r) => r.kind === "flow-paused"),
            true,
            "t3's budget is still paused",
          );
        } finally {
          release();
          await worker.stop();
        }
      } finally {
        await cleanup();
      }
    });
  });
}
