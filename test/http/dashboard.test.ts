import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { APP_MODULES, escapeHtml } from "../../src/http/dashboard.js";
import { toNodeHandler } from "../../src/http/node.js";
import { call, type Harness, harness, login, ORIGIN } from "./helpers.js";

/** A raw HTTP request: the path goes on the wire exactly as given (no URL normalization by the client). */
function raw(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, method: "GET", headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("dashboard", () => {
  let h: Harness;
  let server: Server;
  let port: number;
  let session: string;
  before(async () => {
    h = await harness();
    server = createServer(toNodeHandler(h.handler));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
    session = await login(h.handler);
  });
  after(async () => {
    await new Promise((r) => server.close(r));
    await h.cleanup();
  });

  test("signed out, / redirects to the login page; the login page is a form", async () => {
    const response = await call(h.handler, "/", { bearer: null });
    assert.equal(response.status, 303);
    assert.equal(response.headers.get("location"), "/login");
    const page = await call(h.handler, "/login", { bearer: null });
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /<form method="post" action="\/login">/);
    assert.match(html, /name="token" type="password"/);
  });

  test("signed in, / is the app shell: one external module script, no inline script", async () => {
    const response = await call(h.handler, "/", { bearer: null, headers: { cookie: session } });
    assert.equal(response.status, 200);
    const html = await response.text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.equal(scripts.length, 1);
    assert.match(scripts[0][1], /src="\/assets\/app\.js"/);
    assert.equal(scripts[0][2].trim(), "", "no inline code");
    assert.doesNotMatch(html, /\son[a-z]+=/i, "no inline event handlers");
    // Already signed in: the login page sends you on.
    const loginPage = await call(h.handler, "/login", { bearer: null, headers: { cookie: session } });
    assert.equal(loginPage.status, 303);
  });

  test("security headers on pages, assets and API answers", async () => {
    const responses = [
      await call(h.handler, "/login", { bearer: null }),
      await call(h.handler, "/", { bearer: null, headers: { cookie: session } }),
      await call(h.handler, "/assets/app.js", { bearer: null }),
      await call(h.handler, "/api/stats"),
      // Answers outside the dashboard's own routes had none (a helper's scan): a path nobody
      // serves, and the tick endpoint (off here: 503).
      await call(h.handler, "/nowhere", { bearer: null }),
      await call(h.handler, "/api/cron/tick", { bearer: null, method: "POST" }),
    ];
    for (const response of responses) {
      const csp = response.headers.get("content-security-policy") ?? "";
      assert.match(csp, /script-src 'self'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.equal(response.headers.get("x-content-type-options"), "nosniff");
    }
  });

  test("every ES module of the app is served, each importing only served modules, none over ~400 lines", async () => {
    const dir = new URL("../../src/http/static/", import.meta.url);
    const onDisk = readdirSync(dir).filter((f) => f.endsWith(".js"));
    assert.deepEqual([...APP_MODULES].sort(), onDisk.sort());
    for (const name of APP_MODULES) {
      const response = await call(h.handler, `/assets/${name}`, { bearer: null });
      assert.equal(response.status, 200, name);
      assert.match(response.headers.get("content-type") ?? "", /text\/javascript/);
      const source = await response.text();
      assert.ok(source.split("\n").length <= 420, `${name} is one idea of at most ~400 lines`);
      for (const [, imported] of source.matchAll(/^import [^;]+ from "\.\/([^"]+)";$/gm)) {
        assert.ok((APP_MODULES as readonly string[]).includes(imported), `${name} imports ${imported}`);
      }
    }
  });

  test("assets: the allowlist only, with the right content types and ETags", async () => {
    const js = await call(h.handler, "/assets/app.js", { bearer: null });
    assert.equal(js.status, 200);
    assert.match(js.headers.get("content-type") ?? "", /text\/javascript/);
    const etag = js.headers.get("etag");
    assert.ok(etag);
    const again = await call(h.handler, "/assets/app.js", {
      bearer: null,
      headers: { "if-none-match": etag },
    });
    assert.equal(again.status, 304);
    assert.match(
      (await call(h.handler, "/assets/style.css", { bearer: null })).headers.get("content-type") ?? "",
      /text\/css/,
    );
    assert.match(
      (await call(h.handler, "/assets/favicon.svg", { bearer: null })).headers.get("content-type") ?? "",
      /image\/svg/,
    );
    for (const name of ["index.html", "app.ts", "APP.JS", "app.js.map", "style.css~", ".env"]) {
      const response = await call(h.handler, `/assets/${name}`, { bearer: null });
      assert.ok([400, 404].includes(response.status), `${name}: ${response.status}`);
    }
    assert.equal((await call(h.handler, "/assets/app.js", { bearer: null, method: "POST" })).status, 405);
  });

  test("path traversal cannot read outside the static folder", async () => {
    const secret = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
    const marker = '"name": "errand"';
    assert.ok(secret.includes(marker));
    const paths = [
      "/assets/../../package.json",
      "/assets/../../../package.json",
      "/assets/%2e%2e/%2e%2e/package.json",
      "/assets/%2E%2E/%2E%2E/package.json",
      "/assets/.%2e/.%2e/package.json",
      "/assets/..%2f..%2fpackage.json",
      "/assets/%2e%2e%2f%2e%2e%2fpackage.json",
      "/assets/..%5c..%5cpackage.json",
      "/assets/..\\..\\package.json",
      "/assets/%252e%252e/%252e%252e/package.json",
      "/assets//etc/passwd",
      "/assets/%2fetc%2fpasswd",
      "/assets/app.js%00.css",
      "/assets/./app.js/../../dashboard.ts",
      "/assets/static/../dashboard.ts",
      "/assets/..%2fdashboard.ts",
      "//etc/passwd",
    ];
    for (const path of paths) {
      for (const response of [await raw(port, path), await raw(port, path, { cookie: session })]) {
        assert.ok([400, 404].includes(response.status), `${path}: ${response.status}`);
        assert.ok(!response.body.includes(marker), `${path} leaked package.json`);
        assert.ok(!response.body.includes("root:"), `${path} leaked /etc/passwd`);
        assert.ok(!response.body.includes("handleDashboard"), `${path} leaked source`);
      }
    }
    // The same through the Fetch handler directly.
    for (const path of ["/assets/%2e%2e/%2e%2e/package.json", "/assets/..%2f..%2fpackage.json"]) {
      const response = await call(h.handler, path, { bearer: null });
      assert.ok([400, 404].includes(response.status), path);
      assert.ok(!(await response.text()).includes(marker));
    }
  });

  test("the login page escapes what it echoes; escapeHtml covers the five characters", async () => {
    assert.equal(escapeHtml(`<script>"'&`), "&#60;script&#62;&#34;&#39;&#38;");
    const h2 = await harness({ dashboardToken: "t0ken-for-prefix-test", prefix: '/a"><script>x</script>' });
    try {
      const page = await h2.handler(new Request(`${ORIGIN}/a%22%3E%3Cscript%3Ex%3C/script%3E/login`));
      // The prefix never matches an encoded URL path, so nothing is served at all — and nothing reflected.
      assert.doesNotMatch(await page.text(), /<script>x<\/script>/);
    } finally {
      await h2.cleanup();
    }
  });

  test("the app renders data with textContent only (no innerHTML, no eval)", () => {
    const source = readFileSync(new URL("../../src/http/static/app.js", import.meta.url), "utf8");
    const code = source.replace(/^\s*\/\/.*$/gm, "");
    for (const sink of [
      "innerHTML",
      "outerHTML",
      "insertAdjacentHTML",
      "document.write",
      "eval(",
      "new Function",
      'setAttribute("style"',
    ]) {
      assert.ok(!code.includes(sink), `app.js uses ${sink}`);
    }
  });

  test("dashboard without a token: 503 telling what to set", async () => {
    const h2 = await harness({});
    try {
      const response = await call(h2.handler, "/", { bearer: null });
      assert.equal(response.status, 503);
      assert.match(await response.text(), /ERRAND_DASHBOARD_TOKEN/);
    } finally {
      await h2.cleanup();
    }
  });
});
