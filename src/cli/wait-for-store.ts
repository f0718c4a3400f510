/**
 * A worker started before its database (a container starting, a failover, a host rebooting)
 * waits for it instead of exiting: opening the store is retried with backoff (250 ms doubling
 * to 5 s, jittered), each failed attempt logged as a warning, until the store answers or
 * `maxMs` passes. Only "cannot reach it" errors are retried; a wrong password, a missing
 * database or a schema from a newer errand fail at once.
 */
import type { Logger } from "../logger.js";

/** Node's network errors and PostgreSQL's "not now" answers: the server may come. */
const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  // A host name not resolvable yet (a database container not started): logged while waiting.
  "ENOTFOUND",
  "EPIPE",
  "ERRAND_PG_SILENT",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: starting up, shutting down, in recovery
  "53300", // too_many_connections
]);

const UNREACHABLE_MESSAGES = /Connection terminated|timeout expired|Query read timeout|connect ETIMEDOUT/i;

/** Whether `err` says the store cannot be reached right now (as opposed to refusing us). */
export function isUnreachable(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  if (typeof e.code === "string" && (UNREACHABLE_CODES.has(e.code) || e.code.startsWith("08"))) return true;
  if (typeof e.message === "string" && UNREACHABLE_MESSAGES.test(e.message)) return true;
  // Node tries each address of a host name (AggregateError), and wrappers keep a cause.
  if (Array.isArray(e.errors) && e.errors.some(isUnreachable)) return true;
  return e.cause !== undefined && e.cause !== err && isUnreachable(e.cause);
}

/** Runs `open` until it succeeds, fails otherwise than "unreachable", or `maxMs` has passed. */
export async function openWhenReachable<T>(
  open: () => Promise<T>,
  options: { log: Logger; what: string; maxMs: number; minDelayMs?: number; maxDelayMs?: number },
): Promise<T> {
  const started = Date.now();
  const min = options.minDelayMs ?? 250;
  const max = options.maxDelayMs ?? 5_000;
  for (let attempt = 0; ; attempt++) {
    try {
      const value = await open();
      if (attempt > 0) options.log.info({ attempts: attempt + 1 }, `${options.what} is reachable now`);
      return value;
    } catch (err) {
      const waited = Date.now() - started;
      if (!isUnreachable(err) || waited >= options.maxMs) throw err;
      const delay = Math.min(
        options.maxMs - waited,
        Math.min(max, min * 2 ** Math.min(attempt, 16)) * (0.5 + Math.random() * 0.5),
      );
      options.log.warn(
        { err, attempt: attempt + 1, retryInMs: Math.round(delay), waitedMs: waited },
        `${options.what} is not reachable; waiting for it`,
      );
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
