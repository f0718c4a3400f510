/**
 * A real OpenTelemetry SDK for tests (the application's side of tracing): a BasicTracerProvider
 * registered as the global one, with the AsyncLocalStorage context manager, exporting each span
 * as it ends — to the SDK's in-memory exporter, or as JSON lines to a file (a worker process's
 * spans, read back by the test that started it).
 */
import { appendFileSync, readFileSync } from "node:fs";
import { context, type SpanContext, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanExporter,
} from "@opentelemetry/sdk-trace-base";

/** A span as the tests compare it (the same shape from memory and from a worker's file). */
export interface ExportedSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  links: Array<{ traceId: string; spanId: string }>;
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
  events: string[];
}

export function exported(span: ReadableSpan): ExportedSpan {
  const own = span.spanContext();
  const link = (c: SpanContext) => ({ traceId: c.traceId, spanId: c.spanId });
  return {
    name: span.name,
    kind: span.kind,
    traceId: own.traceId,
    spanId: own.spanId,
    parentSpanId: span.parentSpanContext?.spanId ?? null,
    links: span.links.map((l) => link(l.context)),
    attributes: { ...span.attributes },
    status: { code: span.status.code, message: span.status.message },
    events: span.events.map((e) => e.name),
  };
}

/** Writes each span, as it ends, as one JSON line to `file`. */
class FileSpanExporter implements SpanExporter {
  constructor(private readonly file: string) {}
  export(spans: ReadableSpan[], done: (result: { code: number }) => void): void {
    appendFileSync(this.file, spans.map((s) => `${JSON.stringify(exported(s))}\n`).join(""));
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

export interface TestTracing {
  /** The spans ended so far (in-memory exporter; empty with a file). */
  spans(): ExportedSpan[];
  /** Unregisters the provider and the context manager. */
  shutdown(): Promise<void>;
}

/** Registers a global tracer provider exporting to memory, or to `file` when given. */
export function registerTracing(file?: string): TestTracing {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(file ? new FileSpanExporter(file) : memory)],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  return {
    spans: () => memory.getFinishedSpans().map(exported),
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}

/** The spans a worker process wrote with registerTracing(file). */
export function readSpans(file: string): ExportedSpan[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as ExportedSpan);
}

/** SpanKind values (the API's enum). */
export const KIND = { INTERNAL: 0, SERVER: 1, CLIENT: 2, PRODUCER: 3, CONSUMER: 4 } as const;
