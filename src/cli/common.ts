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
import { resolve } from "node:path";
import type { Command } from "commander";
import { MAX_TIMER_MS, parseDuration } from "../duration.js";
import type { Errand } from "../errand.js";
import { ValidationError } from "../errors.js";
import { checkRunAt } from "../instant.js";
import { type AnyJobDefinition, JOB_STATES, type JobState } from "../job.js";
import type { Logger } from "../logger.js";
import { redactCredentials } from "../redact.js";
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
  /**
   * Commands that only read refuse to create a store: a new SQLite file, or a Postgres schema
   * (a mistyped path or --schema would otherwise look like an empty store). Only `migrate` and
   * the commands that work (worker, enqueue, serve, tick) create one.
   */
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
    throw new UsageError(`--url: ${redactCredentials((err as Error).message)}`);
  }
  if (options.mustExist && target.kind === "sqlite" && !existsSync(target.path)) {
    throw new CliError(
      `no errand database at ${target.path}: pass --url (or set ERRAND_URL), or create it with \`errand migrate\``,
    );
  }
  const [{ openErrand }, { silentLogger }] = await Promise.all([
    import("../open-errand.js"),
    import("../logger.js"),
  ]);
  const open = () =>
    openErrand({
      url,
      schema: opts.schema,
      logger: options.logger ?? silentLogger(),
      jobs: options.jobs,
      mustExist: options.mustExist,
    });
  try {
    if (!options.wait) return await open();
    const { openWhenReachable } = await import("./wait-for-store.js");
    return await openWhenReachable(open, { ...options.wait, what: `the errand store at ${redact(url)}` });
  } catch (err) {
    if (isUserError(err)) throw err;
    throw new CliError(
      `cannot open the errand store at ${redact(url)}: ${redactCredentials((err as Error).message)}`,
    );
  }
}

/** Hides credentials (a password in a URL's userinfo or parameters) in a store URL. */
export function redact(url: string): string {
  return redactCredentials(url);
}

/**
 * For long-running commands: says which store they opened (credentials hidden), and when no
 * --url or ERRAND_URL was given, that it is the default file and where — a worker started in
 * the wrong directory would otherwise quietly create and serve an empty ./errand.db there.
 */
export function logStore(opts: GlobalOptions, errand: Errand, log: Logger): void {
  const url = storeUrl(opts);
  const target = parseStoreUrl(url);
  const where = target.kind === "sqlite" ? resolve(target.path) : redact(url);
  if (opts.url === undefined && process.env.ERRAND_URL === undefined) {
    log.warn(
      { store: where, kind: errand.storeKind },
      `no --url or ERRAND_URL: using the default SQLite file ${where}`,
    );
    return;
  }
  const schema = target.kind === "postgres" ? { schema: opts.schema ?? "errand" } : {};
  log.info(
    { store: where, kind: errand.storeKind, ...schema },
    `opened the ${errand.storeKind} store ${where}`,
  );
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

/**
 * A duration like 200ms, 5s, 5m, 2h, 1d. A bare number is refused: in the library it means
 * milliseconds, but on a command line `--delay 5` reads as five of something larger.
 */
export function parseDurationOption(value: string, flag: string, options: { timer?: boolean } = {}): number {
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) {
    throw new UsageError(
      `${flag} needs a unit, like ${text}s or ${text}m (a bare number is ambiguous); got ${JSON.stringify(value)}`,
    );
  }
  let ms: number;
  try {
    ms = parseDuration(text, flag);
  } catch {
    throw new UsageError(
      `${flag} must be a duration like 500ms, 30s, 5m, 2h or 1d; got ${JSON.stringify(value)}`,
    );
  }
  if (options.timer && ms > MAX_TIMER_MS)
    throw new UsageError(
      `${flag} must be at most 24.8 days (the longest a timer waits); got ${JSON.stringify(value)}`,
    );
  return ms;
}

/** An ISO 8601 date or date-time naming a real time errand can store (instant.ts). */
export function parseIsoOption(value: string, flag: string): Date {
  try {
    return checkRunAt(value.trim(), flag);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
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
