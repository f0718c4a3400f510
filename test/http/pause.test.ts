/**
 * Pausing over HTTP: the queue and schedule routes of the JSON API, the job view's `waiting`,
 * the queue listing's paused state and live workers, and the paused-queue gauge in /metrics.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { call, callJson, type Harness, harness, sendEmail } from "./helpers.js";

const post = { method: "POST" };

describe("pause and resume over the API", () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.cleanup());

  test("pause a queue: /api/stats and /api/queues say so, a pending job says why it waits; resume lifts it", async () => {
    const job = await h.errand.enqueue(sendEmail, { n: 1 });
    const paused = await callJson(h.handler, "/api/queues/emails/pause", post);
    assert.equal(paused.status, 200, JSON.stringify(paused.body));
    assert.equal(paused.body.queue, "emails");
    assert.ok(!Number.isNaN(Date.parse(paused.body.pausedAt)));

    const stats = await callJson(h.handler, "/api/stats");
    const emails = stats.body.queues.find((q: { queue: string }) => q.queue === "emails");
    assert.equal(emails.paused, true);
    assert.equal(emails.pausedAt, paused.body.pausedAt);
    assert.equal(emails.workers, 0, "no worker runs in this test");
    const reports = stats.body.queues.find((q: { queue: string }) => q.queue === "reports");
    assert.equal(reports.paused, false);

    const queues = await callJson(h.handler, "/api/queues");
    assert.equal(queues.status, 200);
    assert.deepEqual(
      queues.body.queues.map((q: { queue: string; paused: boolean }) => [q.queue, q.paused]),
      [
        ["emails", true],
        ["reports", false],
      ],
    );

    const view = await callJson(h.handler, `/api/jobs/${job.id}`);
    assert.equal(view.status, 200);
    assert.deepEqual(
      view.body.waiting.map((r: { kind: string }) => r.kind),
      ["queue-paused", "no-worker"],
    );
    assert.match(view.body.waiting[0].message, /queue "emails" is paused/);
    assert.match(view.body.waiting[1].message, /no live worker serves queue "emails"/);

    const resumed = await callJson(h.handler, "/api/queues/emails/resume", post);
    assert.deepEqual(resumed.body, { queue: "emails", resumed: true });
    const again = await callJson(h.handler, "/api/queues/emails/resume", post);
    assert.deepEqual(again.body, { queue: "emails", resumed: false }, "resuming twice is harmless");
    const after = await callJson(h.handler, `/api/jobs/${job.id}`);
    assert.deepEqual(
      after.body.waiting.map((r: { kind: string }) => r.kind),
      ["no-worker"],
    );
    await h.errand.cancel(job.id);
  });

  test("a queue with no jobs may be paused; a bad name is a 400 naming it; GET is not allowed", async () => {
    const fresh = await callJson(h.handler, "/api/queues/not-yet-used/pause", post);
    assert.equal(fresh.status, 200);
    assert.ok((await h.errand.pausedQueues()).some((p) => p.queue === "not-yet-used"));
    await h.errand.resumeQueue("not-yet-used");

    const bad = await callJson(h.handler, `/api/queues/${encodeURIComponent("bad name!")}/pause`, post);
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /queue.*"bad name!"/);
    assert.equal((await h.errand.pausedQueues()).length, 0, "nothing paused by a refused request");
    assert.equal((await call(h.handler, "/api/queues/emails/pause")).status, 405);
  });

  test("pause, resume and run a schedule; an unknown one is a 404", async () => {
    await h.errand.addSchedule({
      name: "digest",
      cron: "0 3 * * *",
      jobName: "send-email",
      queue: "emails",
      payload: { n: 7 },
    });
    const paused = await callJson(h.handler, "/api/schedules/digest/pause", post);
    assert.equal(paused.status, 200);
    assert.ok(paused.body.schedule.pausedAt, "the row says since when it is paused");
    const listed = await callJson(h.handler, "/api/schedules");
    assert.ok(listed.body.schedules[0].pausedAt);

    const nextRunAt = listed.body.schedules[0].nextRunAt;
    const run = await callJson(h.handler, "/api/schedules/digest/run", post);
    assert.equal(run.status, 200);
    assert.equal(run.body.created, true);
    const job = await h.errand.getJob(run.body.jobId);
    assert.deepEqual(job?.payload, { n: 7 });
    assert.match(job?.key ?? "", /^cron:digest:now:/);
    const afterRun = await callJson(h.handler, "/api/schedules");
    assert.equal(
      afterRun.body.schedules[0].nextRunAt,
      nextRunAt,
      "run now leaves the next slot where it was",
    );

    const resumed = await callJson(h.handler, "/api/schedules/digest/resume", post);
    assert.equal(resumed.body.schedule.pausedAt, null);

    const unknown = await callJson(h.handler, "/api/schedules/nope/pause", post);
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.error, /no schedule named "nope"/);
    await h.errand.removeSchedule("digest");
    await h.errand.cancel(run.body.jobId);
  });

  test("/metrics: errand_queue_paused is 1 for a paused queue, 0 for the others", async () => {
    await h.errand.pauseQueue("reports");
    try {
      const text = await (await call(h.handler, "/metrics")).text();
      assert.match(text, /^errand_queue_paused\{queue="reports"\} 1$/m);
      assert.match(text, /^errand_queue_paused\{queue="emails"\} 0$/m);
    } finally {
      await h.errand.resumeQueue("reports");
    }
    const text = await (await call(h.handler, "/metrics")).text();
    assert.match(text, /^errand_queue_paused\{queue="reports"\} 0$/m);
  });
});
