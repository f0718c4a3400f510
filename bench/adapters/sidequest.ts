/**
 * Sidequest 1.16 on Postgres (@sidequest/postgres-backend), in its own schema per run.
 * Its best settings for in-process no-op jobs: the engine in this process (`fork: false`)
 * running jobs inline (`runner: "inline"`, no worker-thread hop), manual job resolution (no
 * stack-trace lookup of the job's file on every enqueue), the dashboard off. It has no bulk
 * API, so bulk enqueue is individual enqueues, 10 in flight. Priorities are per queue in
 * Sidequest, not per job: the mixed run's priorities are not applied.
 *
 * Sidequest's engine is a process-wide singleton: one configuration at a time per process.
 * Its SQLite backend cannot be installed here: @sidequest/sqlite-backend@1.16.5 (the latest)
 * depends on @sidequest/core@1.16.5, which is not published.
 */
import { join } from "node:path";
import pg from "pg";
import { Sidequest } from "sidequest";
import { BenchJob, setSidequestHandler } from "./sidequest-jobs.js";
import type { Adapter, Handler, JobSpec, SystemDef, Target, WorkerSettings } from "./types.js";
import { QUEUE } from "./types.js";
import { dropSchema, inParallel, packageVersion, postgresReachable, ROOT } from "./util.js";

const JOBS_FILE = join(ROOT, "bench", "adapters", "sidequest-jobs.ts");

class SidequestAdapter implements Adapter {
  private readonly schema: string;
  private readonly pool: pg.Pool;
  private configured: Promise<unknown> | null = null;
  private started = false;

  constructor(private readonly target: Target) {
    this.schema = `${target.namespace}_sidequest`;
    this.pool = new pg.Pool({ connectionString: target.pgUrl, max: 1 });
  }

  private config(concurrency: number) {
    return {
      backend: {
        driver: "@sidequest/postgres-backend" as const,
        config: { connection: this.target.pgUrl, searchPath: [this.schema], pool: { min: 1, max: 10 } },
      },
      fork: false,
      runner: "inline" as const,
      manualJobResolution: true,
      jobsFilePath: JOBS_FILE,
      maxConcurrentJobs: concurrency,
      queues: [{ name: QUEUE, concurrency }],
      gracefulShutdown: false,
      logger: { level: "error" as const },
      dashboard: { enabled: false },
    };
  }

  private configure(): Promise<unknown> {
    this.configured ??= Sidequest.configure(this.config(10));
    return this.configured;
  }

  async setup(): Promise<void> {
    await this.configure();
  }

  async teardown(): Promise<void> {
    await this.close();
    await dropSchema(this.target.pgUrl, this.schema);
  }

  private builder(job: JobSpec, settings: WorkerSettings) {
    let b = Sidequest.build(BenchJob).queue(QUEUE).maxAttempts(settings.maxAttempts).retryDelay(100);
    if (job.delayMs) b = b.availableAt(new Date(Date.now() + job.delayMs));
    return b;
  }

  async bulkEnqueue(jobs: JobSpec[], settings: WorkerSettings): Promise<void> {
    await this.configure();
    await inParallel(jobs, 10, (j) => this.builder(j, settings).enqueue(j.payload));
  }

  async enqueueOne(job: JobSpec, settings: WorkerSettings): Promise<void> {
    await this.configure();
    await this.builder(job, settings).enqueue(job.payload);
  }

  async remaining(): Promise<number> {
    const { rows } = await this.pool.query(
      `SELECT count(*)::int AS n FROM "${this.schema}".sidequest_jobs WHERE state IN ('waiting', 'claimed', 'running')`,
    );
    return rows[0].n as number;
  }

  async startWorkers(settings: WorkerSettings, handler: Handler) {
    setSidequestHandler(handler);
    this.started = true;
    await Sidequest.start(this.config(settings.concurrency));
    return { stop: () => this.close() };
  }

  private closing: Promise<void> | null = null;
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.started || this.configured) await Sidequest.stop().catch(() => {});
      await this.pool.end().catch(() => {});
    })();
    return this.closing;
  }
}

export const sidequest: SystemDef = {
  name: "sidequest",
  backend: "postgres",
  version: () =>
    `sidequest ${packageVersion("sidequest")} (@sidequest/postgres-backend ${packageVersion("@sidequest/postgres-backend")})`,
  settings:
    'fork: false, runner: "inline", manualJobResolution, dashboard off, queue concurrency = maxConcurrentJobs = concurrency, jobPollingInterval 100 ms (default), retryDelay 100 ms; bulk = single enqueues, 10 in flight (no bulk API); no per-job priority',
  unavailable: () => postgresReachable(process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"),
  async create(target) {
    return new SidequestAdapter(target);
  },
};
