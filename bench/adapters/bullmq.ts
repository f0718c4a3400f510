/**
 * BullMQ 6 on Redis (127.0.0.1:6379), for reference: a different kind of store, not a
 * Postgres peer. Every key of a run lives under its own prefix, deleted afterwards.
 * BullMQ 6 made its Redis driver an optional peer dependency: ioredis is a dev dependency here.
 */
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import type { Adapter, BenchPayload, Handler, JobSpec, SystemDef, Target, WorkerSettings } from "./types.js";
import { QUEUE } from "./types.js";
import { BULK_CHUNK, inChunks, packageVersion } from "./util.js";

class BullAdapter implements Adapter {
  private readonly clients: Redis[] = [];
  private readonly queue: Queue;
  private readonly prefix: string;
  private worker: Worker | null = null;

  constructor(private readonly target: Target) {
    this.prefix = `errand-bench:${target.namespace}`;
    this.queue = new Queue(QUEUE, { connection: this.client() as never, prefix: this.prefix });
  }

  private client(): Redis {
    const client = new Redis(this.target.redisUrl, { maxRetriesPerRequest: null });
    this.clients.push(client);
    return client;
  }

  async setup(): Promise<void> {
    await this.queue.waitUntilReady();
  }

  async teardown(): Promise<void> {
    await this.queue.obliterate({ force: true }).catch(() => {});
    // Then any key left under this run's prefix (only ours).
    const redis = this.client();
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${this.prefix}:*`, "COUNT", 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
    await this.close();
  }

  private opts(job: JobSpec, settings: WorkerSettings) {
    // BullMQ: priority 1 is the highest, 0 means none; errand: higher runs first (0..9 here).
    const priority = job.priority ? Math.max(1, 10 - job.priority) : undefined;
    return {
      attempts: settings.maxAttempts,
      backoff: { type: "fixed", delay: 100 },
      ...(priority ? { priority } : {}),
      ...(job.delayMs ? { delay: job.delayMs } : {}),
    };
  }

  async bulkEnqueue(jobs: JobSpec[], settings: WorkerSettings): Promise<void> {
    await inChunks(jobs, BULK_CHUNK, (chunk) =>
      this.queue.addBulk(chunk.map((j) => ({ name: "noop", data: j.payload, opts: this.opts(j, settings) }))),
    );
  }

  async enqueueOne(job: JobSpec, settings: WorkerSettings): Promise<void> {
    await this.queue.add("noop", job.payload, this.opts(job, settings));
  }

  async remaining(): Promise<number> {
    const counts = await this.queue.getJobCounts(
      "waiting",
      "active",
      "delayed",
      "prioritized",
      "waiting-children",
    );
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  async prepareWorkers(): Promise<void> {
    await this.queue.waitUntilReady();
  }

  async startWorkers(settings: WorkerSettings, handler: Handler) {
    this.worker = new Worker<BenchPayload>(
      QUEUE,
      async (job) => {
        handler(job.data, job.attemptsMade + 1);
      },
      { connection: this.client() as never, prefix: this.prefix, concurrency: settings.concurrency },
    );
    this.worker.on("error", (err) => console.error(`[bullmq] ${err.message}`));
    await this.worker.waitUntilReady();
    return { stop: () => this.close() };
  }

  private closing: Promise<void> | null = null;
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.worker) await this.worker.close().catch(() => {});
      await this.queue.close().catch(() => {});
      for (const c of this.clients) await c.quit().catch(() => c.disconnect());
    })();
    return this.closing;
  }
}

export const bullmq: SystemDef = {
  name: "bullmq",
  backend: "redis",
  version: () => `bullmq ${packageVersion("bullmq")} (ioredis ${packageVersion("ioredis")}, Redis server)`,
  settings: `defaults (concurrency set; completed jobs kept); retries: backoff fixed 100 ms; bulk = addBulk() in chunks of ${BULK_CHUNK}`,
  async unavailable() {
    const redis = new Redis(process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379", {
      maxRetriesPerRequest: 1,
      lazyConnect: false,
      retryStrategy: () => null,
    });
    try {
      await redis.ping();
      return null;
    } catch (err) {
      return `Redis not reachable: ${(err as Error).message}`;
    } finally {
      redis.disconnect();
    }
  },
  async create(target) {
    return new BullAdapter(target);
  },
};
