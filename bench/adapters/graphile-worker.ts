/**
 * graphile-worker 0.18 on Postgres, in its own schema per run, twice: with its defaults
 * (only the concurrency set), and with the settings its performance page uses for its best
 * figures: `localQueue: { size: 500 }`, `completeJobBatchDelay: 0`, `failJobBatchDelay: 0`,
 * and a pool of concurrency + 2 connections (see node_modules/graphile-worker/dist/index.d.ts,
 * the `localQueue` and `completeJobBatchDelay` docs). Its per-job INFO log lines are silenced
 * for both (errand's logger is silenced too).
 */
import { Logger, makeWorkerUtils, type Runner, run, type WorkerUtils } from "graphile-worker";
import pg from "pg";
import type { Adapter, BenchPayload, Handler, JobSpec, SystemDef, Target, WorkerSettings } from "./types.js";
import { BULK_CHUNK, dropSchema, inChunks, packageVersion, postgresReachable } from "./util.js";

const silent = new Logger(() => () => {});
const TASK = "bench_noop";

type Flavour = "defaults" | "best";

class GraphileAdapter implements Adapter {
  private utils: Promise<WorkerUtils> | null = null;
  private readonly pool: pg.Pool;
  private readonly schema: string;
  private runner: Runner | null = null;

  constructor(
    private readonly target: Target,
    private readonly flavour: Flavour,
  ) {
    this.schema = `${target.namespace}_graphile`;
    this.pool = new pg.Pool({ connectionString: target.pgUrl, max: 1 });
  }

  private workerUtils(): Promise<WorkerUtils> {
    this.utils ??= makeWorkerUtils({
      connectionString: this.target.pgUrl,
      schema: this.schema,
      logger: silent,
    });
    return this.utils;
  }

  async setup(): Promise<void> {
    await (await this.workerUtils()).migrate();
  }

  async teardown(): Promise<void> {
    await this.close();
    await dropSchema(this.target.pgUrl, this.schema);
  }

  private spec(job: JobSpec, settings: WorkerSettings) {
    return {
      priority: -(job.priority ?? 0), // graphile-worker: numerically smaller runs first
      maxAttempts: settings.maxAttempts,
      ...(job.delayMs ? { runAt: new Date(Date.now() + job.delayMs) } : {}),
    };
  }

  async bulkEnqueue(jobs: JobSpec[], settings: WorkerSettings): Promise<void> {
    const utils = await this.workerUtils();
    await inChunks(jobs, BULK_CHUNK, (chunk) =>
      utils.addJobs(chunk.map((j) => ({ identifier: TASK, payload: j.payload, ...this.spec(j, settings) }))),
    );
  }

  async enqueueOne(job: JobSpec, settings: WorkerSettings): Promise<void> {
    await (await this.workerUtils()).addJob(TASK, job.payload, this.spec(job, settings));
  }

  async remaining(): Promise<number> {
    // Finished jobs are deleted; failed-for-good ones stay with attempts = max_attempts.
    const { rows } = await this.pool.query(
      `SELECT count(*)::int AS n FROM "${this.schema}"._private_jobs WHERE attempts < max_attempts OR locked_at IS NOT NULL`,
    );
    return rows[0].n as number;
  }

  async prepareWorkers(): Promise<void> {
    await this.workerUtils();
  }

  async startWorkers(settings: WorkerSettings, handler: Handler) {
    const best =
      this.flavour === "best"
        ? {
            localQueue: { size: 500 },
            completeJobBatchDelay: 0,
            failJobBatchDelay: 0,
            maxPoolSize: settings.concurrency + 2,
          }
        : {};
    this.runner = await run({
      connectionString: this.target.pgUrl,
      schema: this.schema,
      concurrency: settings.concurrency,
      noHandleSignals: true,
      logger: silent,
      parsedCronItems: [],
      preset: { worker: best },
      taskList: {
        [TASK]: async (payload, helpers) => {
          handler(payload as BenchPayload, helpers.job.attempts);
        },
      },
    });
    return { stop: () => this.close() };
  }

  private closing: Promise<void> | null = null;
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.runner) await this.runner.stop().catch(() => {});
      if (this.utils) await Promise.resolve((await this.utils).release()).catch(() => {});
      await this.pool.end().catch(() => {});
    })();
    return this.closing;
  }
}

const reachable = () =>
  postgresReachable(process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test");

export const graphileDefaults: SystemDef = {
  name: "graphile-worker",
  backend: "postgres",
  version: () => `graphile-worker ${packageVersion("graphile-worker")}`,
  settings: `defaults (concurrency set; pool 10, pollInterval 2s, no local queue, completions one by one); bulk = addJobs() in chunks of ${BULK_CHUNK}`,
  unavailable: reachable,
  async create(target) {
    return new GraphileAdapter(target, "defaults");
  },
};

export const graphileBest: SystemDef = {
  name: "graphile-worker-best",
  backend: "postgres",
  version: () => `graphile-worker ${packageVersion("graphile-worker")}`,
  settings: `localQueue { size: 500 }, completeJobBatchDelay 0, failJobBatchDelay 0, maxPoolSize concurrency + 2 (its performance page's settings); bulk = addJobs() in chunks of ${BULK_CHUNK}`,
  unavailable: reachable,
  async create(target) {
    return new GraphileAdapter(target, "best");
  },
};
