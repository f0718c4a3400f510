import { EventEmitter } from "node:events";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { type Duration, parseDuration } from "./duration.js";
import { ValidationError } from "./errors.js";
import {
  type AnyJobDefinition,
  checkInteger,
  type JobDefinition,
  type JobRecord,
  MAX_ATTEMPTS_RANGE,
  PRIORITY_RANGE,
} from "./job.js";
import { checkLogger, createLogger, type Logger } from "./logger.js";
import { checkPayload, DEFAULT_PAYLOAD_LIMIT } from "./payload.js";
import { type FireResult, type ScheduleOptions, Scheduler } from "./schedule/scheduler.js";
import { DEFAULT_URL, openStore } from "./store/open.js";
import type {
  InsertResult,
  JobFilter,
  JobPage,
  NewJob,
  QueueStats,
  RescuedJob,
  Store,
  TxHandle,
} from "./store/types.js";
import { type ProcessJobsOptions, type ProcessJobsResult, processJobs } from "./worker/drain.js";
import { type QueueOptions, Worker, type Deps as WorkerDeps, type WorkerOptions } from "./worker/worker.js";

export interface OpenErrandOptions {
  /** `./errand.db` (default, or ERRAND_URL), `sqlite:<path>`, `memory:`, `postgres://…`. */
  url?: string;
  /** Share the application's own better-sqlite3 Database (for transactional enqueue). */
  db?: unknown;
  /** A ready store (advanced: tests, custom backends). */
  store?: Store;
  /** Postgres schema for errand's tables (default "errand"). */
  schema?: string;
  /** The job definitions this process knows (needed to work; enqueue also accepts any definition). */
  jobs?: readonly AnyJobDefinition[];
  /** A pino logger, or options for the built-in one. */
  logger?: Logger;
  /** Log payloads in job log lines (off by default: payloads may hold personal data). */
  logPayloads?: boolean;
  /** Largest payload in bytes (JSON). Default 1 MiB. */
  payloadLimit?: number;
  /** Run migrations on open (default true). */
  migrate?: boolean;
  /** Refuse to create a Postgres schema that is not there (read-only tools). Default false. */
  mustExist?: boolean;
}

export interface EnqueueOptions {
  priority?: number;
  /** Run no earlier than this long from now. */
  delay?: Duration;
  /** Run no earlier than this instant (Date or ISO string). */
  runAt?: Date | string;
  maxAttempts?: number;
  /** Idempotency key: a job of this queue with the same key is returned instead of a new one. */
  key?: string;
  /** The caller's transaction: a node-postgres client inside BEGIN, or a better-sqlite3 Database. */
  tx?: TxHandle;
}

export interface EnqueueManyItem<P> extends Omit<EnqueueOptions, "tx"> {
  payload: P;
}

/** What `enqueue` returns: the job record, and whether it was created (false: an existing job's key matched). */
export type EnqueuedJob<P> = JobRecord<P> & { created: boolean };

export interface JobEvent {
  job: {
    id: string;
    queue: string;
    name: string;
    attempt: number;
    maxAttempts: number;
    priority: number;
    payload: unknown;
    key: string | null;
    /** When the job was due (store clock) and when it was enqueued. */
    runAt?: Date;
    createdAt?: Date;
  };
  result?: unknown;
  error?: Error;
  delayMs?: number;
  /** When this process's worker started the attempt, and how long the handler ran (ms). */
  startedAt?: Date;
  durationMs?: number;
}

export interface ErrandEvents {
  completed: [JobEvent];
  retrying: [JobEvent];
  failed: [JobEvent];
  snoozed: [JobEvent];
  cancelled: [JobEvent];
  released: [JobEvent];
  lost: [RescuedJob];
  /** The jobs an enqueue call created: the very records it returns (with `created: true`). */
  enqueued: [JobRecord[]];
}

type JobRef<P> = JobDefinition<P, unknown> | string;

/** The facade a user opens: enqueue, inspect, work. */
export class Errand extends EventEmitter<ErrandEvents> {
  readonly store: Store;
  readonly log: Logger;
  private readonly jobs = new Map<string, AnyJobDefinition>();
  private readonly workers = new Set<Worker>();
  private readonly ownsStore: boolean;
  private readonly payloadLimit: number;
  private readonly logPayloads: boolean;
  /** Extra periodic work for workers (the scheduler registers itself here). */
  readonly maintenance: Array<() => Promise<void>> = [];
  /** Cron schedules: defined here, synced to the store, fired by workers and ticks. */
  readonly scheduler: Scheduler = new Scheduler(this);
  private closed = false;

  constructor(store: Store, options: OpenErrandOptions & { ownsStore: boolean }) {
    super();
    this.store = store;
    this.ownsStore = options.ownsStore;
    this.log = checkLogger(options.logger) ?? createLogger();
    this.logPayloads = options.logPayloads ?? process.env.ERRAND_LOG_PAYLOADS === "1";
    this.payloadLimit = options.payloadLimit ?? DEFAULT_PAYLOAD_LIMIT;
    for (const job of options.jobs ?? []) this.register(job);
    this.maintenance.push(async () => {
      await this.scheduler.fire();
    });
  }

  /** Adds job definitions this process can run. A second definition with the same name is an error. */
  register(...defs: AnyJobDefinition[]): this {
    for (const def of defs) {
      if (!def || typeof def !== "object" || typeof def.name !== "string" || typeof def.run !== "function") {
        throw new TypeError("register() takes job definitions made by defineJob()");
      }
      const existing = this.jobs.get(def.name);
      if (existing && existing !== def) throw new ValidationError(`job "${def.name}" is defined twice`);
      this.jobs.set(def.name, def);
    }
    return this;
  }

  /** Names of the registered jobs. */
  get jobNames(): string[] {
    return [...this.jobs.keys()].sort();
  }

  /** Queues of the registered jobs. */
  get queueNames(): string[] {
    return [...new Set([...this.jobs.values()].map((j) => j.queue))].sort();
  }

  /** The definition of a job name, or a ValidationError listing the known names. */
  job(name: string): AnyJobDefinition {
    const def = this.jobs.get(name);
    if (!def) {
      throw new ValidationError(
        `unknown job "${name}"; known jobs: ${this.jobNames.join(", ") || "(none registered)"}`,
      );
    }
    return def;
  }

  private resolve<P>(ref: JobRef<P>): JobDefinition<P, unknown> {
    if (typeof ref === "string") return this.job(ref) as unknown as JobDefinition<P, unknown>;
    if (!ref || typeof ref !== "object" || !("schema" in ref)) {
      throw new TypeError("enqueue takes a job definition (from defineJob) or a registered job name");
    }
    if (!this.jobs.has(ref.name)) this.register(ref as unknown as AnyJobDefinition);
    return ref;
  }

  /** Validates one payload and its options into a row to insert. Synchronous when the schema is. */
  private prepare<P>(
    def: JobDefinition<P, unknown>,
    payload: P,
    options: Omit<EnqueueOptions, "tx">,
    what: string,
  ): NewJob | Promise<NewJob> {
    const row = this.prepareOptions(def, options, what);
    const { value, json } = checkPayload(payload, this.payloadLimit, what);
    row.payload = value;
    row.payloadJson = json;
    const checked = def.schema["~standard"].validate(value);
    if (checked instanceof Promise) return checked.then((result) => accept(def, row, result, what));
    return accept(def, row, checked, what);
  }

  private prepareOptions<P>(
    def: JobDefinition<P, unknown>,
    options: Omit<EnqueueOptions, "tx">,
    what: string,
  ): NewJob {
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
    };
    if (options.key !== undefined && options.key !== null) {
      if (typeof options.key !== "string" || options.key.length === 0 || options.key.length > 512) {
        throw new ValidationError(`${what}: key must be a non-empty string of at most 512 characters`);
      }
      row.key = options.key;
    }
    if (options.delay !== undefined)
      row.delayMs = checkOption(() => parseDuration(options.delay as Duration, "delay"), what);
    if (options.runAt !== undefined) row.runAt = parseInstant(options.runAt, what);
    return row;
  }

  /**
   * Stores one job. With `key`, an existing job of the queue with that key is returned instead
   * (created: false). With `tx`, the insert joins the caller's transaction. With a synchronous
   * schema (zod, valibot, …) the insert is issued before this function first yields, so it also
   * works inside better-sqlite3's synchronous `db.transaction(() => …)`.
   */
  enqueue<P>(job: JobRef<P>, payload: P, options: EnqueueOptions = {}): Promise<EnqueuedJob<P>> {
    try {
      this.assertOpen();
      const def = this.resolve(job);
      const row = this.prepare(def, payload, options, "payload");
      const insert = (r: NewJob) =>
        this.store.insertJobs([r], options.tx).then((results) => this.afterInsert<P>(results)[0]);
      return row instanceof Promise ? row.then(insert) : insert(row);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Stores many jobs of one type in one transaction. Any invalid item rejects the whole call; nothing is stored. */
  async enqueueMany<P>(
    job: JobRef<P>,
    items: readonly EnqueueManyItem<P>[],
    options: { tx?: TxHandle } = {},
  ): Promise<EnqueuedJob<P>[]> {
    this.assertOpen();
    if (!Array.isArray(items)) throw new TypeError("enqueueMany takes an array of { payload, ...options }");
    const def = this.resolve(job);
    const prepared: Array<NewJob | Promise<NewJob>> = new Array(items.length);
    let pending = false;
    try {
      for (let i = 0; i < items.length; i++) {
        const item = items[i];
        if (!item || typeof item !== "object" || !("payload" in item)) {
          throw new ValidationError(`item ${i}: expected { payload, ...options }`);
        }
        // The item is its own options: prepareOptions reads the option fields only.
        const row = this.prepare(def, item.payload, item, `item ${i} payload`);
        if (row instanceof Promise) pending = true;
        prepared[i] = row;
      }
    } catch (err) {
      // Items already handed to an async schema: their outcome no longer matters.
      if (pending) for (const row of prepared) if (row instanceof Promise) row.catch(() => {});
      throw err;
    }
    const rows = pending ? await Promise.all(prepared) : (prepared as NewJob[]);
    if (rows.length === 0) return [];
    return this.afterInsert<P>(await this.store.insertJobs(rows, options.tx));
  }

  /**
   * The store's records, each with `created` added (the store hands them over: no copy), and
   * the "enqueued" event with the new ones.
   */
  private afterInsert<P>(results: InsertResult[]): EnqueuedJob<P>[] {
    const jobs = new Array<EnqueuedJob<P>>(results.length);
    let fresh = 0;
    for (let i = 0; i < results.length; i++) {
      const job = results[i].job as EnqueuedJob<P>;
      job.created = results[i].created;
      if (job.created) fresh++;
      jobs[i] = job;
    }
    if (fresh > 0 && this.listenerCount("enqueued") > 0) {
      this.emit("enqueued", fresh === jobs.length ? jobs.slice() : jobs.filter((j) => j.created));
    }
    return jobs;
  }

  getJob(id: string): Promise<JobRecord | null> {
    return this.store.getJob(String(id));
  }

  listJobs(filter: JobFilter = {}): Promise<JobPage> {
    if (filter.limit !== undefined) checkInteger(filter.limit, "limit", { min: 1, max: 1000 });
    return this.store.listJobs(filter);
  }

  stats(): Promise<QueueStats[]> {
    return this.store.stats();
  }

  /** Cancels a pending job at once; a running one is told at its next heartbeat. */
  cancel(id: string): Promise<JobRecord | null> {
    return this.store.cancelJob(String(id));
  }

  /** Retries a job from the dead-letter queue (failed or cancelled) with a fresh attempt budget. */
  async retry(id: string): Promise<JobRecord | null> {
    const count = await this.store.retryJobs({ ids: [String(id)] });
    return count > 0 ? this.store.getJob(String(id)) : null;
  }

  /** Retries every failed job (of one queue, or all). Returns how many. */
  retryFailed(filter: { queue?: string } = {}): Promise<number> {
    return this.store.retryJobs(filter);
  }

  /** Deletes a failed job from the dead-letter queue. */
  async discard(id: string): Promise<boolean> {
    return (await this.store.discardJobs({ ids: [String(id)] })) > 0;
  }

  /** Deletes every failed job (of one queue, or all). Returns how many. */
  discardFailed(filter: { queue?: string } = {}): Promise<number> {
    return this.store.discardJobs(filter);
  }

  /**
   * Starts a worker for some queues, each with its own concurrency. With no queues given, it
   * serves every queue of the registered jobs at concurrency 10.
   */
  work(queues?: Record<string, QueueOptions> | string[], options: WorkerOptions = {}): Worker {
    this.assertOpen();
    const known = this.queueNames;
    const spec: Record<string, QueueOptions> = Array.isArray(queues)
      ? Object.fromEntries(queues.map((q) => [q, {}]))
      : (queues ?? Object.fromEntries(known.map((q) => [q, {}])));
    for (const queue of Object.keys(spec)) {
      if (!known.includes(queue)) {
        throw new ValidationError(
          `unknown queue "${queue}": no registered job uses it; known queues: ${known.join(", ") || "(no jobs registered)"}`,
        );
      }
    }
    const worker = new Worker(this.workerDeps(), spec, options);
    this.workers.add(worker);
    worker.start();
    return worker;
  }

  private workerDeps(): WorkerDeps {
    return {
      store: this.store,
      log: this.log,
      events: this,
      logPayloads: this.logPayloads,
      payloadLimit: this.payloadLimit,
      findJob: (name) => this.jobs.get(name),
      knownJobNames: () => this.jobNames,
      maintenance: this.maintenance.length > 0 ? () => this.runMaintenance() : undefined,
    };
  }

  /**
   * Claims and runs at most `limit` due jobs (default 100) of the given queues (default: all
   * registered), claiming nothing after `timeBudget` (default 10s); finishes or releases all it
   * claimed, then answers a summary. For hosts that scale to zero (see the HTTP tick).
   */
  processJobs(options: ProcessJobsOptions = {}): Promise<ProcessJobsResult> {
    try {
      this.assertOpen();
      return processJobs(this.workerDeps(), this.queueNames, options);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Defines a recurring schedule: every slot of `cron` (in `timezone`, default UTC) enqueues
   * `job` with `payload` and the key `cron:<name>:<slot ISO>`, so a slot fires once however many
   * workers and ticks run. Checked now (bad cron or zone: ValidationError); synced to the store
   * when a worker starts or a tick fires, or on `syncSchedules()`.
   */
  schedule<P>(name: string, cron: string, job: JobRef<P>, payload: P, options: ScheduleOptions = {}): this {
    this.assertOpen();
    this.scheduler.define(name, cron, job as unknown as AnyJobDefinition | string, payload, options);
    return this;
  }

  /** Writes the schedules defined in code to the store now (the set in code is the truth; CLI-added ones stay). */
  syncSchedules(): Promise<void> {
    return this.scheduler.sync();
  }

  /** Fires every due schedule now (what workers do every second and what a tick does first). */
  fireSchedules(): Promise<FireResult> {
    return this.scheduler.fire();
  }

  private async runMaintenance(): Promise<void> {
    for (const task of this.maintenance) await task();
  }

  private assertOpen(): void {
    if (this.closed) throw new ValidationError("this errand instance is closed");
  }

  /** Stops every worker gracefully, then closes the store if errand opened it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.workers].map((w) => w.stop()));
    if (this.ownsStore) await this.store.close();
  }
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

function parseInstant(value: Date | string, what: string): Date {
  const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
  const date =
    value instanceof Date ? value : typeof value === "string" && ISO.test(value) ? new Date(value) : null;
  if (!date || Number.isNaN(date.getTime())) {
    throw new ValidationError(
      `${what}: runAt must be a Date or an ISO 8601 time like 2026-01-31T09:00:00Z; got ${JSON.stringify(value)}`,
    );
  }
  return date;
}

/** Opens errand on a store URL (default ERRAND_URL or ./errand.db), migrating it. */
export async function openErrand(options: OpenErrandOptions = {}): Promise<Errand> {
  const ownsStore = !options.store;
  const logger = checkLogger(options.logger) ?? createLogger();
  const store =
    options.store ??
    (await openStore(options.url ?? process.env.ERRAND_URL ?? DEFAULT_URL, {
      schema: options.schema,
      db: options.db,
      logger,
    }));
  try {
    if (options.migrate !== false) await store.migrate({ mustExist: options.mustExist });
  } catch (err) {
    if (ownsStore) await store.close().catch(() => {});
    throw err;
  }
  const errand = new Errand(store, { ...options, logger, ownsStore });
  return errand;
}
