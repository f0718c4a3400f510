/** The record of one bench invocation, and the summaries the report and chart read from it. */
import type { Backend } from "./adapters/types.js";
import { median, range } from "./stats.js";
import type { Metric, WorkloadDef } from "./workloads.js";

export interface Machine {
  nproc: number;
  cpu: string;
  memoryGb: number;
  node: string;
  postgres: string;
  redis: string;
  os: string;
  /** 1-minute load average at the start and the end of the bench. */
  loadStart: number;
  loadEnd?: number;
  /** Peak RSS of an idle Node process, plain and under the tsx loader the worker processes use. */
  baselineRssMb: { node: number; tsx: number };
}

export interface SystemInfo {
  name: string;
  backend: Backend;
  version: string;
  settings: string;
  unavailable: string | null;
}

export interface RunRecord {
  workload: string;
  system: string;
  run: number;
  ok: boolean;
  metrics?: Record<string, number>;
  error?: string;
}

export interface BenchResults {
  date: string;
  mode: string;
  command: string;
  runs: number;
  wallSeconds: number;
  machine: Machine;
  systems: SystemInfo[];
  workloads: Array<Pick<WorkloadDef, "name" | "group" | "title" | "description" | "metrics">>;
  records: RunRecord[];
  /** errand's code (git) when the bench started and ended: worker processes load src/ afresh each run. */
  code: { start: string; end?: string };
  /** Anything done to these results after the run (e.g. one system's runs redone), for the report. */
  notes?: string[];
  /** Set when workloads of an earlier run were merged in (--merge): which run. */
  merged?: string;
}

export interface Summary {
  median: number;
  min: number;
  max: number;
  ok: number;
  failed: number;
  errors: string[];
}

/** Median and range of one metric of one system in one workload (NaN when no run succeeded). */
export function summarize(results: BenchResults, workload: string, system: string, metric: string): Summary {
  const records = results.records.filter((r) => r.workload === workload && r.system === system);
  const values = records
    .filter((r) => r.ok && r.metrics && Number.isFinite(r.metrics[metric]))
    .map((r) => r.metrics![metric]);
  const [min, max] = range(values);
  return {
    median: median(values),
    min,
    max,
    ok: records.filter((r) => r.ok).length,
    failed: records.filter((r) => !r.ok).length,
    errors: [...new Set(records.filter((r) => !r.ok).map((r) => r.error ?? "failed"))],
  };
}

/** >1 means errand is better by that factor (whichever way "better" points for the metric). */
export function advantage(errand: number, other: number, metric: Metric): number {
  if (!Number.isFinite(errand) || !Number.isFinite(other) || errand <= 0 || other <= 0) return Number.NaN;
  return metric.better === "higher" ? errand / other : other / errand;
}

export function fmt(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return "—";
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
