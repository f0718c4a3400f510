/**
 * Uniqueness with a scope and debounce, as a user writes them (docs/semantics.md, Uniqueness):
 * the options checked into the store's UniqueRule before anything is stored. A bad option is a
 * ValidationError naming it, at defineJob (a definition's debounce) or at enqueue.
 */
import { type Duration, parseDuration } from "./duration.js";
import { ValidationError } from "./errors.js";
import { knownFields, onlyKnownFields } from "./known-fields.js";
import { storableString } from "./payload.js";
import type { UniqueRule, UniqueWhile } from "./unique-rule.js";

export type { UniqueWhile };

/** Which job already holding an enqueue's `key` counts as a duplicate of it. */
export interface UniqueOptions {
  /**
   * `"pending"`: one not started yet (or waiting for a retry); `"unfinished"`: pending or
   * running; `"retained"` (the default, a key's plain meaning): any job still stored, finished
   * ones included, until the pruner deletes it.
   */
  while?: UniqueWhile;
  /** Only a job enqueued less than this long ago counts (a dedup window). */
  for?: Duration;
}

/** What an enqueue does with a duplicate: return it as it is (`keep`), or give a pending one the new payload and run time (`replace`). */
export type OnConflict = "keep" | "replace";

/**
 * Debounce: enqueues with the same key within `delay` of each other collapse into one pending
 * job that runs `delay` after the last of them, with the latest payload — but no later than
 * `maxWait` after the first. On defineJob the key may be a function of the payload.
 */
export interface DebounceOptions<K = string> {
  key: K;
  delay: Duration;
  maxWait?: Duration;
}

/** A debounce, checked: its key (a string or a function of the payload) and the times. */
export interface DebounceDefinition {
  readonly key: string | ((payload: unknown) => unknown);
  readonly delayMs: number;
  readonly maxWaitMs: number | null;
}

const UNIQUE_FIELDS = knownFields("while", "for");
const DEBOUNCE_FIELDS = knownFields("key", "delay", "maxWait");
const WHILE: readonly UniqueWhile[] = ["pending", "unfinished", "retained"];
const ON_CONFLICT: readonly OnConflict[] = ["keep", "replace"];

function object(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new ValidationError(`${what} must be an object`);
  return value as Record<string, unknown>;
}

function duration(value: unknown, what: string): number {
  return parseDuration(value as Duration, what);
}

/**
 * The rule of an enqueue's `unique` and `onConflict` (with `key`), or null for a key's plain
 * meaning (`retained`, `keep`: the store's fast path). `what` names the item in errors.
 */
export function uniqueRule(
  options: { key?: unknown; unique?: unknown; onConflict?: unknown },
  what: string,
): UniqueRule | null {
  const { unique, onConflict } = options;
  if (unique === undefined && onConflict === undefined) return null;
  if (options.key === undefined || options.key === null) {
    throw new ValidationError(
      `${what}: ${unique !== undefined ? "unique" : "onConflict"} needs a key (the key that makes two jobs the same)`,
    );
  }
  let scope: UniqueWhile = "retained";
  let forMs: number | null = null;
  if (unique !== undefined) {
    const u = object(unique, `${what}: unique`);
    onlyKnownFields(u, UNIQUE_FIELDS, `${what}: unique`);
    if (u.while !== undefined) {
      if (!WHILE.includes(u.while as UniqueWhile))
        throw new ValidationError(
          `${what}: unique.while must be "pending", "unfinished" or "retained"; got ${JSON.stringify(u.while) ?? String(u.while)}`,
        );
      scope = u.while as UniqueWhile;
    }
    if (u.for !== undefined) {
      forMs = duration(u.for, `${what}: unique.for`);
      if (forMs <= 0)
        throw new ValidationError(`${what}: unique.for must be longer than 0; got ${JSON.stringify(u.for)}`);
    }
  }
  if (onConflict !== undefined && !ON_CONFLICT.includes(onConflict as OnConflict)) {
    throw new ValidationError(
      `${what}: onConflict must be "keep" or "replace"; got ${JSON.stringify(onConflict) ?? String(onConflict)}`,
    );
  }
  const replace = onConflict === "replace";
  if (scope === "retained" && forMs === null && !replace) return null;
  return { while: scope, forMs, replace, debounce: null };
}

/** A debounce option checked (`keyFunction`: a definition's key may be a function of the payload). */
export function checkDebounce(value: unknown, what: string, keyFunction: boolean): DebounceDefinition {
  const d = object(value, what);
  onlyKnownFields(d, DEBOUNCE_FIELDS, what);
  let key: DebounceDefinition["key"];
  if (d.key === undefined || d.key === null) {
    throw new ValidationError(
      `${what} needs a key: the jobs to collapse into one${keyFunction ? " (a string, or a function of the payload)" : ""}`,
    );
  }
  if (typeof d.key === "function" && keyFunction) key = d.key as (payload: unknown) => unknown;
  else key = storableString(d.key, `${what}.key`);
  if (d.delay === undefined) throw new ValidationError(`${what} needs a delay (like "5s")`);
  const delayMs = duration(d.delay, `${what}.delay`);
  const maxWaitMs = d.maxWait === undefined ? null : duration(d.maxWait, `${what}.maxWait`);
  if (maxWaitMs !== null && maxWaitMs < delayMs) {
    throw new ValidationError(
      `${what}.maxWait (${JSON.stringify(d.maxWait)}) must be at least its delay (${JSON.stringify(d.delay)}): a job waits at most maxWait after the first enqueue`,
    );
  }
  return Object.freeze({ key, delayMs, maxWaitMs });
}

/** A debounce as the store's rule: one pending job per key, replaced by each enqueue. */
export function debounceRule(debounce: DebounceDefinition): UniqueRule {
  return {
    while: "pending",
    forMs: null,
    replace: true,
    debounce: { delayMs: debounce.delayMs, maxWaitMs: debounce.maxWaitMs },
  };
}

/** The debounce key of one payload: the string, or what the definition's key function returns for it. */
export function debounceKeyOf(
  debounce: DebounceDefinition,
  payload: unknown,
  what: string,
  job: string,
): string {
  if (typeof debounce.key === "string") return debounce.key;
  let key: unknown;
  try {
    key = debounce.key(payload);
  } catch (err) {
    throw new ValidationError(
      `${what}: the debounce key function of job "${job}" threw: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return storableString(key, `${what}: the debounce key of job "${job}" (from its key function)`);
}
