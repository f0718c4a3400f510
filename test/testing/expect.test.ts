/**
 * errand/testing's assertions: what counts as enqueued, how a match is read, and the message a
 * failing assertion shows (it must say what WAS enqueued).
 */

import { AssertionError } from "node:assert";
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { defineJob } from "../../src/index.js";
import { createTestErrand } from "../../src/testing/index.js";

const sendEmail = defineJob({
  name: "send-email",
  queue: "emails",
  schema: z.object({ to: z.string(), tags: z.array(z.string()).optional() }),
  run: () => {},
});
const report = defineJob({ name: "build-report", schema: z.object({ day: z.string() }), run: () => {} });

async function withJobs() {
  const t = await createTestErrand({ now: "2026-06-01T08:00:00Z", jobs: [sendEmail, report] });
  await t.errand.enqueue(sendEmail, { to: "ada@example.com", tags: ["welcome", "new"] });
  await t.errand.enqueue(sendEmail, { to: "bob@example.com" }, { delay: "5m", priority: 3, key: "bob" });
  await t.errand.enqueue(report, { day: "2026-06-01" });
  return t;
}

test("expectEnqueued matches by subset of the payload and by the enqueue options, and returns the matches", async () => {
  const t = await withJobs();
  const [ada] = t.expectEnqueued(sendEmail, { payload: { to: "ada@example.com" } });
  assert.deepEqual(ada.payload, { to: "ada@example.com", tags: ["welcome", "new"] });
  t.expectEnqueued(sendEmail, { payload: { tags: ["welcome", "new"] } });
  t.expectEnqueued(sendEmail, { payload: { to: /@example\.com$/ } }, { count: 2 });
  t.expectEnqueued(sendEmail, { delay: "5m", priority: 3, key: "bob", queue: "emails" });
  t.expectEnqueued(sendEmail, { runAt: "2026-06-01T08:05:00Z" });
  t.expectEnqueued(sendEmail, (job) => job.payload.to.startsWith("bob"));
  t.expectEnqueued("build-report", { payload: { day: "2026-06-01" } }, { count: 1 });
  t.expectEnqueued(sendEmail, undefined, { count: 2 });
  // vitest's and jest's asymmetric matchers are objects with asymmetricMatch.
  const anyString = { asymmetricMatch: (v: unknown) => typeof v === "string", toString: () => "Any<String>" };
  t.expectEnqueued(sendEmail, { payload: { to: anyString } }, { count: 2 });
  t.expectNotEnqueued(sendEmail, { payload: { to: "eve@example.com" } });
  t.expectNotEnqueued(sendEmail, { payload: { tags: ["welcome"] } }); // arrays match whole
  await t.close();
});

test("a failing expectEnqueued is an AssertionError that lists what was enqueued", async () => {
  const t = await withJobs();
  assert.throws(
    () => t.expectEnqueued(sendEmail, { payload: { to: "eve@example.com" } }),
    (err: unknown) => {
      assert.ok(err instanceof AssertionError);
      assert.equal(
        err.message,
        [
          'expected a "send-email" job matching {"payload":{"to":"eve@example.com"}} to be enqueued; found 0.',
          'Enqueued "send-email" jobs (2):',
          '  ✗ #1 send-email, payload {"to":"ada@example.com","tags":["welcome","new"]}, runAt 2026-06-01T08:00:00.000Z, queue emails',
          '  ✗ #2 send-email, payload {"to":"bob@example.com"}, runAt 2026-06-01T08:05:00.000Z (delay 300000 ms), queue emails, priority 3, key "bob"',
          "Other jobs enqueued: build-report (1)",
        ].join("\n"),
      );
      return true;
    },
  );
  assert.throws(
    () => t.expectEnqueued(sendEmail, { payload: { to: /example/ } }, { count: 1 }),
    (err: Error) =>
      err.message.startsWith(
        'expected exactly 1 "send-email" job matching {"payload":{"to":"/example/"}} to be enqueued; found 2.',
      ) && err.message.includes("  ✓ #1 send-email"),
  );
  assert.throws(
    () => t.expectNotEnqueued(report),
    (err: Error) =>
      err instanceof AssertionError &&
      err.message.startsWith(
        'expected no "build-report" job to be enqueued; found 1.\nEnqueued "build-report" jobs (1):\n  ✓ #3 build-report',
      ),
  );
  await t.close();
});

test("with nothing enqueued the message says so", async () => {
  const t = await createTestErrand();
  assert.throws(() => t.expectEnqueued(sendEmail), /found 0\.\nNothing was enqueued\.$/);
  await t.close();
});

test("enqueued means created since the start or clearEnqueued: also jobs that ran, not a key's repeat", async () => {
  const t = await createTestErrand();
  await t.errand.enqueue(sendEmail, { to: "a@example.com" }, { key: "once" });
  const again = await t.errand.enqueue(sendEmail, { to: "a@example.com" }, { key: "once" });
  assert.equal(again.created, false);
  again.payload.to = "changed by the caller";
  await t.drain();
  const [job] = t.expectEnqueued(sendEmail, undefined, { count: 1 });
  assert.equal(job.state, "pending", "as it was enqueued, though it has completed since");
  assert.equal(job.payload.to, "a@example.com");

  t.clearEnqueued();
  t.expectNotEnqueued(sendEmail);
  assert.deepEqual(t.enqueued(), []);
  // Jobs enqueued by schedules are recorded too.
  t.errand.schedule("hourly-report", "0 * * * *", report, { day: "today" });
  await t.advance("2h");
  assert.deepEqual(
    t.enqueued(report).map((j) => j.key),
    ["cron:hourly-report:2026-01-01T01:00:00.000Z", "cron:hourly-report:2026-01-01T02:00:00.000Z"],
  );
  await t.close();
});

test("a match with a misspelt field, or a bad count, is an error, not a silent pass", async () => {
  const t = await withJobs();
  assert.throws(
    () => t.expectNotEnqueued(sendEmail, { to: "ada@example.com" } as never),
    /unknown match field "to"; a match takes payload, queue, priority, key, maxAttempts, runAt, delay \(put payload fields under payload\)/,
  );
  assert.throws(
    () => t.expectEnqueued(sendEmail, undefined, { count: -1 }),
    /count must be a whole number of jobs; got -1/,
  );
  assert.throws(() => t.expectEnqueued(sendEmail, { delay: "5 minutes" as never }), /match.delay must be/);
  await t.close();
});
