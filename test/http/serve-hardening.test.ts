/**
 * What `errand serve` adds in front of the Fetch handler (issue 14, "Serving safely"): a Host
 * allow-list against DNS rebinding, explicit header/request/keep-alive timeouts, a minimum token
 * length beyond loopback, and a limit on failed logins. Real node:http servers on 127.0.0.1.
 */
import assert from "node:assert/strict";
import type { Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { test } from "node:test";
import { FailedLoginLimiter } from "../../src/http/login-limit.js";
import { assertServeSafety } from "../../src/http/security.js";
import { createServeServer, SERVE_TIMEOUTS } from "../../src/http/serve-server.js";
import { waitFor } from "../helpers/wait.js";
import { harness, ORIGIN, TOKEN } from "./helpers.js";

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Sends `head` as written and returns the status line's code (0 when closed without an answer). */
function rawStatus(port: number, head: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(`${head}\r\nConnection: close\r\n\r\n`));
    let data = "";
    socket.on("data", (chunk) => {
      data += chunk;
    });
    socket.on("close", () => resolve(Number(/^HTTP\/1\.[01] (\d{3})/.exec(data)?.[1] ?? 0)));
    socket.on("error", reject);
  });
}

test("a token shorter than 32 characters is refused beyond loopback, allowed on it", () => {
  assert.throws(
    () => assertServeSafety({ host: "0.0.0.0", dashboardToken: "x".repeat(31) }),
    /ERRAND_DASHBOARD_TOKEN is 31 characters; beyond 127\.0\.0\.1 it must be at least 32/,
  );
  assert.doesNotThrow(() => assertServeSafety({ host: "0.0.0.0", dashboardToken: "x".repeat(32) }));
  assert.doesNotThrow(() => assertServeSafety({ host: "127.0.0.1", dashboardToken: "short" }));
});

test("on loopback, a Host header naming another site is refused before the handler (DNS rebinding)", async () => {
  let calls = 0;
  const server = createServeServer(
    async () => {
      calls++;
      return new Response("ok");
    },
    { host: "127.0.0.1" },
  );
  const port = await listen(server);
  try {
    for (const host of [
      "evil.example",
      "evil.example:80",
      `127.0.0.1.evil.example:${port}`,
      "localhost.evil",
    ]) {
      assert.equal(await rawStatus(port, `GET / HTTP/1.1\r\nHost: ${host}`), 403, host);
    }
    assert.equal(await rawStatus(port, "GET / HTTP/1.0"), 403, "HTTP/1.0 without Host");
    assert.equal(calls, 0, "the handler never ran");
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, "localhost", `[::1]:${port}`]) {
      assert.equal(await rawStatus(port, `GET / HTTP/1.1\r\nHost: ${host}`), 200, host);
    }
    assert.equal(calls, 4);
  } finally {
    await close(server);
  }
});

test("--allowed-host adds names; beyond loopback without it, any Host is served (the token guards it)", async () => {
  const handler = async () => new Response("ok");
  const named = createServeServer(handler, { host: "0.0.0.0", allowedHosts: ["jobs.example.com"] });
  const open = createServeServer(handler, { host: "0.0.0.0" });
  const [p1, p2] = [await listen(named), await listen(open)];
  try {
    assert.equal(await rawStatus(p1, "GET / HTTP/1.1\r\nHost: jobs.example.com"), 200);
    assert.equal(await rawStatus(p1, "GET / HTTP/1.1\r\nHost: JOBS.example.com:443"), 200);
    assert.equal(await rawStatus(p1, "GET / HTTP/1.1\r\nHost: other.example.com"), 403);
    assert.equal(await rawStatus(p2, "GET / HTTP/1.1\r\nHost: anything.example"), 200);
  } finally {
    await close(named);
    await close(open);
  }
});

test("the server's timeouts are set explicitly, and a client that never finishes its headers is cut", async () => {
  const defaults = createServeServer(async () => new Response("ok"), { host: "127.0.0.1" });
  assert.equal(defaults.headersTimeout, SERVE_TIMEOUTS.headersTimeout);
  assert.equal(defaults.requestTimeout, SERVE_TIMEOUTS.requestTimeout);
  assert.equal(defaults.keepAliveTimeout, SERVE_TIMEOUTS.keepAliveTimeout);
  assert.ok(SERVE_TIMEOUTS.headersTimeout <= 20_000 && SERVE_TIMEOUTS.keepAliveTimeout <= 10_000);

  const server = createServeServer(async () => new Response("ok"), {
    host: "127.0.0.1",
    timeouts: { headersTimeout: 300, requestTimeout: 600, connectionsCheckingInterval: 50 },
  });
  const port = await listen(server);
  try {
    // Slowloris: half a request, then nothing.
    const socket = connect(port, "127.0.0.1", () =>
      socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: 1\r\n"),
    );
    let closed = false;
    let answer = "";
    socket.on("data", (d) => {
      answer += d;
    });
    socket.on("close", () => {
      closed = true;
    });
    socket.on("error", () => {});
    await waitFor(() => closed, "the server to cut the slow client", 20_000);
    assert.match(answer, /^HTTP\/1\.1 408/);
  } finally {
    await close(server);
  }
});

test("failed logins are limited: after 10 in a minute the form answers 429, even to the right token", async () => {
  const h = await harness({ dashboardToken: TOKEN });
  const form = (token: string) =>
    h.handler(
      new Request(`${ORIGIN}/login`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
        body: new URLSearchParams({ token }).toString(),
      }),
    );
  try {
    for (let i = 0; i < 10; i++) assert.equal((await form(`wrong-${i}`)).status, 401, `attempt ${i + 1}`);
    const limited = await form("wrong-again");
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get("retry-after")) >= 1);
    assert.match(await limited.text(), /Too many failed logins/);
    assert.equal((await form(TOKEN)).status, 429, "no guessing while limited");
    // Bearer calls are not affected: scripts and Prometheus keep working.
    const api = await h.handler(
      new Request(`${ORIGIN}/api/stats`, { headers: { authorization: `Bearer ${TOKEN}` } }),
    );
    assert.equal(api.status, 200);
  } finally {
    await h.cleanup();
  }
});

test("the limiter frees a slot as each failure ages out of the window", () => {
  let now = 1_000_000;
  const limiter = new FailedLoginLimiter({ max: 3, windowMs: 60_000, now: () => now });
  for (let i = 0; i < 3; i++) {
    assert.equal(limiter.retryAfterMs(), 0);
    limiter.recordFailure();
    now += 1_000;
  }
  assert.equal(limiter.retryAfterMs(), 57_000, "until the first failure is a minute old");
  now += 57_000;
  assert.equal(limiter.retryAfterMs(), 0);
  limiter.recordFailure();
  assert.ok(limiter.retryAfterMs() > 0);
});
