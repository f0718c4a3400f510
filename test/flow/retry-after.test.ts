/**
 * A 429's Retry-After as real servers and proxies send it, on every store: seconds, an HTTP
 * date, and the values a broken upstream sends — a number of seconds past anything a store can
 * hold (a 64-bit overflow, 2^32 - 1), a negative number, a list, a bare year, text. A usable
 * value sets the retry's delay and pauses the key's budget for that long (README, Flow
 * control: Adaptive); an unusable one is ignored — the job retries after its backoff and no
 * budget is paused — instead of failing the job with the store's "interval out of range" or
 * retrying at once. A handler's error that claims a retryAfterMs no delay can be is ignored too.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { retryAfterOf429 } from "../../src/errors.js";
import { errandMetrics } from "../../src/http/metrics.js";
import { defineJob, RetryableError } from "../../src/index.js";
import { MAX_DELAY_MS } from "../../src/instant.js";
import { targets, withErrand } from "../helpers/targets.js";

const HOUR = 3_600_000;
const schema = z.object({ tenant: z.string(), header: z.string().optional(), ms: z.string().optional() });

/** Each case: the Retry-After header (or a thrown retryAfterMs), and the delay the retry should get. */
const inAnHour = () => new Date(Date.now() + HOUR).toUTCString();
const cases: { what: string; header?: () => string; ms?: number; expect: "backoff" | "now" | number }[] = [
  { what: "seconds", header: () => "120", expect: 120_000 },
  { what: "an HTTP date an hour ahead", header: inAnHour, expect: HOUR },
  {
    what: "an HTTP date in the past",
    header: () => new Date(Date.now() - HOUR).toUTCString(),
    expect: "now",
  },
  { what: "ten years in seconds (honoured, as asked)", header: () => "315360000", expect: 315_360_000_000 },
  { what: "2^32 - 1 seconds (136 years)", header: () => "4294967295", expect: "backoff" },
  { what: "20 digits of seconds", header: () => "99999999999999999999", expect: "backoff" },
  { what: "a negative number", header: () => "-5", expect: "backoff" },
  { what: "a list", header: () => "5, 6", expect: "backoff" },
  { what: "a bare year", header: () => "2030 ", expect: 2030_000 },
  { what: "a date without a day name", header: () => "2001-01-01", expect: "backoff" },
  { what: "NaN", header: () => "NaN", expect: "backoff" },
  { what: "a thrown retryAfterMs of NaN", ms: Number.NaN, expect: "backoff" },
  { what: "a thrown retryAfterMs of -1", ms: -1, expect: "backoff" },
  { what: "a thrown retryAfterMs of 1e30", ms: 1e30, expect: "backoff" },
];

const api = defineJob({
  name: "api",
  queue: "api",
  schema,
  backoff: ["3h"],
  rateLimit: { limit: 1000, per: "1s", key: (p) => p.tenant },
  run(p) {
    if (p.header !== undefined)
      throw Object.assign(new Error("429 Too Many Requests"), {
        status: 429,
        headers: { "retry-after": p.header },
      });
    // As a second copy of errand (a jobs module's own) would throw it: read by its fields.
    throw Object.assign(new Error("rate limited"), { code: "ERR_RETRYABLE", retryAfterMs: Number(p.ms) });
  },
});

for (const target of targets) {
  describe(`a 429's Retry-After from a real server: ${target.name}`, {
    skip: target.skip || undefined,
  }, () => {
    test("a usable delay is the retry's and pauses the key; an unusable one falls back to the backoff", () =>
      withErrand(
        target,
        async (errand) => {
          const ids: string[] = [];
          const start = (await errand.store.now()).getTime();
          for (const [i, c] of cases.entries())
            ids.push(
              (
                await errand.enqueue(api, {
                  tenant: `t${i}`,
                  header: c.header?.(),
                  ms: c.ms === undefined ? undefined : String(c.ms),
                })
              ).id,
            );
          const metrics = errandMetrics(errand);
          const before = (await errand.store.now()).getTime();
          const ran = await errand.processJobs({ limit: cases.length });
          const after = (await errand.store.now()).getTime();
          assert.equal(ran.claimed, cases.length);
          assert.equal(ran.retried, cases.length, `every job retried, none failed: ${JSON.stringify(ran)}`);
          for (const [i, c] of cases.entries()) {
            const job = await errand.getJob(ids[i]);
            assert.equal(job?.state, "pending", `${c.what}: ${job?.state} (${job?.lastError})`);
            assert.equal(job?.lastError, c.header ? "429 Too Many Requests" : "rate limited");
            const delay = (job?.runAt.getTime() as number) - before;
            const want = c.expect === "backoff" ? 3 * HOUR : c.expect === "now" ? 0 : c.expect;
            // An HTTP date has whole seconds: up to a second early. The future date was also
            // written at its enqueue, before `before`: up to the enqueues' time earlier still.
            const early = c.header === inAnHour ? 1000 + (before - start) : 1000;
            assert.ok(
              delay >= want - early && delay <= want + (after - before) + 1000,
              `${c.what}: retried ${delay} ms later, not ${want}`,
            );
            // The key's budget is paused exactly when the header was used.
            const sibling = await errand.enqueue(api, { tenant: `t${i}`, ms: "1" });
            const paused = (await errand.whyWaiting(sibling.id))?.find((w) => w.kind === "flow-paused");
            const pauses = typeof c.expect === "number" && c.header !== undefined;
            assert.equal(paused !== undefined, pauses, `${c.what}: key paused? ${paused?.message}`);
          }
          // Each usable Retry-After paused one budget (the past date's for 0 ms); /metrics counts them.
          const paused = cases.filter((c) => c.header && typeof c.expect !== "string").length + 1;
          assert.match(
            await metrics.scrape(),
            new RegExp(`errand_flow_pauses_total\\{queue="api"\\} ${paused}\n`),
          );
        },
        { jobs: [api] },
      ));
  });
}

/**
 * A rate-limited answer spends no attempt, so one that said "wait 0" (retryAfter 0, or a 429's
 * Retry-After naming a past date) re-ran the job at once, for ever: before the fix this test
 * saw it snoozed 16-131 ms, not the 3 h backoff, on every store.
 * It now waits the job's backoff, as an answer without a wait does.
 */
const limited = defineJob({
  name: "limited",
  queue: "limited",
  schema: z.object({ tenant: z.string(), wait: z.enum(["zero", "past-date"]) }),
  backoff: ["3h"],
  concurrency: { key: (p) => p.tenant, limit: 5 },
  run(p) {
    if (p.wait === "zero") throw new RetryableError("rate limited", { rateLimited: true, retryAfter: 0 });
    throw Object.assign(new RetryableError("429 Too Many Requests", { rateLimited: true }), {
      status: 429,
      headers: { "retry-after": new Date(Date.now() - HOUR).toUTCString() },
    });
  },
});

for (const target of targets) {
  describe(`a rate-limited answer that says to wait 0: ${target.name}`, {
    skip: target.skip || undefined,
  }, () => {
    test("waits the job's backoff (it spends no attempt) instead of re-running at once", () =>
      withErrand(
        target,
        async (errand) => {
          const zero = await errand.enqueue(limited, { tenant: "a", wait: "zero" });
          const past = await errand.enqueue(limited, { tenant: "b", wait: "past-date" });
          const before = (await errand.store.now()).getTime();
          const ran = await errand.processJobs({ limit: 10 });
          assert.equal(ran.claimed, 2, `each job ran once, not again at once: ${JSON.stringify(ran)}`);
          for (const id of [zero.id, past.id]) {
            const job = await errand.getJob(id);
            assert.equal(job?.state, "pending");
            assert.equal(job?.attempt, 0, "a rate-limited answer spends no attempt");
            const delay = (job?.runAt.getTime() as number) - before;
            assert.ok(delay >= 3 * HOUR - 1000, `snoozed ${delay} ms, not the 3 h backoff`);
          }
        },
        { jobs: [limited] },
      ));
  });
}

describe("retryAfterOf429 reads only what RFC 9110 allows and a store can hold", () => {
  const of = (value: string) => retryAfterOf429({ status: 429, headers: { "retry-after": value } });
  test("seconds up to 100 years; HTTP dates in each of its three forms", () => {
    assert.equal(of("0"), 0);
    assert.equal(of(String(MAX_DELAY_MS / 1000)), MAX_DELAY_MS);
    assert.equal(of(String(MAX_DELAY_MS / 1000 + 1)), undefined);
    const at = new Date(Math.ceil((Date.now() + HOUR) / 1000) * 1000);
    const day = at.toUTCString().slice(0, 3);
    const forms = [
      at.toUTCString(), // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
      at.toUTCString().replace(/^\w+, (\d\d) (\w+) \d\d(\d\d)/, (_, d, m, y) => `${day}day, ${d}-${m}-${y}`), // RFC 850
      `${day} ${at.toUTCString().slice(8, 11)} ${String(at.getUTCDate()).padStart(2)} ${at.toISOString().slice(11, 19)} ${at.getUTCFullYear()}`, // asctime
    ];
    for (const form of forms) {
      const ms = of(form);
      assert.ok(ms !== undefined && ms > HOUR - 60_000 && ms <= HOUR + 1000, `${form}: ${ms}`);
    }
  });
  test("anything else is no delay at all", () => {
    for (const bad of [
      "-5",
      "5,6",
      "1e3",
      "0x10",
      "2001-01-01",
      "Infinity",
      "",
      " ",
      "soon",
      "99999999999999999999",
    ])
      assert.equal(of(bad), undefined, JSON.stringify(bad));
  });
});
