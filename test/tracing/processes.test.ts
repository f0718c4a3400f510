/**
 * The check of issue 18, with real processes: a traced HTTP request enqueues a job; its first
 * attempt fails on worker process A and its retry runs on worker process B, each process with
 * its own OpenTelemetry SDK exporting to a file. Both attempts' spans link to the request's
 * trace (the enqueue's span, a child of the request's), each holds the handler's own span, and
 * each attempt's job log is kept with it. On SQLite (one file, several processes) and Postgres.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { trace } from "@opentelemetry/api";
import { openErrand, silentLogger } from "../../src/index.js";
import { sendWelcome } from "../fixtures/traced-jobs.js";
import { type OpenedDatabase, sqlTargets } from "../helpers/targets.js";
import { type ExportedSpan, KIND, readSpans, registerTracing } from "../helpers/tracing.js";

const WORKER = fileURLToPath(new URL("../fixtures/traced-worker.ts", import.meta.url));

/** Runs one traced worker process until one attempt has ended; answers what ended it. */
function runWorker(id: string, db: OpenedDatabase, spansFile: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", WORKER], {
      env: {
        ...process.env,
        ERRAND_URL: db.url,
        ERRAND_SCHEMA: db.schema ?? "",
        SPANS_FILE: spansFile,
        WORKER_ID: id,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      err += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out.trim());
      else reject(new Error(`worker ${id} exited ${code}: ${err}`));
    });
  });
}

for (const target of sqlTargets) {
  describe(`tracing across worker processes on ${target.name}`, {
    skip: target.skip,
    timeout: 180_000,
  }, () => {
    test("a traced request's job: each attempt's span, on two workers, links to the request's trace", async () => {
      const dir = mkdtempSync(join(tmpdir(), "errand-tracing-"));
      const tracing = registerTracing();
      const db = await target.openStore();
      const errand = await openErrand({ store: db.store, jobs: [sendWelcome], logger: silentLogger() });
      const app = trace.getTracer("the-app");
      const server = createServer((_req, res) => {
        app.startActiveSpan("POST /signup", { kind: KIND.SERVER }, async (span) => {
          // The retry waits a second: worker A has stopped by then, so worker B runs it.
          const job = await errand.enqueue(sendWelcome, { userId: 42, failFirst: true, retryAfterMs: 1000 });
          const { traceId, spanId } = span.spanContext();
          span.end();
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify({ jobId: job.id, traceId, spanId }));
        });
      });
      try {
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
        const { port } = server.address() as AddressInfo;
        const response = await fetch(`http://127.0.0.1:${port}/signup`, { method: "POST" });
        const request = (await response.json()) as { jobId: string; traceId: string; spanId: string };

        const spansA = join(dir, "a.jsonl");
        const spansB = join(dir, "b.jsonl");
        assert.equal(await runWorker("worker-a", db, spansA), "retrying");
        assert.equal(await runWorker("worker-b", db, spansB), "completed");

        const producer = one(tracing.spans(), (s) => s.kind === KIND.PRODUCER);
        assert.equal(producer.traceId, request.traceId);
        assert.equal(producer.parentSpanId, request.spanId, "the enqueue is a child of the request's span");
        assert.equal(producer.attributes["messaging.message.id"], request.jobId);

        const link = [{ traceId: request.traceId, spanId: producer.spanId }];
        for (const [file, worker, attempt, outcome] of [
          [spansA, "worker-a", 1, "retried"],
          [spansB, "worker-b", 2, "completed"],
        ] as const) {
          const spans = readSpans(file);
          const consumer = one(spans, (s) => s.kind === KIND.CONSUMER);
          assert.deepEqual(consumer.links, link, `${worker}'s attempt links to the request's trace`);
          assert.equal(consumer.attributes["messaging.message.id"], request.jobId);
          assert.equal(consumer.attributes["messaging.client.id"], worker);
          assert.equal(consumer.attributes["errand.job.attempt"], attempt);
          assert.equal(consumer.attributes["errand.job.outcome"], outcome);
          assert.equal(consumer.status.code, outcome === "retried" ? 2 : 0);
          const own = one(spans, (s) => s.name === "render welcome e-mail");
          assert.equal(own.parentSpanId, consumer.spanId, "the handler's span is a child of its attempt's");
          assert.equal(own.traceId, consumer.traceId);
        }

        const job = await errand.getJob(request.jobId);
        assert.equal(job?.state, "completed");
        assert.deepEqual(
          job?.attempts.map((a) => [a.worker, a.outcome, a.logs?.map((l) => [l.level, l.msg, l.fields])]),
          [
            ["worker-a", "retried", [["info", "rendering", { userId: 42 }]]],
            ["worker-b", "completed", [["info", "rendering", { userId: 42 }]]],
          ],
        );
      } finally {
        server.close();
        await errand.close();
        await db.cleanup();
        await tracing.shutdown();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

function one(spans: ExportedSpan[], match: (s: ExportedSpan) => boolean): ExportedSpan {
  const found = spans.filter(match);
  assert.equal(found.length, 1, `exactly one span matches, got ${JSON.stringify(found, null, 1)}`);
  return found[0];
}
