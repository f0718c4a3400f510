/**
 * The facade a user opens: the registered job definitions, reading and acting on jobs, workers,
 * schedules and close. The enqueue family, typed results and operator actions are the layers it
 * inherits (errand-enqueue.ts, errand-results.ts, errand-operations.ts).
 */
import { type Duration, parseTimerDuration } from "./duration.js";
import { type JobOptions, prepareJob } from "./enqueue.js";
import { ErrandEnqueue } from "./errand-enqueue.js";
import type { JobRef, OpenErrandOptions } from "./errand-types.js";
import { ValidationError } from "./errors.js";
import { flowKeyOf, queueFlowLimits } from "./flow.js";
import { type AnyJobDefinition, checkInteger, checkName, type JobDefinition, type JobRecord } from "./job.js";
import { knownFields, onlyKnownFields } from "./known-fields.js";
import { checkLogger, createLogger, type Logger } from "./logger.js";
import { DEFAULT_PAYLOAD_LIMIT, quoted } from "./payload.js";
import { DEFAULT_RECHECK_MS } from "./result-waiters.js";
import { type FireResult, type ScheduleOptions, Scheduler } from "./schedule/scheduler.js";
import type { FlowLimits, JobFilter, JobPage, NewJob, QueueStats, Store } from "./store/types.js";
import { type ProcessJobsOptions, type ProcessJobsResult, processJobs } from "./worker/drain.js";
import { type QueueOptions, Worker, type Deps as WorkerDeps, type WorkerOptions } from "./worker/worker.js";

export type {
  EnqueuedJob,
  EnqueueManyItem,
  EnqueueOptions,
  ErrandEvents,
  FlowPause,
  FlowThrottle,
  JobEvent,
  OpenErrandOptions,
} from "./errand-types.js";

const LIST_FIELDS = knownFields("queue", "state", "name", "search", "limit", "cursor");
const QUEUE_ONLY = knownFields("queue");
const CLOSE_FIELDS = knownFields("timeout");

/**
 * The facade a user opens: enqueue, inspect, work. The enqueue family is inherited from
 * ErrandEnqueue; the operator actions (pause, schedules, workers, bulk retry: what the CLI and
 * HTTP layers call) from ErrandOperations.
 */
export class Errand extends ErrandEnqueue {
  readonly store: Store;
  readonly log: Logger;
  private readonly jobs = new Map<string, AnyJobDefinition>();
  private readonly workers = new Set<Worker>();
  /** processJobs runs in flight (their workers are in `workers` while they run). */
  private readonly runs = new Set<Promise<ProcessJobsResult>>();
  private readonly ownsStore: boolean;
  private readonly payloadLimit: number;
  private readonly logPayloads: boolean;
  protected readonly waitRecheckMs: number;
  /** Extra periodic work for workers (the scheduler registers itself here). */
  readonly maintenance: Array<() => Promise<void>> = [];
  /** Cron schedules: defined here, synced to the store, fired by workers and ticks. */
  readonly scheduler: Scheduler = new Scheduler(this);
  private closed = false;
  private closing: Promise<void> | null = null;
  /** Draws backoff jitter for this errand's workers when set (errand/testing: seeded). */
  private readonly random: (() => number) | undefined;
  /** The definitions as workers see them when `random` is set (workerJob). */
  private readonly drawingFromRandom = new Map<AnyJobDefinition, AnyJobDefinition>();

  constructor(
    store: Store,
    options: OpenErrandOptions & {
      ownsStore: boolean;
      /** Internal (errand/testing): the jitter source of every job's backoff, instead of Math.random. */
      random?: () => number;
    },
  ) {
    super();
    this.store = store;
    this.ownsStore = options.ownsStore;
    this.random = options.random;
    this.log = checkLogger(options.logger) ?? createLogger();
    this.logPayloads = options.logPayloads ?? process.env.ERRAND_LOG_PAYLOADS === "1";
    this.payloadLimit = options.payloadLimit ?? DEFAULT_PAYLOAD_LIMIT;
    this.waitRecheckMs = parseTimerDuration(options.waitRecheck ?? DEFAULT_RECHECK_MS, "waitRecheck");
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
      // A definition not made by defineJob (spread, or written by hand) is checked as defineJob
      // would: its name and queue are stored with every job.
      checkName(def.name, "job name");
      checkName(def.queue, `queue of job "${def.name}"`);
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

  protected flowOf(job: JobRecord): { key: string; limits: FlowLimits } | null {
    const def = this.jobs.get(job.name);
    if (!def?.flow) return null;
    const limits = queueFlowLimits(job.queue, [...this.jobs.values()]);
    if (!limits) return null;
    let key: string | null = null;
    try {
      key = flowKeyOf(def.flow, job.payload, "payload", job.name);
    } catch {
      // The definition changed since the job was stored: its queue's limits still say something.
    }
    return { key: key ?? "", limits };
  }

  /** The definition of a job name, or a ValidationError listing the known names. */
  job(name: string): AnyJobDefinition {
    const def = this.jobs.get(name);
    if (!def) {
      throw new ValidationError(
        `unknown job ${typeof name === "string" ? quoted(name) : String(name)}; known jobs: ${this.jobNames.join(", ") || "(none registered)"}`,
      );
    }
    return def;
  }

  protected resolve<P>(ref: JobRef<P, unknown>): JobDefinition<P, unknown> {
    if (typeof ref === "string") return this.job(ref) as unknown as JobDefinition<P, unknown>;
    if (!ref || typeof ref !== "object" || !("schema" in ref)) {
      throw new TypeError("enqueue takes a job definition (from defineJob) or a registered job name");
    }
    if (!this.jobs.has(ref.name)) this.register(ref as unknown as AnyJobDefinition);
    return ref;
  }

  protected prepare<P>(
    def: JobDefinition<P, unknown>,
    payload: P,
    options: JobOptions,
    what: string,
  ): NewJob | Promise<NewJob> {
    return prepareJob(def, payload, options, what, this.payloadLimit);
  }

  /**
   * A job by id, or null. Given its definition first, the record is typed by it (payload and
   * result); a job of another definition is a ValidationError.
   */
  getJob(id: string): Promise<JobRecord | null>;
  getJob<P, R>(job: JobDefinition<P, R>, id: string): Promise<JobRecord<P, R> | null>;
  async getJob<P, R>(
    jobOrId: JobDefinition<P, R> | string,
    maybeId?: string,
  ): Promise<JobRecord | JobRecord<P, R> | null> {
    if (typeof jobOrId !== "object" || jobOrId === null) return this.store.getJob(String(jobOrId));
    const record = await this.store.getJob(String(maybeId));
    if (record && record.name !== jobOrId.name)
      throw new ValidationError(`job ${record.id} is a "${record.name}" job, not "${jobOrId.name}"`);
    return record as JobRecord<P, R> | null;
  }

  listJobs(filter: JobFilter = {}): Promise<JobPage> {
    onlyKnownFields(filter, LIST_FIELDS, "listJobs filter");
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
  async retryFailed(filter: { queue?: string } = {}): Promise<number> {
    // `{ queu: "emails" }` would retry the failed jobs of every queue.
    onlyKnownFields(filter, QUEUE_ONLY, "retryFailed filter");
    return this.store.retryJobs(filter);
  }

  /** Deletes a failed job from the dead-letter queue. */
  async discard(id: string): Promise<boolean> {
    return (await this.store.discardJobs({ ids: [String(id)] })) > 0;
  }

  /** Deletes every failed job (of one queue, or all). Returns how many. */
  async discardFailed(filter: { queue?: string } = {}): Promise<number> {
    onlyKnownFields(filter, QUEUE_ONLY, "discardFailed filter");
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
      findJob: (name) => this.workerJob(name),
      knownJobNames: () => this.jobNames,
      flowLimits: (queue) => queueFlowLimits(queue, [...this.jobs.values()]),
      maintenance: this.maintenance.length > 0 ? () => this.runMaintenance() : undefined,
    };
  }

  /**
   * A registered definition as workers run it. With `random` set, a copy whose backoff draws its
   * jitter from it: definitions are made (and their backoff compiled with Math.random) by the
   * application before any test errand exists.
   */
  private workerJob(name: string): AnyJobDefinition | undefined {
    const def = this.jobs.get(name);
    const random = this.random;
    if (!def || !random) return def;
    let drawing = this.drawingFromRandom.get(def);
    if (!drawing) {
      drawing = Object.freeze({ ...def, backoff: (attempt: number) => def.backoff(attempt, random) });
      this.drawingFromRandom.set(def, drawing);
    }
    return drawing;
  }

  /**
   * Claims and runs at most `limit` due jobs (default 100) of the given queues (default: all
   * registered), claiming nothing after `timeBudget` (default 10s); finishes or releases all it
   * claimed, then answers a summary. For hosts that scale to zero (see the HTTP tick).
   */
  processJobs(options: ProcessJobsOptions = {}): Promise<ProcessJobsResult> {
    try {
      this.assertOpen();
    } catch (err) {
      return Promise.reject(err);
    }
    // close() stops the run's worker like any other and waits for the run to finish its
    // accounting: closing the store under it left its jobs `running`, later charged as lost.
    const run = processJobs(this.workerDeps(), this.queueNames, options, (worker) => {
      this.workers.add(worker);
      return () => this.workers.delete(worker);
    });
    this.runs.add(run);
    const forget = () => this.runs.delete(run);
    run.then(forget, forget);
    return run;
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

  protected assertOpen(): void {
    if (this.closed) throw new ValidationError("this errand instance is closed");
  }

  /**
   * Stops every worker gracefully — and every processJobs run (a tick) in flight: nothing more is
   * claimed, running jobs get `timeout` (default: each worker's shutdownTimeout) to finish, then
   * are released uncharged — waits for the runs to end, then closes the store if errand opened it.
   */
  async close(options: { timeout?: Duration } = {}): Promise<void> {
    onlyKnownFields(options, CLOSE_FIELDS, "close options");
    const timeoutMs = options.timeout === undefined ? null : parseTimerDuration(options.timeout, "timeout");
    // A second call waits for the first (errand serve's stop and its caller both close).
    if (this.closing) return this.closing;
    this.closed = true;
    this.closing = this.shutDown(timeoutMs);
    return this.closing;
  }

  private async shutDown(timeoutMs: number | null): Promise<void> {
    await Promise.all(
      [...this.workers].map((w) => (timeoutMs === null ? w.stop() : w.stopWithin(timeoutMs))),
    );
    await Promise.allSettled([...this.runs]);
    await this.closeWaiters();
    if (this.ownsStore) await this.store.close();
  }
}
