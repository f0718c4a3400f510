/**
 * The trace context stored with a job: the W3C Trace Context headers of the enqueue's span
 * (`traceparent`, and `tracestate` when set), as JSON text. Written by errand itself rather
 * than by the application's propagator: a tracer provider registered without one (a bare
 * BasicTracerProvider) would otherwise store nothing, and the format is fixed by the spec.
 */
import type { SpanContext } from "@opentelemetry/api";
import type { OtelApi } from "./otel.js";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const INVALID_TRACE = "0".repeat(32);
const INVALID_SPAN = "0".repeat(16);

/** The JSON text stored with the job; null for an invalid span context (nothing to link to). */
export function encodeTraceContext(context: SpanContext, api: OtelApi): string | null {
  const { traceId, spanId, traceFlags } = context;
  if (!/^[0-9a-f]{32}$/.test(traceId) || traceId === INVALID_TRACE) return null;
  if (!/^[0-9a-f]{16}$/.test(spanId) || spanId === INVALID_SPAN) return null;
  const carrier: { traceparent: string; tracestate?: string } = {
    traceparent: `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, "0")}`,
  };
  const state = storableTraceState(context.traceState, api);
  if (state) carrier.tracestate = state;
  return JSON.stringify(carrier);
}

/**
 * The span's tracestate as the API parses it back (decodeTraceContext): only its W3C-valid
 * members (printable ASCII), none when it is over 512 characters. The span context is not the
 * caller's input — a vendor's trace state object serialises as it likes, and may throw — so it
 * never refuses an enqueue; storing more than the decode keeps would only grow every job (a
 * 1 MB tracestate was stored with each job, on every store) for nothing.
 */
function storableTraceState(state: SpanContext["traceState"], api: OtelApi): string | undefined {
  if (!state) return undefined;
  try {
    const text = state.serialize();
    return (text && api.createTraceState(text).serialize()) || undefined;
  } catch {
    return undefined;
  }
}

/** The span context a stored trace context names (remote), or null when it names none. */
export function decodeTraceContext(text: string | null | undefined, api: OtelApi): SpanContext | null {
  if (!text) return null;
  let carrier: { traceparent?: unknown; tracestate?: unknown };
  try {
    carrier = JSON.parse(text) as typeof carrier;
  } catch {
    return null;
  }
  const match = typeof carrier?.traceparent === "string" ? TRACEPARENT.exec(carrier.traceparent) : null;
  if (!match || match[1] === INVALID_TRACE || match[2] === INVALID_SPAN) return null;
  const context: SpanContext = {
    traceId: match[1],
    spanId: match[2],
    traceFlags: Number.parseInt(match[3], 16),
    isRemote: true,
  };
  if (typeof carrier.tracestate === "string" && carrier.tracestate)
    context.traceState = api.createTraceState(carrier.tracestate);
  return context;
}
