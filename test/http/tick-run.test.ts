/**
 * POST /api/cron/tick over a real node:http server on 127.0.0.1, on every store, with the right
 * token: the JSON summary against the store, ?limit=, wrong methods and oversized bodies, ten
 * concurrent ticks on one slot, and createTickHandler mounted at any path.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createTickHandler, toNodeHandler } from "../../src/index.js";
import { close, describeTick, listen, SECRET } from "./tick-fixture.js";

describeTick(({ ran, setUp, assertNothingDone }) => {
  test("with the right token: fires the schedule, processes jobs, and the summary matches the store", async () => {
    const t = await setUp(3);
    try {
      const response = await t.tick();
      assert.equal(response.status, 200);
      assert.match(response.headers.get("content-type") ?? "", /application\/json/);
      const summary = (await response.json()) as Record<string, number>;
      for (const field of [
        "schedulesFired",
        "claimed",
        "completed",
        "retried",
        "failed",
        "stillDue",
        "durationMs",
      ]) {
        assert.equal(typeof summary[field], "number", field);
      }
      assert.equal(summary.schedulesFired, 1);
      assert.equal(summary.claimed, 4, "three jobs and the report");
      assert.equal(summary.completed, 4);
      assert.equal(summary.retried, 0);
      assert.equal(summary.failed, 0);
      assert.equal(summary.stillDue, 0);
      // What the database shows.
      const jobs = (await t.errand.listJobs({ limit: 100 })).jobs;
      assert.equal(jobs.filter((j) => j.state === "completed").length, summary.completed);
      assert.equal(jobs.filter((j) => j.key?.startsWith("cron:")).length, summary.schedulesFired);
      assert.deepEqual(
        jobs.filter((j) => j.key?.startsWith("cron:")).map((j) => j.key),
        [`cron:daily-report:${t.slot}`],
      );
      const stats = await t.errand.stats();
      assert.equal(
        stats.reduce((n, s) => n + s.pending, 0),
        summary.stillDue,
      );
      assert.equal(
        stats.reduce((n, s) => n + s.completed, 0),
        summary.completed,
      );
      assert.deepEqual([...ran].sort(), [`cron:daily-report:${t.slot}`, "work:0", "work:1", "work:2"]);
      // A second tick finds nothing to do.
      const again = (await (await t.tick()).json()) as Record<string, number>;
      assert.deepEqual([again.schedulesFired, again.claimed], [0, 0]);
      assert.ok(!t.logLines.join("").includes(SECRET), "the secret is never logged");
    } finally {
      await t.cleanup();
    }
  });

  test("?limit= bounds the batch; values outside 1..1000 or not integers are a 400", async () => {
    const t = await setUp(5);
    try {
      for (const query of [
        "?limit=0",
        "?limit=1001",
        "?limit=abc",
        "?limit=1.5",
        "?limit=-1",
        "?limit=",
        "?limit=1e2",
        "?limit=1&limit=2",
        "?limit=99999999999",
      ]) {
        const response = await t.tick({ query });
        assert.equal(response.status, 400, query);
        assert.match(((await response.json()) as { error: string }).error, /limit/, query);
      }
      await assertNothingDone(t.errand, 5);
      const summary = (await (await t.tick({ query: "?limit=2" })).json()) as Record<string, number>;
      assert.equal(summary.claimed, 2);
      assert.equal(summary.stillDue, 4, "five jobs and the report, less the two run");
      assert.equal((await t.tick({ query: "?limit=1000" })).status, 200);
    } finally {
      await t.cleanup();
    }
  });

  test("wrong methods get 405 with Allow; oversized bodies get 413; nothing is done", async () => {
    const t = await setUp(2);
    try {
      for (const method of ["PUT", "DELETE", "PATCH"]) {
        const response = await t.tick({ method });
        assert.equal(response.status, 405, method);
        assert.equal(response.headers.get("allow"), "GET, POST", method);
      }
      const big = "x".repeat(17 * 1024);
      const declared = await t.tick({ body: big, headers: { "content-type": "text/plain" } });
      assert.equal(declared.status, 413);
      // Chunked, no Content-Length: counted as it arrives.
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < 20; i++) controller.enqueue(new Uint8Array(1024).fill(120));
          controller.close();
        },
      });
      const chunked = await t.tick({ body: stream, duplex: "half" } as RequestInit);
      assert.equal(chunked.status, 413);
      await assertNothingDone(t.errand, 2);
      // A small body is fine (and ignored).
      assert.equal(
        (await t.tick({ body: "{}", headers: { "content-type": "application/json" } })).status,
        200,
      );
    } finally {
      await t.cleanup();
    }
  });

  test("ten concurrent ticks on the same slot enqueue and run exactly one job for it", async () => {
    const t = await setUp(0);
    try {
      const responses = await Promise.all(Array.from({ length: 10 }, () => t.tick()));
      assert.deepEqual(
        responses.map((r) => r.status),
        Array(10).fill(200),
      );
      const summaries = (await Promise.all(responses.map((r) => r.json()))) as Array<Record<string, number>>;
      assert.equal(
        summaries.reduce((n, s) => n + s.schedulesFired, 0),
        1,
        "one tick fired the slot",
      );
      assert.equal(
        summaries.reduce((n, s) => n + s.completed, 0),
        1,
        "one tick ran it",
      );
      const jobs = (await t.errand.listJobs({ limit: 100 })).jobs;
      assert.deepEqual(
        jobs.map((j) => [j.key, j.state, j.attempts.length]),
        [[`cron:daily-report:${t.slot}`, "completed", 1]],
      );
      assert.deepEqual(ran, [`cron:daily-report:${t.slot}`]);
    } finally {
      await t.cleanup();
    }
  });

  test("createTickHandler mounts the tick at any path (a Next.js route, Hono, node:http)", async () => {
    const t = await setUp(1);
    const tick = createTickHandler(t.errand, { cronSecret: SECRET, tickLimit: { default: 1, max: 5 } });
    const { server, base } = await listen(toNodeHandler(tick));
    try {
      assert.equal((await fetch(`${base}/whatever/cron`, { method: "POST" })).status, 401);
      assert.equal(
        (
          await fetch(`${base}/whatever/cron?limit=6`, {
            method: "POST",
            headers: { authorization: `Bearer ${SECRET}` },
          })
        ).status,
        400,
      );
      const direct = await tick(
        new Request("http://app.test/api/tick", {
          method: "POST",
          headers: { authorization: `bearer ${SECRET}` },
        }),
      );
      assert.equal(direct.status, 200);
      const summary = (await direct.json()) as Record<string, number>;
      assert.equal(summary.claimed, 1, "default limit 1");
    } finally {
      await close(server);
      await t.cleanup();
    }
  });
});
