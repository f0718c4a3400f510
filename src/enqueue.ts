/**
 * Enqueue preparation: one payload and its options checked into the row a store inserts, before
 * anything is stored. Synchronous when the job's schema is; inside a better-sqlite3 transaction
 * it must be (`prepareNow`).
 */
import type { StandardSchemaV1 } from "@standard-schema/spec";
import {
  checkDependsOn,
  checkPolicy,
  type DependencyFailurePolicy,
  type DependencyRef,
} from "./dependencies.js";
import { type Duration, parseDuration } from "./duration.js";
import type { EnqueueManyItem } from "./errand-types.js";
import { ValidationError } from "./errors.js";
import { flowKeyOf } from "./flow.js";
import { checkDelay, checkRunAt } from "./instant.js";
import { checkInteger, type JobDefinition, MAX_ATTEMPTS_RANGE, PRIORITY_RANGE } from "./job.js";
import { knownFields, onlyKnownFields } from "./known-fields.js";
import { checkPayload, storableString } from "./payload.js";
import type { NewJob } from "./store/types.js";
import {
  checkDebounce,
  type DebounceDefinition,
  type DebounceOptions,
  debounceKeyOf,
  debounceRule,
  type OnConflict,
  type UniqueOptions,
  uniqueRule,
} from "./unique.js";

/** The options of one job (EnqueueOptions without `tx`). */
export interface JobOptions {
  priority?: number;
  delay?: Duration;
  runAt?: Date | string;
  maxAttempts?: number;
  key?: string;
  unique?: UniqueOptions;
  onConflict?: OnConflict;
  debounce?: DebounceOptions;
  dependsOn?: readonly DependencyRef[];
  onDependencyFailure?: DependencyFailurePolicy;
}

/** The fields of JobOptions, as the known fields of enqueue's options and of an enqueueMany item. */
export const JOB_OPTION_FIELDS: readonly string[] = [
  "priority",
  "delay",
  "runAt",
  "maxAttempts",
  "key",
  "unique",
  "onConflict",
  "debounce",
  "dependsOn",
  "onDependencyFailure",
];
const ENQUEUE_FIELDS = knownFields(...JOB_OPTION_FIELDS, "tx");
const ITEM_FIELDS = knownFields("payload", ...JOB_OPTION_FIELDS);
const TX_ONLY = knownFields("tx");

/** enqueue's options: a field it does not know is a ValidationError (known-fields.ts). */
export function checkEnqueueOptions(options: object): void {
  onlyKnownFields(options, ENQUEUE_FIELDS, "enqueue options");
}

/**
 * The options of a call that takes only `tx` (enqueueMany's and enqueueFlow's last argument):
 * the options of a job given there would apply to none, so they are refused with where they go.
 */
export function checkTxOnly(options: object, call: string, jobOptionsGo: string): void {
  onlyKnownFields(options, TX_ONLY, `${call} options`, `The options of a job go ${jobOptionsGo}`);
}

/**
 * Validates one payload and its options into a row to insert; `what` names the item in errors
 * ("payload", "item 3 payload"). A promise only when the schema answers with one.
 */
export function prepareJob<P>(
  def: JobDefinition<P, unknown>,
  payload: P,
  options: JobOptions,
  what: string,
  payloadLimit: number,
): NewJob | Promise<NewJob> {
  const row = prepareOptions(def, options, what);
  const { value, json } = checkPayload(payload, payloadLimit, what);
  row.payload = value;
  row.payloadJson = json;
  const checked = def.schema["~standard"].validate(value);
  if (checked instanceof Promise)
    return checked.then((result) => withFlowKey(def, accept(def, row, result, what), what));
  return withFlowKey(def, accept(def, row, checked, what), what);
}

/**
 * The row, which must be ready now: inside better-sqlite3's `db.transaction(() => …)` an
 * asynchronous schema would answer after the transaction ended — committed without the job, or
 * rolled back with the job inserted afterwards — so it is refused.
 */
export function prepareNow(jobName: string, row: NewJob | Promise<NewJob>): NewJob {
  if (!(row instanceof Promise)) return row;
  row.catch(() => {}); // its outcome no longer matters
  throw new ValidationError(
    `job "${jobName}" has an asynchronous schema, but enqueue inside a better-sqlite3 transaction must be synchronous (the transaction cannot wait for it): use a synchronous schema, or validate the payload before the transaction`,
  );
}

function prepareOptions<P>(def: JobDefinition<P, unknown>, options: JobOptions, what: string): NewJob {
  if (options.delay !== undefined && options.runAt !== undefined) {
    throw new ValidationError(`${what}: give either delay or runAt, not both`);
  }
  // One shape for every row (the stores' loops over them stay monomorphic).
  const row: NewJob = {
    queue: def.queue,
    name: def.name,
    payload: null,
    payloadJson: undefined,
    priority: integerOption(options.priority ?? def.priority, "priority", PRIORITY_RANGE, what),
    maxAttempts: integerOption(
      options.maxAttempts ?? def.maxAttempts,
      "maxAttempts",
      MAX_ATTEMPTS_RANGE,
      what,
    ),
    runAt: undefined,
    delayMs: undefined,
    key: null,
    dependencies: undefined,
    node: undefined,
  };
  if (options.key !== undefined && options.key !== null)
    row.key = storableString(options.key, `${what}: key`);
  // The plain enqueue reads two absent fields here and goes on: no cost for what it does not use.
  if (options.unique !== undefined || options.onConflict !== undefined)
    row.unique = uniqueRule(options, what);
  if (options.debounce !== undefined || def.debounce) applyDebounce(def, options, row, what);
  if (options.dependsOn !== undefined) {
    const ids = checkDependsOn(options.dependsOn, what);
    const onFailure = checkPolicy(options.onDependencyFailure, what);
    if (ids.length > 0) row.dependencies = { ids, rows: [], onFailure };
  } else if (options.onDependencyFailure !== undefined) checkPolicy(options.onDependencyFailure, what);
  if (row.dependencies !== undefined) refuseReplaceWithDependencies(def, options, what);
  const { delay, runAt } = options;
  if (delay !== undefined)
    row.delayMs = checkOption(() => checkDelay(parseDuration(delay, "delay"), delay), what);
  if (runAt !== undefined) row.runAt = checkOption(() => checkRunAt(runAt), what);
  return row;
}

/**
 * A replace gives a pending duplicate this enqueue's payload and run time, but not dependencies:
 * the duplicate keeps the ones it was stored with (or none) and would run without waiting for
 * these, so the two are refused together.
 */
function refuseReplaceWithDependencies<P>(
  def: JobDefinition<P, unknown>,
  options: JobOptions,
  what: string,
): void {
  const replace =
    options.onConflict === "replace"
      ? 'onConflict "replace"'
      : options.debounce !== undefined || def.debounce
        ? "debounce"
        : null;
  if (replace === null) return;
  throw new ValidationError(
    `${what}: dependsOn cannot be given with ${replace}: a pending job it replaces keeps the dependencies it was stored with and would run without waiting for these`,
  );
}

/** The row with its payload checked against the job's schema, or the ValidationError listing the issues. */
function accept<P>(
  def: JobDefinition<P, unknown>,
  row: NewJob,
  result: StandardSchemaV1.Result<P>,
  what: string,
): NewJob {
  if (result.issues) {
    const detail = result.issues
      .map(
        (i) =>
          `${i.path?.length ? `${i.path.map((p) => (typeof p === "object" ? p.key : p)).join(".")}: ` : ""}${i.message}`,
      )
      .join("; ");
    throw new ValidationError(
      `${what} does not match the schema of job "${def.name}": ${detail}`,
      result.issues,
    );
  }
  return row;
}

/**
 * The row with its flow key, computed from the (valid) payload by the definition's key function,
 * and its debounce key when the definition's debounce key is a function.
 */
function withFlowKey<P>(def: JobDefinition<P, unknown>, row: NewJob, what: string): NewJob {
  // A definition made by hand (not defineJob) may lack `flow`.
  if (def.flow) row.flowKey = flowKeyOf(def.flow, row.payload, what, def.name);
  if (row.key === DEBOUNCE_KEY_PENDING)
    row.key = debounceKeyOf(def.debounce as DebounceDefinition, row.payload, what, def.name);
  return row;
}

/**
 * Stands for a debounce key that a function computes from the payload, once it is validated. No
 * key given can equal it: keys hold no NUL character (payload.ts storableString).
 */
const DEBOUNCE_KEY_PENDING = "\u0000debounce";

/**
 * A debounce — the enqueue's own, or else its definition's — into the row: its key, its first
 * run time (now + delay) and its rule (one pending job per key, replaced by each enqueue). The
 * debounce decides the key and the run time, so an enqueue that also gives one is refused.
 */
function applyDebounce<P>(
  def: JobDefinition<P, unknown>,
  options: JobOptions,
  row: NewJob,
  what: string,
): void {
  const own = options.debounce !== undefined;
  const debounce = own
    ? checkDebounce(options.debounce, `${what}: debounce`, false)
    : (def.debounce as DebounceDefinition);
  const source = own ? "debounce" : `the debounce of job "${def.name}"`;
  for (const option of ["key", "unique", "onConflict", "delay", "runAt"] as const) {
    if (options[option] !== undefined)
      throw new ValidationError(
        `${what}: ${option} cannot be given with ${source}, which decides the job's key and run time`,
      );
  }
  row.key =
    typeof debounce.key === "string"
      ? storableString(debounce.key, `${what}: debounce.key`)
      : DEBOUNCE_KEY_PENDING;
  row.delayMs = debounce.delayMs;
  row.unique = debounceRule(debounce);
}

/** An integer option within its range, or a ValidationError naming the item. */
function integerOption(
  value: unknown,
  name: string,
  range: { min: number; max: number },
  what: string,
): number {
  try {
    return checkInteger(value, name, range);
  } catch (err) {
    throw new ValidationError(`${what}: ${(err as Error).message}`);
  }
}

function checkOption<T>(fn: () => T, what: string): T {
  try {
    return fn();
  } catch (err) {
    throw new ValidationError(`${what}: ${(err as Error).message}`);
  }
}

/** The items of enqueueMany, each `{ payload, ...options }`, or an error naming the first that is not. */
export function checkItems<P>(items: readonly EnqueueManyItem<P>[]): readonly EnqueueManyItem<P>[] {
  if (!Array.isArray(items)) throw new TypeError("enqueueMany takes an array of { payload, ...options }");
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (!item || typeof item !== "object" || !("payload" in item)) {
      throw new ValidationError(`item ${i}: expected { payload, ...options }`);
    }
    onlyKnownFields(item, ITEM_FIELDS, `item ${i}`);
  }
  return items;
}
