import { type Logger as PinoLogger, pino, stdSerializers } from "pino";
import pretty from "pino-pretty";
import { ValidationError } from "./errors.js";
import { redactCredentials } from "./redact.js";

export type Logger = PinoLogger;

export interface LoggerOptions {
  level?: string;
  /** Force pretty (true) or JSON (false) output; default: pretty on a terminal. */
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
}

/** pino's levels, most to least severe, and "silent". */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/**
 * Structured JSON (pino) when not on a terminal, readable lines on one. Payloads are never
 * logged unless the caller asks (ERRAND_LOG_PAYLOADS=1 / logPayloads option). Credentials in
 * messages, fields and errors are hidden (src/redact.ts). An unknown level is refused here with
 * the list: pino itself throws from deep inside its constructor.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const fromEnv = options.level === undefined && process.env.ERRAND_LOG_LEVEL !== undefined;
  const level = (options.level ?? process.env.ERRAND_LOG_LEVEL ?? "info").trim().toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new ValidationError(
      `${fromEnv ? "ERRAND_LOG_LEVEL" : "log level"} must be one of ${LOG_LEVELS.join(", ")}; got ${JSON.stringify(options.level ?? process.env.ERRAND_LOG_LEVEL)}`,
    );
  }
  const destination = options.destination ?? process.stderr;
  const isTty = Boolean((destination as { isTTY?: boolean }).isTTY);
  const usePretty = options.pretty ?? isTty;
  const settings = {
    level,
    base: { name: "errand" },
    hooks: {
      logMethod(args: Parameters<PinoLogger["info"]>, method: (...a: unknown[]) => void) {
        method.apply(
          this,
          args.map((a) => (typeof a === "string" ? redactCredentials(a) : a)),
        );
      },
    },
    formatters: {
      log: (object: Record<string, unknown>) => redactFields(object, 3) as Record<string, unknown>,
    },
    serializers: { err: redactError },
  };
  if (usePretty) {
    const stream = pretty({
      destination: destination as unknown as number,
      sync: true,
      colorize: isTty,
      ignore: "pid,hostname,name",
      translateTime: "HH:MM:ss.l",
    });
    return pino(settings, stream);
  }
  return pino(settings, destination as NodeJS.WritableStream & { write: (s: string) => boolean });
}

/** Strings in a log line's fields (nested up to `depth`), redacted; Errors are left to the serializer. */
function redactFields(value: unknown, depth: number): unknown {
  if (typeof value === "string") return redactCredentials(value);
  if (depth === 0 || value === null || typeof value !== "object" || value instanceof Error) return value;
  if (Array.isArray(value)) return value.map((v) => redactFields(v, depth - 1));
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null)
    return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = redactFields(v, depth - 1);
  return out;
}

function redactError(err: Error) {
  const out = stdSerializers.err(err);
  if (typeof out?.message === "string") out.message = redactCredentials(out.message);
  if (typeof out?.stack === "string") out.stack = redactCredentials(out.stack);
  return out;
}

/** A logger that drops everything (tests, embedded use). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

const LOGGER_METHODS = ["error", "warn", "info", "debug", "child"] as const;

/**
 * The `logger` option checked (undefined passes through): a logger object, or a clear error.
 * The common slip is `logger: silentLogger` — the factory, not a logger — which type-checks in
 * JavaScript and used to fail only later, inside work(), with "log.info is not a function".
 */
export function checkLogger(value: unknown): Logger | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "function") {
    throw new ValidationError(
      value === silentLogger
        ? "logger must be a logger object; got a function (silentLogger itself): call it, logger: silentLogger()"
        : "logger must be a logger object (pino or alike); got a function — for no logs, pass silentLogger()",
    );
  }
  const missing =
    value !== null && typeof value === "object"
      ? LOGGER_METHODS.filter((m) => typeof (value as Record<string, unknown>)[m] !== "function")
      : LOGGER_METHODS;
  if (missing.length > 0) {
    throw new ValidationError(
      `logger must be a logger object (pino or alike); got ${value === null ? "null" : typeof value === "object" ? "an object" : typeof value} without ${missing.join(", ")}`,
    );
  }
  return value as Logger;
}
