import { type Duration, parseDuration } from "./duration.js";
import { ErrandError } from "./errand-error.js";
import { checkDelay, MAX_DELAY_MS } from "./instant.js";

export { ErrandError, ValidationError } from "./errand-error.js";

/** Thrown by a handler: this job can never succeed; it goes to the dead-letter queue at once. */
export class PermanentError extends ErrandError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("ERR_PERMANENT", message, options);
    this.name = "PermanentError";
  }
}

/** Thrown by a handler: try again, optionally after `retryAfter` (e.g. a 429's Retry-After). */
export class RetryableError extends ErrandError {
  readonly retryAfterMs?: number;
  /** A rate limit, not a fault: the job is snoozed for `retryAfter` without spending an attempt. */
  readonly rateLimited: boolean;
  constructor(message: string, options?: { cause?: unknown; retryAfter?: Duration; rateLimited?: boolean }) {
    super("ERR_RETRYABLE", message, options);
    this.name = "RetryableError";
    this.rateLimited = options?.rateLimited ?? false;
    if (options?.retryAfter !== undefined)
      this.retryAfterMs = checkDelay(
        parseDuration(options.retryAfter, "retryAfter"),
        options.retryAfter,
        "retryAfter",
      );
  }
}

/** The job ran past its `timeout`; its signal was aborted. Retried like a transient error. */
export class JobTimeoutError extends ErrandError {
  constructor(timeoutMs: number) {
    super("ERR_TIMEOUT", `job timed out after ${timeoutMs} ms`);
    this.name = "JobTimeoutError";
  }
}

/** The kinds an attempt's error is filed under in the job's history. */
export type ErrorKind =
  | "permanent"
  | "retryable"
  | "timeout"
  | "validation"
  | "unknown"
  | "lost"
  | "cancelled"
  | "interrupted"
  | "crashed";

/** What a classify hook answers: retry it, or fail it for good. */
export type Classification = "retry" | "fail";

const TRANSIENT_CODES = new Set([
  "ECONNRESET",
  "ETIMEDOUT",
  "ECONNREFUSED",
  "EAI_AGAIN",
  "EPIPE",
  "ENOTFOUND",
  "ECONNABORTED",
]);
const TRANSIENT_HTTP = new Set([408, 429, 502, 503, 504]);

/** Reads an HTTP status from the common error shapes (fetch wrappers, axios, got). */
function httpStatus(err: unknown): number | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const e = err as { status?: unknown; statusCode?: unknown; response?: { status?: unknown } };
  const status = e.status ?? e.statusCode ?? e.response?.status;
  return typeof status === "number" ? status : undefined;
}

/**
 * The Retry-After of an HTTP 429 error, in ms, when the error carries its response headers
 * (fetch's Headers, or a plain object as axios and got give): seconds, or an HTTP date (RFC 9110:
 * each of its three forms starts with a day name). Undefined for anything else — and for a
 * delay over 100 years (MAX_DELAY_MS), which no retry can wait: a broken upstream's `2^32 - 1`
 * used to make the retry's run time one no store holds ("interval out of range" on PostgreSQL,
 * an invalid date elsewhere), failing the job, and Date.parse read "-5" or "5, 6" as dates in
 * 2001, retrying at once. Never throws.
 */
export function retryAfterOf429(err: unknown): number | undefined {
  try {
    if (httpStatus(err) !== 429) return undefined;
    const e = err as { headers?: unknown; response?: { headers?: unknown } };
    const value = headerValue(e.headers ?? e.response?.headers, "retry-after");
    if (value === undefined) return undefined;
    const text = value.trim();
    let ms: number;
    if (/^\d+(\.\d+)?$/.test(text)) ms = Math.round(Number(text) * 1000);
    else if (HTTP_DATE.test(text)) ms = Math.max(0, Date.parse(text) - Date.now());
    else return undefined;
    return usableDelay(ms);
  } catch {
    return undefined;
  }
}

/** The start of an HTTP date: IMF-fixdate and asctime ("Sun, 06 Nov…", "Sun Nov  6…"), RFC 850 ("Sunday, 06-Nov-94…"). */
const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,?\s/i;

/** A delay a retry can wait (0 to 100 years), or undefined: NaN, negative, Infinity and longer ones are none. */
export function usableDelay(ms: unknown): number | undefined {
  return typeof ms === "number" && ms >= 0 && ms <= MAX_DELAY_MS ? ms : undefined;
}

function headerValue(headers: unknown, name: string): string | undefined {
  if (typeof headers !== "object" || headers === null) return undefined;
  const get = (headers as { get?: unknown }).get;
  const value =
    typeof get === "function"
      ? (get as (n: string) => unknown).call(headers, name)
      : ((headers as Record<string, unknown>)[name] ?? (headers as Record<string, unknown>)["Retry-After"]);
  if (Array.isArray(value)) return typeof value[0] === "string" ? value[0] : undefined;
  return typeof value === "string" ? value : typeof value === "number" ? String(value) : undefined;
}

/** The built-in classification (docs/semantics.md, error classes). Never throws, whatever was thrown. */
export function errorKind(err: unknown): ErrorKind {
  try {
    return kindOf(err);
  } catch {
    return "unknown"; // a revoked Proxy, a throwing getter: nothing to classify it by
  }
}

function kindOf(err: unknown): ErrorKind {
  // By code rather than instanceof: a jobs module may load a second copy of errand.
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  if (code === "ERR_PERMANENT") return "permanent";
  if (code === "ERR_VALIDATION") return "validation";
  if (code === "ERR_TIMEOUT") return "timeout";
  if (code === "ERR_RETRYABLE") return "retryable";
  if (typeof code === "string" && TRANSIENT_CODES.has(code)) return "retryable";
  const status = httpStatus(err);
  if (status !== undefined && TRANSIENT_HTTP.has(status)) return "retryable";
  return "unknown";
}

/**
 * Turns anything thrown into an Error with a readable message and never throws itself: a
 * handler may throw a revoked Proxy, an Error whose `message` or `stack` getter throws, or a
 * circular null-prototype object, and describing it must not break the error handling that
 * frees the job's slot. An Error whose fields read fine is returned as is.
 */
export function toError(thrown: unknown): Error {
  try {
    if (thrown instanceof Error) return readableError(thrown);
    if (typeof thrown === "string") return new Error(`non-Error thrown: ${thrown}`);
    return new Error(`non-Error thrown: ${describeValue(thrown)}`);
  } catch (err) {
    return new Error(`a thrown value errand could not describe (${safeMessage(err)})`);
  }
}

function readableError(error: Error): Error {
  const name = readString(() => error.name) ?? "Error";
  let message: string | undefined;
  try {
    message = error.message;
  } catch (err) {
    const described = new Error(`${name} thrown; its message could not be read (${safeMessage(err)})`);
    const stack = readString(() => error.stack);
    if (stack !== undefined) described.stack = stack;
    return described;
  }
  if (typeof message !== "string") {
    return new Error(`${name} thrown with a message that is not a string: ${describeValue(message)}`);
  }
  let stack: unknown;
  try {
    stack = error.stack;
  } catch {
    stack = null; // unreadable: the copy below gets a stack of its own
  }
  if (stack === undefined || typeof stack === "string") return error;
  const copy = new Error(message);
  copy.name = name;
  return copy;
}

/** JSON if it has one, else String(), else its type — never a throw. */
function describeValue(value: unknown): string {
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return json;
  } catch {
    // circular, BigInt, a throwing toJSON: try String()
  }
  try {
    return String(value);
  } catch {
    // an object without a prototype has no toString
  }
  try {
    if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === null)
      return "[object with a null prototype]";
  } catch {
    // a revoked Proxy
  }
  return `[${typeof value}]`;
}

function readString(read: () => unknown): string | undefined {
  try {
    const value = read();
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

/** `name: message` of an error raised while describing another; never throws. */
function safeMessage(err: unknown): string {
  const name = readString(() => (err as Error).name) ?? "error";
  const message = readString(() => (err as Error).message) ?? "";
  return message ? `${name}: ${message}` : name;
}
