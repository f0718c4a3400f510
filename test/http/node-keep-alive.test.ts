/**
 * node:http through toNodeHandler, with a client that keeps its connection alive (fetch's
 * pool): an answer given before the request's body was read (413 for a body over the limit,
 * 401 without a token) must not break the next request on that connection.
 *
 * Found by a helper: after a 200 KB POST answered 413 (or 401), the client's next request on
 * the kept-alive connection failed with ECONNRESET. The body was handed to the Fetch Request as
 * a web stream and left half-read, and Node no longer discards the rest of it as it does for a
 * body nobody touched. Such an answer now closes the connection (`Connection: close`), so the
 * client opens a new one.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { toNodeHandler } from "../../src/http/node.js";
import { createFetchHandler, openErrand, silentLogger } from "../../src/index.js";

const TOKEN = "t".repeat(40);

test("an answer before the body was read leaves the client's next requests working", async () => {
  const errand = await openErrand({ url: "memory:", logger: silentLogger() });
  const server = createServer(toNodeHandler(createFetchHandler(errand, { dashboardToken: TOKEN })));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const post = (body: string, token: string | null = TOKEN) =>
    fetch(`${base}/api/dlq/retry`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body,
    });
  try {
    const answers: (number | string)[] = [];
    for (const [body, token] of [
      ["x".repeat(200_000), TOKEN], // over the API's 64 KiB: 413 before the body is read
      ['{"queue":"none"}', TOKEN],
      ["x".repeat(200_000), null], // no token: 401 before the body is read
      ['{"queue":"none"}', TOKEN],
      ['{"queue":"none"}', TOKEN],
    ] as const) {
      try {
        const response = await post(body, token);
        await response.text();
        answers.push(response.status);
      } catch (err) {
        answers.push(String((err as { cause?: { code?: string } }).cause?.code ?? err));
      }
    }
    // The small bodies name no queue the API knows (400): an answer, not a reset.
    assert.deepEqual(answers, [413, 400, 401, 400, 400]);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await errand.close();
  }
});
