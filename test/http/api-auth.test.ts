/**
 * The dashboard API's door: no token configured, the Bearer token and the session cookie (login,
 * logout, Secure over https), CSRF on cookie-authenticated posts, and a mount under a prefix with
 * its cookie scoped to it.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { call, callJson, type Harness, harness, login, ORIGIN, postJson, seed, TOKEN } from "./helpers.js";

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
