/**
 * The OpenTelemetry API, if the application has it, and the tracer, if the application
 * registered an SDK. errand never depends on an SDK: with none, every function here answers
 * null after a property read or two, and no span, context or attribute object is made.
 *
 * Why an optional peer dependency, loaded when present, and not a dependency: the API keeps its
 * state (the registered tracer provider, the context manager) in a global that each copy of the
 * package checks for version compatibility. As a dependency of errand, npm could install errand
 * its own copy beside the application's; a copy newer than the one that registered the SDK
 * finds the global incompatible and traces nothing, silently. As a peer, errand uses the
 * application's own copy — the OpenTelemetry project's advice for instrumented libraries — and
 * an application without OpenTelemetry installs nothing more. It is loaded with `require` on
 * first use (the package's CommonJS build is also what an ESM `import` of it gets, so both see
 * one module), synchronously: a SQLite enqueue inside a transaction cannot wait for an import.
 */
import { createRequire } from "node:module";
import type * as Otel from "@opentelemetry/api";

export type OtelApi = typeof Otel;

let loaded: OtelApi | null | undefined;

/** The application's @opentelemetry/api, or null when it has none. */
export function otelApi(): OtelApi | null {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)("@opentelemetry/api") as OtelApi;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}

export const TRACER_NAME = "errand";

interface ProxyProvider extends Otel.TracerProvider {
  /** The API's global provider: the registered SDK's tracer, or undefined while none is registered. */
  getDelegateTracer?(name: string): Otel.Tracer | undefined;
}

/**
 * errand's tracer when a tracer provider is registered now, else null. Asked per enqueue and
 * per attempt (an SDK may be registered after errand opened): the API's global provider is a
 * proxy whose delegate stays unset until an SDK registers one.
 */
export function activeTracer(api: OtelApi): Otel.Tracer | null {
  const provider = api.trace.getTracerProvider() as ProxyProvider;
  if (typeof provider.getDelegateTracer === "function")
    return provider.getDelegateTracer(TRACER_NAME) ?? null;
  return provider.getTracer(TRACER_NAME);
}
