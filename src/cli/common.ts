/**
 * What every CLI command shares: the error classes that decide exit codes, strict parsers for
 * option values (each error names the flag), and opening errand from the global options.
 *
 * Exit codes: 0 success; 1 the command was understood but failed or was refused (schema
 * mismatch, job not found, unreadable jobs module, store error); 2 the command line itself is
 * wrong (unknown command or option, a malformed or out-of-range option value, an unknown job
 * name, queue or state, conflicting options).
 *
 * The library (errand, pino, the stores) is imported when a command runs, not at start-up, so
 * `--help` and command-line errors answer quickly.
 */
import { existsSync } from "node:fs";
import type { Command } from "commander";
import { parseDuration } from "../duration.js";
import type { Errand } from "../errand.js";
import { ValidationError } from "../errors.js";
import { type AnyJobDefinition, JOB_STATES, type JobState } from "../job.js";
import type { Logger } from "../logger.js";
import { DEFAULT_URL, parseStoreUrl } from "../store/open.js";

/** A user error: printed as one line without a stack trace, exit code 2 (usage) or 1. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

/** The command line is wrong: exit code 2. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, 2);
    this.name = "UsageError";
  }
}

/** Errors caused by what the user typed or stored, as opposed to bugs: no stack trace. */
export function isUserError(err: unknown): boolean {
  return err instanceof CliError || err instanceof ValidationError;
}

export interface GlobalOptions {
  url?: string;
  schema?: string;
}

/** The store URL: --url, else ERRAND_URL, else ./errand.db. */
export function storeUrl(opts: GlobalOptions): string {
  return opts.url ?? process.env.ERRAND_URL ?? DEFAULT_URL;
}

/** The options of a command together with the program's global ones. */
export function globals(cmd: Command): GlobalOptions {
  return cmd.optsWithGlobals() as GlobalOptions;
}

export interface OpenOptions {
  /** Commands that only read refuse to create a new SQLite file (a mistyped path would look empty). */
  mustExist?: boolean;
  logger?: Logger;
  jobs?: readonly AnyJobDefinition[];
  /** Wait for an unreachable store (retry with backoff, log each attempt) up to `maxMs`. */
  wait?: { log: Logger; maxMs: number };
}

/** Opens errand on the URL the global options name; store failures become one-line errors. */
export async function openFromOptions(opts: GlobalOptions, options: OpenOptions = {}): Promise<Errand> {
  const url = storeUrl(opts);
  let target: ReturnType<typeof parseStoreUrl>;
  try {
    target = parseStoreUrl(url);
  } catch (err) {
    throw new UsageError(`--url: ${(err as Error).message}`);
  }
  if (options.mustExist && target.kind === "sqlite" && !existsSync(target.path)) {
    throw new CliError(
      `no errand database at ${target.path}: pass --url (or set ERRAND_URL), or create it with \`errand migrate\``,
    );
  }
  const [{ openErrand }, { silentLogger }] = await Promise.all([
    import("../errand.js"),
    import("../logger.js"),
  ]);
  const open = () =>
    openErrand({ url, schema: opts.schema, logger: options.logger ?? silentLogger(), jobs: options.jobs });
  try {
    if (!options.wait) return await open();
    const { openWhenReachable } = await import("./wait-for-store.js");
    return await openWhenReachable(open, { ...options.wait, what: `the errand store at ${redact(url)}` });
  } catch (err) {
    if (isUserError(err)) throw err;
    throw new CliError(`cannot open the errand store at ${redact(url)}: ${(err as Error).message}`);
  }
}

/** Hides a password in a postgres URL. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");
}

/** A logger for long-running commands: readable on a terminal, JSON lines otherwise (stderr). */
export async function cliLogger(): Promise<Logger> {
  const { createLogger } = await import("../logger.js");
  return createLogger();
}

/** Runs `fn` with an open errand and always closes it. */
export async function withErrand<T>(errand: Errand, fn: (errand: Errand) => Promise<T>): Promise<T> {
  try {
    return await fn(errand);
  } finally {
    await errand.close();
  }
}

// ---- option value parsers: each rejects with a UsageError naming the flag -----------------

/** An integer in [min, max], written as plain decimal digits. */
export function parseIntOption(value: string, flag: string, range: { min: number; max: number }): number {
  const text = value.trim();
  const n = /^[+-]?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < range.min || n > range.max) {
    throw new UsageError(
      `${flag} must be an integer from ${range.min} to ${range.max}; got ${JSON.stringify(value)}`,
    );
  }
  return n;
}

/** A duration like 200ms, 5s, 5m, 2h, 1d (a bare number means milliseconds). */
export function parseDurationOption(value: string, flag: string): number {
  const text = value.trim();
  try {
    return parseDuration(/^\d+$/.test(text) ? Number(text) : text, flag);
  } catch {
    throw new UsageError(
      `${flag} must be a duration like 500ms, 30s, 5m, 2h or 1d; got ${JSON.stringify(value)}`,
    );
  }
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** An ISO 8601 date or date-time. */
export function parseIsoOption(value: string, flag: string): Date {
  const date = ISO_TIME.test(value.trim()) ? new Date(value.trim()) : null;
  if (!date || Number.isNaN(date.getTime())) {
    throw new UsageError(
      `${flag} must be an ISO 8601 time like 2026-01-31T09:00:00Z; got ${JSON.stringify(value)}`,
    );
  }
  return date;
}

/** JSON text; the error says where it broke. */
export function parseJsonOption(value: string, flag: string): unknown {
  try {
    return JSON.parse(value);
  } catch (err) {
    throw new UsageError(
      `${flag} is not valid JSON (${(err as Error).message}); got ${abbreviate(value, 60)}`,
    );
  }
}

export function parseStateOption(value: string, flag = "--state"): JobState {
  if (!(JOB_STATES as readonly string[]).includes(value)) {
    throw new UsageError(`${flag} must be one of ${JOB_STATES.join(", ")}; got ${JSON.stringify(value)}`);
  }
  return value as JobState;
}

export function abbreviate(text: string, max: number): string {
  const quoted = JSON.stringify(text);
  return quoted.length <= max ? quoted : `${quoted.slice(0, max - 2)}…"`;
}

/** Collects a repeatable option into a list. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
