/**
 * The demo's jobs (the seed scenario) as an application writes them, with zod schemas (any
 * Standard Schema validator works). `errand demo` runs the same two jobs, built into the CLI.
 * Run them yourself:
 *
 *   errand enqueue send-email --jobs examples/demo/jobs.ts --payload '{"to": "ada@example.com", "subject": "Hi"}'
 *   errand enqueue build-report --jobs examples/demo/jobs.ts --payload '{"report": "r1", "failAttempts": 1}'
 *   errand worker --jobs examples/demo/jobs.ts --concurrency emails=2 --concurrency reports=1
 */
import { setTimeout as sleep } from "node:timers/promises";
import { defineJob, RetryableError } from "errand";
import { z } from "zod";

export const sendEmail = defineJob({
  name: "send-email",
  queue: "emails",
  schema: z.object({ to: z.string().email(), subject: z.string().min(1) }),
  maxAttempts: 3,
  async run(payload, ctx) {
    // The ledger: a retry of this job does not send the same e-mail twice.
    return ctx.once(`demo-email:${ctx.job.id}`, async () => {
      await sleep(150, undefined, { signal: ctx.signal }); // a mail provider's API call
      return { messageId: `msg-${ctx.job.id}`, to: payload.to };
    });
  },
});

export const buildReport = defineJob({
  name: "build-report",
  queue: "reports",
  /** `failAttempts`: how many first attempts fail with a transient error (a simulated outage). */
  schema: z.object({ report: z.string().min(1), failAttempts: z.number().int().min(0) }),
  maxAttempts: 3,
  backoff: ["200ms"],
  async run(payload, ctx) {
    await sleep(100, undefined, { signal: ctx.signal });
    if (ctx.attempt <= payload.failAttempts) {
      throw new RetryableError(`reporting database busy (simulated outage, attempt ${ctx.attempt})`);
    }
    await ctx.progress(0.5, "aggregating rows");
    await sleep(100, undefined, { signal: ctx.signal });
    return { report: payload.report, rows: 42 };
  },
});

export const jobs = [sendEmail, buildReport];
export default jobs;
