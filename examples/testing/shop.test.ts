/**
 * The shop's own unit tests, written as an application writes them with errand/testing:
 * errand runs in memory on a fake clock, so retries with minutes of backoff and schedules across
 * days run in milliseconds, and nothing sleeps.
 *
 *   node --import tsx --test examples/testing/shop.test.ts
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createTestErrand } from "errand/testing";
import { createShop, type Mailer, type Payments, type Reports } from "./shop.js";

/** The shop on a test errand, with fakes that record what they were asked to do and when. */
async function shopForTest(options: { now?: string; payments?: Payments } = {}) {
  const t = await createTestErrand({ now: options.now ?? "2026-05-04T10:00:00Z" });
  const sent: string[] = [];
  const reportDays: string[] = [];
  const reportTimes: string[] = [];
  const cleanUps: string[] = [];
  const mailer: Mailer = {
    async send(message) {
      sent.push(`${message.to}: ${message.subject}`);
    },
  };
  const reports: Reports = {
    async salesReport(day) {
      reportDays.push(day);
      reportTimes.push(t.clock.now().toISOString());
    },
    async cleanUp() {
      cleanUps.push(t.clock.now().toISOString());
    },
  };
  const payments: Payments = options.payments ?? {
    async charge(orderId) {
      return { chargeId: `ch_${orderId}` };
    },
  };
  const shop = createShop({ errand: t.errand, payments, mailer, reports });
  return { t, shop, sent, reportDays, reportTimes, cleanUps };
}

test("placing an order enqueues one charge (once, however often the checkout retries)", async () => {
  const { t, shop } = await shopForTest();
  await shop.placeOrder({ orderId: "o-1", email: "ada@example.com", cents: 1299 });
  await shop.placeOrder({ orderId: "o-1", email: "ada@example.com", cents: 1299 });

  t.expectEnqueued(shop.jobs.chargeOrder, { payload: { orderId: "o-1", cents: 1299 } }, { count: 1 });
  t.expectNotEnqueued(shop.jobs.sendReceipt);
  await t.close();
});

test("a successful charge e-mails the receipt (a job enqueued by a job)", async () => {
  const { t, shop, sent } = await shopForTest();
  await shop.placeOrder({ orderId: "o-2", email: "ada@example.com", cents: 500 });

  const result = await t.drain();

  assert.equal(result.completed, 2);
  t.expectEnqueued(shop.jobs.sendReceipt, { payload: { orderId: "o-2", chargeId: "ch_o-2" } });
  assert.deepEqual(sent, ["ada@example.com: Your receipt for order o-2"]);
  await t.close();
});

test("a charge the provider keeps refusing is tried three times with backoff, then dead-lettered", async () => {
  const attempts: Date[] = [];
  const { t, shop, sent } = await shopForTest({
    payments: {
      async charge() {
        attempts.push(t.clock.now());
        throw new Error("card processor unavailable");
      },
    },
  });
  const job = await shop.placeOrder({ orderId: "o-3", email: "bob@example.com", cents: 2500 });

  await t.drain();
  assert.equal(attempts.length, 1, "the first attempt runs at once");
  await t.advance("20s");
  assert.equal(attempts.length, 1, "no retry before the backoff (30 s ± 20 %)");
  await t.advance("20s");
  assert.equal(attempts.length, 2, "the second attempt, after the first backoff");

  await t.drain({ untilIdle: true }); // the clock moves on to the last retry
  assert.equal(attempts.length, 3);

  // The waits: 30 s, then 60 s, each within the 20 % jitter.
  const waits = [
    attempts[1].getTime() - attempts[0].getTime(),
    attempts[2].getTime() - attempts[1].getTime(),
  ];
  assert.ok(waits[0] >= 24_000 && waits[0] <= 36_000, `first backoff ${waits[0]} ms`);
  assert.ok(waits[1] >= 48_000 && waits[1] <= 72_000, `second backoff ${waits[1]} ms`);

  // Dead-lettered, with the whole history, and no receipt went out.
  const dead = await t.errand.listJobs({ state: "failed", queue: "payments" });
  assert.deepEqual(
    dead.jobs.map((j) => j.id),
    [job.id],
  );
  const failed = await t.job(job.id);
  assert.deepEqual(
    failed.attempts.map((a) => `${a.outcome}: ${a.error}`),
    [
      "retried: card processor unavailable",
      "retried: card processor unavailable",
      "failed: card processor unavailable",
    ],
  );
  t.expectNotEnqueued(shop.jobs.sendReceipt);
  assert.deepEqual(sent, []);
  await t.close();
});

test("the daily sales report runs at 09:00 Berlin time on both sides of the spring DST change", async () => {
  // Europe/Berlin moves from UTC+1 to UTC+2 at 02:00 on Sunday 2026-03-29.
  const { t, reportDays, reportTimes } = await shopForTest({ now: "2026-03-27T12:00:00Z" });

  await t.advance("3d");

  assert.deepEqual(reportDays, ["2026-03-28", "2026-03-29", "2026-03-30"]);
  assert.deepEqual(reportTimes, [
    "2026-03-28T08:00:00.000Z", // 09:00 CET
    "2026-03-29T07:00:00.000Z", // 09:00 CEST, the first day of summer time
    "2026-03-30T07:00:00.000Z",
  ]);
  await t.close();
});

test("the 02:30 clean-up runs once a night through both DST changes (the skipped and the doubled hour)", async () => {
  const spring = await shopForTest({ now: "2026-03-28T12:00:00Z" });
  await spring.t.advance("2d");
  assert.deepEqual(spring.cleanUps, [
    "2026-03-29T01:00:00.000Z", // 02:30 does not exist that night: at 03:00 CEST, the first valid instant
    "2026-03-30T00:30:00.000Z", // 02:30 CEST
  ]);
  await spring.t.close();

  // Europe/Berlin goes back from 03:00 CEST to 02:00 CET on Sunday 2026-10-25: 02:30 happens twice.
  const autumn = await shopForTest({ now: "2026-10-24T12:00:00Z" });
  await autumn.t.advance("2d");
  assert.deepEqual(autumn.cleanUps, [
    "2026-10-25T00:30:00.000Z", // the first 02:30 (CEST); not again an hour later
    "2026-10-26T01:30:00.000Z", // 02:30 CET
  ]);
  autumn.t.expectEnqueued("nightly-cleanup", undefined, { count: 2 });
  await autumn.t.close();
});
