/**
 * The demo's jobs (the seed scenario), with zod schemas: any Standard Schema validator works.
 * `errand demo` builds the same jobs from src/cli/demo-jobs.ts with a built-in validator, so the
 * published CLI needs no zod. Run them yourself:
 *
 *   errand enqueue send-email --jobs examples/demo/jobs.ts --payload '{"to": "ada@example.com", "subject": "Hi"}'
 *   errand enqueue build-report --jobs examples/demo/jobs.ts --payload '{"report": "r1", "failAttempts": 1}'
 *   errand worker --jobs examples/demo/jobs.ts --concurrency emails=2 --concurrency reports=1
 */
import { z } from "zod";
import { makeDemoJobs } from "../../src/cli/demo-jobs.js";

export const { sendEmail, buildReport, jobs } = makeDemoJobs({
  schemas: {
    email: z.object({ to: z.string().email(), subject: z.string().min(1) }),
    report: z.object({ report: z.string().min(1), failAttempts: z.number().int().min(0) }),
  },
});

export default jobs;
