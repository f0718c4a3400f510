/**
 * The schedule commands as a user runs them, in real processes on a temporary SQLite file:
 * `errand schedule list | add | remove`, `errand tick`, `errand serve`, `errand init github-actions`.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { openErrand, silentLogger } from "../../src/index.js";
import type { AnyJobDefinition } from "../../src/job.js";
import { greet, linger } from "./fixtures/jobs.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CLI = join(ROOT, "src/cli/main.ts");
const JOBS = join(ROOT, "test/schedule/fixtures/jobs.ts");

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function start(
  args: string[],
  env: Record<string, string> = {},
): { child: ChildProcess; out: () => string; done: Promise<Result> } {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("ERRAND_") && k !== "CRON_SECRET"),
  );
  const child = spawn(process.execPath, ["--import", "tsx", CLI, ...args], {
    cwd: ROOT,
    env: { ...base, NODE_NO_WARNINGS: "1", ...env },
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr?.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const done = new Promise<Result>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
  return { child, out: () => stdout, done };
}

async function run(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<Result> {
  const proc = start(args, env);
  const timer = setTimeout(() => proc.child.kill("SIGKILL"), timeoutMs);
  try {
    return await proc.done;
  } finally {
    clearTimeout(timer);
  }
}

let dir: string;
let db: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "errand-schedule-cli-"));
  db = join(dir, "errand.db");
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe("errand schedule", () => {
  test("add, list and remove; bad input exits 2 (1 for a payload the schema refuses) and stores nothing", async () => {
    const added = await run([
      "--url",
      db,
      "schedule",
      "add",
      "morning",
      "0 8 * * 1-5",
      "greet",
      "--jobs",
      JOBS,
      "--payload",
      '{"name":"team"}',
      "--timezone",
      "Europe/Berlin",
      "--missed",
      "all",
    ]);
    assert.equal(added.code, 0, added.stderr);
    assert.match(
      added.stdout,
      /schedule "morning" added: 0 8 \* \* 1-5 \(Europe\/Berlin\) → greet on queue greetings/,
    );

    const bad: Array<[string[], number, RegExp]> = [
      [["bad", "0 8 * *", "greet", "--queue", "greetings"], 2, /invalid cron expression "0 8 \* \*"/],
      [
        ["bad", "0 8 * * *", "greet", "--queue", "greetings", "--timezone", "Mars/Olympus"],
        2,
        /unknown time zone "Mars\/Olympus"/,
      ],
      [
        ["bad", "0 8 * * *", "greet", "--queue", "greetings", "--missed", "some"],
        2,
        /--missed must be "latest" or "all"/,
      ],
      [["bad", "0 8 * * *", "greet", "--jobs", JOBS, "--payload", "{nope"], 2, /--payload is not valid JSON/],
      [["bad", "0 8 * * *", "nope", "--jobs", JOBS], 2, /unknown job "nope"/],
      [
        ["bad", "0 8 * * *", "greet", "--jobs", JOBS, "--payload", '{"name":1}'],
        1,
        /does not match the schema of job "greet"/,
      ],
      [["bad", "0 8 * * *", "greet"], 2, /give --jobs <module>.*or --queue/],
    ];
    const results = await Promise.all(bad.map(([args]) => run(["--url", db, "schedule", "add", ...args])));
    for (const [i, [args, code, message]] of bad.entries()) {
      const r = results[i];
      assert.equal(r.code, code, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.doesNotMatch(r.stderr, /^\s+at /m, "no stack trace");
    }

    const listed = await run(["--url", db, "schedule", "list", "--json"]);
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    assert.deepEqual(
      rows.map((r) => [r.name, r.cron, r.timezone, r.jobName, r.queue, r.missed, r.source, r.payload]),
      [["morning", "0 8 * * 1-5", "Europe/Berlin", "greet", "greetings", "all", "cli", { name: "team" }]],
    );
    const table = await run(["--url", db, "schedule", "list"]);
    assert.match(table.stdout, /^NAME\s+CRON\s+TIMEZONE/m);

    // With the jobs module the schedule gets its job's flow key; with only --queue it cannot.
    const keyed = await Promise.all(
      [
        ["nightly-acme", "--jobs", JOBS],
        ["nightly-blind", "--queue", "reports"],
      ].map(([name, ...how]) =>
        run(
          ["--url", db, "schedule", "add", name, "0 3 * * *", "tenant-report", ...how, "--json"].concat(
            "--payload",
            '{"tenant":"acme"}',
          ),
        ),
      ),
    );
    for (const r of keyed) assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      keyed.map((r) => (JSON.parse(r.stdout) as { flowKey: unknown }).flowKey),
      ["acme", null],
    );
    for (const name of ["nightly-acme", "nightly-blind"])
      assert.equal((await run(["--url", db, "schedule", "remove", name])).code, 0);

    const removed = await run(["--url", db, "schedule", "remove", "morning"]);
    assert.equal(removed.code, 0, removed.stderr);
    const again = await run(["--url", db, "schedule", "remove", "morning"]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no schedule named "morning"/);
  });

  test("errand tick fires due schedules and runs jobs, with a JSON summary", async () => {
    const errand = await openErrand({
      url: db,
      logger: silentLogger(),
      jobs: [greet as unknown as AnyJobDefinition],
    });
    await errand.enqueue(greet, { name: "a" });
    await errand.enqueue(greet, { name: "b" });
    await errand.close();
    const bad = await run(["--url", db, "tick", "--jobs", JOBS, "--limit", "0"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--limit must be an integer from 1 to 1000/);
    const r = await run(["--url", db, "tick", "--jobs", JOBS, "--limit", "1", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const summary = JSON.parse(r.stdout) as Record<string, number>;
    assert.deepEqual([summary.claimed, summary.completed, summary.stillDue], [1, 1, 1]);
    const text = await run(["--url", db, "tick", "--jobs", JOBS]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /claimed 1 · completed 1 .* still due 0/);
  });
});

/** The base URL `errand serve` says it serves on, once it says so (30 s at most). */
async function servingAt(proc: { out: () => string }): Promise<string> {
  const deadline = Date.now() + 30_000;
  while (!/errand serving on (\S+)/.test(proc.out())) {
    if (Date.now() > deadline) throw new Error(`serve did not start: ${proc.out()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return /errand serving on (\S+)/.exec(proc.out())?.[1] ?? "";
}

describe("errand serve", () => {
  test("serves the tick endpoint on 127.0.0.1 and stops on SIGTERM", { timeout: 60_000 }, async () => {
    const errand = await openErrand({
      url: db,
      logger: silentLogger(),
      jobs: [greet as unknown as AnyJobDefinition],
    });
    await errand.enqueue(greet, { name: "served" });
    await errand.close();
    const proc = start(["--url", db, "serve", "--jobs", JOBS, "--port", "0"], {
      CRON_SECRET: "serve-secret",
    });
    try {
      const base = await servingAt(proc);
      assert.match(base, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal((await fetch(`${base}/api/cron/tick`, { method: "POST" })).status, 401);
      const ok = await fetch(`${base}/api/cron/tick`, {
        method: "POST",
        headers: { authorization: "Bearer serve-secret" },
      });
      assert.equal(ok.status, 200);
      assert.equal(((await ok.json()) as { completed: number }).completed, 1);
      proc.child.kill("SIGTERM");
      const result = await Promise.race([
        proc.done,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("serve did not stop")), 20_000)),
      ]);
      assert.equal(result.code, 0, result.stderr);
    } finally {
      proc.child.kill("SIGKILL");
    }
  });

  // Before: serve closed its store only after the server had closed, which waited (30 s at most)
  // for the tick, itself allowed 10 s of claiming and 30 s of finishing: the tick's job stayed
  // `running` in a closed store, charged as lost by the next tick.
  test("SIGTERM during a tick: it claims nothing more, its jobs finish or are released uncharged, and it answers", {
    timeout: 60_000,
  }, async () => {
    const file = join(dir, "serve-stop.db");
    const errand = await openErrand({
      url: file,
      logger: silentLogger(),
      jobs: [linger as unknown as AnyJobDefinition],
    });
    const short = await errand.enqueue(linger, { ms: 500 });
    const long = await errand.enqueue(linger, { ms: 60_000 });
    const proc = start(["--url", file, "serve", "--jobs", JOBS, "--port", "0", "--shutdown-timeout", "1s"], {
      CRON_SECRET: "serve-secret",
    });
    try {
      const base = await servingAt(proc);
      const tick = fetch(`${base}/api/cron/tick`, {
        method: "POST",
        headers: { authorization: "Bearer serve-secret" },
      });
      const deadline = Date.now() + 30_000;
      while ((await errand.getJob(long.id))?.state !== "running") {
        if (Date.now() > deadline) throw new Error("the tick did not start the job");
        await new Promise((r) => setTimeout(r, 20));
      }
      const signalled = Date.now();
      proc.child.kill("SIGTERM");
      const answer = await tick;
      assert.equal(answer.status, 200);
      const summary = (await answer.json()) as { completed: number; released: number };
      assert.deepEqual(
        { completed: summary.completed, released: summary.released },
        { completed: 1, released: 1 },
      );
      const result = await Promise.race([
        proc.done,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("serve did not stop")), 20_000)),
      ]);
      assert.equal(result.code, 0, result.stderr);
      assert.ok(Date.now() - signalled < 10_000, `serve took ${Date.now() - signalled} ms to stop`);
      assert.equal((await errand.getJob(short.id))?.state, "completed");
      const released = await errand.getJob(long.id);
      assert.equal(released?.state, "pending");
      assert.deepEqual(
        released?.attempts.map((a) => a.outcome),
        ["interrupted"],
      );
    } finally {
      proc.child.kill("SIGKILL");
      await errand.close();
    }
  });

  test("refuses a bad port", async () => {
    const r = await run(["--url", db, "serve", "--port", "70000"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--port must be an integer from 0 to 65535/);
  });
});

describe("errand init github-actions", () => {
  test("writes a workflow that reads the URL and the token from repository secrets", async () => {
    const out = join(dir, "wf", ".github/workflows/errand-tick.yml");
    const r = await run(["init", "github-actions", "--every", "10m", "--out", out]);
    assert.equal(r.code, 0, r.stderr);
    const text = readFileSync(out, "utf8");
    assert.match(text, /- cron: "\*\/10 \* \* \* \*"/);
    assert.match(text, /\$\{\{ secrets\.ERRAND_TICK_URL \}\}/);
    assert.match(text, /\$\{\{ secrets\.CRON_SECRET \}\}/);
    assert.match(text, /Authorization: Bearer %s/);
    assert.doesNotMatch(text, /https?:\/\/(?!example\.com)/, "no URL inline but the example in a comment");
    for (const caveat of [/every 5 minutes/, /delayed at busy times/, /UTC/, /60 days/])
      assert.match(text, caveat);
    // Every caveat is a comment.
    for (const line of text.split("\n").filter((l) => /5 minutes|busy times|60 days/.test(l)))
      assert.match(line, /^#/);

    const exists = await run(["init", "github-actions", "--out", out]);
    assert.equal(exists.code, 1);
    assert.match(exists.stderr, /exists; pass --force/);
    const forced = await run(["init", "github-actions", "--every", "1h", "--out", out, "--force"]);
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(readFileSync(out, "utf8"), /- cron: "0 \* \* \* \*"/);
  });

  test("rejects intervals under 5 minutes or not expressible as cron, writing nothing", async () => {
    const out = join(dir, "never.yml");
    const cases = [
      ["4m", /at most every 5 minutes/],
      ["1m", /at most every 5 minutes/],
      ["7m", /cannot be written as a cron schedule/],
      ["90m", /cannot be written as a cron schedule/],
      ["5h", /cannot be written as a cron schedule/],
      ["soon", /must be an interval like/],
    ] as const;
    const results = await Promise.all(
      cases.map(([every]) => run(["init", "github-actions", "--every", every, "--out", out])),
    );
    for (const [i, [every, message]] of cases.entries()) {
      assert.equal(results[i].code, 2, `${every}: ${results[i].stderr}`);
      assert.match(results[i].stderr, message, every);
    }
    assert.equal(existsSync(out), false);
  });
});
