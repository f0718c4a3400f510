/**
 * The `errand` CLI as a user runs it: --help of every command, enqueue and inspection with
 * --json, every kind of bad input (exit code, a one-line message naming the problem, nothing
 * stored), the dead-letter queue commands, the shapes of a jobs module, and stats --watch.
 * Real processes on temporary SQLite files.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { echo, fail } from "../fixtures/jobs.js";
import {
  BUILD,
  exitOf,
  FIXTURE_JOBS,
  FIXTURE_JOBS_TS,
  hasStack,
  inspect,
  run,
  runAll,
  scratch,
  start,
  waitFor,
} from "./helpers.js";

const CONTRACT_FIELDS = [
  "id",
  "queue",
  "name",
  "state",
  "priority",
  "attempt",
  "maxAttempts",
  "runAt",
  "payload",
  "key",
  "attempts",
];

describe("errand --help", () => {
  const commands = [
    [],
    ["migrate"],
    ["worker"],
    ["enqueue"],
    ["stats"],
    ["jobs"],
    ["jobs", "list"],
    ["jobs", "show"],
    ["jobs", "cancel"],
    ["dlq"],
    ["dlq", "list"],
    ["dlq", "show"],
    ["dlq", "retry"],
    ["dlq", "discard"],
    ["demo"],
  ];

  test("every command has help, exit 0", async () => {
    const results = await runAll(commands.map((c) => [...c, "--help"]));
    results.forEach((r, i) => {
      const name = ["errand", ...commands[i]].join(" ");
      assert.equal(r.code, 0, `${name} --help: exit ${r.code}\n${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^Usage: ${name}`, "m"), `${name} --help shows its usage`);
    });
    const [top, , worker, enqueue] = results;
    for (const cmd of ["migrate", "worker", "enqueue", "stats", "jobs", "dlq", "demo"])
      assert.match(top.stdout, new RegExp(`\\n  ${cmd}`));
    assert.match(top.stdout, /--url/);
    for (const flag of ["--jobs", "--concurrency", "--shutdown-timeout", "--lease"])
      assert.ok(worker.stdout.includes(flag), flag);
    for (const flag of [
      "--payload",
      "--priority",
      "--delay",
      "--run-at",
      "--key",
      "--max-attempts",
      "--json",
    ]) {
      assert.ok(enqueue.stdout.includes(flag), flag);
    }
  });
});

describe("enqueue and inspect", () => {
  const s = scratch();
  const url = ["--url", s.db];
  const jobs = ["--jobs", FIXTURE_JOBS];
  after(() => s.cleanup());

  test("enqueue prints the job; jobs list and show --json use the contract's field names", async () => {
    const first = await run([
      "enqueue",
      "echo",
      ...jobs,
      ...url,
      "--payload",
      '{"text":"hello"}',
      "--priority",
      "7",
      "--key",
      "k-1",
      "--max-attempts",
      "4",
      "--json",
    ]);
    assert.equal(first.code, 0, first.stderr);
    const job = JSON.parse(first.stdout);
    assert.deepEqual(Object.keys(job).slice(0, CONTRACT_FIELDS.length), CONTRACT_FIELDS);
    assert.equal(job.name, "echo");
    assert.equal(job.queue, "fast");
    assert.equal(job.state, "pending");
    assert.equal(job.priority, 7);
    assert.equal(job.attempt, 0);
    assert.equal(job.maxAttempts, 4);
    assert.equal(job.key, "k-1");
    assert.deepEqual(job.payload, { text: "hello" });
    assert.deepEqual(job.attempts, []);
    assert.equal(job.created, true);

    const [dup, delayed, at, table] = await runAll([
      ["enqueue", "echo", ...jobs, ...url, "--payload", '{"text":"other"}', "--key", "k-1", "--json"],
      ["enqueue", "echo", ...jobs, ...url, "--payload", '{"text":"later"}', "--delay", "5m", "--json"],
      [
        "enqueue",
        "echo",
        ...jobs,
        ...url,
        "--payload",
        '{"text":"at"}',
        "--run-at",
        "2030-01-31T09:00:00Z",
        "--json",
      ],
      ["enqueue", "echo", ...jobs, ...url, "--payload", '{"text":"table"}'],
    ]);
    const again = JSON.parse(dup.stdout);
    assert.equal(again.id, job.id, "a duplicate key returns the existing job");
    assert.equal(again.created, false);
    assert.deepEqual(again.payload, { text: "hello" });
    const later = JSON.parse(delayed.stdout);
    const inMs = Date.parse(later.runAt) - Date.now();
    assert.ok(inMs > 4 * 60_000 && inMs <= 5 * 60_000, `--delay 5m: runAt ${later.runAt}`);
    assert.equal(JSON.parse(at.stdout).runAt, "2030-01-31T09:00:00.000Z");
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^\s*ID\s+QUEUE\s+NAME\s+STATE\s+PRIORITY/m);
    assert.match(table.stdout, /enqueued job \d+ \(echo on queue fast\)/);

    const [list, show, filtered, human, search] = await runAll([
      ["jobs", "list", ...url, "--json"],
      ["jobs", "show", job.id, ...url, "--json"],
      [
        "jobs",
        "list",
        ...url,
        "--json",
        "--state",
        "pending",
        "--name",
        "echo",
        "--queue",
        "fast",
        "--limit",
        "2",
      ],
      ["jobs", "list", ...url],
      ["jobs", "list", ...url, "--json", "--search", "later"],
    ]);
    const page = JSON.parse(list.stdout);
    assert.equal(page.jobs.length, 4);
    for (const j of page.jobs)
      assert.deepEqual(Object.keys(j).slice(0, CONTRACT_FIELDS.length), CONTRACT_FIELDS);
    const shown = JSON.parse(show.stdout);
    assert.deepEqual(Object.keys(shown).slice(0, CONTRACT_FIELDS.length), CONTRACT_FIELDS);
    assert.equal(shown.id, job.id);
    const two = JSON.parse(filtered.stdout);
    assert.equal(two.jobs.length, 2);
    assert.ok(two.nextCursor, "a cursor to the next page");
    const rest = JSON.parse(
      (await run(["jobs", "list", ...url, "--json", "--limit", "2", "--cursor", two.nextCursor])).stdout,
    );
    assert.equal(rest.jobs.length, 2);
    assert.equal(new Set([...two.jobs, ...rest.jobs].map((j: { id: string }) => j.id)).size, 4);
    assert.match(human.stdout, /^\s*ID\s+QUEUE\s+NAME\s+STATE/m);
    assert.equal(human.stdout.trim().split("\n").length, 5, "a header and four rows");
    assert.deepEqual(
      JSON.parse(search.stdout).jobs.map((j: { payload: unknown }) => j.payload),
      [{ text: "later" }],
    );

    // A TypeScript jobs module: the CLI registers tsx for it. And the CLI's own source through tsx.
    const [fromTs, fromSource] = await Promise.all([
      run([
        "enqueue",
        "echo",
        "--jobs",
        FIXTURE_JOBS_TS,
        ...url,
        "--payload",
        '{"text":"from ts"}',
        "--json",
      ]),
      run(["jobs", "list", ...url, "--json", "--search", "from ts"], {}, { source: true }),
    ]);
    assert.equal(fromTs.code, 0, fromTs.stderr);
    assert.equal(JSON.parse(fromTs.stdout).name, "echo");
    assert.equal(fromSource.code, 0, fromSource.stderr);

    const text = await run(["jobs", "show", job.id, ...url]);
    assert.match(text.stdout, /^state:\s+pending$/m);
    assert.match(text.stdout, /attempts \(0\)/);
  });

  test("jobs show lists a flow job's dependencies and dependents and why it waits", async () => {
    const errand = await inspect(s.db, [echo]);
    const flow = await errand
      .enqueueFlow({
        jobs: {
          fetch: { job: echo, payload: { text: "fetch" }, delay: "1h" },
          merge: { job: echo, payload: { text: "merge" }, dependsOn: ["fetch"] },
        },
      })
      .finally(() => errand.close());
    const [text, json] = await runAll([
      ["jobs", "show", flow.ids.merge, ...url],
      ["jobs", "show", flow.ids.fetch, ...url, "--json"],
    ]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^state:\s+waiting$/m);
    assert.match(text.stdout, /^dependencies \(1\):$/m);
    assert.match(text.stdout, new RegExp(`^\\s+${flow.ids.fetch}\\s+fetch\\s+echo\\s+\\S+\\s+pending$`, "m"));
    assert.match(text.stdout, /^waiting: waiting for dependencies: 0 of 1 done/m);
    const shown = JSON.parse(json.stdout);
    assert.deepEqual(
      shown.dependents.map((d: { id: string; node: string }) => [d.id, d.node]),
      [[flow.ids.merge, "merge"]],
    );
  });

  test("jobs cancel cancels a pending job; stats counts per queue", async () => {
    const created = JSON.parse(
      (await run(["enqueue", "nap", ...jobs, ...url, "--payload", '{"ms":1}', "--json"])).stdout,
    );
    const cancel = await run(["jobs", "cancel", created.id, ...url]);
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.match(cancel.stdout, new RegExp(`job ${created.id} cancelled`));
    const twice = await run(["jobs", "cancel", created.id, ...url]);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /is cancelled: only waiting, pending or running jobs can be cancelled/);
    const [stats, table] = await runAll([
      ["stats", ...url, "--json"],
      ["stats", ...url],
    ]);
    const slow = JSON.parse(stats.stdout).find((q: { queue: string }) => q.queue === "slow");
    assert.equal(slow.cancelled, 1);
    assert.match(
      table.stdout,
      /^QUEUE\s+WAITING\s+PENDING\s+DELAYED\s+RUNNING\s+COMPLETED\s+FAILED\s+CANCELLED/m,
    );
    assert.match(table.stdout, /^fast\s+\d+\s+\d+/m);
  });
});

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

describe("dead-letter queue commands", () => {
  const s = scratch();
  const url = ["--url", s.db];
  after(() => s.cleanup());

  test("list, show, retry and discard (one or --all, which needs --yes)", async () => {
    const errand = await inspect(s.db, [echo, fail]);
    const failed: string[] = [];
    try {
      for (const reason of ["bad address", "blocked", "quota"])
        failed.push((await errand.enqueue(fail, { reason })).id);
      const ok = await errand.enqueue(echo, { text: "fine" });
      const worker = errand.work({ fast: { concurrency: 4 } });
      await waitFor("three failed jobs and one completed", async () => {
        const [st] = await errand.stats();
        return st && st.failed === 3 && st.completed === 1;
      });
      await worker.stop();
      const cancelled = await errand.enqueue(echo, { text: "cancel me" });
      await errand.cancel(cancelled.id);

      const [list, table, show, showJson] = await runAll([
        ["dlq", "list", ...url, "--json"],
        ["dlq", "list", ...url],
        ["dlq", "show", failed[0], ...url],
        ["dlq", "show", failed[0], ...url, "--json"],
      ]);
      const page = JSON.parse(list.stdout);
      assert.deepEqual(page.jobs.map((j: { id: string }) => j.id).sort(), [...failed].sort());
      for (const job of page.jobs) {
        assert.equal(job.state, "failed");
        assert.equal(job.attempts.length, 1);
        assert.equal(job.attempts[0].outcome, "failed");
        assert.equal(job.attempts[0].kind, "permanent");
      }
      assert.match(table.stdout, /^\s*ID\s+QUEUE\s+NAME\s+ATTEMPTS\s+FAILED AT\s+LAST ERROR/m);
      assert.match(table.stdout, /quota/);
      assert.match(show.stdout, /\[permanent\] bad address/);
      assert.match(
        show.stdout,
        /PermanentError: bad address\n\s+at /,
        "dlq show prints each attempt's stack",
      );
      assert.equal(JSON.parse(showJson.stdout).attempts[0].error, "bad address");

      const [notFailed, missing, both, neither] = await runAll([
        ["dlq", "retry", ok.id, ...url],
        ["dlq", "discard", "99999", ...url],
        ["dlq", "retry", failed[0], "--all", ...url],
        ["dlq", "discard", ...url],
      ]);
      assert.equal(notFailed.code, 1);
      assert.match(notFailed.stderr, /job \d+ is completed: only failed or cancelled jobs can be retried/);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /no job with id 99999/);
      assert.equal(both.code, 2);
      assert.match(both.stderr, /give job ids or --all, not both/);
      assert.equal(neither.code, 2);
      assert.match(neither.stderr, /give the ids of the jobs to discard, or --all/);

      const retried = await run(["dlq", "retry", failed[0], ...url, "--json"]);
      assert.equal(retried.code, 0, retried.stderr);
      assert.equal(JSON.parse(retried.stdout).retried[0].state, "pending");
      assert.equal((await errand.getJob(failed[0]))?.state, "pending");
      assert.equal((await errand.getJob(failed[0]))?.attempts.length, 1, "the history is kept");

      const [dryRetry, dryDiscard] = await runAll([
        ["dlq", "retry", "--all", ...url],
        ["dlq", "discard", "--all", "--queue", "fast", ...url],
      ]);
      assert.equal(dryRetry.code, 2);
      assert.match(dryRetry.stderr, /--all would retry 2 failed jobs in all queues; add --yes to do it/);
      assert.equal(dryDiscard.code, 2);
      assert.match(dryDiscard.stderr, /--all would discard 2 failed jobs in queue fast; add --yes/);
      assert.equal((await errand.listJobs({ state: "failed" })).jobs.length, 2, "a dry run changes nothing");

      const discarded = await run(["dlq", "discard", failed[1], ...url]);
      assert.equal(discarded.code, 0, discarded.stderr);
      assert.equal(await errand.getJob(failed[1]), null);

      const all = await run(["dlq", "retry", "--all", "--yes", "--queue", "fast", ...url]);
      assert.equal(all.code, 0, all.stderr);
      assert.match(all.stdout, /retried 1 failed job in queue fast/);
      assert.equal((await errand.getJob(failed[2]))?.state, "pending");
      assert.equal(
        (await errand.getJob(cancelled.id))?.state,
        "cancelled",
        "retry --all leaves cancelled jobs alone",
      );
      const none = await run(["dlq", "discard", "--all", "--yes", ...url]);
      assert.match(none.stdout, /discarded 0 failed jobs in all queues/);
    } finally {
      await errand.close();
    }
  });
});

describe("jobs modules and stats --watch", () => {
  const s = scratch();
  const url = ["--url", s.db];
  after(() => s.cleanup());
  before(() => {
    const header = [
      `import { defineJob } from ${JSON.stringify(pathToFileURL(join(BUILD, "src/index.js")).href)};`,
      `const schema = { "~standard": { version: 1, vendor: "test", validate: (value) => ({ value }) } };`,
      'const job = (name) => defineJob({ name, queue: "q", schema, run() {} });',
    ].join("\n");
    writeFileSync(
      join(s.dir, "named.mjs"),
      `${header}\nexport const jobs = [job("named-a")];\nexport const other = job("ignored");\n`,
    );
    writeFileSync(
      join(s.dir, "each.mjs"),
      `${header}\nexport const a = job("each-a");\nexport const b = job("each-b");\nexport const helper = () => 1;\n`,
    );
    writeFileSync(
      join(s.dir, "bad-array.mjs"),
      `${header}\nexport default [job("fine"), { name: "not a job" }];\n`,
    );
  });

  test("a module may export `jobs`, or each definition; anything else in a list is an error", async () => {
    const [named, ignored, each, unknown, bad] = await runAll([
      ["enqueue", "named-a", "--jobs", join(s.dir, "named.mjs"), ...url, "--json"],
      ["enqueue", "ignored", "--jobs", join(s.dir, "named.mjs"), ...url],
      ["enqueue", "each-b", "--jobs", join(s.dir, "each.mjs"), ...url, "--json"],
      ["enqueue", "helper", "--jobs", join(s.dir, "each.mjs"), ...url],
      ["enqueue", "fine", "--jobs", join(s.dir, "bad-array.mjs"), ...url],
    ]);
    assert.equal(named.code, 0, named.stderr);
    assert.equal(JSON.parse(named.stdout).name, "named-a");
    assert.equal(ignored.code, 2, "with a `jobs` export, other exports are not jobs of the module");
    assert.match(ignored.stderr, /unknown job "ignored"; the jobs module defines: named-a/);
    assert.equal(each.code, 0, each.stderr);
    assert.equal(JSON.parse(each.stdout).name, "each-b");
    assert.match(unknown.stderr, /unknown job "helper"; the jobs module defines: each-a, each-b/);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /export default\[1\] is not a job definition/);
  });

  test("stats --watch redraws until Ctrl-C, then exits 0", async () => {
    const proc = start(["stats", ...url, "--watch", "200ms", "--json"]);
    const frames = await waitFor("two frames", () => {
      const lines = proc.stdout().split("\n").filter(Boolean);
      return lines.length >= 2 && lines;
    });
    const frame = JSON.parse(frames[0]);
    assert.ok(Array.isArray(frame.queues));
    assert.ok(frame.queues.some((q: { queue: string }) => q.queue === "q"));
    proc.child.kill("SIGINT");
    const result = await exitOf(proc);
    assert.equal(result.code, 0, result.stderr);
  });
});
