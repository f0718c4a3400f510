/**
 * Assertions on what was enqueued: plain functions that throw node's AssertionError (which
 * node:test, vitest and jest all report as a failed assertion), with a message that lists what
 * WAS enqueued, since "expected a job, found none" alone sends the author to a debugger.
 */
import { AssertionError } from "node:assert";
import type { JobRecord } from "../job.js";
import {
  compileMatch,
  describeJob,
  describeMatch,
  type EnqueuedMatch,
  type JobRef,
  nameOf,
} from "./match.js";

/** Listed in a failure message at most; the rest are counted. */
const SHOWN = 20;

export interface CountOption {
  /** Exactly this many must match (default: at least one). */
  count?: number;
}

/** The recorded jobs of `ref`'s name that match. */
export function findEnqueued<P>(
  recorded: readonly JobRecord[],
  ref: JobRef<P>,
  match?: EnqueuedMatch<P>,
): JobRecord<P>[] {
  const name = nameOf(ref);
  const test = compileMatch(match);
  return (recorded as JobRecord<P>[]).filter((job) => job.name === name && test(job));
}

export function expectEnqueued<P>(
  recorded: readonly JobRecord[],
  ref: JobRef<P>,
  match?: EnqueuedMatch<P>,
  options: CountOption = {},
): JobRecord<P>[] {
  const { count } = options;
  if (count !== undefined && !(Number.isInteger(count) && count >= 0)) {
    throw new TypeError(`count must be a whole number of jobs; got ${String(count)}`);
  }
  const found = findEnqueued(recorded, ref, match);
  const ok = count === undefined ? found.length > 0 : found.length === count;
  if (!ok) {
    const wanted =
      count === undefined
        ? `a "${nameOf(ref)}" job`
        : `exactly ${count} "${nameOf(ref)}" job${count === 1 ? "" : "s"}`;
    fail(
      "expectEnqueued",
      `expected ${wanted}${describeMatch(match)} to be enqueued; found ${found.length}.`,
      recorded,
      nameOf(ref),
      found,
      match,
    );
  }
  return found;
}

export function expectNotEnqueued<P>(
  recorded: readonly JobRecord[],
  ref: JobRef<P>,
  match?: EnqueuedMatch<P>,
): void {
  const found = findEnqueued(recorded, ref, match);
  if (found.length > 0) {
    fail(
      "expectNotEnqueued",
      `expected no "${nameOf(ref)}" job${describeMatch(match)} to be enqueued; found ${found.length}.`,
      recorded,
      nameOf(ref),
      found,
      match,
    );
  }
}

function fail(
  operator: string,
  headline: string,
  recorded: readonly JobRecord[],
  name: string,
  found: readonly JobRecord[],
  match: unknown,
): never {
  const same = recorded.filter((j) => j.name === name);
  const others = new Map<string, number>();
  for (const job of recorded) if (job.name !== name) others.set(job.name, (others.get(job.name) ?? 0) + 1);
  const lines = [headline];
  if (recorded.length === 0) lines.push("Nothing was enqueued.");
  else {
    lines.push(
      same.length === 0 ? `No "${name}" job was enqueued.` : `Enqueued "${name}" jobs (${same.length}):`,
    );
    for (const job of same.slice(0, SHOWN))
      lines.push(`  ${found.includes(job) ? "✓" : "✗"} ${describeJob(job)}`);
    if (same.length > SHOWN) lines.push(`  … and ${same.length - SHOWN} more`);
    if (others.size > 0) {
      lines.push(`Other jobs enqueued: ${[...others].map(([n, c]) => `${n} (${c})`).join(", ")}`);
    }
  }
  throw new AssertionError({
    message: lines.join("\n"),
    actual: same.map((j) => ({ id: j.id, payload: j.payload, runAt: j.runAt, key: j.key })),
    expected: typeof match === "function" ? String(match) : match,
    operator,
    stackStartFn: fail,
  });
}
