/**
 * The workloads: what one run of one system does and what it measures. Every run starts
 * on a fresh schema / key prefix / file (setup and teardown are not timed).
 */
import type { Adapter, SystemDef, Target } from "./adapters/types.js";
import type { WorkerProcs } from "./children.js";
import { bulkWorkload, singleWorkload } from "./workloads/enqueue.js";
import { flowWorkload } from "./workloads/flow.js";
import { latencyWorkloads } from "./workloads/latency.js";
import { mixedWorkload, processWorkloads } from "./workloads/processing.js";

export interface Metric {
  key: string;
  label: string;
  unit: string;
  better: "higher" | "lower";
  digits?: number;
}

/** What a run holds, so the harness can kill and clean up after a timeout or a failure. */
export interface RunScope {
  target: Target;
  adapter?: Adapter;
  procs?: WorkerProcs;
  profileDir?: string;
}

export interface WorkloadDef {
  name: string;
  group: "bulk" | "single" | "process" | "latency" | "mixed" | "flow";
  title: string;
  description: string;
  /** The first is the headline figure. */
  metrics: Metric[];
  timeoutMs: number;
  /** The systems it applies to (default: every system). */
  systems?: string[];
  run(system: SystemDef, scope: RunScope): Promise<Record<string, number>>;
}

export interface Counts {
  /** Longest a processing or mixed run may take; a slower system is reported from its partial progress. */
  budgetMs: number;
  bulk: number;
  single: number;
  process: number;
  mixed: number;
  latency: Array<{ rate: number; jobs: number }>;
  /**
   * Processing runs. Each measures steady state (settle.ts: tables analyzed and checkpointed after
   * the enqueue) unless `burst`: then the workers start on the never-analyzed, just-filled table.
   */
  processVariants: Array<{ concurrency: number; processes: number; burst?: boolean }>;
  /** Jobs per condition of the flow-control run (errand only). */
  flow: number;
}

export const FULL: Counts = {
  budgetMs: 90_000,
  bulk: 100_000,
  single: 5_000,
  process: 50_000,
  mixed: 20_000,
  latency: [
    { rate: 100, jobs: 1_000 },
    { rate: 1_000, jobs: 5_000 },
  ],
  processVariants: [
    { concurrency: 10, processes: 1 },
    { concurrency: 50, processes: 1 },
    { concurrency: 10, processes: 4 },
    { concurrency: 50, processes: 4 },
    { concurrency: 10, processes: 1, burst: true },
  ],
  flow: 20_000,
};

export const QUICK: Counts = {
  budgetMs: 20_000,
  bulk: 10_000,
  single: 300,
  process: 10_000,
  mixed: 2_000,
  latency: [{ rate: 100, jobs: 200 }],
  processVariants: [
    { concurrency: 50, processes: 1 },
    { concurrency: 50, processes: 1, burst: true },
  ],
  flow: 5_000,
};

export function workloads(counts: Counts): WorkloadDef[] {
  return [
    bulkWorkload(counts),
    singleWorkload(counts),
    ...processWorkloads(counts),
    ...latencyWorkloads(counts),
    mixedWorkload(counts),
    flowWorkload(counts),
  ];
}
