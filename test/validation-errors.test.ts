/**
 * Input checks throw ValidationError (code ERR_VALIDATION), never a bare TypeError or RangeError:
 * one class to catch for "the caller passed something wrong", and the CLI prints it as a user
 * error without a stack trace. These are checks the facade used to re-wrap one by one.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { compileBackoff } from "../src/backoff.js";
import { parseDuration } from "../src/duration.js";
import { ValidationError } from "../src/errors.js";
import { createFetchHandler } from "../src/http/app.js";
import { createTickHandler } from "../src/http/tick.js";
import { defineJob } from "../src/index.js";
import { checkInteger, checkName } from "../src/job.js";
import { silentLogger } from "../src/logger.js";
import { openErrand } from "../src/open-errand.js";

function refused(what: string, fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: Error) => {
    assert.ok(
      err instanceof ValidationError,
      `${what}: expected a ValidationError, got ${err.name}: ${err.message}`,
    );
    assert.match(err.message, message, what);
    return true;
  });
}

test("bad input to the library's checks is a ValidationError naming the problem", async () => {
  refused(
    "duration typo",
    () => parseDuration("5x" as never, "lease"),
    /lease must be a number of milliseconds/,
  );
  refused("negative duration", () => parseDuration(-1, "delay"), /delay must be a non-negative number/);
  refused("job name", () => checkName("has space", "job name"), /job name must be 1-128 characters/);
  refused("integer", () => checkInteger(1.5, "priority", { min: 0, max: 10 }), /priority must be an integer/);
  refused(
    "defineJob schema",
    () => defineJob({ name: "a", schema: {} as never, run: () => {} }),
    /schema must be a Standard Schema/,
  );
  refused(
    "defineJob run",
    () => defineJob({ name: "a", schema: z.object({}), run: 5 as never }),
    /run must be a function/,
  );
  refused("empty backoff", () => compileBackoff([]), /backoff list must hold at least one delay/);
  refused("jitter", () => compileBackoff({ jitter: 2 }), /jitter must be between 0 and 1/);
  const errand = await openErrand({ url: "memory:", logger: silentLogger() });
  try {
    refused("prefix", () => createFetchHandler(errand, { prefix: "jobs" }), /prefix must start with "\/"/);
    refused("tick max", () => createTickHandler(errand, { tickLimit: { max: 0 } }), /tickLimit.max/);
    refused(
      "tick default",
      () => createTickHandler(errand, { tickLimit: { default: 0.5 } }),
      /tickLimit.default/,
    );
  } finally {
    await errand.close();
  }
});

// A worker id is written with every claim (locked_by) and history entry. Before the check, an
// empty or non-string id started a worker that never claimed a job (on every store, silently),
// one with a NUL never claimed on PostgreSQL, and a lone surrogate was stored as U+FFFD (one on
// PostgreSQL, three on SQLite), so the worker's own history entries no longer matched its id.
test("errand.work refuses a worker id no store can hold, and bad worker options, with a ValidationError", async () => {
  const job = defineJob({ name: "a", queue: "q", schema: z.object({}), run: () => {} });
  const errand = await openErrand({ url: "memory:", logger: silentLogger(), jobs: [job] });
  try {
    for (const [what, id] of [
      ["empty", ""],
      ["a number", 42],
      ["a NUL", "w\u0000x"],
      ["a lone surrogate", "w\ud800x"],
      ["too long", "x".repeat(513)],
    ] as const) {
      refused(`worker id ${what}`, () => errand.work(["q"], { id: id as never }), /worker id/);
    }
    refused(
      "heartbeat past the lease",
      () => errand.work(["q"], { lease: "1s", heartbeat: "2s" }),
      /heartbeat must be shorter than the lease/,
    );
    refused("batchSize", () => errand.work(["q"], { batchSize: 0 }), /batchSize must be an integer/);
  } finally {
    await errand.close();
  }
});
