/**
 * POST /api/cron/tick over a real node:http server on 127.0.0.1, on every store: nothing is done
 * unless the token is right — missing, wrong or malformed tokens, whitespace HTTP strips itself,
 * no configured secret, and the secret read from CRON_SECRET.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { test } from "node:test";
import type { HttpOptions } from "../../src/index.js";
import { describeTick, SECRET } from "./tick-fixture.js";

/** Sends raw bytes (headers exactly as written) and returns the status code. */
function rawRequest(base: string, head: string): Promise<number> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () =>
      socket.write(`${head}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`),
    );
    let data = "";
    socket.on("data", (chunk) => {
      data += chunk;
    });
    socket.on("end", () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1])));
    socket.on("error", reject);
  });
}

describeTick(({ setUp, assertNothingDone }) => {
  test("refuses a missing, wrong or malformed token with 401 and does nothing", async () => {
    const t = await setUp();
    try {
      const lastCharDiffers = SECRET.slice(0, -1) + (SECRET.endsWith("f") ? "e" : "f");
      const cases: Array<[string, RequestInit & { token?: string | null }]> = [
        ["no Authorization header", { token: null }],
        ["a wrong token", { token: "not-the-secret" }],
        ["a token differing in the last character", { token: lastCharDiffers }],
        ["the token with a prefix", { token: `x${SECRET}` }],
        ["the token cut short", { token: SECRET.slice(0, -1) }],
        ["whitespace and more after the token", { token: `${SECRET} x` }],
        ["the token followed by a tab and more", { token: `${SECRET}\tx` }],
        ["an empty bearer token", { token: "" }],
        [
          "another scheme",
          {
            token: null,
            headers: { authorization: `Basic ${Buffer.from(`u:${SECRET}`).toString("base64")}` },
          },
        ],
        ["the token without a scheme", { token: null, headers: { authorization: SECRET } }],
        ["the secret in the query string", { token: null, query: `?token=${SECRET}` } as RequestInit],
      ];
      for (const [what, init] of cases) {
        const response = await t.tick(init);
        assert.equal(response.status, 401, what);
        assert.match(response.headers.get("www-authenticate") ?? "", /^Bearer/, what);
        const body = (await response.json()) as { error: string };
        assert.match(body.error, /unauthorized/, what);
        assert.ok(!JSON.stringify(body).includes(SECRET), "the secret is not echoed");
      }
      // Raw bytes: a wrong token with trailing whitespace is still wrong.
      assert.equal(
        await rawRequest(
          t.base,
          `POST /api/cron/tick HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${lastCharDiffers}   `,
        ),
        401,
      );
      await assertNothingDone(t.errand, 3);
      const logs = t.logLines.join("");
      assert.match(logs, /tick refused/);
      assert.ok(
        !logs.includes(SECRET) && !logs.includes(lastCharDiffers),
        "neither the secret nor a presented token is logged",
      );
    } finally {
      await t.cleanup();
    }
  });

  test("trailing whitespace after a header value is stripped by HTTP itself before any handler sees it", async () => {
    // RFC 9110 §5.5: leading and trailing whitespace is not part of a field value. node's parser
    // drops it, so `Bearer <secret>   ` arrives as `Bearer <secret>`: no server can refuse it.
    const t = await setUp(0);
    try {
      assert.equal(
        await rawRequest(
          t.base,
          `POST /api/cron/tick HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${SECRET} \t `,
        ),
        200,
      );
      assert.equal(
        new Headers({ authorization: `Bearer ${SECRET} ` }).get("authorization"),
        `Bearer ${SECRET}`,
      );
    } finally {
      await t.cleanup();
    }
  });

  test("is off without a configured secret: 503 and nothing done", async () => {
    for (const options of [{}, { cronSecret: "" }, { cronSecret: "   " }] as HttpOptions[]) {
      const t = await setUp(2, options);
      try {
        for (const token of [SECRET, null, ""]) {
          const response = await t.tick({ token });
          assert.equal(response.status, 503);
          assert.deepEqual(await response.json(), { error: "tick endpoint disabled: set CRON_SECRET" });
        }
        await assertNothingDone(t.errand, 2);
      } finally {
        await t.cleanup();
      }
    }
  });

  test("reads the secret from CRON_SECRET when no option is given (trimmed, as a secret file's newline would be)", async () => {
    process.env.CRON_SECRET = `${SECRET}\n`;
    const t = await setUp(1, {});
    try {
      assert.equal((await t.tick({ token: "wrong" })).status, 401);
      assert.equal((await t.tick()).status, 200);
    } finally {
      delete process.env.CRON_SECRET;
      await t.cleanup();
    }
  });
});
