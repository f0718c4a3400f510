/**
 * `errand queue list | pause | resume`, `errand schedule pause | resume | run`, and `errand jobs
 * show` saying why a pending job waits — on a SQLite file, as a user types them. Bad input: a
 * clear one-line error, the right exit code, nothing changed.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { echo } from "../fixtures/jobs.js";
import { hasStack, inspect, run, scratch } from "./helpers.js";

const s = scratch("errand-queue-cli-");
after(() => s.cleanup());
const url = ["--url", s.db];

test("pause, list and resume a queue; a pending job says why it waits", async () => {
  const errand = await inspect(s.db, [echo]);
  try {
    const job = await errand.enqueue(echo, { text: "hi" });
    const paused = await run(["queue", "pause", "fast", ...url]);
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /^queue "fast" paused \(since \S+\); running jobs finish$/m);
    assert.deepEqual(
      (await errand.pausedQueues()).map((p) => p.queue),
      ["fast"],
    );

    const list = await run(["queue", "list", ...url]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^QUEUE\s+STATE\s+PENDING\s+DELAYED\s+RUNNING\s+WORKERS$/m);
    assert.match(list.stdout, /^fast\s+paused since \S+\s+1\s+0\s+0\s+0 \(no worker!\)$/m);
    const json = JSON.parse((await run(["queue", "list", ...url, "--json"])).stdout);
    assert.equal(json[0].queue, "fast");
    assert.equal(json[0].paused, true);

    const stats = await run(["stats", ...url]);
    assert.match(stats.stdout, /^queue "fast" is paused \(since \S+\): errand queue resume fast$/m);

    const show = await run(["jobs", "show", job.id, ...url]);
    assert.match(show.stdout, /^waiting: queue "fast" is paused \(since \S+\)$/m);
    assert.match(show.stdout, /^waiting: no live worker serves queue "fast"$/m);
    const shown = JSON.parse((await run(["jobs", "show", job.id, ...url, "--json"])).stdout);
    assert.deepEqual(
      shown.waiting.map((r: { kind: string }) => r.kind),
      ["queue-paused", "no-worker"],
    );

    const resumed = await run(["queue", "resume", "fast", ...url]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stdout, /queue "fast" resumed/);
    assert.match((await run(["queue", "resume", "fast", ...url])).stdout, /queue "fast" was not paused/);
    assert.deepEqual(await errand.pausedQueues(), []);
  } finally {
    await errand.close();
  }
});

test("pause, resume and run a schedule", async () => {
  const errand = await inspect(s.db, [echo]);
  try {
    const add = await run([
      "schedule",
      "add",
      "hello",
      "0 9 * * *",
      "echo",
      "--queue",
      "fast",
      "--payload",
      '{"text":"hi"}',
      ...url,
    ]);
    assert.equal(add.code, 0, add.stderr);
    const paused = await run(["schedule", "pause", "hello", ...url]);
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /^schedule "hello" paused \(since \S+\)$/m);
    const again = await run(["schedule", "pause", "hello", ...url]);
    assert.equal(again.code, 0, again.stderr);
    const since = /since (\S+)\)/.exec(paused.stdout)?.[1];
    assert.equal(again.stdout.trim(), `schedule "hello" was already paused (since ${since})`);
    assert.match((await run(["schedule", "list", ...url])).stdout, /PAUSED[\s\S]*since \S+/);
    const before = (await errand.listSchedules())[0].nextRunAt.getTime();

    const ran = JSON.parse((await run(["schedule", "run", "hello", ...url, "--json"])).stdout);
    assert.equal(ran.schedule, "hello");
    assert.equal(ran.created, true);
    const job = await errand.getJob(ran.jobId);
    assert.deepEqual(job?.payload, { text: "hi" });
    assert.equal((await errand.listSchedules())[0].nextRunAt.getTime(), before, "its next slot stays");

    const resumed = await run(["schedule", "resume", "hello", ...url]);
    assert.match(resumed.stdout, /schedule "hello" resumed/);
    assert.equal((await errand.listSchedules())[0].pausedAt, null);
    const notPaused = await run(["schedule", "resume", "hello", ...url]);
    assert.equal(notPaused.code, 0, notPaused.stderr);
    assert.equal(notPaused.stdout.trim(), 'schedule "hello" was not paused');
    assert.equal((await errand.listSchedules())[0].nextRunAt.getTime(), before, "its next slot stays");
  } finally {
    await errand.close();
  }
});

test("bad input: a clear one-line error, the right exit code, nothing changed", async () => {
  const cases: Array<{ args: string[]; code: number; message: RegExp }> = [
    { args: ["queue", "pause", "bad name!"], code: 2, message: /invalid queue name "bad name!"/ },
    { args: ["queue", "resume", "bad name!"], code: 2, message: /invalid queue name "bad name!"/ },
    { args: ["schedule", "pause", "nope"], code: 1, message: /unknown schedule "nope"; known: hello/ },
    { args: ["schedule", "resume", "nope"], code: 1, message: /unknown schedule "nope"; known: hello/ },
    { args: ["schedule", "run", "nope"], code: 1, message: /unknown schedule "nope"; known: hello/ },
  ];
  for (const c of cases) {
    const r = await run([...c.args, ...url]);
    assert.equal(r.code, c.code, `${c.args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, c.message);
    assert.equal(r.stderr.trim().split("\n").length, 1, `one line: ${r.stderr}`);
    assert.ok(!hasStack(r.stderr));
  }
  const errand = await inspect(s.db);
  try {
    assert.deepEqual(await errand.pausedQueues(), []);
    assert.equal((await errand.listSchedules())[0].pausedAt, null);
  } finally {
    await errand.close();
  }
});
