/**
 * A small shop's background work, as an application writes it — and, beside it in
 * shop.test.ts, the application's own unit tests written with errand/testing.
 *
 * - `charge-order` charges a card through the payment provider, retried with backoff (3 tries,
 *   30 s, then 60 s, ±20 %) when the provider fails; on success it enqueues `send-receipt`.
 * - `daily-sales-report` runs at 09:00 Berlin time every day.
 * - `nightly-cleanup` runs at 02:30 Berlin time — an hour that is skipped on the spring DST
 *   change and happens twice on the autumn one.
 *
 * The services are passed in, so production hands in the real provider and mailer and a test
 * hands in fakes:
 *
 *   const errand = await openErrand({ url: process.env.ERRAND_URL });
 *   const shop = createShop({ errand, payments: stripeGateway, mailer: smtpMailer, reports });
 *   errand.work();
 */
import { defineJob, type Errand } from "errand";
import { z } from "zod";

export interface Payments {
  /** Charges the order's amount; throws when the provider fails. */
  charge(orderId: string, cents: number): Promise<{ chargeId: string }>;
}

export interface Mailer {
  send(message: { to: string; subject: string }): Promise<void>;
}

export interface Reports {
  salesReport(day: string): Promise<void>;
  cleanUp(): Promise<void>;
}

export interface Order {
  orderId: string;
  email: string;
  cents: number;
}

export function createShop(services: {
  errand: Errand;
  payments: Payments;
  mailer: Mailer;
  reports: Reports;
}) {
  const { errand, payments, mailer, reports } = services;

  const sendReceipt = defineJob({
    name: "send-receipt",
    queue: "emails",
    schema: z.object({ orderId: z.string(), email: z.string(), chargeId: z.string() }),
    async run({ orderId, email }) {
      await mailer.send({ to: email, subject: `Your receipt for order ${orderId}` });
    },
  });

  const chargeOrder = defineJob({
    name: "charge-order",
    queue: "payments",
    schema: z.object({ orderId: z.string(), email: z.string(), cents: z.number().int().positive() }),
    maxAttempts: 3,
    backoff: { base: "30s", max: "10m", jitter: 0.2 },
    async run(order, ctx) {
      const { chargeId } = await ctx.once(`charge:${order.orderId}`, () =>
        payments.charge(order.orderId, order.cents),
      );
      await errand.enqueue(sendReceipt, { orderId: order.orderId, email: order.email, chargeId });
      return { chargeId };
    },
  });

  const dailySalesReport = defineJob({
    name: "daily-sales-report",
    queue: "reports",
    schema: z.object({}),
    async run(_payload, ctx) {
      // The slot's day in Berlin, whatever time the job starts.
      const day = ctx.job.runAt.toLocaleDateString("sv-SE", { timeZone: "Europe/Berlin" });
      await reports.salesReport(day);
    },
  });

  const nightlyCleanup = defineJob({
    name: "nightly-cleanup",
    queue: "reports",
    schema: z.object({}),
    async run() {
      await reports.cleanUp();
    },
  });

  errand.register(sendReceipt, chargeOrder, dailySalesReport, nightlyCleanup);
  errand.schedule("daily-sales-report", "0 9 * * *", dailySalesReport, {}, { timezone: "Europe/Berlin" });
  errand.schedule("nightly-cleanup", "30 2 * * *", nightlyCleanup, {}, { timezone: "Europe/Berlin" });

  return {
    jobs: { sendReceipt, chargeOrder, dailySalesReport, nightlyCleanup },
    /** Called by the checkout: the charge runs in the background, once per order. */
    placeOrder(order: Order) {
      return errand.enqueue(chargeOrder, order, { key: `order:${order.orderId}` });
    },
  };
}
