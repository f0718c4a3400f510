/** The sign-up examples run as a user would run them, and do what they say. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";
import { postgresAvailability } from "./helpers/pg-availability.js";

const run = promisify(execFile);
const env = { ...process.env, ERRAND_LOG_LEVEL: "warn", DATABASE_URL: postgresAvailability().url };

for (const [name, skip] of [
  ["sqlite", false],
  ["postgres", postgresAvailability().skip],
] as const) {
  test(`examples/signup/${name}.ts: a rolled-back sign-up leaves no job; the committed one is sent once`, {
    skip,
  }, async () => {
    const { stdout } = await run(process.execPath, ["--import", "tsx", `examples/signup/${name}.ts`], {
      env,
      timeout: 120_000,
    });
    assert.match(stdout, /rolled back/);
    assert.match(stdout, /users: 1, jobs: 1 \(only ada's\)/);
    assert.equal(stdout.match(/sending the welcome e-mail/g)?.length, 1);
    assert.match(stdout, /sent: \[ 1 \]/);
  });
}
