/** The sign-up examples run as a user would run them, and do what they say. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { openErrand, silentLogger } from "../src/index.js";
import { postgresUrl, skipUnlessPostgres } from "./helpers/postgres.js";
import { waitFor } from "./helpers/wait.js";

const run = promisify(execFile);
const env = { ...process.env, ERRAND_LOG_LEVEL: "warn", DATABASE_URL: postgresUrl() };

for (const [name, skip] of [
  ["sqlite", false],
  ["postgres", await skipUnlessPostgres()],
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

/** Every .ts file under examples/, recursively. */
function exampleFiles(dir = "examples"): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return exampleFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

test("examples read like user code: errand is imported by its package name, no internals, no casts to never", () => {
  const files = exampleFiles();
  assert.ok(files.length >= 7, `found ${files.join(", ")}`);
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const [, spec] of text.matchAll(/\bfrom\s+"([^"]+)"/g)) {
      assert.ok(
        !/(^|\/)src(\/|$)/.test(spec),
        `${file} imports ${spec}: import from "errand" as a user would`,
      );
    }
    assert.ok(!/\bas never\b/.test(text), `${file} casts to never`);
  }
  const imports = files.filter((f) => /from "errand"/.test(readFileSync(f, "utf8")));
  assert.ok(imports.length >= 6, `examples importing "errand": ${imports.join(", ")}`);
});

test("examples/demo/jobs.ts: its send-email and build-report jobs run (build-report retried once)", async () => {
  const { jobs, sendEmail, buildReport } = await import("../examples/demo/jobs.js");
  const errand = await openErrand({ url: "memory:", logger: silentLogger(), jobs });
  try {
    await errand.enqueue(sendEmail, { to: "ada@example.com", subject: "Hi" });
    await errand.enqueue(buildReport, { report: "r1", failAttempts: 1 });
    const worker = errand.work(
      { emails: { concurrency: 1 }, reports: { concurrency: 1 } },
      { pollInterval: 20 },
    );
    await waitFor(
      async () => (await errand.listJobs({ state: "completed" })).jobs.length === 2,
      "both demo jobs to complete",
      30_000,
    );
    await worker.stop();
    const report = (await errand.listJobs({ name: "build-report" })).jobs[0];
    assert.deepEqual(
      report.attempts.map((a) => a.outcome),
      ["retried", "completed"],
    );
  } finally {
    await errand.close();
  }
});

test("examples/testing/shop.test.ts: the application's own tests pass with errand/testing, as a user runs them", async () => {
  // Without the runner's NODE_TEST_CONTEXT the child reports in TAP, as on a user's terminal.
  const userEnv: NodeJS.ProcessEnv = { ...env };
  delete userEnv.NODE_TEST_CONTEXT;
  const { stdout } = await run(
    process.execPath,
    ["--import", "tsx", "--test", "--test-reporter=tap", "examples/testing/shop.test.ts"],
    { env: userEnv, timeout: 120_000 },
  );
  const passed = [...stdout.matchAll(/^ok \d+ - (.*)$/gm)].map((m) => m[1]);
  for (const name of [
    "a charge the provider keeps refusing is tried three times with backoff, then dead-lettered",
    "the daily sales report runs at 09:00 Berlin time on both sides of the spring DST change",
    "the 02:30 clean-up runs once a night through both DST changes (the skipped and the doubled hour)",
  ]) {
    assert.ok(passed.includes(name), `${name}:\n${stdout}`);
  }
  assert.match(stdout, /^# fail 0$/m);
  assert.match(stdout, /^# pass 5$/m);
});
