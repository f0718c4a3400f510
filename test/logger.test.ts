/**
 * The `logger` option: silentLogger is a factory, so `logger: silentLogger` (without the call)
 * type-checks in JavaScript; it must be refused when the errand opens, naming the fix, not fail
 * later inside work() with "log.info is not a function".
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { defineJob, openErrand, silentLogger, ValidationError } from "../src/index.js";
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
