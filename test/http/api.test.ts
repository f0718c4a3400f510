import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CONTRACT_FIELDS } from "../helpers/contract.js";
import {
  buildReport,
  call,
  callJson,
  type Harness,
  harness,
  login,
  ORIGIN,
  postJson,
  seed,
  sendEmail,
  TOKEN,
} from "./helpers.js";

describe("API auth", () => {
  test("no token configured: 503 naming ERRAND_DASHBOARD_TOKEN, for the API, the dashboard and /metrics", async () => {
    const h = await harness({});
    try {
      for (const path of ["/api/stats", "/api/jobs", "/metrics", "/", "/login"]) {
        const response = await call(h.handler, path);
        assert.equal(response.status, 503, path);
        assert.match(await response.text(), /ERRAND_DASHBOARD_TOKEN/, path);
      }
      const post = await call(h.handler, "/api/dlq/retry", postJson({ all: true }));
      assert.equal(post.status, 503);
    } finally {
      await h.cleanup();
    }
  });

  test("the token also comes from ERRAND_DASHBOARD_TOKEN", async () => {
    process.env.ERRAND_DASHBOARD_TOKEN = "from-the-environment";
    const h = await harness({});
    try {
      assert.equal((await call(h.handler, "/api/stats", { bearer: "from-the-environment" })).status, 200);
      assert.equal((await call(h.handler, "/api/stats")).status, 401);
    } finally {
      delete process.env.ERRAND_DASHBOARD_TOKEN;
      await h.cleanup();
    }
  });

  describe("with a token", () => {
    let h: Harness;
    before(async () => {
      h = await harness();
    });
    after(() => h.cleanup());

    test("missing or wrong credentials: 401, nothing leaks", async () => {
      for (const bearer of [null, "wrong", `${TOKEN}x`, TOKEN.slice(0, -1), ""]) {
        const { status, body, headers } = await callJson(h.handler, "/api/stats", { bearer });
        assert.equal(status, 401, String(bearer));
        assert.match(body.error, /unauthorized/);
        assert.match(headers.get("www-authenticate") ?? "", /Bearer/);
      }
      const basic = await call(h.handler, "/api/stats", {
        headers: { authorization: `Basic ${btoa(`x:${TOKEN}`)}` },
      });
      assert.equal(basic.status, 401);
      // Even unknown paths answer 401, not 404, without credentials.
      assert.equal((await call(h.handler, "/api/nope", { bearer: null })).status, 401);
    });

    test("the right Bearer token: 200", async () => {
      const { status, body } = await callJson(h.handler, "/api/stats");
      assert.equal(status, 200);
      assert.ok(Array.isArray(body.queues));
    });

    test("login form sets an HttpOnly SameSite=Strict session cookie that authenticates", async () => {
      const response = await h.handler(
        new Request(`${ORIGIN}/login`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
          body: `token=${encodeURIComponent(TOKEN)}`,
        }),
      );
      assert.equal(response.status, 303);
      assert.equal(response.headers.get("location"), "/");
      const cookie = response.headers.get("set-cookie") ?? "";
      assert.match(cookie, /^errand_session=/);
      assert.match(cookie, /HttpOnly/);
      assert.match(cookie, /SameSite=Strict/);
      assert.match(cookie, /Path=\//);
      assert.doesNotMatch(cookie, /Secure/, "plain http: no Secure flag");
      assert.ok(!cookie.includes(TOKEN), "the cookie never holds the token");
      const session = cookie.split(";")[0];
      const stats = await call(h.handler, "/api/stats", { bearer: null, headers: { cookie: session } });
      assert.equal(stats.status, 200);
      // A tampered session is refused.
      const tampered = session.replace(/.$/, (c) => (c === "A" ? "B" : "A"));
      assert.equal(
        (await call(h.handler, "/api/stats", { bearer: null, headers: { cookie: tampered } })).status,
        401,
      );
      // A wrong Authorization header fails even beside a valid cookie.
      assert.equal(
        (await call(h.handler, "/api/stats", { bearer: "wrong", headers: { cookie: session } })).status,
        401,
      );
    });

    test("the session cookie is Secure over https (directly or via X-Forwarded-Proto)", async () => {
      const form = { "content-type": "application/x-www-form-urlencoded" };
      const direct = await h.handler(
        new Request("https://errand.test/login", { method: "POST", headers: form, body: `token=${TOKEN}` }),
      );
      assert.match(direct.headers.get("set-cookie") ?? "", /; Secure/);
      const proxied = await h.handler(
        new Request(`${ORIGIN}/login`, {
          method: "POST",
          headers: { ...form, "x-forwarded-proto": "https" },
          body: `token=${TOKEN}`,
        }),
      );
      assert.match(proxied.headers.get("set-cookie") ?? "", /; Secure/);
    });

    test("a wrong token at the login form: 401, no cookie", async () => {
      const response = await h.handler(
        new Request(`${ORIGIN}/login`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
          body: "token=nope",
        }),
      );
      assert.equal(response.status, 401);
      assert.equal(response.headers.get("set-cookie"), null);
      assert.match(await response.text(), /not right/);
    });

    test("logout clears the cookie", async () => {
      const response = await h.handler(
        new Request(`${ORIGIN}/logout`, { method: "POST", headers: { "sec-fetch-site": "same-origin" } }),
      );
      assert.equal(response.status, 303);
      assert.match(response.headers.get("set-cookie") ?? "", /errand_session=;.*Max-Age=0/);
    });
  });
});

describe("CSRF", () => {
  let h: Harness;
  let session: string;
  let failedId: string;
  before(async () => {
    h = await harness();
    await seed(h.errand, 0, 1);
    failedId = (await h.errand.listJobs({ state: "failed" })).jobs[0].id;
    session = await login(h.handler);
  });
  after(() => h.cleanup());

  const cookiePost = (path: string, headers: Record<string, string>) =>
    call(h.handler, path, { method: "POST", bearer: null, headers: { cookie: session, ...headers } });

  test("a cookie-authenticated POST from another site is refused and changes nothing", async () => {
    const attempts: Record<string, string>[] = [
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
      { origin: "https://evil.example" },
      { origin: "null" },
      {}, // no Origin, no fetch metadata
    ];
    for (const headers of attempts) {
      const response = await cookiePost(`/api/jobs/${failedId}/retry`, headers);
      assert.equal(response.status, 403, JSON.stringify(headers));
      assert.match((await response.json()).error, /cross-site/);
    }
    const bulk = await cookiePost("/api/dlq/discard", {
      "sec-fetch-site": "cross-site",
      "content-type": "application/json",
    });
    assert.equal(bulk.status, 403);
    assert.equal((await h.errand.getJob(failedId))?.state, "failed");
  });

  test("a cookie-authenticated POST from our own page is accepted", async () => {
    const response = await cookiePost(`/api/jobs/${failedId}/cancel`, { "sec-fetch-site": "same-origin" });
    // The job is failed, so cancel is a 409 — past the CSRF gate, which is what this checks.
    assert.equal(response.status, 409);
    const byOrigin = await cookiePost(`/api/jobs/${failedId}/cancel`, { origin: ORIGIN });
    assert.equal(byOrigin.status, 409);
  });

  test("Bearer calls need no same-origin proof", async () => {
    const { status } = await callJson(h.handler, `/api/jobs/${failedId}/cancel`, { method: "POST" });
    assert.equal(status, 409);
  });

  test("a cross-site login form post is refused", async () => {
    const response = await h.handler(
      new Request(`${ORIGIN}/login`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "cross-site" },
        body: `token=${TOKEN}`,
      }),
    );
    assert.equal(response.status, 403);
    assert.equal(response.headers.get("set-cookie"), null);
  });
});

describe("bad input answers 4xx JSON, never 500", () => {
  let h: Harness;
  before(async () => {
    h = await harness();
    await seed(h.errand, 1, 1);
  });
  after(() => h.cleanup());

  const cases: Array<[string, RequestInit, number, RegExp]> = [
    [
      "/api/dlq/retry",
      { method: "POST", headers: { "content-type": "application/json" }, body: "{ids: [1" },
      400,
      /malformed JSON/,
    ],
    [
      "/api/dlq/retry",
      { method: "POST", headers: { "content-type": "application/json" }, body: "[1,2]" },
      400,
      /JSON object/,
    ],
    [
      "/api/dlq/retry",
      { method: "POST", headers: { "content-type": "text/plain" }, body: '{"all":true}' },
      415,
      /application\/json/,
    ],
    ["/api/dlq/retry", { method: "POST", headers: { "content-type": "application/json" } }, 400, /empty/],
    ["/api/dlq/retry", postJson({}), 400, /ids.*all/],
    ["/api/dlq/retry", postJson({ ids: "1" }), 400, /ids must be/],
    ["/api/dlq/retry", postJson({ ids: [] }), 400, /ids must be/],
    ["/api/dlq/retry", postJson({ ids: ["1; DROP TABLE jobs"] }), 400, /job ids/],
    ["/api/dlq/retry", postJson({ ids: [1], all: true }), 400, /either/],
    ["/api/dlq/discard", postJson({ all: true, queue: "../etc" }), 400, /queue/],
    ["/api/dlq/discard", postJson({ all: "yes" }), 400, /expected/],
    ["/api/dlq/discard", postJson({ everything: true }), 400, /unknown field/],
    ["/api/jobs?state=exploded", {}, 400, /state must be one of/],
    ["/api/jobs?limit=0", {}, 400, /limit/],
    ["/api/jobs?limit=5000", {}, 400, /limit/],
    ["/api/jobs?limit=ten", {}, 400, /limit/],
    ["/api/jobs?cursor=abc", {}, 400, /cursor/],
    ["/api/jobs?queue=a%20b", {}, 400, /queue/],
    ["/api/jobs?colour=red", {}, 400, /unknown query parameter "colour"/],
    ["/api/jobs?state=failed&state=pending", {}, 400, /twice/],
    [`/api/jobs?search=${"x".repeat(300)}`, {}, 400, /search/],
    ["/api/throughput?since=forever", {}, 400, /since/],
    ["/api/throughput?since=1h&bucket=1ms", {}, 400, /bucket/],
    ["/api/throughput?since=7d&bucket=1s", {}, 400, /buckets/],
    ["/api/jobs/999999", {}, 404, /no job/],
    ["/api/jobs/abc", {}, 404, /no job/],
    ["/api/jobs/%E0%A4%A", {}, 400, /malformed/],
    ["/api/jobs/999999/retry", { method: "POST" }, 404, /no job/],
    ["/api/jobs/999999/discard", { method: "POST" }, 404, /no job/],
    ["/api/jobs/999999/cancel", { method: "POST" }, 404, /no job/],
    ["/api/jobs/1/retry", {}, 405, /POST/],
    ["/api/stats", { method: "POST" }, 405, /GET/],
    ["/api/stats", { method: "DELETE" }, 405, /GET/],
    ["/api/unknown", {}, 404, /no API endpoint/],
  ];
  for (const [path, init, status, message] of cases) {
    test(`${init.method ?? "GET"} ${path.slice(0, 60)} ${init.body ? String(init.body).slice(0, 30) : ""} → ${status}`, async () => {
      const { status: got, body, headers } = await callJson(h.handler, path, init);
      assert.equal(got, status, JSON.stringify(body));
      assert.match(headers.get("content-type") ?? "", /application\/json/);
      assert.match(body.error, message);
    });
  }

  test("oversized bodies: 413, by Content-Length or while streaming", async () => {
    const big = JSON.stringify({ ids: Array.from({ length: 20_000 }, (_, i) => String(i + 1)) });
    assert.ok(big.length > 64 * 1024);
    const declared = await callJson(h.handler, "/api/dlq/retry", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: big,
    });
    assert.equal(declared.status, 413);
    assert.match(declared.body.error, /too large/);
    // A stream with no Content-Length is cut off at the limit.
    const chunk = new TextEncoder().encode("x".repeat(16 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 100) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const streamed = await callJson(h.handler, "/api/dlq/retry", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    assert.equal(streamed.status, 413);
    assert.ok(sent < 100, "the server stopped reading early");
  });

  test("job actions in the wrong state: 409 naming the state", async () => {
    const completed = (await h.errand.listJobs({ state: "completed" })).jobs[0];
    for (const action of ["retry", "discard", "cancel"]) {
      const { status, body } = await callJson(h.handler, `/api/jobs/${completed.id}/${action}`, {
        method: "POST",
      });
      assert.equal(status, 409);
      assert.match(body.error, /is completed/);
    }
  });
});

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

describe("mounted under a prefix", () => {
  test("/admin/jobs/api/... answers; the bare /api/... does not; the cookie is scoped to the prefix", async () => {
    const h = await harness({ dashboardToken: TOKEN, prefix: "/admin/jobs" });
    try {
      assert.equal((await call(h.handler, "/admin/jobs/api/stats")).status, 200);
      assert.equal((await call(h.handler, "/api/stats")).status, 404);
      assert.equal((await call(h.handler, "/admin/jobsx/api/stats")).status, 404);
      const response = await h.handler(
        new Request(`${ORIGIN}/admin/jobs/login`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
          body: `token=${TOKEN}`,
        }),
      );
      assert.equal(response.status, 303);
      assert.equal(response.headers.get("location"), "/admin/jobs/");
      assert.match(response.headers.get("set-cookie") ?? "", /Path=\/admin\/jobs;/);
      const session = (response.headers.get("set-cookie") ?? "").split(";")[0];
      const page = await call(h.handler, "/admin/jobs/", { bearer: null, headers: { cookie: session } });
      assert.equal(page.status, 200);
      const html = await page.text();
      assert.match(html, /src="\/admin\/jobs\/assets\/app\.js"/);
      assert.match(html, /href="\/admin\/jobs\/assets\/style\.css"/);
      assert.match(html, /data-base="\/admin\/jobs"/);
      const unauthenticated = await call(h.handler, "/admin/jobs", { bearer: null });
      assert.equal(unauthenticated.status, 303);
      assert.equal(unauthenticated.headers.get("location"), "/admin/jobs/login");
      assert.equal((await call(h.handler, "/admin/jobs/assets/app.js", { bearer: null })).status, 200);
    } finally {
      await h.cleanup();
    }
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
