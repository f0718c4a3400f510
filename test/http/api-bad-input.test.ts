/**
 * The dashboard API given bad input: 4xx JSON naming the problem, never a 500 — malformed
 * requests, oversized bodies, job actions in the wrong state.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { callJson, type Harness, harness, postJson, seed } from "./helpers.js";

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
    ["/api/queues/a%20b/resume-limits", { method: "POST" }, 400, /queue/],
    ["/api/queues/crm/resume-limits", postJson({ key: 7 }), 400, /resumeFlow key must be a flow key/],
    ["/api/queues/crm/resume-limits", postJson({ key: "" }), 400, /resumeFlow key must be a flow key/],
    ["/api/queues/crm/resume-limits", postJson({ keys: ["a"] }), 400, /unknown field "keys"; expected key/],
    ["/api/queues/crm/resume-limits", {}, 405, /POST/],
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
