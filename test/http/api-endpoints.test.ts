/**
 * The dashboard API's endpoints on a seeded store: stats, throughput, the job list (filters,
 * search, cursor pages), one job with its history and its flow, the job and dead-letter actions,
 * lifting rate-limit pauses, schedules and workers; and HEAD like GET without a body.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CONTRACT_FIELDS } from "../helpers/contract.js";
import { buildReport, call, callJson, type Harness, harness, postJson, seed, sendEmail } from "./helpers.js";

describe("API endpoints", () => {
  let h: Harness;
  before(async () => {
    h = await harness();
    await seed(h.errand, 5, 3);
    await seed(h.errand, 2, 1, buildReport);
    await h.errand.enqueue(sendEmail, { n: 100 }, { key: "welcome-42" });
    await h.errand.enqueue(sendEmail, { n: 101, html: "needle-in-payload" }, { delay: "1h" });
  });
  after(() => h.cleanup());

  test("GET /api/stats: per-queue counts and DLQ depth as in the store", async () => {
    const { status, body } = await callJson(h.handler, "/api/stats");
    assert.equal(status, 200);
    const emails = body.queues.find((q: { queue: string }) => q.queue === "emails");
    assert.deepEqual(
      {
        pending: emails.pending,
        delayed: emails.delayed,
        completed: emails.completed,
        failed: emails.failed,
        completedLastHour: emails.completedLastHour,
        failedLastDay: emails.failedLastDay,
      },
      { pending: 1, delayed: 1, completed: 5, failed: 3, completedLastHour: 5, failedLastDay: 3 },
    );
    assert.equal(typeof emails.oldestPendingMs, "number");
    assert.equal(body.dlq, 4);
    assert.equal(body.total.completed, 7);
    assert.deepEqual(
      body.queues.map((q: { queue: string }) => q.queue),
      (await h.errand.stats()).map((s) => s.queue),
    );
  });

  test("GET /api/throughput: buckets of completed and failed", async () => {
    const { status, body } = await callJson(h.handler, "/api/throughput?since=1h&bucket=1m");
    assert.equal(status, 200);
    assert.equal(body.bucketMs, 60_000);
    assert.equal(body.sinceMs, 3_600_000);
    const sum = (queue: string, field: "completed" | "failed") =>
      body.buckets
        .filter((b: { queue: string }) => b.queue === queue)
        .reduce((n: number, b: Record<string, number>) => n + b[field], 0);
    assert.equal(sum("emails", "completed"), 5);
    assert.equal(sum("emails", "failed"), 3);
    assert.equal(sum("reports", "failed"), 1);
    const one = await callJson(h.handler, "/api/throughput?queue=reports");
    assert.ok(one.body.buckets.every((b: { queue: string }) => b.queue === "reports"));
  });

  test("GET /api/jobs: filters by queue, state and name; searches id, key and payload", async () => {
    const failed = await callJson(h.handler, "/api/jobs?state=failed&queue=emails");
    assert.equal(failed.body.jobs.length, 3);
    assert.ok(
      failed.body.jobs.every(
        (j: { state: string; queue: string }) => j.state === "failed" && j.queue === "emails",
      ),
    );
    const byName = await callJson(h.handler, "/api/jobs?name=build-report");
    assert.equal(byName.body.jobs.length, 3);
    const byKey = await callJson(h.handler, "/api/jobs?search=welcome-4");
    assert.deepEqual(
      byKey.body.jobs.map((j: { key: string }) => j.key),
      ["welcome-42"],
    );
    const byPayload = await callJson(h.handler, "/api/jobs?search=needle-in");
    assert.equal(byPayload.body.jobs.length, 1);
    const id = byPayload.body.jobs[0].id;
    const byId = await callJson(h.handler, `/api/jobs?search=${id}`);
    assert.ok(byId.body.jobs.some((j: { id: string }) => j.id === id));
    const empty = await callJson(h.handler, "/api/jobs?name=no-such-job");
    assert.deepEqual(empty.body, { jobs: [], nextCursor: null });
  });

  test("GET /api/jobs: cursor pagination visits every job once, newest first", async () => {
    const all = await h.errand.listJobs({ limit: 1000 });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const { body }: { body: { jobs: { id: string }[]; nextCursor: string | null } } = await callJson(
        h.handler,
        `/api/jobs?limit=3${cursor ? `&cursor=${cursor}` : ""}`,
      );
      assert.ok(body.jobs.length <= 3);
      seen.push(...body.jobs.map((j) => j.id));
      cursor = body.nextCursor;
      pages++;
    } while (cursor && pages < 20);
    assert.deepEqual(
      seen,
      all.jobs.map((j) => j.id),
    );
    assert.equal(pages, Math.ceil(all.jobs.length / 3));
  });

  test("GET /api/jobs/:id: the whole record with its history", async () => {
    const failed = (await h.errand.listJobs({ state: "failed", queue: "emails" })).jobs[0];
    const { status, body } = await callJson(h.handler, `/api/jobs/${failed.id}`);
    assert.equal(status, 200);
    for (const field of CONTRACT_FIELDS) {
      assert.ok(field in body, field);
    }
    assert.equal(body.attempts.length, 1);
    assert.equal(body.attempts[0].outcome, "failed");
    assert.equal(body.attempts[0].error, "mailbox unavailable");
    assert.match(body.attempts[0].stack, /PermanentError/);
  });

  test("GET /api/jobs/:id: a flow job's dependencies, dependents and why it waits", async () => {
    const flow = await h.errand.enqueueFlow({
      jobs: {
        first: { job: sendEmail, payload: { n: 200 }, delay: "1h" },
        last: { job: sendEmail, payload: { n: 201 }, dependsOn: ["first"] },
      },
    });
    const { status, body } = await callJson(h.handler, `/api/jobs/${flow.ids.last}`);
    assert.equal(status, 200);
    assert.equal(body.state, "waiting");
    assert.deepEqual(
      body.dependencies.map((d: { id: string; node: string; state: string }) => [d.id, d.node, d.state]),
      [[flow.ids.first, "first", "pending"]],
    );
    assert.equal("result" in body.dependencies[0], false, "the view leaves results out");
    assert.deepEqual(body.dependents, []);
    assert.equal(body.waiting[0].kind, "dependencies");
    assert.match(body.waiting[0].message, /0 of 1 done/);
    const first = await callJson(h.handler, `/api/jobs/${flow.ids.first}`);
    assert.deepEqual(
      first.body.dependents.map((d: { id: string }) => d.id),
      [flow.ids.last],
    );
    await h.errand.cancel(flow.ids.last);
    await h.errand.cancel(flow.ids.first);
  });

  test("POST /api/jobs/:id/retry, cancel and discard", async () => {
    const [a, b] = (await h.errand.listJobs({ state: "failed", queue: "emails" })).jobs;
    const retried = await callJson(h.handler, `/api/jobs/${a.id}/retry`, { method: "POST" });
    assert.equal(retried.status, 200);
    assert.equal(retried.body.state, "pending");
    assert.equal((await h.errand.getJob(a.id))?.attempts.length, 1, "history kept");
    const cancelled = await callJson(h.handler, `/api/jobs/${a.id}/cancel`, { method: "POST" });
    assert.equal(cancelled.body.state, "cancelled");
    const discarded = await callJson(h.handler, `/api/jobs/${b.id}/discard`, { method: "POST" });
    assert.deepEqual(discarded.body, { discarded: 1, id: b.id });
    assert.equal(await h.errand.getJob(b.id), null);
    assert.equal((await callJson(h.handler, `/api/jobs/${b.id}`)).status, 404);
  });

  test("POST /api/queues/:queue/resume-limits: one key, the queue-wide budget, or all", async () => {
    const ms = 10 * 365 * 86_400_000;
    for (const key of ["acme", "globex", null]) await h.errand.store.pauseFlow({ queue: "crm", key, ms });
    const paused = async () =>
      [...(await h.errand.store.flowStatus({ queue: "crm", windowMs: 0 })).pausedUntil.keys()].sort();
    const lift = (body?: unknown) =>
      callJson(
        h.handler,
        "/api/queues/crm/resume-limits",
        body === undefined ? { method: "POST" } : postJson(body),
      );
    const one = await lift({ key: "acme" });
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.deepEqual(one.body, { queue: "crm", key: "acme", all: false, lifted: 1 });
    assert.deepEqual(await paused(), ["", "globex"]);
    assert.deepEqual((await lift({ key: null })).body, { queue: "crm", key: null, all: false, lifted: 1 });
    assert.deepEqual(await paused(), ["globex"]);
    assert.deepEqual((await lift()).body, { queue: "crm", key: null, all: true, lifted: 1 });
    assert.deepEqual(await paused(), []);
    assert.deepEqual((await lift({})).body, { queue: "crm", key: null, all: true, lifted: 0 });
  });

  test("POST /api/dlq/retry and /discard by ids and by queue", async () => {
    await seed(h.errand, 0, 4);
    await seed(h.errand, 0, 2, buildReport);
    const failedEmails = (await h.errand.listJobs({ state: "failed", queue: "emails" })).jobs.map(
      (j) => j.id,
    );
    const cancelledBefore = (await h.errand.listJobs({ state: "cancelled" })).jobs.length;
    const byIds = await callJson(h.handler, "/api/dlq/retry", postJson({ ids: failedEmails.slice(0, 2) }));
    assert.deepEqual(byIds.body, { retried: 2 });
    const byQueue = await callJson(h.handler, "/api/dlq/retry", postJson({ queue: "emails", all: true }));
    assert.deepEqual(byQueue.body, { retried: failedEmails.length - 2 });
    assert.equal((await h.errand.listJobs({ state: "failed", queue: "emails" })).jobs.length, 0);
    assert.equal(
      (await h.errand.listJobs({ state: "cancelled" })).jobs.length,
      cancelledBefore,
      "retry-all leaves cancelled jobs alone",
    );
    const reportsFailed = (await h.errand.listJobs({ state: "failed", queue: "reports" })).jobs.length;
    const discard = await callJson(h.handler, "/api/dlq/discard", postJson({ all: true }));
    assert.deepEqual(discard.body, { discarded: reportsFailed });
    assert.equal(
      (await h.errand.stats()).reduce((n, s) => n + s.failed, 0),
      0,
    );
  });

  test("GET /api/schedules and /api/workers", async () => {
    const now = Date.now();
    await h.errand.store.upsertSchedule({
      name: "nightly",
      cron: "0 3 * * *",
      timezone: "UTC",
      jobName: "build-report",
      queue: "reports",
      payload: {},
      priority: 0,
      missed: "latest",
      source: "cli",
      nextRunAt: new Date(now + 3_600_000),
    });
    const schedules = await callJson(h.handler, "/api/schedules");
    assert.equal(schedules.status, 200);
    assert.equal(schedules.body.schedules[0].name, "nightly");
    assert.equal(schedules.body.schedules[0].nextRunAt, new Date(now + 3_600_000).toISOString());
    assert.equal(schedules.body.schedules[0].lastFiredAt, null);

    const worker = h.errand.work({ emails: { concurrency: 3 } }, { id: "test-worker-1" });
    try {
      let workers: {
        id: string;
        host: string;
        pid: number;
        queues: Record<string, number>;
        lastHeartbeatAt: string;
      }[] = [];
      for (let i = 0; i < 100 && workers.length === 0; i++) {
        workers = (await callJson(h.handler, "/api/workers")).body.workers;
        if (workers.length === 0) await new Promise((r) => setTimeout(r, 10));
      }
      assert.equal(workers.length, 1);
      assert.equal(workers[0].id, "test-worker-1");
      assert.equal(workers[0].pid, process.pid);
      assert.deepEqual(workers[0].queues, { emails: 3 });
      assert.ok(workers[0].lastHeartbeatAt);
    } finally {
      await worker.stop();
    }
    assert.deepEqual((await callJson(h.handler, "/api/workers")).body.workers, []);
  });
});

test("HEAD answers like GET without a body", async () => {
  const h = await harness();
  try {
    const response = await call(h.handler, "/api/stats", { method: "HEAD" });
    assert.equal(response.status, 200);
    assert.equal(await response.text(), "");
  } finally {
    await h.cleanup();
  }
});
