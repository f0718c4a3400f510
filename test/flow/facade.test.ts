/**
 * Flow control through errand's API, in one process: what defineJob, enqueue and work refuse
 * (bad input is a ValidationError naming it, nothing stored), a worker held to the limits, the
 * adaptive pause of a rate-limited answer, the 429 reading, and the metrics.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { retryAfterOf429 } from "../../src/errors.js";
import { errandMetrics } from "../../src/http/metrics.js";
import { defineJob, RetryableError, ValidationError } from "../../src/index.js";
import { targets } from "../helpers/errands.js";
import { waitFor } from "../helpers/wait.js";

const schema = z.object({ tenant: z.string(), ms: z.number().optional() });
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe("defineJob refuses bad flow options with a ValidationError naming them", () => {
  const base = { name: "job", queue: "q", schema, run: () => {} };
  const bad: [string, Record<string, unknown>, RegExp][] = [
    ["zero", { globalConcurrency: 0 }, /globalConcurrency must be a positive integer/],
    ["fraction", { globalConcurrency: 1.5 }, /globalConcurrency must be a positive integer/],
    ["string", { globalConcurrency: "3" }, /globalConcurrency must be a positive integer/],
    ["no key", { concurrency: { limit: 2 } }, /concurrency needs a key function/],
    [
      "key not a function",
      { concurrency: { key: "tenant", limit: 2 } },
      /concurrency.key must be a function/,
    ],
    [
      "negative limit",
      { concurrency: { key: () => "k", limit: -1 } },
      /concurrency.limit must be a positive integer/,
    ],
    ["rate limit 0", { rateLimit: { limit: 0, per: "1s" } }, /rateLimit.limit must be a positive integer/],
    ["rate limit fraction", { rateLimit: { limit: 2.5, per: "1s" } }, /rateLimit.limit .*; got 2\.5$/],
    ["rate limit negative", { rateLimit: { limit: -3, per: "1s" } }, /rateLimit.limit .*; got -3$/],
    // JSON.stringify writes NaN and Infinity as null: the message must name the value given.
    ["rate limit NaN", { rateLimit: { limit: Number.NaN, per: "1s" } }, /rateLimit.limit .*; got NaN$/],
    ["concurrency Infinity", { globalConcurrency: Infinity }, /globalConcurrency .*; got Infinity$/],
    ["concurrency 10 million", { globalConcurrency: 1e7 }, /\(1 to 1000000\); got 10000000$/],
    ["a fortnight", { rateLimit: { limit: 5, per: "1 fortnight" } }, /rateLimit.per .*; got "1 fortnight"$/],
    ["negative period", { rateLimit: { limit: 5, per: -1000 } }, /rateLimit.per must be a non-negative/],
    [
      "period over a day",
      { rateLimit: { limit: 5, per: "2d" } },
      /rateLimit.per must be from 1ms to 1d; got "2d"/,
    ],
    ["no period", { rateLimit: { limit: 5 } }, /rateLimit.per must be/],
    ["bad duration", { rateLimit: { limit: 5, per: "soon" } }, /rateLimit.per must be/],
    ["zero period", { rateLimit: { limit: 5, per: 0 } }, /rateLimit.per must be from 1ms to 1d/],
    [
      "two keys",
      { concurrency: { key: () => "a", limit: 1 }, rateLimit: { limit: 5, per: "1s", key: () => "b" } },
      /the same function/,
    ],
  ];
  for (const [what, options, message] of bad) {
    test(what, () => {
      assert.throws(
        () => defineJob({ ...base, ...options } as never),
        (err: unknown) => {
          assert.ok(err instanceof ValidationError);
          assert.match(err.message, message);
          assert.match(err.message, /job "job"/);
          return true;
        },
      );
    });
  }
});

for (const target of targets.filter((t) => t.name !== "postgres")) {
  describe(`flow control through the API: ${target.name}`, () => {
    test("a key function that throws or returns a non-string refuses that enqueue, storing nothing", async () => {
      const job = defineJob({
        name: "keyed",
        queue: "keyed",
        schema,
        concurrency: {
          key: (p) => {
            if (p.tenant === "boom") throw new Error("no tenant");
            return (p.tenant === "number" ? 42 : p.tenant) as string;
          },
          limit: 1,
        },
        run: () => {},
      });
      const { errand, cleanup } = await target.open({ jobs: [job] });
      try {
        await assert.rejects(
          errand.enqueue(job, { tenant: "boom" }),
          /flow key function of job "keyed" threw: no tenant/,
        );
        await assert.rejects(
          errand.enqueue(job, { tenant: "number" }),
          /the flow key of job "keyed" \(from its key function\) must be a non-empty string of at most 512 characters; got 42/,
        );
        await assert.rejects(errand.enqueue(job, { tenant: "" }), ValidationError);
        await assert.rejects(
          errand.enqueueMany(job, [{ payload: { tenant: "fine" } }, { payload: { tenant: "boom" } }]),
          /item 1/,
        );
        assert.equal((await errand.listJobs({})).jobs.length, 0, "nothing stored");
      } finally {
        await cleanup();
      }
    });

    test("work() refuses a queue whose definitions declare different limits", async () => {
      const a = defineJob({ name: "a", queue: "shared", schema, globalConcurrency: 2, run: () => {} });
      const b = defineJob({ name: "b", queue: "shared", schema, globalConcurrency: 3, run: () => {} });
      const { errand, cleanup } = await target.open({ jobs: [a, b] });
      try {
        assert.throws(
          () => errand.work({ shared: {} }),
          /queue "shared": jobs "a" and "b" declare different globalConcurrency/,
        );
      } finally {
        await cleanup();
      }
    });

    test("a worker of concurrency 10 runs at most globalConcurrency jobs, and per key at most its limit", async () => {
      let running = 0;
      let peak = 0;
      const perTenant = new Map<string, number>();
      let tenantPeak = 0;
      const job = defineJob({
        name: "limited",
        queue: "limited",
        schema,
        globalConcurrency: 3,
        concurrency: { key: (p) => p.tenant, limit: 1 },
        async run(p) {
          running++;
          perTenant.set(p.tenant, (perTenant.get(p.tenant) ?? 0) + 1);
          peak = Math.max(peak, running);
          tenantPeak = Math.max(tenantPeak, perTenant.get(p.tenant) as number);
          await sleep(20);
          running--;
          perTenant.set(p.tenant, (perTenant.get(p.tenant) as number) - 1);
        },
      });
      const { errand, cleanup } = await target.open({ jobs: [job] });
      const metrics = errandMetrics(errand); // counts from now on
      const throttled: number[] = [];
      errand.on("throttled", (t) => throttled.push(t.held));
      try {
        const payloads = Array.from({ length: 24 }, (_, i) => ({ payload: { tenant: `t${i % 4}` } }));
        await errand.enqueueMany(job, payloads);
        const worker = errand.work({ limited: { concurrency: 10 } }, { pollInterval: "50ms" });
        await waitFor(
          async () => (await errand.stats()).find((s) => s.queue === "limited")?.completed === 24,
          "all done",
          20_000,
        );
        await worker.stop();
        assert.equal(peak, 3, "the global limit is reached, never passed");
        assert.equal(tenantPeak, 1, "one job per tenant at a time");
        assert.ok(throttled.length > 0, "throttled claims are reported");
        const scraped = await metrics.scrape();
        assert.match(scraped, /errand_flow_throttled_claims_total\{queue="limited"\} [1-9]/);
        const heldTotal = throttled.reduce((a, b) => a + b, 0);
        assert.match(scraped, new RegExp(`errand_flow_held_jobs_total\\{queue="limited"\\} ${heldTotal}\n`));
      } finally {
        await cleanup();
      }
    });

    test("a rate-limited answer pauses that key for every job of it; other keys go on", async () => {
      const starts: { tenant: string; at: number }[] = [];
      let limitedAt = 0;
      const job = defineJob({
        name: "api",
        queue: "api",
        schema,
        rateLimit: { limit: 1000, per: "1s", key: (p) => p.tenant },
        run(p) {
          starts.push({ tenant: p.tenant, at: Date.now() });
          if (p.tenant === "a" && limitedAt === 0) {
            limitedAt = Date.now();
            throw new RetryableError("429", { rateLimited: true, retryAfter: "400ms" });
          }
        },
      });
      const { errand, cleanup } = await target.open({ jobs: [job] });
      const pauses: unknown[] = [];
      errand.on("flowPaused", (p) => pauses.push(p));
      try {
        await errand.enqueueMany(job, [
          ...Array.from({ length: 20 }, () => ({ payload: { tenant: "a" } })),
          ...Array.from({ length: 20 }, () => ({ payload: { tenant: "b" } })),
        ]);
        const worker = errand.work({ api: { concurrency: 1 } }, { pollInterval: "50ms" });
        await waitFor(() => starts.length === 41, "41 starts", 20_000);
        await worker.stop();
        assert.deepEqual(pauses, [{ queue: "api", key: "a", ms: 400 }]);
        const aAfter = starts.filter((s) => s.tenant === "a" && s.at > limitedAt);
        assert.ok(
          aAfter[0].at - limitedAt >= 390,
          `key a ran again ${aAfter[0].at - limitedAt} ms after its 429`,
        );
        assert.ok(
          starts.some((s) => s.tenant === "b" && s.at > limitedAt && s.at < limitedAt + 390),
          "key b went on meanwhile",
        );
      } finally {
        await cleanup();
      }
    });
  });
}

describe("a 429's Retry-After is read from the error's headers", () => {
  test("seconds, an HTTP date, fetch Headers or a plain object; nothing for other errors", () => {
    const headers = new Headers({ "retry-after": "2" });
    assert.equal(retryAfterOf429({ status: 429, headers }), 2000);
    assert.equal(retryAfterOf429({ response: { status: 429, headers: { "retry-after": "1.5" } } }), 1500);
    const at = new Date(Date.now() + 60_000).toUTCString();
    const ms = retryAfterOf429({ statusCode: 429, headers: { "retry-after": at } }) as number;
    assert.ok(ms > 55_000 && ms <= 60_000, String(ms));
    assert.equal(retryAfterOf429({ status: 429 }), undefined);
    assert.equal(retryAfterOf429({ status: 503, headers }), undefined);
    assert.equal(retryAfterOf429({ status: 429, headers: { "retry-after": "soon" } }), undefined);
    assert.equal(retryAfterOf429(null), undefined);
  });
});
