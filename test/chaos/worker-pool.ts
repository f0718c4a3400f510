// The chaos runs' set of worker processes: how each is started and which are alive or paused.
// Shared by run.ts (the main chaos run) and flow-run.ts (the flow chaos run).
import { type Proc, spawnWorker } from "./harness.js";

export interface WorkerPoolOptions {
  url: string;
  dir: string;
  queues: string;
  leaseMs: number;
  schema?: string;
}

export interface WorkerPool {
  /** Workers not yet exited. */
  procs: Set<Proc>;
  /** Every worker ever started, for the final kill and the report. */
  everyProc: Proc[];
  /** Workers currently SIGSTOPped; a worker leaves this set when it exits. */
  stopped: Set<Proc>;
  /** Starts one more worker. */
  launch: () => Proc;
}

export function workerPool(options: WorkerPoolOptions): WorkerPool {
  const workerEnv: Record<string, string> = {
    CHAOS_URL: options.url,
    CHAOS_DIR: options.dir,
    CHAOS_QUEUES: options.queues,
    CHAOS_CONCURRENCY: "4",
    CHAOS_LEASE_MS: String(options.leaseMs),
    CHAOS_POLL_MS: "200",
    CHAOS_SHUTDOWN_MS: "5000",
    ...(options.schema ? { CHAOS_SCHEMA: options.schema } : {}),
  };
  const procs = new Set<Proc>();
  const everyProc: Proc[] = [];
  const stopped = new Set<Proc>();
  const launch = (): Proc => {
    const proc = spawnWorker(workerEnv);
    procs.add(proc);
    everyProc.push(proc);
    proc.exited.then(() => {
      procs.delete(proc);
      stopped.delete(proc);
    });
    return proc;
  };
  return { procs, everyProc, stopped, launch };
}
