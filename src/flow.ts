/**
 * Flow control as a job definition declares it (docs/semantics.md, Flow control): the limits of
 * its queue, checked at definition time; the flow key computed from a payload at enqueue; and
 * the limits a worker claims a queue with, gathered from the queue's definitions. The store
 * enforces them at claim time for every worker (store/flow-plan.ts).
 */
import { type Duration, parseDuration } from "./duration.js";
import { ValidationError } from "./errors.js";
import type { FlowLimits } from "./flow-limits.js";
import { knownFields, onlyKnownFields } from "./known-fields.js";
import { storableString } from "./payload.js";

/** A flow key function: the budget a payload belongs to (a tenant, an account, an API token). */
export type FlowKeyFn<P> = (payload: P) => string;

/** The flow control options of defineJob. */
export interface FlowOptions<P> {
  /** At most this many jobs of the queue run at once, across every worker on every host. */
  globalConcurrency?: number;
  /** At most `limit` jobs of one key run at once, across every worker; `limit: 1` runs each key's jobs one at a time. */
  concurrency?: { key: FlowKeyFn<P>; limit: number };
  /** At most `limit` jobs start per `per`, across every worker: per key with `key`, else for the whole queue. */
  rateLimit?: { limit: number; per: Duration; key?: FlowKeyFn<P> };
}

/** A definition's flow control, checked: its key function (or null) and its queue's limits. */
export interface FlowDefinition {
  readonly key: ((payload: unknown) => unknown) | null;
  readonly limits: Readonly<FlowLimits>;
}

const CONCURRENCY_FIELDS = knownFields("key", "limit");
const RATE_LIMIT_FIELDS = knownFields("limit", "per", "key");

/** Largest limit accepted: past it a limit limits nothing a store could hold. */
const MAX_LIMIT = 1_000_000;
/** Longest rate window: a day (the claim log keeps one window of claims). */
const MAX_PERIOD_MS = 86_400_000;

function positiveInteger(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > MAX_LIMIT) {
    throw new ValidationError(
      `${what} must be a positive integer (1 to ${MAX_LIMIT}); got ${typeof value === "number" ? String(value) : (JSON.stringify(value) ?? String(value))}`,
    );
  }
  return value;
}

function keyFunction(value: unknown, what: string): ((payload: unknown) => unknown) | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "function")
    throw new ValidationError(`${what} must be a function of the payload returning a string`);
  return value as (payload: unknown) => unknown;
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new ValidationError(`${what} must be an object`);
  return value as Record<string, unknown>;
}

/** The flow control of a definition, or null when it declares none; a ValidationError names a bad option. */
export function checkFlowOptions(input: FlowOptions<never>, job: string): FlowDefinition | null {
  const { globalConcurrency, concurrency, rateLimit } = input as FlowOptions<unknown>;
  if (globalConcurrency === undefined && concurrency === undefined && rateLimit === undefined) return null;
  const limits: FlowLimits = {};
  let key: ((payload: unknown) => unknown) | undefined;
  if (globalConcurrency !== undefined)
    limits.globalConcurrency = positiveInteger(globalConcurrency, `job "${job}" globalConcurrency`);
  if (concurrency !== undefined) {
    const c = object(concurrency, `job "${job}" concurrency`);
    onlyKnownFields(c, CONCURRENCY_FIELDS, `job "${job}" concurrency`);
    key = keyFunction(c.key, `job "${job}" concurrency.key`);
    if (!key)
      throw new ValidationError(
        `job "${job}" concurrency needs a key function ({ key: (payload) => payload.tenantId, limit }); for the whole queue use globalConcurrency`,
      );
    limits.keyConcurrency = positiveInteger(c.limit, `job "${job}" concurrency.limit`);
  }
  if (rateLimit !== undefined) {
    const r = object(rateLimit, `job "${job}" rateLimit`);
    onlyKnownFields(r, RATE_LIMIT_FIELDS, `job "${job}" rateLimit`);
    const limit = positiveInteger(r.limit, `job "${job}" rateLimit.limit`);
    const perMs = parseDuration(r.per as Duration, `job "${job}" rateLimit.per`);
    if (!(perMs >= 1 && perMs <= MAX_PERIOD_MS))
      throw new ValidationError(
        `job "${job}" rateLimit.per must be from 1ms to 1d; got ${JSON.stringify(r.per)}`,
      );
    const rateKey = keyFunction(r.key, `job "${job}" rateLimit.key`);
    if (rateKey && key && rateKey !== key)
      throw new ValidationError(
        `job "${job}": concurrency.key and rateLimit.key must be the same function (a job has one flow key)`,
      );
    if (rateKey) {
      key = rateKey;
      limits.keyRate = { limit, perMs };
    } else limits.rate = { limit, perMs };
  }
  return Object.freeze({ key: key ?? null, limits: Object.freeze(limits) });
}

/** The flow key of one payload, or a ValidationError naming the job when the key function fails. */
export function flowKeyOf(
  flow: FlowDefinition | null,
  payload: unknown,
  what: string,
  job: string,
): string | null {
  if (!flow?.key) return null;
  let key: unknown;
  try {
    key = flow.key(payload);
  } catch (err) {
    throw new ValidationError(
      `${what}: the flow key function of job "${job}" threw: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return storableString(key, `${what}: the flow key of job "${job}" (from its key function)`);
}

const FIELDS: (keyof FlowLimits)[] = ["globalConcurrency", "keyConcurrency", "rate", "keyRate"];

/**
 * The limits a queue is claimed with: every limit any of its definitions declares. Limits belong
 * to the queue, so definitions that declare the same one must agree (else a ValidationError);
 * null when none declares any (the queue keeps the plain claim).
 */
export function queueFlowLimits(
  queue: string,
  defs: readonly { name: string; queue: string; flow: FlowDefinition | null }[],
): FlowLimits | null {
  const limits: FlowLimits = {};
  const from: Partial<Record<keyof FlowLimits, string>> = {};
  let any = false;
  for (const def of defs) {
    if (def.queue !== queue || !def.flow) continue;
    any = true;
    for (const field of FIELDS) {
      const value = def.flow.limits[field];
      if (value === undefined) continue;
      const have = limits[field];
      if (have !== undefined && JSON.stringify(have) !== JSON.stringify(value)) {
        throw new ValidationError(
          `queue "${queue}": jobs "${from[field]}" and "${def.name}" declare different ${describe(field)} (${JSON.stringify(have)} and ${JSON.stringify(value)}); flow limits belong to the queue, so they must agree`,
        );
      }
      (limits as Record<string, unknown>)[field] = value;
      from[field] = def.name;
    }
  }
  return any ? limits : null;
}

function describe(field: keyof FlowLimits): string {
  return {
    globalConcurrency: "globalConcurrency",
    keyConcurrency: "concurrency limits per key",
    rate: "queue-wide rate limits",
    keyRate: "rate limits per key",
  }[field];
}
