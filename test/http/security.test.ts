import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertServeSafety,
  createSession,
  isLoopbackHost,
  isSameOrigin,
  SESSION_TTL_MS,
  safeEqual,
  verifySession,
} from "../../src/http/security.js";

const LONG_TOKEN = "a-long-random-token-0123456789abcdef";

describe("assertServeSafety", () => {
  test("loopback hosts are fine without a token", () => {
    for (const host of ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.53", "::ffff:127.0.0.1"]) {
      assert.doesNotThrow(() => assertServeSafety({ host, dashboardToken: undefined }), host);
      assert.ok(isLoopbackHost(host), host);
    }
  });

  test("any other host needs a token, and the error says what to do", () => {
    const saved = process.env.ERRAND_DASHBOARD_TOKEN;
    delete process.env.ERRAND_DASHBOARD_TOKEN;
    try {
      for (const host of [
        "0.0.0.0",
        "::",
        "",
        "192.168.1.10",
        "example.com",
        "localhost.evil.com",
        "127.0.0.1.nip.io",
      ]) {
        assert.throws(
          () => assertServeSafety({ host, dashboardToken: undefined }),
          /refusing to serve .* without a dashboard token: set ERRAND_DASHBOARD_TOKEN/,
          host,
        );
        assert.throws(() => assertServeSafety({ host, dashboardToken: "   " }), /ERRAND_DASHBOARD_TOKEN/);
        assert.doesNotThrow(() => assertServeSafety({ host, dashboardToken: LONG_TOKEN }));
      }
      process.env.ERRAND_DASHBOARD_TOKEN = `from-env-${LONG_TOKEN}`;
      assert.doesNotThrow(() => assertServeSafety({ host: "0.0.0.0" }));
    } finally {
      if (saved === undefined) delete process.env.ERRAND_DASHBOARD_TOKEN;
      else process.env.ERRAND_DASHBOARD_TOKEN = saved;
    }
  });
});

describe("secrets and sessions", () => {
  test("safeEqual compares any lengths", () => {
    assert.ok(safeEqual("abc", "abc"));
    assert.ok(!safeEqual("abc", "abd"));
    assert.ok(!safeEqual("abc", "abcd"));
    assert.ok(!safeEqual("", "a"));
  });

  test("a session is bound to the token and expires", () => {
    const now = Date.now();
    const session = createSession("token-a", now);
    assert.ok(verifySession("token-a", session, now + 1000));
    assert.ok(!verifySession("token-b", session, now + 1000), "a rotated token invalidates sessions");
    assert.ok(!verifySession("token-a", session, now + SESSION_TTL_MS + 1), "expired");
    const [expires, mac] = session.split(".");
    assert.ok(
      !verifySession("token-a", `${Number(expires) + 3_600_000}.${mac}`, now),
      "the expiry is signed",
    );
    assert.ok(!verifySession("token-a", "garbage", now));
    assert.ok(!verifySession("token-a", "", now));
  });

  test("same-origin rules", () => {
    const req = (headers: Record<string, string>) =>
      new Request("http://errand.test/api/x", { method: "POST", headers });
    assert.ok(isSameOrigin(req({ "sec-fetch-site": "same-origin" }), true));
    assert.ok(!isSameOrigin(req({ "sec-fetch-site": "same-site" }), true));
    assert.ok(!isSameOrigin(req({ "sec-fetch-site": "cross-site" }), true));
    assert.ok(!isSameOrigin(req({ "sec-fetch-site": "none" }), true));
    assert.ok(isSameOrigin(req({ origin: "http://errand.test" }), true));
    assert.ok(isSameOrigin(req({ origin: "https://errand.test" }), true), "behind a TLS-terminating proxy");
    assert.ok(!isSameOrigin(req({ origin: "http://errand.test.evil.com" }), true));
    assert.ok(!isSameOrigin(req({ origin: "null" }), false));
    assert.ok(!isSameOrigin(req({}), true));
    assert.ok(isSameOrigin(req({}), false));
    // Fetch metadata wins over Origin.
    assert.ok(!isSameOrigin(req({ "sec-fetch-site": "cross-site", origin: "http://errand.test" }), true));
  });
});
