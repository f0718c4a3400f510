/**
 * What expectEnqueued compares: a job's fields against a partial description, and the text that
 * shows a test author what was enqueued when nothing matched.
 */
import { type Duration, parseDuration } from "../duration.js";
import type { JobDefinition, JobRecord } from "../job.js";

/** vitest's and jest's asymmetric matchers (`expect.any(String)`, `expect.stringContaining(…)`). */
export interface AsymmetricMatcher {
  asymmetricMatch(actual: unknown): boolean;
}

/**
 * Every field optional, at every depth: a payload matches when the fields given match. A string
 * may be matched by a RegExp, anything by an asymmetric matcher.
 */
export type DeepPartial<T> =
  | AsymmetricMatcher
  | (T extends string
      ? T | RegExp
      : T extends readonly unknown[]
        ? { [K in keyof T]: DeepPartial<T[K]> }
        : T extends Date
          ? T
          : T extends object
            ? { [K in keyof T]?: DeepPartial<T[K]> }
            : T);

/**
 * Which enqueued jobs count. Each field given must match; fields left out match anything.
 * `payload` matches by subset (objects may have more fields; arrays match element by element);
 * a RegExp matches a string, and vitest's and jest's asymmetric matchers (`expect.any(String)`)
 * work anywhere in it. A function instead of an object decides alone.
 */
export type EnqueuedMatch<P> =
  | {
      payload?: DeepPartial<P>;
      queue?: string;
      priority?: number;
      key?: string | null;
      maxAttempts?: number;
      /** The instant it was enqueued to run at. */
      runAt?: Date | string;
      /** How long after its enqueue it runs (`runAt − createdAt`): `delay: "5m"`. */
      delay?: Duration;
    }
  | ((job: JobRecord<P>) => boolean);

/** A job definition, or a job name. */
export type JobRef<P> = JobDefinition<P, unknown> | string;

export function nameOf(ref: JobRef<unknown>): string {
  if (typeof ref === "string") return ref;
  if (ref && typeof ref === "object" && typeof ref.name === "string") return ref.name;
  throw new TypeError("expectEnqueued takes a job definition (from defineJob) or a job name");
}

function isAsymmetric(value: unknown): value is AsymmetricMatcher {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Partial<AsymmetricMatcher>).asymmetricMatch === "function"
  );
}

/** Subset comparison: every field of `expected` is in `actual` and matches. */
export function partialMatch(actual: unknown, expected: unknown): boolean {
  if (isAsymmetric(expected)) return expected.asymmetricMatch(actual);
  if (expected instanceof RegExp) return typeof actual === "string" && expected.test(actual);
  if (expected instanceof Date) {
    const at =
      actual instanceof Date ? actual.getTime() : typeof actual === "string" ? Date.parse(actual) : NaN;
    return at === expected.getTime();
  }
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      actual.length === expected.length &&
      expected.every((item, i) => partialMatch(actual[i], item))
    );
  }
  if (typeof expected === "object" && expected !== null) {
    if (typeof actual !== "object" || actual === null || Array.isArray(actual)) return false;
    return Object.entries(expected).every(([k, v]) =>
      v === undefined
        ? true
        : Object.hasOwn(actual, k) && partialMatch((actual as Record<string, unknown>)[k], v),
    );
  }
  return Object.is(actual, expected);
}

/** Checks a match's shape once, so a typo is an error and not a silent "matches everything". */
export function compileMatch<P>(match: EnqueuedMatch<P> | undefined): (job: JobRecord<P>) => boolean {
  if (match === undefined) return () => true;
  if (typeof match === "function") return match;
  if (typeof match !== "object" || match === null) {
    throw new TypeError(
      `a match must be an object like { payload: { … } } or a function; got ${String(match)}`,
    );
  }
  const known = ["payload", "queue", "priority", "key", "maxAttempts", "runAt", "delay"];
  const unknown = Object.keys(match).filter((k) => !known.includes(k));
  if (unknown.length > 0) {
    throw new TypeError(
      `unknown match field ${unknown.map((k) => JSON.stringify(k)).join(", ")}; a match takes ${known.join(", ")} (put payload fields under payload)`,
    );
  }
  const runAt = match.runAt === undefined ? undefined : new Date(match.runAt).getTime();
  if (runAt !== undefined && Number.isNaN(runAt))
    throw new TypeError(`match.runAt is not a time: ${String(match.runAt)}`);
  const delay = match.delay === undefined ? undefined : parseDuration(match.delay, "match.delay");
  return (job) =>
    (match.payload === undefined || partialMatch(job.payload, match.payload)) &&
    (match.queue === undefined || job.queue === match.queue) &&
    (match.priority === undefined || job.priority === match.priority) &&
    (match.key === undefined || job.key === match.key) &&
    (match.maxAttempts === undefined || job.maxAttempts === match.maxAttempts) &&
    (runAt === undefined || job.runAt.getTime() === runAt) &&
    (delay === undefined || job.runAt.getTime() - job.createdAt.getTime() === delay);
}

/** A match as text for a message (a function shows as such). */
export function describeMatch(match: object | undefined): string {
  if (match === undefined) return "";
  if (typeof match === "function")
    return ` matching ${match.name ? `${match.name}()` : "the given function"}`;
  return ` matching ${JSON.stringify(match, (_k, v) => (v instanceof RegExp ? String(v) : isAsymmetric(v) ? String(v) : v))}`;
}

/** One enqueued job on one line: what a test author needs to see why it did not match. */
export function describeJob(job: JobRecord): string {
  const delayMs = job.runAt.getTime() - job.createdAt.getTime();
  const parts = [
    `#${job.id} ${job.name}`,
    `payload ${JSON.stringify(job.payload)}`,
    `runAt ${job.runAt.toISOString()}${delayMs > 0 ? ` (delay ${delayMs} ms)` : ""}`,
  ];
  if (job.queue !== "default") parts.push(`queue ${job.queue}`);
  if (job.priority !== 0) parts.push(`priority ${job.priority}`);
  if (job.key !== null) parts.push(`key ${JSON.stringify(job.key)}`);
  return parts.join(", ");
}
