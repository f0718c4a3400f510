/**
 * pg-boss 12 on Postgres, in its own schema per run. Its best settings for many small jobs:
 * LISTEN/NOTIFY on (instance `useListenNotify` + queue `notify`), batched fetches
 * (`batchSize` up to 50 per fetch, `localConcurrency` × `batchSize` = the concurrency), burst
 * fetching while batches come back full, per-job results so one failure fails one job.
 */

import pg from "pg";
import { PgBoss } from "pg-boss";
import type { Adapter, BenchPayload, Handler, JobSpec, SystemDef, Target, WorkerSettings } from "./types.js";
import { QUEUE } from "./types.js";
import { BULK_CHUNK, dropSchema, inChunks, packageVersion, postgresReachable } from "./util.js";

const BATCH = Number(process.env.BENCH_PGBOSS_BATCH ?? 50);

class PgBossAdapter implements Adapter {
  private readonly boss: PgBoss;
  private readonly pool: pg.Pool;
  private started: Promise<unknown> | null = null;
  private readonly schema: string;

  constructor(private readonly target: Target) {
    this.schema = `${target.namespace}_pgboss`;
    this.boss = new PgBoss({
      connectionString: target.pgUrl,
      schema: this.schema,
      useListenNotify: true,
      max: 10,
    });
    this.boss.on("error", (err: Error) => console.error(`[pg-boss] ${err.message}`));
    this.pool = new pg.Pool({ connectionString: target.pgUrl, max: 1 });
  }

  private start(): Promise<unknown> {
    this.started ??= this.boss.start();
    return this.started;
  }

  async setup(): Promise<void> {
    await this.start();
    await this.boss.createQueue(QUEUE, { notify: true, retryDelay: 0 });
  }

  async teardown(): Promise<void> {
    await this.close();
    await dropSchema(this.target.pgUrl, this.schema);
  }

  private options(job: JobSpec, settings: WorkerSettings) {
    return {
      priority: job.priority ?? 0, // pg-boss: higher runs first, like errand
      retryLimit: settings.maxAttempts - 1,
      retryDelay: 0,
      ...(job.delayMs ? { startAfter: new Date(Date.now() + job.delayMs) } : {}),
    };
  }

  async bulkEnqueue(jobs: JobSpec[], settings: WorkerSettings): Promise<void> {
    await this.start();
    await inChunks(jobs, BULK_CHUNK, (chunk) =>
      this.boss.insert(
        QUEUE,
        chunk.map((j) => ({ data: j.payload, ...this.options(j, settings) })),
      ),
    );
  }

  async enqueueOne(job: JobSpec, settings: WorkerSettings): Promise<void> {
    await this.start();
    await this.boss.send(QUEUE, job.payload, this.options(job, settings));
  }

  async remaining(): Promise<number> {
    const { rows } = await this.pool.query(
      `SELECT count(*)::int AS n FROM "${this.schema}".job WHERE name = $1 AND state IN ('created', 'retry', 'active')`,
      [QUEUE],
    );
    return rows[0].n as number;
  }

  async prepareWorkers(): Promise<void> {
    await this.start();
  }

  async startWorkers(settings: WorkerSettings, handler: Handler) {
    await this.start();
    const batchSize = Math.min(BATCH, settings.concurrency);
    const localConcurrency = Math.max(1, Math.round(settings.concurrency / batchSize));
    await this.boss.work<BenchPayload>(
      QUEUE,
      {
        localConcurrency,
        batchSize,
        burstWhenBatchFull: true,
        pollingIntervalSeconds: 0.5,
        perJobResults: true,
      },
      async (jobs) =>
        jobs.map((job) => {
          try {
            handler(job.data, job.retryCount + 1);
            return { id: job.id, status: "completed" as const };
          } catch (err) {
            return { id: job.id, status: "failed" as const, output: { message: (err as Error).message } };
          }
        }),
    );
    return { stop: () => this.close() };
  }

  private closing: Promise<void> | null = null;
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.started) await this.boss.stop({ graceful: true, timeout: 5_000, close: true }).catch(() => {});
      await this.pool.end().catch(() => {});
    })();
    return this.closing;
  }
}

export const pgBoss: SystemDef = {
  name: "pg-boss",
  backend: "postgres",
  version: () => `pg-boss ${packageVersion("pg-boss")}`,
  settings: `LISTEN/NOTIFY on (useListenNotify + queue notify), batchSize ${BATCH} per fetch × localConcurrency = concurrency, burstWhenBatchFull, pollingIntervalSeconds 0.5, perJobResults, retryDelay 0; bulk = insert() in chunks of ${BULK_CHUNK}`,
  unavailable: () => postgresReachable(process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"),
  async create(target) {
    return new PgBossAdapter(target);
  },
};
