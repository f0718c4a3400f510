/**
 * The `errand` CLI as a user runs it: enqueue, then inspect with jobs list / show / cancel and
 * stats, with --json using the contract's field names. Real processes on a temporary SQLite file.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { echo } from "../fixtures/jobs.js";
import { CONTRACT_FIELDS } from "../helpers/contract.js";
import { FIXTURE_JOBS, FIXTURE_JOBS_TS, inspect, run, runAll, scratch } from "./helpers.js";

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
