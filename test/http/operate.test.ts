/**
 * The API's operating endpoints (api-operate.ts): count and bulk actions by filter, dead-letter
 * groups, timings — their answers, their refusals of bad input (nothing changes), and CSRF: a
 * bulk action from another site with the session cookie is refused like every other POST.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BULK_BATCH } from "../../src/bulk-actions.js";
import { callJson, type Harness, harness, login, ORIGIN, postJson, seed, sendEmail } from "./helpers.js";

describe("operating endpoints", () => {
  let h: Harness;

  before(async () => {
    h = await harness();
    await seed(h.errand, 2, 3); // 2 completed, 3 failed "mailbox unavailable"
  });
  after(() => h.cleanup());

  test("count, then retry by search: only the matching failed jobs, up to max", async () => {
    const count = await callJson(h.handler, "/api/jobs/count?action=retry&search=mailbox");
    assert.equal(count.status, 200);
    assert.equal(count.body.count, 3);
    assert.equal(count.body.capped, false);
    assert.equal(
      (await callJson(h.handler, "/api/jobs/count?action=retry&search=nothing-like-it")).body.count,
      0,
    );

    const some = await callJson(
      h.handler,
      "/api/jobs/bulk",
      postJson({ action: "retry", search: "mailbox", max: 2 }),
    );
    assert.equal(some.status, 200, JSON.stringify(some.body));
    assert.equal(some.body.done, 2);
    assert.equal((await h.errand.listJobs({ state: "failed" })).jobs.length, 1);
  });

  test("dead-letter groups and timings", async () => {
    const groups = await callJson(h.handler, "/api/dlq/groups?queue=emails");
    assert.equal(groups.status, 200);
    assert.deepEqual(
      groups.body.groups.map((g: { error: string; count: number }) => [g.error, g.count]),
      [["mailbox unavailable", 1]],
    );
    const timings = await callJson(h.handler, "/api/timings?window=1h");
    assert.equal(timings.status, 200);
    assert.equal(timings.body.windowMs, 3_600_000);
    const emails = timings.body.queues.find((q: { queue: string }) => q.queue === "emails");
    assert.equal(emails.count, 3, "the 2 completed and the failed one left; the 2 retried are pending again");
    assert.ok(emails.runMs.p50 <= emails.runMs.p95 && emails.runMs.p95 <= emails.runMs.max);
  });

  test("cancel every pending job of a queue, more than one batch", async () => {
    await h.errand.enqueueMany(
      sendEmail,
      Array.from({ length: BULK_BATCH + 20 }, (_, n) => ({ payload: { n }, delay: "1h" })),
    );
    const pending = (await callJson(h.handler, "/api/jobs/count?action=cancel&queue=emails")).body.count;
    assert.ok(pending >= BULK_BATCH + 20);
    const res = await callJson(h.handler, "/api/jobs/bulk", postJson({ action: "cancel", queue: "emails" }));
    assert.equal(res.body.done, pending);
    assert.equal((await callJson(h.handler, "/api/jobs/count?action=cancel&queue=emails")).body.count, 0);
  });

  test("bad input is a 400 naming the problem, and nothing changes", async () => {
    const failedBefore = (await h.errand.listJobs({ state: "failed" })).jobs.length;
    const cases: [unknown, RegExp][] = [
      [{ action: "explode" }, /action must be one of retry, discard, cancel/],
      [{ action: "retry", max: 0 }, /max must be an integer/],
      [{ action: "retry", queue: "no spaces" }, /queue must be a queue name/],
      [{ action: "retry", search: "x".repeat(300) }, /search must be at most 256/],
      [{ action: "retry", states: "all" }, /unknown field "states"/],
    ];
    for (const [body, message] of cases) {
      const res = await callJson(h.handler, "/api/jobs/bulk", postJson(body));
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.error, message);
    }
    assert.equal((await callJson(h.handler, "/api/jobs/count?action=nope")).status, 400);
    assert.equal((await callJson(h.handler, "/api/timings?window=30d")).status, 400);
    assert.equal((await h.errand.listJobs({ state: "failed" })).jobs.length, failedBefore);
  });

  test("CSRF: a bulk action from another site with the session cookie is refused", async () => {
    const cookie = await login(h.handler);
    const failedBefore = (await h.errand.listJobs({ state: "failed" })).jobs.length;
    assert.ok(failedBefore > 0);
    const body = { action: "discard" };
    const cross = await callJson(h.handler, "/api/jobs/bulk", {
      ...postJson(body, { cookie, origin: "https://evil.example", "sec-fetch-site": "cross-site" }),
      bearer: null,
    });
    assert.equal(cross.status, 403);
    assert.equal(
      (await h.errand.listJobs({ state: "failed" })).jobs.length,
      failedBefore,
      "nothing discarded",
    );
    const same = await callJson(h.handler, "/api/jobs/bulk", {
      ...postJson(body, { cookie, origin: ORIGIN, "sec-fetch-site": "same-origin" }),
      bearer: null,
    });
    assert.equal(same.status, 200, JSON.stringify(same.body));
    assert.equal(same.body.done, failedBefore);
  });
});
