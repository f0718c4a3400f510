/**
 * The steps every workload family shares: opening a fresh system, spawning its worker processes,
 * waiting for the store to drain, and the metrics more than one family reports.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Adapter, JobSpec, SystemDef, WorkerSettings } from "../adapters/types.js";
import { now } from "../adapters/types.js";
import { WorkerProcs } from "../children.js";
import type { ChildReport } from "../protocol.js";
import type { Metric, RunScope } from "../workloads.js";

export const MB = 1024 * 1024;

/** BENCH_DEBUG=1: phase timings of each run on stderr. */
const debug = process.env.BENCH_DEBUG === "1";
let phaseAt = 0;
export function phase(name: string): void {
  if (!debug) return;
  const t = now();
  process.stderr.write(`  · ${name}${phaseAt ? ` (+${((t - phaseAt) / 1000).toFixed(2)} s)` : ""}\n`);
  phaseAt = t;
}

export const THROUGHPUT: Metric = {
  key: "jobsPerSec",
  label: "jobs/s",
  unit: "jobs/s",
  better: "higher",
  digits: 0,
};
export const RSS: Metric = {
  key: "peakRssMb",
  label: "peak RSS per worker process",
  unit: "MB",
  better: "lower",
  digits: 0,
};
export const HEAP: Metric = {
  key: "peakHeapMb",
  label: "peak JS heap",
  unit: "MB",
  better: "lower",
  digits: 0,
};
export const CPU: Metric = {
  key: "cpuMsPer1k",
  label: "worker CPU per 1,000 jobs",
  unit: "ms",
  better: "lower",
  digits: 1,
};

export async function open(system: SystemDef, scope: RunScope): Promise<Adapter> {
  phaseAt = 0;
  phase("open");
  scope.adapter = await system.create(scope.target);
  await scope.adapter.setup();
  phase("set up");
  return scope.adapter;
}

export async function spawn(
  system: SystemDef,
  scope: RunScope,
  settings: WorkerSettings,
  processes: number,
): Promise<WorkerProcs> {
  phase(`spawning ${processes} worker process(es)`);
  scope.procs = await WorkerProcs.spawn(system.name, scope.target, settings, processes, {
    profileDir: scope.profileDir,
  });
  phase("worker processes ready");
  return scope.procs;
}

/**
 * When every job is recorded finished: the last handler return if the store already says
 * nothing remains, else the moment a poll (every 20 ms) first sees nothing remaining.
 */
async function drained(adapter: Adapter, lastAt: number): Promise<number> {
  if ((await adapter.remaining()) === 0) return lastAt;
  for (;;) {
    await sleep(20);
    if ((await adapter.remaining()) === 0) return now();
  }
}

/** true if `promise` settles within `ms` (rejections propagate), false if the time ran out. */
export async function within(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), expired]);
  } finally {
    clearTimeout(timer);
  }
}

export function noop(n: number): JobSpec[] {
  return Array.from({ length: n }, (_, i) => ({ payload: { i, t: 0 } }));
}

/** How a processing run ended: its workers' reports, the jobs they ran, and when the store was drained. */
export interface Finish {
  complete: boolean;
  /** When every job was recorded finished; when the budget ran out, the last handler return. */
  end: number;
  reports: ChildReport[];
  done: number;
}

/** Waits up to `budgetMs` for the workers to run `n` jobs, waits for the store to drain, then stops them. */
export async function finish(
  adapter: Adapter,
  procs: WorkerProcs,
  n: number,
  budgetMs: number,
): Promise<Finish> {
  const complete = await within(
    procs.until(() => procs.done >= n),
    budgetMs,
  );
  phase(complete ? "all jobs ran" : "budget spent");
  const end = complete ? await drained(adapter, procs.lastAt) : procs.lastAt;
  phase("drained");
  const reports = await procs.report();
  await procs.stop();
  phase("stopped");
  return { complete, end, reports, done: reports.reduce((a, r) => a + r.done, 0) };
}
