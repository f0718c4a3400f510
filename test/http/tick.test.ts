/**
 * POST /api/cron/tick over a real node:http server on 127.0.0.1: auth (nothing done unless the
 * token is right), limits, the JSON summary against the store, and ten concurrent ticks on one slot.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { z } from "zod";
import {
  createFetchHandler,
  createLogger,
  createTickHandler,
  defineJob,
  type Errand,
  type HttpOptions,
  toNodeHandler,
} from "../../src/index.js";
import type { AnyJobDefinition } from "../../src/job.js";
import { targets } from "../helpers/targets.js";

const SECRET = "tick-secret-0123456789abcdef";

let savedEnv: string | undefined;
before(() => {
  savedEnv = process.env.CRON_SECRET;
  delete process.env.CRON_SECRET;
});
after(() => {
  if (savedEnv !== undefined) process.env.CRON_SECRET = savedEnv;
});

async function listen(handler: ReturnType<typeof toNodeHandler>): Promise<{ server: Server; base: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

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

for (const target of targets) {
  describe(`tick endpoint on ${target.name}`, { skip: target.skip }, () => {
    let ran: string[] = [];
    const work = defineJob({
      name: "work",
      queue: "q",
      schema: z.object({ n: z.number() }),
      run: (p) => {
        ran.push(`work:${p.n}`);
      },
    });
    const report = defineJob({
      name: "report",
      queue: "reports",
      schema: z.object({}),
      run: (_p, ctx) => {
        ran.push(ctx.job.key ?? "");
      },
    });

    /** A fresh errand with a due daily schedule (its slot: today 00:00 UTC) and `pending` due jobs. */
    async function setUp(pending = 3, options: HttpOptions = { cronSecret: SECRET }) {
      ran = [];
      const logLines: string[] = [];
      const logger = createLogger({
        pretty: false,
        level: "debug",
        destination: new Writable({
          write(chunk, _enc, cb) {
            logLines.push(String(chunk));
            cb();
          },
        }),
      });
      const opened = await target.openErrand({
        jobs: [work, report] as unknown as AnyJobDefinition[],
        logger,
      });
      const { errand } = opened;
      errand.schedule("daily-report", "0 0 * * *", report, {});
      await errand.syncSchedules();
      const [row] = await errand.store.listSchedules();
      await errand.store.advanceSchedule({
        name: "daily-report",
        expectedNextRunAt: row.nextRunAt,
        nextRunAt: new Date(row.nextRunAt.getTime() - 2 * 86_400_000),
        lastSlot: null,
      });
      const slot = new Date(row.nextRunAt.getTime() - 86_400_000).toISOString();
      for (let n = 0; n < pending; n++) await errand.enqueue(work, { n });
      const { server, base } = await listen(toNodeHandler(createFetchHandler(errand, options)));
      return {
        errand,
        base,
        slot,
        logLines,
        tick: (init: RequestInit & { token?: string | null; query?: string } = {}) => {
          const headers = new Headers(init.headers);
          if (init.token !== null) headers.set("authorization", `Bearer ${init.token ?? SECRET}`);
          return fetch(`${base}/api/cron/tick${init.query ?? ""}`, { method: "POST", ...init, headers });
        },
        async cleanup() {
          await close(server);
          await opened.cleanup();
        },
      };
    }

    /** Nothing was enqueued or run: the schedule did not move, the jobs are untouched. */
    async function assertNothingDone(errand: Errand, pending: number) {
      assert.deepEqual(ran, [], "no handler ran");
      const jobs = (await errand.listJobs({ limit: 100 })).jobs;
      assert.equal(jobs.length, pending, "no job was enqueued");
      assert.ok(
        jobs.every((j) => j.state === "pending" && j.attempts.length === 0),
        "every job still pending, never attempted",
      );
      const [row] = await errand.store.listSchedules();
      assert.ok(row.nextRunAt.getTime() < Date.now(), "the schedule is still due");
      assert.equal(row.lastSlot, null);
    }

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

    test("with the right token: fires the schedule, processes jobs, and the summary matches the store", async () => {
      const t = await setUp(3);
      try {
        const response = await t.tick();
        assert.equal(response.status, 200);
        assert.match(response.headers.get("content-type") ?? "", /application\/json/);
        const summary = (await response.json()) as Record<string, number>;
        for (const field of [
          "schedulesFired",
          "claimed",
          "completed",
          "retried",
          "failed",
          "stillDue",
          "durationMs",
        ]) {
          assert.equal(typeof summary[field], "number", field);
        }
        assert.equal(summary.schedulesFired, 1);
        assert.equal(summary.claimed, 4, "three jobs and the report");
        assert.equal(summary.completed, 4);
        assert.equal(summary.retried, 0);
        assert.equal(summary.failed, 0);
        assert.equal(summary.stillDue, 0);
        // What the database shows.
        const jobs = (await t.errand.listJobs({ limit: 100 })).jobs;
        assert.equal(jobs.filter((j) => j.state === "completed").length, summary.completed);
        assert.equal(jobs.filter((j) => j.key?.startsWith("cron:")).length, summary.schedulesFired);
        assert.deepEqual(
          jobs.filter((j) => j.key?.startsWith("cron:")).map((j) => j.key),
          [`cron:daily-report:${t.slot}`],
        );
        const stats = await t.errand.stats();
        assert.equal(
          stats.reduce((n, s) => n + s.pending, 0),
          summary.stillDue,
        );
        assert.equal(
          stats.reduce((n, s) => n + s.completed, 0),
          summary.completed,
        );
        assert.deepEqual([...ran].sort(), [`cron:daily-report:${t.slot}`, "work:0", "work:1", "work:2"]);
        // A second tick finds nothing to do.
        const again = (await (await t.tick()).json()) as Record<string, number>;
        assert.deepEqual([again.schedulesFired, again.claimed], [0, 0]);
        assert.ok(!t.logLines.join("").includes(SECRET), "the secret is never logged");
      } finally {
        await t.cleanup();
      }
    });

    test("?limit= bounds the batch; values outside 1..1000 or not integers are a 400", async () => {
      const t = await setUp(5);
      try {
        for (const query of [
          "?limit=0",
          "?limit=1001",
          "?limit=abc",
          "?limit=1.5",
          "?limit=-1",
          "?limit=",
          "?limit=1e2",
          "?limit=1&limit=2",
          "?limit=99999999999",
        ]) {
          const response = await t.tick({ query });
          assert.equal(response.status, 400, query);
          assert.match(((await response.json()) as { error: string }).error, /limit/, query);
        }
        await assertNothingDone(t.errand, 5);
        const summary = (await (await t.tick({ query: "?limit=2" })).json()) as Record<string, number>;
        assert.equal(summary.claimed, 2);
        assert.equal(summary.stillDue, 4, "five jobs and the report, less the two run");
        assert.equal((await t.tick({ query: "?limit=1000" })).status, 200);
      } finally {
        await t.cleanup();
      }
    });

    test("wrong methods get 405 with Allow; oversized bodies get 413; nothing is done", async () => {
      const t = await setUp(2);
      try {
        for (const method of ["PUT", "DELETE", "PATCH"]) {
          const response = await t.tick({ method });
          assert.equal(response.status, 405, method);
          assert.equal(response.headers.get("allow"), "GET, POST", method);
        }
        const big = "x".repeat(17 * 1024);
        const declared = await t.tick({ body: big, headers: { "content-type": "text/plain" } });
        assert.equal(declared.status, 413);
        // Chunked, no Content-Length: counted as it arrives.
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            for (let i = 0; i < 20; i++) controller.enqueue(new Uint8Array(1024).fill(120));
            controller.close();
          },
        });
        const chunked = await t.tick({ body: stream, duplex: "half" } as RequestInit);
        assert.equal(chunked.status, 413);
        await assertNothingDone(t.errand, 2);
        // A small body is fine (and ignored).
        assert.equal(
          (await t.tick({ body: "{}", headers: { "content-type": "application/json" } })).status,
          200,
        );
      } finally {
        await t.cleanup();
      }
    });

    test("ten concurrent ticks on the same slot enqueue and run exactly one job for it", async () => {
      const t = await setUp(0);
      try {
        const responses = await Promise.all(Array.from({ length: 10 }, () => t.tick()));
        assert.deepEqual(
          responses.map((r) => r.status),
          Array(10).fill(200),
        );
        const summaries = (await Promise.all(responses.map((r) => r.json()))) as Array<
          Record<string, number>
        >;
        assert.equal(
          summaries.reduce((n, s) => n + s.schedulesFired, 0),
          1,
          "one tick fired the slot",
        );
        assert.equal(
          summaries.reduce((n, s) => n + s.completed, 0),
          1,
          "one tick ran it",
        );
        const jobs = (await t.errand.listJobs({ limit: 100 })).jobs;
        assert.deepEqual(
          jobs.map((j) => [j.key, j.state, j.attempts.length]),
          [[`cron:daily-report:${t.slot}`, "completed", 1]],
        );
        assert.deepEqual(ran, [`cron:daily-report:${t.slot}`]);
      } finally {
        await t.cleanup();
      }
    });

    test("createTickHandler mounts the tick at any path (a Next.js route, Hono, node:http)", async () => {
      const t = await setUp(1);
      const tick = createTickHandler(t.errand, { cronSecret: SECRET, tickLimit: { default: 1, max: 5 } });
      const { server, base } = await listen(toNodeHandler(tick));
      try {
        assert.equal((await fetch(`${base}/whatever/cron`, { method: "POST" })).status, 401);
        assert.equal(
          (
            await fetch(`${base}/whatever/cron?limit=6`, {
              method: "POST",
              headers: { authorization: `Bearer ${SECRET}` },
            })
          ).status,
          400,
        );
        const direct = await tick(
          new Request("http://app.test/api/tick", {
            method: "POST",
            headers: { authorization: `bearer ${SECRET}` },
          }),
        );
        assert.equal(direct.status, 200);
        const summary = (await direct.json()) as Record<string, number>;
        assert.equal(summary.claimed, 1, "default limit 1");
      } finally {
        await close(server);
        await t.cleanup();
      }
    });
  });
}
