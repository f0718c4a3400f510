/**
 * `errand jobs show` prints each attempt's job log (the lines its handler wrote through ctx.log,
 * with the truncation marker), and `--json` carries them in the attempts. A real CLI process on
 * a SQLite file the jobs ran on.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { z } from "zod";
import { defineJob, openErrand, RetryableError, silentLogger } from "../../src/index.js";
import { JOB_LOG_MAX_LINES } from "../../src/worker/job-log.js";
import { waitFor } from "../helpers/wait.js";
import { run, scratch } from "./helpers.js";

const { db, cleanup } = scratch("errand-job-logs-");
after(cleanup);

test("jobs show lists each attempt's log lines; --json has them in attempts", async () => {
  const importer = defineJob({
    name: "import-contacts",
    queue: "imports",
    maxAttempts: 2,
    backoff: ["1ms"],
    schema: z.object({ file: z.string() }),
    run(payload, ctx) {
      ctx.log.info({ file: payload.file }, "reading %s", payload.file);
      if (ctx.attempt === 1) {
        ctx.log.warn("row 3: no e-mail address");
        throw new RetryableError("storage timed out");
      }
      for (let i = 0; i < JOB_LOG_MAX_LINES + 5; i++) ctx.log.info(`imported row ${i}`);
    },
  });
  const errand = await openErrand({ url: db, jobs: [importer], logger: silentLogger() });
  const job = await errand.enqueue(importer, { file: "contacts.csv" });
  // The retry is due a millisecond after the first attempt: run due jobs until it has run.
  await waitFor(async () => {
    await errand.processJobs();
    return (await errand.getJob(job.id))?.state === "completed";
  }, "the retry to complete");
  await errand.close();

  const text = await run(["jobs", "show", job.id, "--url", db]);
  assert.equal(text.code, 0, text.stderr);
  const first = text.stdout.split("log of attempt 1 (retried):\n")[1]?.split("\n\n")[0] ?? "";
  assert.match(
    first,
    /^ {2}\d\d:\d\d:\d\d\.\d{3} INFO {2}reading contacts\.csv \{"file":"contacts\.csv"\}$/m,
  );
  assert.match(first, /^ {2}\d\d:\d\d:\d\d\.\d{3} WARN {2}row 3: no e-mail address$/m);
  const second = text.stdout.split("log of attempt 2 (completed):\n")[1] ?? "";
  assert.match(second, /INFO {2}imported row 0$/m);
  assert.match(second, /^ {2}… job log truncated: 6 more lines not kept/m);

  const json = await run(["jobs", "show", job.id, "--url", db, "--json"]);
  assert.equal(json.code, 0, json.stderr);
  const attempts = JSON.parse(json.stdout).attempts as Array<{
    logs: Array<{ msg: string; dropped?: number }>;
  }>;
  assert.deepEqual(
    attempts[0].logs.map((l) => l.msg),
    ["reading contacts.csv", "row 3: no e-mail address"],
  );
  assert.equal(attempts[1].logs.length, JOB_LOG_MAX_LINES + 1);
  assert.equal(attempts[1].logs.at(-1)?.dropped, 6);
});
