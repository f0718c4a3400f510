import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { type Duration, parseDuration, parseTimerDuration } from "../duration.js";
import { type Classification, ValidationError } from "../errors.js";
import { knownFields, onlyKnownFields } from "../known-fields.js";
import { storableString } from "../payload.js";
import type { PruneRequest, StoreKind } from "../store/types.js";

export interface QueueOptions {
  /** Jobs of this queue run at once in this process. Default 10. */
  concurrency?: number;
  /** Decide retry-or-fail for unknown errors of this queue's jobs (a job's own classify wins). */
  classify?: (err: unknown) => Classification | undefined;
}

export interface WorkerOptions {
  /** How long a claim holds a job without a heartbeat. Default 15s. */
  lease?: Duration;
  /** How often leases are extended. Default a third of the lease. */
  heartbeat?: Duration;
  /** Safety-net poll when no wake-up signal arrives. Default 2s. */
  pollInterval?: Duration;
  /** How often this worker looks for expired leases of dead workers. Default half the lease. */
  rescueInterval?: Duration;
  /** Graceful stop: after this, running jobs are aborted and released. Default 30s. */
  shutdownTimeout?: Duration;
  /**
   * Most jobs claimed in one round trip, and most claimed ahead of the free slots. Default 1000
   * on PostgreSQL, 500 on SQLite and in memory.
   */
  batchSize?: number;
  /**
   * Read-ahead: each queue claims about this much work beyond its free slots (measured by its
   * recent rate), so the next jobs are local when a slot frees instead of one round trip away.
   * Fast jobs get a batch ahead, slow ones next to none; a job waits in this buffer about this
   * long at most, and unstarted jobs go back to the queue untouched at stop. Default 100ms; 0 disables.
   */
  readAhead?: Duration;
  /**
   * Retention, enforced by the worker's pruner: finished jobs (completed and cancelled 7d,
   * failed 30d; a job's own ctx.once entries go with it) and global ctx.once entries, kept
   * `globalOnce` after they were recorded (default 30d, as long as a failed job is kept: a
   * job retried by hand from the dead-letter queue still finds the global keys it recorded).
   */
  retention?: { completed?: Duration; failed?: Duration; globalOnce?: Duration };
  /** How often to prune. Default 10 minutes; 0 disables. */
  pruneInterval?: Duration;
  /** Worker id in history and the registry. Default host:pid:random. */
  id?: string;
}

/** WorkerOptions checked, with their defaults, in milliseconds. */
export interface WorkerSettings {
  id: string;
  leaseMs: number;
  heartbeatMs: number;
  pollMs: number;
  rescueMs: number;
  shutdownMs: number;
  batchSize: number;
  readAheadMs: number;
  pruneMs: number;
  retention: Required<PruneRequest>;
}

const WORKER_FIELDS = knownFields(
  "lease",
  "heartbeat",
  "pollInterval",
  "rescueInterval",
  "shutdownTimeout",
  "batchSize",
  "readAhead",
  "retention",
  "pruneInterval",
  "id",
);
const RETENTION_FIELDS = knownFields("completed", "failed", "globalOnce");
const QUEUE_FIELDS = knownFields("concurrency", "classify");

/** Checks `options` (a clear error naming the bad one) and fills in the defaults. */
export function workerSettings(
  options: WorkerOptions,
  bounded: boolean,
  storeKind: StoreKind = "memory",
): WorkerSettings {
  onlyKnownFields(options, WORKER_FIELDS, "worker options");
  if (options.retention !== undefined && options.retention !== null)
    onlyKnownFields(options.retention, RETENTION_FIELDS, "worker options: retention");
  // Written with every claim and history entry: a string every store holds as given (an empty or
  // non-string id claimed nothing, a NUL nothing on PostgreSQL; a lone surrogate came back changed).
  const id =
    options.id === undefined
      ? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
      : storableString(options.id, "worker id");
  const leaseMs = parseTimerDuration(options.lease ?? "15s", "lease");
  const heartbeatMs = parseTimerDuration(
    options.heartbeat ?? Math.max(10, Math.floor(leaseMs / 3)),
    "heartbeat",
  );
  if (heartbeatMs >= leaseMs) throw new ValidationError("heartbeat must be shorter than the lease");
  const pollMs = parseTimerDuration(options.pollInterval ?? "2s", "pollInterval");
  const rescueMs = parseTimerDuration(
    options.rescueInterval ?? Math.max(10, Math.floor(leaseMs / 2)),
    "rescueInterval",
  );
  const shutdownMs = parseTimerDuration(options.shutdownTimeout ?? "30s", "shutdownTimeout");
  const batchSize = options.batchSize ?? defaultBatchSize(storeKind);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    throw new ValidationError(`batchSize must be an integer from 1 to 10000, got ${batchSize}`);
  }
  // A bounded run (processJobs, an HTTP tick) claims exactly what it runs: no read-ahead.
  const readAheadMs = bounded ? 0 : parseTimerDuration(options.readAhead ?? "100ms", "readAhead");
  const pruneMs = parseTimerDuration(options.pruneInterval ?? "10m", "pruneInterval");
  const retention = {
    completedAgeMs: parseDuration(options.retention?.completed ?? "7d", "retention.completed"),
    failedAgeMs: parseDuration(options.retention?.failed ?? "30d", "retention.failed"),
    globalOnceAgeMs: parseDuration(options.retention?.globalOnce ?? "30d", "retention.globalOnce"),
  };
  return {
    id,
    leaseMs,
    heartbeatMs,
    pollMs,
    rescueMs,
    shutdownMs,
    batchSize,
    readAheadMs,
    pruneMs,
    retention,
  };
}

/**
 * Claims of up to 1,000 jobs on PostgreSQL, 500 elsewhere. A PostgreSQL claim is a round trip
 * with a fixed cost (and, for a per-key limit, a walk over the queue's keys) that a bigger claim
 * spreads over more jobs; a SQLite claim is a local call, and bigger ones cost it worker CPU.
 * `npm run bench -- --workload process-c10-p1,flow --only errand-postgres,errand-sqlite,graphile-worker-best
 * --runs 1 --no-write`, 500 and 1,000 alternated three times on a quiet machine (2026-12-04
 * 18:24-18:26 UTC, load 0.5-2.4): PostgreSQL no-op jobs 37,548-38,208 → 39,221-41,360 jobs/s
 * (worker CPU 18.5-19.1 → 17.8-18.3 ms per 1,000 jobs), a non-binding per-key limit over 100 keys
 * 25,641-26,825 → 27,901-30,028 (0.71-0.75 → 0.79-0.83 of no limit); SQLite no-op jobs
 * 46,823-47,675 → 39,361-43,834 with 22.1-23.6 → 26.2-28.6 ms, so SQLite keeps 500.
 */
export function defaultBatchSize(storeKind: StoreKind): number {
  return storeKind === "postgres" ? 1000 : 500;
}

/** A queue's concurrency, checked; default 10. */
export function queueConcurrency(queue: string, options: QueueOptions): number {
  // `{ emails: 5 }` would serve the queue at the default concurrency without a word.
  if (options === null || typeof options !== "object")
    throw new ValidationError(
      `the options of queue "${queue}" must be an object like { concurrency: 5 }; got ${JSON.stringify(options) ?? String(options)}`,
    );
  onlyKnownFields(options, QUEUE_FIELDS, `queue "${queue}" options`);
  const concurrency = options.concurrency ?? 10;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 10_000) {
    throw new ValidationError(
      `concurrency of queue "${queue}" must be an integer from 1 to 10000, got ${concurrency}`,
    );
  }
  return concurrency;
}
