/**
 * Job logs: the lines a handler writes through `ctx.log` are kept with its attempt (the history
 * entry's `logs`), besides going to the worker's own log as before. Bounded per attempt, so a
 * chatty handler cannot bloat its job's row: at most JOB_LOG_MAX_LINES lines and
 * JOB_LOG_MAX_BYTES bytes of JSON; past either, lines are counted, not kept, and a marker line
 * (`dropped`: how many) ends the log. Each line's text and fields are cut at JOB_LOG_MAX_LINE
 * characters, so one huge line cannot take the whole budget.
 *
 * Nothing here runs for a handler that never touches `ctx.log`: the capture is made on the
 * first read of `ctx.log` (active-job.ts), and an attempt without lines adds nothing to its
 * outcome — a plain completion keeps the stores' fast path.
 */
import { format } from "node:util";
import type { JobLogLevel, JobLogLine } from "../job.js";
import type { Logger } from "../logger.js";
import { storableText } from "../payload.js";
import { redactCredentials } from "../redact.js";

export const JOB_LOG_MAX_LINES = 200;
export const JOB_LOG_MAX_BYTES = 32 * 1024;
export const JOB_LOG_MAX_LINE = 4 * 1024;

const LEVELS: Record<JobLogLevel, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
};
/** Kept whatever the worker's logger level: a silent process log still keeps its jobs' logs. */
const KEPT_FROM = LEVELS.info;

/** One attempt's lines, within the caps. */
export class JobLogBuffer {
  private readonly lines: JobLogLine[] = [];
  private bytes = 0;
  private dropped = 0;

  add(level: JobLogLevel, args: unknown[]): void {
    if (this.dropped > 0 || this.lines.length >= JOB_LOG_MAX_LINES) {
      this.dropped++;
      return;
    }
    const line = toLine(level, args);
    const size = Buffer.byteLength(JSON.stringify(line));
    if (this.bytes + size > JOB_LOG_MAX_BYTES) {
      this.dropped++;
      return;
    }
    this.bytes += size;
    this.lines.push(line);
  }

  /** The lines so far (with the truncation marker when some were dropped); undefined when none. */
  snapshot(): JobLogLine[] | undefined {
    if (this.lines.length === 0 && this.dropped === 0) return undefined;
    if (this.dropped === 0) return this.lines.slice();
    const marker: JobLogLine = {
      at: new Date().toISOString(),
      level: "warn",
      msg: `job log truncated: ${this.dropped} more line${this.dropped === 1 ? "" : "s"} not kept (at most ${JOB_LOG_MAX_LINES} lines and ${JOB_LOG_MAX_BYTES / 1024} KiB per attempt)`,
      dropped: this.dropped,
    };
    return [...this.lines, marker];
  }
}

/**
 * `log` with every line at or above the kept level also added to `buffer`. The logger is
 * wrapped, not replaced: the lines still reach the worker's log with the job's fields, and
 * `ctx.log.child(…)` loggers keep to the same buffer.
 */
export function capturingLogger(log: Logger, buffer: JobLogBuffer): Logger {
  const threshold = Math.min(KEPT_FROM, typeof log.levelVal === "number" ? log.levelVal : KEPT_FROM);
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(log, {
    get(target, prop) {
      const done = wrapped.get(prop);
      if (done !== undefined) return done;
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      let fn: unknown;
      if (prop === "child") {
        fn = (...args: Parameters<Logger["child"]>) =>
          capturingLogger(target.child(...args) as unknown as Logger, buffer);
      } else if (typeof prop === "string" && prop in LEVELS && LEVELS[prop as JobLogLevel] >= threshold) {
        const level = prop as JobLogLevel;
        fn = (...args: unknown[]) => {
          try {
            buffer.add(level, args);
          } catch {
            // a line that cannot be kept must not fail the handler that wrote it
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      } else {
        fn = (value as (...a: unknown[]) => unknown).bind(target);
      }
      wrapped.set(prop, fn);
      return fn;
    },
  });
}

/** pino's call shapes: (msg, ...args), (obj, msg?, ...args), (err, msg?, ...args). */
function toLine(level: JobLogLevel, args: unknown[]): JobLogLine {
  const at = new Date().toISOString();
  const [first, ...rest] = args;
  if (typeof first === "string") return { at, level, msg: text(format(first, ...rest)) };
  let msg = typeof rest[0] === "string" ? format(rest[0], ...rest.slice(1)) : "";
  let fields: Record<string, unknown> | undefined;
  if (first instanceof Error) {
    msg ||= first.message;
    fields = { err: errorFields(first) };
  } else if (first !== null && typeof first === "object") {
    fields = jsonFields(first as Record<string, unknown>);
    if (!msg && typeof (first as { msg?: unknown }).msg === "string") msg = (first as { msg: string }).msg;
  } else if (first !== undefined) {
    msg = format(first, ...rest);
  }
  const line: JobLogLine = { at, level, msg: text(msg) };
  if (fields && Object.keys(fields).length > 0) line.fields = fields;
  return line;
}

/** A line's text as the stores keep it: credentials hidden, storable, cut to the line cap. */
function text(value: string): string {
  const cut = value.length > JOB_LOG_MAX_LINE ? `${value.slice(0, JOB_LOG_MAX_LINE)}…` : value;
  return storableText(redactCredentials(cut));
}

function errorFields(err: Error): Record<string, unknown> {
  return { type: err.name, message: text(String(err.message)) };
}

/**
 * The logged object as JSON fields (Errors by name and message, BigInts as text), its strings
 * storable with credentials hidden; one that cannot be serialised, or is larger than the line cap, is replaced by a note.
 */
function jsonFields(obj: Record<string, unknown>): Record<string, unknown> | undefined {
  let json: string | undefined;
  try {
    json = JSON.stringify(obj, (_key, value: unknown) => {
      if (value instanceof Error) return errorFields(value);
      if (typeof value === "bigint") return value.toString();
      if (typeof value === "string") return storableText(redactCredentials(value));
      return value;
    });
  } catch {
    return { unserializable: "the fields logged with this line could not be serialised" };
  }
  if (json === undefined || json === "{}") return undefined;
  // The values were made storable above; a NUL or a lone surrogate left now is in a key, which
  // Postgres's jsonb would refuse (and with it the attempt's outcome).
  if (/\\u0000|\\ud[89a-f][0-9a-f]{2}/i.test(json)) {
    return { unserializable: "the fields logged with this line have a key no store can hold" };
  }
  if (json.length > JOB_LOG_MAX_LINE) {
    return {
      truncated: `${json.length} characters of fields, more than the ${JOB_LOG_MAX_LINE} kept per line`,
    };
  }
  return JSON.parse(json) as Record<string, unknown>;
}
