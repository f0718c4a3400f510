/**
 * OpenTelemetry tracing in one process, on every store, with the SDK's in-memory exporter: the
 * enqueue's PRODUCER span is a child of the application's span; each attempt's CONSUMER span
 * links to it and holds the handler's own spans; errors are recorded. And without a registered
 * SDK nothing is traced and nothing is stored.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { trace } from "@opentelemetry/api";
import Database from "better-sqlite3";
import { z } from "zod";
import { defineJob } from "../../src/index.js";
import { sendWelcome } from "../fixtures/traced-jobs.js";
import { targets } from "../helpers/targets.js";
import { type ExportedSpan, KIND, registerTracing, type TestTracing } from "../helpers/tracing.js";
import { waitFor } from "../helpers/wait.js";

describe("without a tracer provider", () => {
  test("jobs store no trace context, run, and no span is made", async () => {
    const memory = targets.find((t) => t.name === "memory");
    assert.ok(memory);
    const { store, cleanup } = await memory.openStore();
    try {
      const { openErrand, silentLogger } = await import("../../src/index.js");
      const errand = await openErrand({ store, jobs: [sendWelcome], logger: silentLogger() });
      await errand.enqueue(sendWelcome, { userId: 1 });
      const [claimed] = await store.claimJobs({ queue: "emails", limit: 1, workerId: "w", leaseMs: 10_000 });
      assert.equal(claimed.traceContext, null);
      await errand.close();
    } finally {
      await cleanup();
    }
  });
});

for (const target of targets) {
  describe(`tracing on ${target.name}`, { skip: target.skip, timeout: 60_000 }, () => {
    let tracing: TestTracing;
    before(() => {
      tracing = registerTracing();
    });
    after(async () => {
      await tracing.shutdown();
    });

    test("request → enqueue (PRODUCER) → each attempt (CONSUMER, linked) → the handler's spans", async () => {
      const { errand, cleanup } = await target.openErrand();
      try {
        errand.register(sendWelcome);
        const app = trace.getTracer("the-app");
        const { job, request } = await app.startActiveSpan(
          "POST /signup",
          { kind: KIND.SERVER },
          async (span) => {
            const enqueued = await errand.enqueue(sendWelcome, { userId: 7, failFirst: true });
            span.end();
            return { job: enqueued, request: span.spanContext() };
          },
        );
        const worker = errand.work({ emails: { concurrency: 1 } }, { pollInterval: 20, id: "w-1" });
        await waitFor(async () => (await errand.getJob(job.id))?.state === "completed", "completion");
        await worker.stop();

        const spans = tracing.spans().filter((s) => s.traceId === request.traceId || isAbout(s, job.id));
        const producer = one(spans, (s) => s.kind === KIND.PRODUCER);
        assert.equal(producer.name, "enqueue emails");
        assert.equal(producer.traceId, request.traceId, "the enqueue belongs to the request's trace");
        assert.equal(producer.parentSpanId, request.spanId);
        assert.deepEqual(pick(producer.attributes), {
          "messaging.system": "errand",
          "messaging.operation.type": "send",
          "messaging.operation.name": "enqueue",
          "messaging.destination.name": "emails",
          "messaging.message.id": job.id,
          "errand.job.name": "send-welcome",
          "errand.job.created": true,
        });

        const attempts = spans.filter((s) => s.kind === KIND.CONSUMER);
        assert.equal(attempts.length, 2, "one span per attempt");
        for (const [i, attempt] of attempts.entries()) {
          assert.equal(attempt.name, "process emails");
          assert.deepEqual(attempt.links, [{ traceId: request.traceId, spanId: producer.spanId }]);
          assert.notEqual(attempt.traceId, request.traceId, "each attempt is a trace of its own");
          assert.equal(attempt.parentSpanId, null);
          assert.deepEqual(pick(attempt.attributes), {
            "messaging.system": "errand",
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": "emails",
            "messaging.message.id": job.id,
            "messaging.client.id": "w-1",
            "errand.job.name": "send-welcome",
            "errand.job.attempt": i + 1,
            "errand.job.max_attempts": 3,
            "errand.job.outcome": i === 0 ? "retried" : "completed",
            ...(i === 0 ? { "error.type": "retryable" } : {}),
          });
          const own = one(
            tracing.spans(),
            (s) => s.name === "render welcome e-mail" && s.traceId === attempt.traceId,
          );
          assert.equal(own.parentSpanId, attempt.spanId, "the handler's span is a child of its attempt's");
        }
        assert.deepEqual(attempts[0].status, { code: 2, message: "mail server busy" });
        assert.deepEqual(attempts[0].events, ["exception"]);
        assert.equal(attempts[1].status.code, 0);
        assert.deepEqual(attempts[1].events, []);
      } finally {
        await cleanup();
      }
    });

    test("enqueueMany: one PRODUCER span, every job linked to it; a failed job's span says failed", async () => {
      const { errand, cleanup } = await target.openErrand();
      try {
        const doomed = defineJob({
          name: "doomed",
          queue: "emails",
          maxAttempts: 1,
          schema: z.object({ n: z.number() }),
          run: () => {
            throw new Error("no such user");
          },
        });
        errand.register(doomed);
        const jobs = await errand.enqueueMany(doomed, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
        const worker = errand.work({ emails: { concurrency: 2 } }, { pollInterval: 20 });
        await waitFor(async () => {
          const states = await Promise.all(jobs.map(async (j) => (await errand.getJob(j.id))?.state));
          return states.every((s) => s === "failed");
        }, "both failed");
        await worker.stop();
        const spans = tracing.spans();
        const producer = one(
          spans,
          (s) => s.kind === KIND.PRODUCER && s.attributes["errand.job.name"] === "doomed",
        );
        assert.equal(producer.attributes["messaging.batch.message_count"], 2);
        assert.equal(producer.parentSpanId, null, "no application span was active: a root span");
        const attempts = spans.filter(
          (s) => s.kind === KIND.CONSUMER && s.attributes["errand.job.name"] === "doomed",
        );
        assert.deepEqual(
          attempts.map((a) => a.attributes["messaging.message.id"]).sort(),
          jobs.map((j) => j.id).sort(),
        );
        for (const a of attempts) {
          assert.deepEqual(a.links, [{ traceId: producer.traceId, spanId: producer.spanId }]);
          assert.equal(a.attributes["errand.job.outcome"], "failed");
          assert.equal(a.attributes["error.type"], "unknown");
          assert.deepEqual(a.status, { code: 2, message: "no such user" });
        }
      } finally {
        await cleanup();
      }
    });
  });
}

describe("tracing a synchronous enqueue inside a better-sqlite3 transaction", () => {
  test("the PRODUCER span ends before the transaction does, and the job carries its context", async () => {
    const sqlite = targets.find((t) => t.name === "sqlite");
    assert.ok(sqlite);
    const tracing = registerTracing();
    const { errand, url, cleanup } = await sqlite.openErrand();
    const db = new Database(url);
    try {
      errand.register(sendWelcome);
      const app = trace.getTracer("the-app");
      app.startActiveSpan("POST /signup", { kind: KIND.SERVER }, (span) => {
        db.transaction(() => {
          void errand.enqueue(sendWelcome, { userId: 3 }, { tx: db });
          // Synchronous: the enqueue's span has ended here, inside the transaction.
          assert.equal(tracing.spans().filter((s) => s.kind === KIND.PRODUCER).length, 1);
        })();
        span.end();
      });
      const producer = one(tracing.spans(), (s) => s.kind === KIND.PRODUCER);
      const request = one(tracing.spans(), (s) => s.kind === KIND.SERVER);
      assert.equal(producer.parentSpanId, request.spanId);
      const [claimed] = await errand.store.claimJobs({
        queue: "emails",
        limit: 1,
        workerId: "w",
        leaseMs: 10_000,
      });
      assert.equal(
        claimed.traceContext,
        JSON.stringify({ traceparent: `00-${producer.traceId}-${producer.spanId}-01` }),
      );
    } finally {
      db.close();
      await cleanup();
      await tracing.shutdown();
    }
  });
});

/** The span about job `id` (its message id), whichever trace it is in. */
function isAbout(span: ExportedSpan, id: string): boolean {
  return span.attributes["messaging.message.id"] === id;
}

function one(spans: ExportedSpan[], match: (s: ExportedSpan) => boolean): ExportedSpan {
  const found = spans.filter(match);
  assert.equal(found.length, 1, `exactly one span matches, got ${JSON.stringify(found, null, 1)}`);
  return found[0];
}

/** The attributes errand sets (messaging.*, errand.*, error.type). */
function pick(attributes: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(attributes).filter(([k]) => /^(messaging|errand)\.|^error\.type$/.test(k)),
  );
}
