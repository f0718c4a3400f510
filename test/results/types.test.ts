/**
 * Typed results, checked by the compiler (`npm run typecheck` compiles this file; a wrong type
 * fails it) and run as a test: defineJob infers the result type from run's return value, and
 * enqueue's record, waitFor, enqueueAndWait, getJob(def, id) and onJob's events carry it. Each
 * `@ts-expect-error` line fails the typecheck if the type it rejects were accepted.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { defineJob, type JobEvent, type JobRecord, openErrand, silentLogger } from "../../src/index.js";

/** Compiles only when `T` and `U` are the same type. */
type Equal<T, U> = (<V>() => V extends T ? 1 : 2) extends <V>() => V extends U ? 1 : 2 ? true : false;
function expectType<T>(_check: T extends true ? true : never): void {}

const invoice = defineJob({
  name: "invoice",
  schema: z.object({ orderId: z.string() }),
  run: async ({ orderId }) => ({ invoiceId: `inv-${orderId}`, cents: 1200 }),
});
const ping = defineJob({ name: "ping", schema: z.object({}), run: () => "pong" as const });
const silent = defineJob({ name: "silent", schema: z.object({}), run: async () => {} });

type Invoice = { invoiceId: string; cents: number };

test("result types follow run's return value through enqueue, waitFor, getJob and events", async () => {
  const errand = await openErrand({ url: "memory:", jobs: [invoice, ping, silent], logger: silentLogger() });
  try {
    const job = await errand.enqueue(invoice, { orderId: "o-1" });
    expectType<Equal<typeof job.result, Invoice | null>>(true);
    expectType<Equal<typeof job.payload, { orderId: string }>>(true);

    const completed: JobEvent<{ orderId: string }, Invoice>[] = [];
    const stop = errand.onJob(invoice, "completed", (event) => {
      expectType<Equal<typeof event.result, Invoice | undefined>>(true);
      expectType<Equal<typeof event.job.payload, { orderId: string }>>(true);
      completed.push(event);
    });
    const worker = errand.work({ default: { concurrency: 1 } }, { pollInterval: 20 });

    const result = await errand.waitFor(job);
    expectType<Equal<typeof result, Invoice>>(true);
    assert.deepEqual(result, { invoiceId: "inv-o-1", cents: 1200 });

    const pong = await errand.enqueueAndWait(ping, {});
    expectType<Equal<typeof pong, "pong">>(true);
    assert.equal(pong, "pong");
    const nothing = await errand.enqueueAndWait(silent, {});
    expectType<Equal<typeof nothing, void>>(true);

    const read = await errand.getJob(invoice, job.id);
    expectType<Equal<typeof read, JobRecord<{ orderId: string }, Invoice> | null>>(true);
    assert.equal(read?.result?.cents, 1200);
    // By id alone the result is unknown; a type argument says what the caller knows.
    const byId = await errand.waitFor<Invoice>(job.id);
    expectType<Equal<typeof byId, Invoice>>(true);
    const loose = await errand.getJob(job.id);
    expectType<Equal<NonNullable<typeof loose>["result"], unknown>>(true);

    // @ts-expect-error: the payload must match the schema
    await errand.enqueueAndWait(invoice, { orderId: 1 }).catch(() => {});
    // @ts-expect-error: an invoice's result is not a string
    const wrong: string = await errand.waitFor(job);
    void wrong;
    // A job of another definition is refused at run time (its types would lie).
    await assert.rejects(errand.getJob(ping, job.id), /is a "invoice" job, not "ping"/);

    await worker.stop();
    stop();
    assert.equal(completed.length, 1);
    assert.equal(completed[0].result?.invoiceId, "inv-o-1");
  } finally {
    await errand.close();
  }
});
