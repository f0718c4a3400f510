/**
 * The `errand` CLI given every kind of bad input: the exit code, a one-line message naming the
 * problem, no stack trace, nothing stored. Real processes on a temporary SQLite file.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { FIXTURE_JOBS, hasStack, inspect, runAll, scratch } from "./helpers.js";

describe("bad input: a clear one-line error, the right exit code, nothing stored", () => {
  const s = scratch();
  const url = ["--url", s.db];
  const jobs = ["--jobs", FIXTURE_JOBS];
  const enqueue = (...args: string[]) => ["enqueue", "echo", ...jobs, ...url, ...args];
  before(async () => {
    writeFileSync(join(s.dir, "broken.mjs"), "export const = ;\n");
    writeFileSync(join(s.dir, "empty.mjs"), "export const answer = 42;\n");
    writeFileSync(join(s.dir, "big.json"), JSON.stringify({ text: "x".repeat(1024 * 1024 + 10) }));
    await (await inspect(s.db)).close();
  });
  after(() => s.cleanup());

  const cases: Array<{ what: string; args: string[]; code: number; message: RegExp }> = [
    {
      what: "invalid JSON",
      args: enqueue("--payload", "{text:"),
      code: 2,
      message: /--payload is not valid JSON/,
    },
    {
      what: "schema mismatch",
      args: enqueue("--payload", '{"text":5}'),
      code: 1,
      message: /payload does not match the schema of job "echo": text: /,
    },
    {
      what: "payload over the size limit",
      args: enqueue("--payload", `@${join(s.dir, "big.json")}`),
      code: 1,
      message: /over the limit of 1048576 bytes/,
    },
    {
      what: "unknown job (lists the known ones)",
      args: ["enqueue", "nope", ...jobs, ...url],
      code: 2,
      message: /unknown job "nope"; the jobs module defines: crash, echo, fail, nap, stamp, tally/,
    },
    {
      what: "priority not an integer",
      args: enqueue("--priority", "1.5"),
      code: 2,
      message: /--priority must be an integer from -1000000 to 1000000; got "1.5"/,
    },
    {
      what: "priority not a number",
      args: enqueue("--priority", "high"),
      code: 2,
      message: /--priority must be an integer/,
    },
    {
      what: "priority out of range",
      args: enqueue("--priority", "2000000"),
      code: 2,
      message: /--priority must be an integer from -1000000 to 1000000/,
    },
    {
      what: "max attempts zero",
      args: enqueue("--max-attempts", "0"),
      code: 2,
      message: /--max-attempts must be an integer from 1 to 1000; got "0"/,
    },
    {
      what: "max attempts too many",
      args: enqueue("--max-attempts", "1001"),
      code: 2,
      message: /--max-attempts must be an integer from 1 to 1000/,
    },
    {
      what: "non-ISO time",
      args: enqueue("--run-at", "next tuesday"),
      code: 2,
      message: /--run-at must be an ISO 8601 time/,
    },
    {
      what: "impossible date",
      args: enqueue("--run-at", "2026-13-45T00:00:00Z"),
      code: 2,
      message: /--run-at must be an ISO 8601 time/,
    },
    {
      what: "bad duration",
      args: enqueue("--delay", "5 fortnights"),
      code: 2,
      message: /--delay must be a duration like 500ms, 30s, 5m/,
    },
    {
      what: "delay and run-at together",
      args: enqueue("--delay", "5m", "--run-at", "2030-01-01T00:00:00Z"),
      code: 2,
      message: /either --delay or --run-at/,
    },
    {
      what: "missing jobs module",
      args: ["enqueue", "echo", ...url, "--jobs", join(s.dir, "nothere.ts")],
      code: 1,
      message: /cannot read jobs module .*nothere\.ts: no such file/,
    },
    {
      what: "jobs module that does not parse",
      args: ["enqueue", "echo", ...url, "--jobs", join(s.dir, "broken.mjs")],
      code: 1,
      message: /cannot load jobs module .*broken\.mjs: /,
    },
    {
      what: "jobs module without jobs",
      args: ["enqueue", "echo", ...url, "--jobs", join(s.dir, "empty.mjs")],
      code: 1,
      message: /exports no job definitions/,
    },
    {
      what: "no --jobs at all",
      args: ["enqueue", "echo", ...url],
      code: 2,
      message: /--jobs <module> is required/,
    },
    {
      what: "worker: unknown queue (lists the known ones)",
      args: ["worker", ...jobs, ...url, "--concurrency", "nope=2"],
      code: 2,
      message: /--concurrency: unknown queue "nope"; the jobs module's queues are: bulk, fast, paced, slow/,
    },
    {
      what: "worker: unknown --queue",
      args: ["worker", ...jobs, ...url, "--queue", "nope"],
      code: 2,
      message: /--queue: unknown queue "nope"/,
    },
    {
      what: "worker: concurrency zero",
      args: ["worker", ...jobs, ...url, "--concurrency", "fast=0"],
      code: 2,
      message: /--concurrency fast must be an integer from 1 to 10000/,
    },
    {
      what: "worker: bad duration",
      args: ["worker", ...jobs, ...url, "--shutdown-timeout", "forever"],
      code: 2,
      message: /--shutdown-timeout must be a duration/,
    },
    {
      what: "list: unknown state",
      args: ["jobs", "list", ...url, "--state", "done"],
      code: 2,
      message: /--state must be one of waiting, pending, running, completed, failed, cancelled/,
    },
    {
      what: "list: limit out of range",
      args: ["jobs", "list", ...url, "--limit", "0"],
      code: 2,
      message: /--limit must be an integer from 1 to 1000/,
    },
    {
      what: "list: bad cursor",
      args: ["jobs", "list", ...url, "--cursor", "abc"],
      code: 1,
      message: /invalid cursor "abc"/,
    },
    {
      what: "unknown option",
      args: ["jobs", "list", ...url, "--colour"],
      code: 2,
      message: /unknown option '--colour'/,
    },
    {
      what: "unsupported store URL",
      args: ["jobs", "list", "--url", "redis://localhost"],
      code: 2,
      message: /--url: unsupported store URL scheme/,
    },
    {
      what: "read command on a missing database",
      args: ["jobs", "list", "--url", join(s.dir, "typo.db")],
      code: 1,
      message: /no errand database at .*typo\.db/,
    },
    {
      what: "show: no such job",
      args: ["jobs", "show", "424242", ...url],
      code: 1,
      message: /no job with id 424242/,
    },
  ];

  test("each case", async () => {
    const results = await runAll(cases.map((c) => c.args));
    results.forEach((r, i) => {
      const c = cases[i];
      assert.equal(r.code, c.code, `${c.what}: exit ${r.code}, stderr: ${r.stderr}`);
      assert.match(r.stderr, c.message, `${c.what}: message`);
      assert.equal(r.stderr.trim().split("\n").length, 1, `${c.what}: one line, got:\n${r.stderr}`);
      assert.ok(!hasStack(r.stderr), `${c.what}: no stack trace`);
      assert.equal(r.stdout, "", `${c.what}: nothing on stdout`);
    });
    const errand = await inspect(s.db);
    try {
      assert.equal((await errand.listJobs({})).jobs.length, 0, "nothing was stored");
    } finally {
      await errand.close();
    }
  });
});
