/**
 * errand itself, on SQLite (a fresh file per run) and on Postgres (a fresh schema per run),
 * through the public API only: openErrand, enqueue, enqueueMany, work, stats. It loads the
 * compiled package in dist/ (bench/run.ts builds it first), as users run it and as every peer
 * is loaded from node_modules. Worker options are errand's defaults (SETTINGS below); only
 * the concurrency is set.
 */
import { rm } from "node:fs/promises";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { defineJob, type Errand, openErrand, silentLogger } from "../../dist/index.js";
import { attributeCrashes } from "../../dist/worker/crash.js";
import type { Adapter, BenchPayload, FlowCondition, Handler, JobSpec, SystemDef, Target, WorkerSettings } from "./types.js";
import { QUEUE } from "./types.js";
import { BULK_CHUNK, dropSchema, inChunks, packageVersion, postgresReachable, ROOT } from "./util.js";

/**
 * A pass-through Standard Schema validator: errand requires a schema, and the peers validate
 * nothing, so the benchmark does not charge errand for a validator library's work.
 */
const passThrough: StandardSchemaV1<BenchPayload> = {
  "~standard": { version: 1, vendor: "bench", validate: (value) => ({ value: value as BenchPayload }) },
};

let current: Handler = () => {};

const benchJob = defineJob({
  name: "bench-noop",
  queue: QUEUE,
  schema: passThrough,
  maxAttempts: 3,
  backoff: ["100ms"],
  run: (payload, ctx) => current(payload, ctx.attempt),
});

/**
 * The flow workload's jobs: the same no-op, each condition in its own queue (flow limits belong
 * to a queue), the limits far above what this machine reaches so that they never bind.
 */
const flowKey = (p: BenchPayload) => `k${p.i % 100}`;
const run = (p: BenchPayload, ctx: { attempt: number }) => current(p, ctx.attempt);
const flowJobs = {
  global: defineJob({ name: "bench-flow-global", queue: `${QUEUE}-flow-global`, schema: passThrough, globalConcurrency: 100_000, run }),
  "per-key": defineJob({ name: "bench-flow-per-key", queue: `${QUEUE}-flow-per-key`, schema: passThrough, concurrency: { key: flowKey, limit: 100_000 }, run }),
  rate: defineJob({ name: "bench-flow-rate", queue: `${QUEUE}-flow-rate`, schema: passThrough, rateLimit: { limit: 1_000_000, per: "1s" }, run }),
};
const ALL_JOBS = [benchJob, ...Object.values(flowJobs)];

function jobFor(flow: FlowCondition | undefined) {
  return !flow || flow === "none" ? benchJob : flowJobs[flow];
}

class ErrandAdapter implements Adapter {
  constructor(
    private readonly errand: Errand,
    private readonly cleanup: () => Promise<void>,
  ) {}

  async setup(): Promise<void> {
    // openErrand already migrated the fresh schema / file.
  }

  async teardown(): Promise<void> {
    await this.close();
    await this.cleanup();
  }

  private options(job: JobSpec, settings: WorkerSettings) {
    return {
      priority: job.priority ?? 0,
      maxAttempts: settings.maxAttempts,
      ...(job.delayMs ? { delay: job.delayMs } : {}),
    };
  }

  async bulkEnqueue(jobs: JobSpec[], settings: WorkerSettings): Promise<void> {
    await inChunks(jobs, BULK_CHUNK, (chunk) =>
      this.errand.enqueueMany(
        jobFor(settings.flow) as typeof benchJob,
        chunk.map((j) => ({ payload: j.payload, ...this.options(j, settings) })),
      ),
    );
  }

  async enqueueOne(job: JobSpec, settings: WorkerSettings): Promise<void> {
    await this.errand.enqueue(jobFor(settings.flow) as typeof benchJob, job.payload, this.options(job, settings));
  }

  async remaining(): Promise<number> {
    const queues = new Set(ALL_JOBS.map((j) => j.queue));
    let left = 0;
    for (const q of await this.errand.stats()) if (queues.has(q.queue)) left += q.pending + q.delayed + q.running;
    return left;
  }

  async startWorkers(settings: WorkerSettings, handler: Handler) {
    current = handler;
    // As `errand worker` runs in production: with crash attribution on (its AsyncLocalStorage scope
    // turns on Node's promise hooks, ~5 ms of worker CPU per 1,000 jobs; bench/NOTES.md finding 13).
    // BENCH_CRASH_SCOPE=0 measures errand.work() in an application's own process, without it.
    const stopAttributing = process.env.BENCH_CRASH_SCOPE === "0" ? () => {} : attributeCrashes();
    const worker = this.errand.work({ [jobFor(settings.flow).queue]: { concurrency: settings.concurrency } });
    // BENCH_DEBUG=1: how many jobs this worker holds (claimed, run or not, outcome not yet written).
    const watch =
      process.env.BENCH_DEBUG === "1"
        ? setInterval(
            () => process.stderr.write(`  [errand worker ${process.pid}] holding ${worker.running} jobs\n`),
            1000,
          )
        : null;
    return {
      stop: async () => {
        if (watch) clearInterval(watch);
        await worker.stop({ timeout: 5_000 });
        stopAttributing();
      },
    };
  }

  private closed = false;
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.errand.close();
  }
}

/** The repository's own version (package.json at the root). */
function ownPackageVersion(): string {
  return packageVersion(".", ROOT);
}

const SETTINGS =
  "errand defaults (batchSize 1000 on Postgres, 500 on SQLite, readAhead 100ms, lease 15s, pollInterval 2s, batched completions); backoff 100ms in the mixed run";

export const errandSqlite: SystemDef = {
  name: "errand-sqlite",
  backend: "sqlite",
  version: () => `errand ${ownPackageVersion()} (better-sqlite3 ${packageVersion("better-sqlite3")})`,
  settings: SETTINGS,
  async unavailable() {
    try {
      await import("../../dist/store/sqlite/index.js");
      return null;
    } catch (err) {
      return `errand's SQLite store does not load: ${(err as Error).message}`;
    }
  },
  async create(target: Target) {
    const errand = await openErrand({ url: target.sqlitePath, jobs: ALL_JOBS as never, logger: silentLogger() });
    return new ErrandAdapter(errand, async () => {
      for (const suffix of ["", "-wal", "-shm", "-journal"])
        await rm(target.sqlitePath + suffix, { force: true });
    });
  },
};

export const errandPostgres: SystemDef = {
  name: "errand-postgres",
  backend: "postgres",
  version: () => `errand ${ownPackageVersion()} (pg ${packageVersion("pg")})`,
  settings: SETTINGS,
  async unavailable() {
    try {
      await import("../../dist/store/postgres/index.js");
    } catch (err) {
      return `errand's Postgres store does not load: ${(err as Error).message}`;
    }
    return postgresReachable(process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test");
  },
  async create(target: Target) {
    const schema = `${target.namespace}_errand`;
    const errand = await openErrand({ url: target.pgUrl, schema, jobs: ALL_JOBS as never, logger: silentLogger() });
    return new ErrandAdapter(errand, () => dropSchema(target.pgUrl, schema));
  },
};
