/**
 * Bad input at the HTTP door: fuzzed raw requests to a real `createFetchHandler` mounted on
 * node:http (through toNodeHandler) — the tick endpoint and the JSON API, with malformed JSON,
 * wrong content types, oversized bodies, invalid UTF-8, path traversal, header injection and
 * huge headers, right and wrong tokens. Every answer must be a clear 4xx (503 from a tick
 * endpoint that is switched off; 2xx for the well-formed, authorized ones) — never a 500,
 * never a dropped connection, never a crash — and no job is ever stored.
 *
 * Requests are written byte by byte on a socket, so nothing a client library would refuse to
 * send is out of reach. Runs: ERRAND_FUZZ_RUNS (default 60) × 3.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { z } from "zod";
import {
  createFetchHandler,
  defineJob,
  type Errand,
  openErrand,
  silentLogger,
  toNodeHandler,
} from "../../src/index.js";

const RUNS = Number(process.env.ERRAND_FUZZ_RUNS ?? 60);
const SECRET = "fuzz-cron-secret-9d8c7b6a";
const TOKEN = "fuzz-dashboard-token-1a2b3c4d";
delete process.env.CRON_SECRET;
delete process.env.ERRAND_DASHBOARD_TOKEN;

const ping = defineJob({ name: "ping", queue: "fuzz", schema: z.object({}), run: () => {} });

interface Answer {
  status: number;
  head: string;
}

/** Sends raw bytes, reads the answer until the server closes the connection. */
function rawRequest(port: number, bytes: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error("no answer within 15 s"));
    }, 15_000);
    socket.on("data", (d) => chunks.push(d));
    socket.on("error", () => {}); // a reset after the answer is fine; no answer at all is not
    socket.on("close", () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString("latin1");
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      if (!m) reject(new Error(`no HTTP answer (got ${JSON.stringify(text.slice(0, 120))})`));
      else resolve({ status: Number(m[1]), head: text.slice(0, text.indexOf("\r\n\r\n") + 1 || 300) });
    });
    socket.write(bytes, () => socket.end());
  });
}

interface Req {
  method: string;
  path: string;
  headers: [string, string][];
  body: Buffer;
  /** Send Content-Length (true), none (false), or a wrong one (a string). */
  length: boolean | string;
}

function encode(r: Req): Buffer {
  const lines = [`${r.method} ${r.path} HTTP/1.1`, "Host: 127.0.0.1", "Connection: close"];
  for (const [k, v] of r.headers) lines.push(`${k}: ${v}`);
  if (r.length === true) lines.push(`Content-Length: ${r.body.length}`);
  else if (typeof r.length === "string") lines.push(`Content-Length: ${r.length}`);
  return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), r.body]);
}

const paths = fc.oneof(
  fc.constantFrom(
    "/api/cron/tick",
    "/api/cron/tick?limit=5",
    "/api/cron/tick?limit=-1",
    "/api/cron/tick?limit=1e9&limit=2",
    "/api/cron/tick?limit=%00",
    "/api/stats",
    "/api/jobs",
    "/api/jobs?limit=0",
    "/api/jobs?limit=abc&state=nope",
    "/api/jobs?cursor=..%2F..",
    "/api/jobs/1",
    "/api/jobs/-1",
    "/api/jobs/99999999999999999999999",
    "/api/jobs/..%2F..%2Fetc%2Fpasswd",
    "/api/jobs/%2e%2e/%2e%2e/package.json",
    "/api/jobs/1/retry",
    "/api/jobs/1/cancel",
    "/api/jobs/abc/discard",
    "/api/dlq/retry",
    "/api/dlq/discard",
    "/api/throughput?since=1h&bucket=0",
    "/api/throughput?since=99999d&bucket=1ms",
    "/api/schedules",
    "/api/workers",
    "/../../etc/passwd",
    "/static/../../package.json",
    "/static/..%2f..%2fpackage.json",
    "/%00",
    "/api/%ZZ",
    "//api//jobs",
    "/api/jobs/\u00e9",
    "*",
  ),
  fc
    .array(
      fc.constantFrom(
        "api",
        "jobs",
        "cron",
        "tick",
        "..",
        "%2e%2e",
        "%00",
        "1",
        "retry",
        "%ff",
        "~",
        ";",
        "a".repeat(300),
      ),
      { minLength: 1, maxLength: 6 },
    )
    .map((segments) => `/${segments.join("/")}`),
);
const auth = fc.constantFrom<[string, string][]>(
  [],
  [["Authorization", `Bearer ${SECRET}`]],
  [["Authorization", `Bearer ${TOKEN}`]],
  [["Authorization", "Bearer"]],
  [["Authorization", `bearer ${SECRET}x`]],
  [["Authorization", `Basic ${Buffer.from("a:b").toString("base64")}`]],
  [["Authorization", `Bearer ${"x".repeat(5000)}`]],
  [
    ["Authorization", `Bearer ${SECRET}`],
    ["Authorization", `Bearer ${TOKEN}`],
  ],
  [["Cookie", "errand_session=forged.1.abc; other=%00"]],
);
const contentType = fc.constantFrom<[string, string][]>(
  [],
  [["Content-Type", "application/json"]],
  [["Content-Type", "application/json; charset=latin1"]],
  [["Content-Type", "text/plain"]],
  [["Content-Type", "application/x-www-form-urlencoded"]],
  [["Content-Type", "multipart/form-data; boundary=x"]],
  [["Content-Type", "application/json\u0000"]],
  [["Content-Type", "ünïcode/☃"]],
);
const body = fc.oneof(
  fc
    .constantFrom(
      "",
      "{",
      "[]",
      "null",
      '{"ids":[1,2,"x"]}',
      '{"ids":"1"}',
      '{"all":true}',
      '{"queue":"fuzz","all":true}',
      '{"__proto__":{"polluted":1},"ids":[1]}',
      '{"constructor":{"prototype":{"polluted":1}}}',
      '{"ids":[' + "1,".repeat(5000) + "1]}",
      "\u0000\u0001",
      '{"a":"\ud800"}',
    )
    .map((s) => Buffer.from(s, "utf8")),
  fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
  fc.constantFrom(70_000, 300_000).map((n) => Buffer.from(`{"pad":"${"x".repeat(n)}"}`)),
  fc.constant(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])), // invalid UTF-8
);
const extraHeaders = fc.oneof(
  { arbitrary: fc.constant<[string, string][]>([]), weight: 8 },
  {
    arbitrary: fc.constantFrom<[string, string][]>(
      [["Origin", "http://evil.test"]],
      [["Sec-Fetch-Site", "cross-site"]],
      [["X-Forwarded-Proto", "https"]],
      [["Transfer-Encoding", "chunked"]], // with no chunked body: malformed framing
      [["X-Injected", "a\r\nX-Evil: 1"]], // header injection: a CRLF inside a value
      [["X-Huge", "h".repeat(20_000)]], // past node's header size limit
      [["Bad Header", "space in the name"]],
      [["X-Nul", "a\u0000b"]],
    ),
    weight: 3,
  },
);
const request: fc.Arbitrary<Req> = fc.record({
  method: fc.constantFrom("GET", "POST", "POST", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "FOO"),
  path: paths,
  headers: fc.tuple(auth, contentType, extraHeaders).map(([a, c, e]) => [...a, ...c, ...e]),
  body,
  length: fc.oneof(
    { arbitrary: fc.constant(true), weight: 6 },
    { arbitrary: fc.constant(false), weight: 1 },
    { arbitrary: fc.constantFrom("-1", "abc", "99999999", "5, 6"), weight: 1 },
  ),
});

interface Server_ {
  server: Server;
  port: number;
}

async function serve(errand: Errand, cronSecret: string | undefined): Promise<Server_> {
  const handler = toNodeHandler(createFetchHandler(errand, { cronSecret, dashboardToken: TOKEN }));
  const server = createServer((req, res) => {
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return { server, port: typeof address === "object" && address ? address.port : 0 };
}

describe("HTTP fuzz: tick endpoint and JSON API on node:http", () => {
  let errand: Errand;
  let on: Server_;
  let off: Server_;
  const unexpected: unknown[] = [];
  const onUnexpected = (err: unknown) => unexpected.push(err);

  before(async () => {
    process.on("uncaughtException", onUnexpected);
    process.on("unhandledRejection", onUnexpected);
    errand = await openErrand({ url: "memory:", jobs: [ping as never], logger: silentLogger() });
    on = await serve(errand, SECRET);
    off = await serve(errand, undefined);
  });
  after(async () => {
    for (const s of [on, off]) if (s) await new Promise<void>((resolve) => s.server.close(() => resolve()));
    await errand?.close();
    process.off("uncaughtException", onUnexpected);
    process.off("unhandledRejection", onUnexpected);
  });

  const jobCount = async () => (await errand.listJobs({ limit: 10 })).jobs.length;

  for (const [label, target] of [
    ["tick on", () => on],
    ["tick off", () => off],
  ] as const) {
    test(`${label}: every fuzzed request gets a 4xx (or a 2xx when well-formed and authorized), never a 500`, {
      timeout: 300_000,
    }, async () => {
      const statuses = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(request, async (req) => {
          const answer = await rawRequest(target().port, encode(req));
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          const disabledTick =
            label === "tick off" && req.path.startsWith("/api/cron/tick") && answer.status === 503;
          assert.ok(
            answer.status < 500 || disabledTick,
            `${req.method} ${req.path.slice(0, 80)} answered ${answer.status}:\n${answer.head.slice(0, 300)}`,
          );
          assert.equal(await jobCount(), 0, "no job stored");
        }),
        { numRuns: RUNS * 3 },
      );
      // Still serving, and nothing escaped as an uncaught error.
      const health = await rawRequest(
        target().port,
        encode({
          method: "GET",
          path: "/api/stats",
          headers: [["Authorization", `Bearer ${TOKEN}`]],
          body: Buffer.alloc(0),
          length: false,
        }),
      );
      assert.equal(health.status, 200);
      assert.deepEqual(unexpected, []);
      console.log(
        `# ${label}: statuses ${[...statuses]
          .sort()
          .map(([s, n]) => `${s}×${n}`)
          .join(" ")}`,
      );
    });
  }

  test("the tick endpoint: no secret → 503, wrong or missing token → 401, nothing done", async () => {
    await errand.enqueue(ping, {});
    const tick = (port: number, headers: [string, string][]) =>
      rawRequest(
        port,
        encode({ method: "POST", path: "/api/cron/tick", headers, body: Buffer.alloc(0), length: true }),
      );
    assert.equal((await tick(off.port, [["Authorization", `Bearer ${SECRET}`]])).status, 503);
    for (const headers of [
      [],
      [["Authorization", `Bearer ${SECRET.slice(0, -1)}`]],
      [["Authorization", `Bearer ${TOKEN}`]],
    ] as [string, string][][]) {
      assert.equal((await tick(on.port, headers)).status, 401);
    }
    const [job] = (await errand.listJobs({ limit: 1 })).jobs;
    assert.equal(job.state, "pending", "an unauthorized tick ran nothing");
    assert.equal((await tick(on.port, [["Authorization", `Bearer ${SECRET}`]])).status, 200);
    assert.equal((await errand.getJob(job.id))?.state, "completed", "the authorized tick ran the job");
    await errand.store.pruneFinished({ completedAgeMs: 0, failedAgeMs: 0 });
  });
});
