/**
 * errand's spans, after OpenTelemetry's messaging semantic conventions:
 *
 * - `enqueue <queue>`, kind PRODUCER, around the insert of an enqueue (one span for an
 *   enqueueMany), a child of the application's span active then (an HTTP request's, say). Its
 *   context is what each job stores (traceparent.ts).
 * - `process <queue>`, kind CONSUMER, one per attempt, on whichever worker runs it. It starts a
 *   trace of its own and LINKS to the stored context: a job may run hours later and several
 *   times, and a link keeps the request's trace bounded while still leading to every attempt.
 *   The handler runs inside it, so the spans the handler (or its instrumented libraries) makes
 *   are its children. Errors are recorded on it; its status is ERROR for an attempt that failed
 *   (retried or failed for good).
 *
 * Attributes: messaging.system "errand", messaging.operation.type ("send" / "process"),
 * messaging.operation.name ("enqueue" / "process"), messaging.destination.name (the queue),
 * messaging.message.id (the job id), messaging.client.id (the worker), messaging.batch.message_count
 * (enqueueMany); and errand.job.name, errand.job.attempt, errand.job.max_attempts,
 * errand.job.outcome (the history's outcome: completed, retried, failed, snoozed, cancelled,
 * interrupted, lost), errand.job.created (false: an idempotency key matched an existing job),
 * error.type (the error's kind: retryable, permanent, timeout, …).
 *
 * Every entry point answers null when no tracer provider is registered (otel.ts), and callers
 * then take their untraced path unchanged.
 */
import type { Span } from "@opentelemetry/api";
import type { AttemptOutcome } from "../job.js";
import type { ClaimedJob, NewJob, Outcome } from "../store/types.js";
import { activeTracer, type OtelApi, otelApi } from "./otel.js";
import { decodeTraceContext, encodeTraceContext } from "./traceparent.js";

/** SpanKind.PRODUCER and CONSUMER (the enum's values, fixed by the API). */
const PRODUCER = 3;
const CONSUMER = 4;
/** SpanStatusCode.ERROR. */
const ERROR = 2;

/** An enqueue's span: set on the rows before the insert, ended with its result. */
export interface EnqueueSpan {
  end(jobs: ReadonlyArray<{ id: string; created: boolean }>): void;
  fail(error: unknown): void;
}

/**
 * Starts the PRODUCER span of an insert and stores its context in every row; null (and the
 * rows untouched) when nothing traces.
 */
export function startEnqueueSpan(rows: NewJob[]): EnqueueSpan | null {
  const api = otelApi();
  const tracer = api && activeTracer(api);
  if (!api || !tracer || rows.length === 0) return null;
  const { queue, name } = rows[0];
  const attributes: Record<string, string | number> = {
    "messaging.system": "errand",
    "messaging.operation.type": "send",
    "messaging.operation.name": "enqueue",
    "messaging.destination.name": queue,
    "errand.job.name": name,
  };
  if (rows.length > 1) attributes["messaging.batch.message_count"] = rows.length;
  const span = tracer.startSpan(`enqueue ${queue}`, { kind: PRODUCER, attributes }, api.context.active());
  const context = encodeTraceContext(span.spanContext(), api);
  for (const row of rows) row.traceContext = context;
  return {
    end(jobs) {
      if (jobs.length === 1) {
        span.setAttribute("messaging.message.id", jobs[0].id);
        span.setAttribute("errand.job.created", jobs[0].created);
      }
      span.end();
    },
    fail(error) {
      recordError(span, error, undefined);
      span.end();
    },
  };
}

/** One attempt's span. */
export interface AttemptSpan {
  /** Runs `fn` (the handler's execution) with the span active. */
  run<T>(fn: () => T): T;
  /** Ends the span with the attempt's outcome (null: no outcome of ours — see outcomeOf). */
  end(outcome: Outcome | null, completedInTransaction: boolean, error: Error | undefined): void;
}

/** Starts the CONSUMER span of an attempt, linked to the enqueue's context; null when nothing traces. */
export function startAttemptSpan(claimed: ClaimedJob, workerId: string): AttemptSpan | null {
  const api = otelApi();
  const tracer = api && activeTracer(api);
  if (!api || !tracer) return null;
  const linked = decodeTraceContext(claimed.traceContext, api);
  const span = tracer.startSpan(`process ${claimed.queue}`, {
    kind: CONSUMER,
    root: true,
    links: linked ? [{ context: linked }] : [],
    attributes: {
      "messaging.system": "errand",
      "messaging.operation.type": "process",
      "messaging.operation.name": "process",
      "messaging.destination.name": claimed.queue,
      "messaging.message.id": claimed.id,
      "messaging.client.id": workerId,
      "errand.job.name": claimed.name,
      "errand.job.attempt": claimed.attempt,
      "errand.job.max_attempts": claimed.maxAttempts,
    },
  });
  return attemptSpan(api, span);
}

function attemptSpan(api: OtelApi, span: Span): AttemptSpan {
  return {
    run: (fn) => api.context.with(api.trace.setSpan(api.context.active(), span), fn),
    end(outcome, completedInTransaction, error) {
      const name = outcomeOf(outcome, completedInTransaction);
      span.setAttribute("errand.job.outcome", name);
      if (name === "retried" || name === "failed") recordError(span, error, outcome?.error);
      else if (error) span.recordException(error);
      span.end();
    },
  };
}

const OUTCOMES: Record<Outcome["kind"], AttemptOutcome> = {
  completed: "completed",
  retry: "retried",
  failed: "failed",
  snoozed: "snoozed",
  released: "interrupted",
  cancelled: "cancelled",
};

/**
 * The attempt's outcome as its history entry will name it. No outcome: completed inside the
 * handler's transaction, or the lease was lost (another worker owns the job: `lost`).
 */
function outcomeOf(outcome: Outcome | null, completedInTransaction: boolean): AttemptOutcome {
  if (outcome) return OUTCOMES[outcome.kind];
  return completedInTransaction ? "completed" : "lost";
}

function recordError(span: Span, error: unknown, stored: Outcome["error"] | undefined): void {
  const message = stored?.message ?? (error instanceof Error ? error.message : String(error));
  if (error instanceof Error) span.recordException(error);
  else if (stored) span.recordException({ name: "Error", message: stored.message, stack: stored.stack });
  if (stored?.kind) span.setAttribute("error.type", stored.kind);
  else if (error instanceof Error) span.setAttribute("error.type", error.name);
  span.setStatus({ code: ERROR, message });
}
