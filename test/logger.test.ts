/**
 * The `logger` option: silentLogger is a factory, so `logger: silentLogger` (without the call)
 * type-checks in JavaScript; it must be refused when the errand opens, naming the fix, not fail
 * later inside work() with "log.info is not a function".
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { createLogger, defineJob, openErrand, silentLogger, ValidationError } from "../src/index.js";
import { waitFor } from "./helpers/wait.js";

test("a function passed as the logger is a clear error at open, naming silentLogger()", async () => {
  await assert.rejects(
    openErrand({ url: "memory:", logger: silentLogger as never }),
    (err: Error) =>
      err instanceof ValidationError &&
      /logger must be a logger.*got a function.*silentLogger\(\)/.test(err.message),
  );
});

test("an object without the logging methods is a clear error at open", async () => {
  await assert.rejects(
    openErrand({ url: "memory:", logger: { info() {} } as never }),
    (err: Error) =>
      err instanceof ValidationError &&
      /logger must be a logger.*got an object without error, warn, debug, child/.test(err.message),
  );
});

test("silentLogger() is a logger a worker runs with", async () => {
  const errand = await openErrand({ url: "memory:", logger: silentLogger() });
  try {
    let ran = 0;
    const job = defineJob({ name: "quiet", schema: z.object({}), run: () => void ran++ });
    errand.register(job);
    const worker = errand.work({ default: { concurrency: 1 } });
    const { id } = await errand.enqueue(job, {});
    await waitFor(async () => (await errand.getJob(id))?.state === "completed", "the job to complete");
    assert.equal(ran, 1);
    assert.deepEqual(await worker.stop(), { clean: true, released: 0 });
  } finally {
    await errand.close();
  }
});

/** Runs one job whose handler logs a line, with a logger writing to a buffer; returns the output. */
async function logOfOneJob(pretty: boolean): Promise<string> {
  const { Writable } = await import("node:stream");
  let out = "";
  const destination = new Writable({
    write(chunk, _enc, done) {
      out += String(chunk);
      done();
    },
  });
  const logger = createLogger({ level: "info", pretty, destination });
  const errand = await openErrand({ url: "memory:", logger });
  const sendReport = defineJob({
    name: "send-report",
    queue: "reports",
    schema: z.object({}),
    run: async (_p, ctx) => {
      ctx.log.info("report sent");
    },
  });
  try {
    const job = await errand.enqueue(sendReport, {});
    const worker = errand.work({ reports: { concurrency: 1 } }, { pollInterval: 20 });
    await waitFor(async () => (await errand.getJob(job.id))?.state === "completed", "the job to complete");
    await worker.stop();
  } finally {
    await errand.close();
  }
  return out;
}

test("a handler's log line names the job under its own key, once (JSON lines)", async () => {
  const line = (await logOfOneJob(false)).split("\n").find((l) => l.includes("report sent"));
  assert.ok(line, "the handler's line was written");
  assert.equal(line.match(/"name":/g)?.length, 1, `one "name" key: ${line}`);
  const parsed = JSON.parse(line);
  assert.equal(parsed.name, "errand");
  assert.equal(parsed.job, "send-report");
  assert.equal(parsed.queue, "reports");
});

test("the terminal format shows the job's name", async () => {
  const out = await logOfOneJob(true);
  const at = out.indexOf("report sent");
  assert.ok(at >= 0, "the handler's line was written");
  // pino-pretty prints a line's fields on the lines under it, up to the next timestamped line.
  const next = out.indexOf("\n[", at);
  const entry = out.slice(at, next < 0 ? undefined : next);
  assert.match(entry, /job: "send-report"/, entry);
});
