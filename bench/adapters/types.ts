/**
 * The one small interface every benchmarked system sits behind. The harness (bench/run.ts)
 * sets a system up, enqueues through it and asks it when the work is done; the worker
 * processes (bench/worker-process.ts) start its workers. Peers' code is used from
 * node_modules through their public APIs only.
 */

/** What a benchmark job carries. `t` is the enqueue instant (epoch ms, sub-ms precision). */
export interface BenchPayload {
  /** Sequence number. */
  i: number;
  /** Enqueue time stamp: `now()` just before the enqueue call was issued. */
  t: number;
  /** 1: a measured latency sample (warm-up jobs are not counted). */
  m?: 1;
  /** 1: the handler throws on the first attempt (the retry succeeds). */
  f?: 1;
}

export interface JobSpec {
  payload: BenchPayload;
  /** errand's convention: higher runs first. Adapters translate for their system. */
  priority?: number;
  delayMs?: number;
}

/** Runs a job. `attempt` is 1-based. Throwing fails the attempt. */
export type Handler = (payload: BenchPayload, attempt: number) => void;

/** Where one run's data lives: a fresh Postgres schema, Redis key prefix or SQLite file. Serialisable. */
export interface Target {
  runId: string;
  /** Schema / prefix / queue namespace unique to this run. */
  namespace: string;
  pgUrl: string;
  redisUrl: string;
  /** A fresh SQLite file for this run (errand-sqlite). */
  sqlitePath: string;
}

/**
 * Flow control for the flow workload (errand only): none, or one limit that never binds — a
 * global concurrency of 100,000, a per-key concurrency of 100,000 over 100 keys, a queue-wide
 * rate of 1,000,000 jobs per second.
 */
export type FlowCondition = "none" | "global" | "per-key" | "rate";

export interface WorkerSettings {
  concurrency: number;
  /** Max attempts for every job (mixed workload: 3). */
  maxAttempts: number;
  /** The flow workload's condition (errand only); absent: none. */
  flow?: FlowCondition;
}

export interface RunningWorkers {
  stop(): Promise<void>;
}

export interface Adapter {
  /** Creates the schema / queue (untimed); parent only. */
  setup(): Promise<void>;
  /** Drops everything this run created (schema, keys, files). */
  teardown(): Promise<void>;
  /** Bulk enqueue with the system's batch API (or its closest equivalent). */
  bulkEnqueue(jobs: JobSpec[], settings: WorkerSettings): Promise<void>;
  /** One enqueue call. */
  enqueueOne(job: JobSpec, settings: WorkerSettings): Promise<void>;
  /** Jobs not yet finished (pending, delayed, running, or finished but not yet recorded). */
  remaining(): Promise<number>;
  /** Optional warm-up before workers start (open pools, load modules). */
  prepareWorkers?(settings: WorkerSettings): Promise<void>;
  /** Starts this process's workers for the bench queue. */
  startWorkers(settings: WorkerSettings, handler: Handler): Promise<RunningWorkers>;
  /** Closes the client side (pools, connections). */
  close(): Promise<void>;
}

export type Backend = "postgres" | "sqlite" | "redis";

export interface SystemDef {
  name: string;
  backend: Backend;
  /** Package and version, for the report. */
  version(): string;
  /** The settings this adapter uses, in one line, for the report. */
  settings: string;
  /** null when usable here; otherwise why not (the system is reported as unavailable). */
  unavailable(): Promise<string | null>;
  create(target: Target): Promise<Adapter>;
}

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes on one machine. */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

/** A bench queue name shared by every adapter. */
export const QUEUE = "bench";
