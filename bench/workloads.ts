/**
 * The workloads: what one run of one system does and what it measures. Every run starts
 * on a fresh schema / key prefix / file (setup and teardown are not timed).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Adapter, FlowCondition, JobSpec, SystemDef, Target, WorkerSettings } from "./adapters/types.js";
import { now } from "./adapters/types.js";
import { WorkerProcs } from "./children.js";
import { settle } from "./settle.js";
import { percentile } from "./stats.js";

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

const MB = 1024 * 1024;

/** BENCH_DEBUG=1: phase timings of each run on stderr. */
const debug = process.env.BENCH_DEBUG === "1";
let phaseAt = 0;
function phase(name: string): void {
  if (!debug) return;
  const t = now();
  process.stderr.write(`  · ${name}${phaseAt ? ` (+${((t - phaseAt) / 1000).toFixed(2)} s)` : ""}\n`);
  phaseAt = t;
}

const THROUGHPUT: Metric = {
  key: "jobsPerSec",
  label: "jobs/s",
  unit: "jobs/s",
  better: "higher",
  digits: 0,
};
const RSS: Metric = {
  key: "peakRssMb",
  label: "peak RSS per worker process",
  unit: "MB",
  better: "lower",
  digits: 0,
};
const HEAP: Metric = { key: "peakHeapMb", label: "peak JS heap", unit: "MB", better: "lower", digits: 0 };
const CPU: Metric = {
  key: "cpuMsPer1k",
  label: "worker CPU per 1,000 jobs",
  unit: "ms",
  better: "lower",
  digits: 1,
};

async function open(system: SystemDef, scope: RunScope): Promise<Adapter> {
  phaseAt = 0;
  phase("open");
  scope.adapter = await system.create(scope.target);
  await scope.adapter.setup();
  phase("set up");
  return scope.adapter;
}

async function spawn(
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
async function within(promise: Promise<void>, ms: number): Promise<boolean> {
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

function noop(n: number): JobSpec[] {
  return Array.from({ length: n }, (_, i) => ({ payload: { i, t: 0 } }));
}

/**
 * Enqueues `count` jobs one call each at `rate` per second, stamping each with its send time.
 * At most MAX_IN_FLIGHT calls are outstanding (like a server with bounded concurrency): a
 * system that cannot keep up falls behind the rate (the achieved rate is reported) and the
 * wait shows in its latency, instead of its connection pool timing out.
 */
const MAX_IN_FLIGHT = 50;

async function paced(
  adapter: Adapter,
  count: number,
  rate: number,
  measured: boolean,
  settings: WorkerSettings,
): Promise<number> {
  const errors: Error[] = [];
  const inFlight = new Set<Promise<void>>();
  const t0 = now();
  let sent = 0;
  while (sent < count) {
    const due = Math.min(count, Math.floor(((now() - t0) * rate) / 1000) + 1);
    while (sent < due && inFlight.size < MAX_IN_FLIGHT) {
      const payload = measured ? { i: sent, t: now(), m: 1 as const } : { i: sent, t: now() };
      const call: Promise<void> = adapter
        .enqueueOne({ payload }, settings)
        .catch((err: Error) => void errors.push(err))
        .finally(() => inFlight.delete(call));
      inFlight.add(call);
      sent++;
    }
    if (errors.length) break;
    if (sent < count) await (inFlight.size >= MAX_IN_FLIGHT ? Promise.race(inFlight) : sleep(1));
  }
  const elapsed = now() - t0;
  await Promise.all(inFlight);
  if (errors.length) throw new Error(`${errors.length} enqueues failed: ${errors[0].message}`);
  return (count / Math.max(elapsed, 1)) * 1000;
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
  const list: WorkloadDef[] = [];

  list.push({
    name: "bulk",
    group: "bulk",
    title: `Bulk enqueue (${counts.bulk.toLocaleString("en-US")} jobs)`,
    description: `${counts.bulk.toLocaleString("en-US")} jobs through the system's batch API in chunks of 5,000 (Sidequest: no batch API, single enqueues 10 in flight), from the harness process. Time from the first call to the last answer.`,
    metrics: [THROUGHPUT],
    timeoutMs: 30_000 + counts.bulk / 2,
    async run(system, scope) {
      const adapter = await open(system, scope);
      const jobs = noop(counts.bulk);
      const settings = { concurrency: 1, maxAttempts: 3 };
      const t0 = now();
      await adapter.bulkEnqueue(jobs, settings);
      const seconds = (now() - t0) / 1000;
      const stored = await adapter.remaining();
      if (stored !== counts.bulk) throw new Error(`expected ${counts.bulk} jobs stored, found ${stored}`);
      return { jobsPerSec: counts.bulk / seconds, seconds };
    },
  });

  list.push({
    name: "single",
    group: "single",
    title: `Single enqueue (${counts.single.toLocaleString("en-US")} sequential calls)`,
    description: `${counts.single.toLocaleString("en-US")} enqueue calls, each awaited before the next, from the harness process.`,
    metrics: [{ key: "callsPerSec", label: "calls/s", unit: "calls/s", better: "higher", digits: 0 }],
    timeoutMs: 30_000 + counts.single * 5,
    async run(system, scope) {
      const adapter = await open(system, scope);
      const settings = { concurrency: 1, maxAttempts: 3 };
      const t0 = now();
      for (let i = 0; i < counts.single; i++)
        await adapter.enqueueOne({ payload: { i, t: now() } }, settings);
      const seconds = (now() - t0) / 1000;
      return { callsPerSec: counts.single / seconds, msPerCall: (seconds * 1000) / counts.single };
    },
  });

  for (const { concurrency, processes, burst } of counts.processVariants) {
    const n = counts.process;
    const workers = `${processes} worker process${processes > 1 ? "es" : ""}`;
    list.push({
      name: `process-c${concurrency}-p${processes}${burst ? "-burst" : ""}`,
      group: "process",
      title: burst
        ? `Burst into a never-analyzed table: ${n.toLocaleString("en-US")} no-op jobs, concurrency ${concurrency}, ${workers}`
        : `Processing ${n.toLocaleString("en-US")} no-op jobs, concurrency ${concurrency}, ${workers}`,
      description: burst
        ? `As the steady-state run, but the workers start right after the bulk enqueue into the fresh schema, whose tables have never been analyzed (the planner's default estimates).`
        : `${n.toLocaleString("en-US")} no-op jobs enqueued in bulk first (not timed), then the system's tables analyzed and a checkpoint taken (not timed: steady state, bench/settle.ts), then ${workers} at concurrency ${concurrency} each. Time from the first handler call to the moment the store records every job finished.`,
      metrics: [THROUGHPUT, RSS, HEAP, CPU],
      timeoutMs: 180_000 + counts.budgetMs, // only a hang: slowness is cut by the budget
      async run(system, scope) {
        const adapter = await open(system, scope);
        const settings = { concurrency, maxAttempts: 3 };
        await adapter.bulkEnqueue(noop(n), settings);
        phase("enqueued");
        if (!burst) {
          await settle(system, scope.target);
          phase("analyzed and checkpointed");
        }
        const procs = await spawn(system, scope, settings, processes);
        await procs.start();
        phase("started");
        const complete = await within(
          procs.until(() => procs.done >= n),
          counts.budgetMs,
        );
        phase(complete ? "all jobs ran" : "budget spent");
        const end = complete ? await drained(adapter, procs.lastAt) : procs.lastAt;
        phase("drained");
        const reports = await procs.report();
        await procs.stop();
        phase("stopped");
        const seconds = (end - procs.firstStart) / 1000;
        const done = reports.reduce((a, r) => a + r.done, 0);
        return {
          jobsPerSec: (complete ? n : done) / seconds,
          seconds,
          ...(complete ? {} : { partial: done }),
          peakRssMb: Math.max(...reports.map((r) => r.peakRss)) / MB,
          peakHeapMb: Math.max(...reports.map((r) => r.peakHeap)) / MB,
          cpuMsPer1k: reports.reduce((a, r) => a + r.cpuMs, 0) / (n / 1000),
          duplicates: complete ? done - n : 0,
        };
      },
    });
  }

  for (const { rate, jobs } of counts.latency) {
    list.push({
      name: `latency-${rate}`,
      group: "latency",
      title: `Enqueue-to-start latency at ${rate.toLocaleString("en-US")} jobs/s`,
      description: `One idle worker process (concurrency 10); the harness enqueues ${jobs.toLocaleString("en-US")} jobs one call each at ${rate} jobs/s (at most ${MAX_IN_FLIGHT} calls in flight) after 20 warm-up jobs. Each payload carries the time the enqueue call was issued; the handler takes the time it starts (same machine, same clock).`,
      metrics: [
        { key: "p50", label: "p50", unit: "ms", better: "lower", digits: 2 },
        { key: "p95", label: "p95", unit: "ms", better: "lower", digits: 2 },
        { key: "p99", label: "p99", unit: "ms", better: "lower", digits: 2 },
        { key: "sentRate", label: "enqueue rate achieved", unit: "jobs/s", better: "higher", digits: 0 },
        RSS,
      ],
      timeoutMs: 60_000 + (jobs / rate) * 1000,
      async run(system, scope) {
        const adapter = await open(system, scope);
        const settings = { concurrency: 10, maxAttempts: 3 };
        const procs = await spawn(system, scope, settings, 1);
        await procs.start();
        await sleep(1000);
        const warmup = 20;
        await paced(adapter, warmup, rate, false, settings);
        await procs.until(() => procs.done >= warmup);
        await sleep(500);
        const sentRate = await paced(adapter, jobs, rate, true, settings);
        await procs.until(() => procs.done >= warmup + jobs);
        const reports = await procs.report();
        await procs.stop();
        const samples = reports.flatMap((r) => r.latencies);
        return {
          p50: percentile(samples, 50),
          p95: percentile(samples, 95),
          p99: percentile(samples, 99),
          max: percentile(samples, 100),
          sentRate,
          peakRssMb: Math.max(...reports.map((r) => r.peakRss)) / MB,
        };
      },
    });
  }

  const m = counts.mixed;
  list.push({
    name: "mixed",
    group: "mixed",
    title: `Mixed run (${m.toLocaleString("en-US")} jobs: priorities, 10% delayed, 1% failing once)`,
    description: `One worker process at concurrency 50 is started first; then ${m.toLocaleString("en-US")} jobs are enqueued in bulk: priorities 0-9, 10% delayed by 0-500 ms, 1% failing on their first attempt and retried (max 3 attempts, the shortest retry delay each system offers). Time from the start of the enqueue until every job is recorded completed.`,
    metrics: [
      THROUGHPUT,
      { key: "retries", label: "retried attempts", unit: "", better: "lower", digits: 0 },
      RSS,
      CPU,
    ],
    timeoutMs: 180_000 + counts.budgetMs,
    async run(system, scope) {
      const adapter = await open(system, scope);
      const settings = { concurrency: 50, maxAttempts: 3 };
      const procs = await spawn(system, scope, settings, 1);
      await procs.start();
      const jobs: JobSpec[] = Array.from({ length: m }, (_, i) => ({
        payload: i % 100 === 7 ? { i, t: 0, f: 1 as const } : { i, t: 0 },
        priority: (i * 7) % 10,
        ...(i % 10 === 3 ? { delayMs: (i * 7919) % 500 } : {}),
      }));
      const t0 = now();
      await adapter.bulkEnqueue(jobs, settings);
      const complete = await within(
        procs.until(() => procs.done >= m),
        counts.budgetMs,
      );
      const end = complete ? await drained(adapter, procs.lastAt) : procs.lastAt;
      const reports = await procs.report();
      await procs.stop();
      const seconds = (end - t0) / 1000;
      const done = reports.reduce((a, r) => a + r.done, 0);
      return {
        jobsPerSec: (complete ? m : done) / seconds,
        seconds,
        ...(complete ? {} : { partial: done }),
        retries: reports.reduce((a, r) => a + r.failed, 0),
        peakRssMb: Math.max(...reports.map((r) => r.peakRss)) / MB,
        cpuMsPer1k: reports.reduce((a, r) => a + r.cpuMs, 0) / (m / 1000),
      };
    },
  });

  list.push(flowWorkload(counts));
  return list;
}

/** The flow workload's conditions, in the order each run measures them; its metrics are named after them. */
export const FLOW_CONDITIONS: { flow: FlowCondition; key: string; label: string }[] = [
  { flow: "none", key: "none", label: "no limit" },
  { flow: "global", key: "global", label: "globalConcurrency 100,000" },
  { flow: "per-key", key: "perKey", label: "per-key concurrency 100,000 (100 keys)" },
  { flow: "rate", key: "rate", label: "rateLimit 1,000,000/s" },
];

/**
 * The cost of flow control when its limit does not bind (issue 16: at most 20% lower throughput):
 * in each run, the four conditions back to back on one database, each on its own queue — no-op
 * jobs enqueued in bulk and settled, then one worker process at concurrency 50 drains them. The
 * ratios are each condition's throughput over the no-limit one of the same run.
 */
function flowWorkload(counts: Counts): WorkloadDef {
  const n = counts.flow;
  const metrics: Metric[] = [
    { ...THROUGHPUT, label: "no limit" },
    ...FLOW_CONDITIONS.slice(1).flatMap(({ key, label }): Metric[] => [
      { key, label, unit: "jobs/s", better: "higher", digits: 0 },
      { key: `${key}Ratio`, label: `${label} ÷ no limit`, unit: "", better: "higher", digits: 2 },
    ]),
  ];
  return {
    name: "flow",
    group: "flow",
    title: `Flow control that does not bind: ${n.toLocaleString("en-US")} no-op jobs per condition, concurrency 50, 1 worker process`,
    description: `In each run, on one fresh database: ${FLOW_CONDITIONS.map((c) => c.label).join(", then ")}, each on its own queue. Each condition: ${n.toLocaleString("en-US")} no-op jobs enqueued in bulk, tables analyzed and checkpointed (not timed), then one worker process at concurrency 50; time from the first handler call to the moment the store records every job finished. The ratio is the condition's throughput over the no-limit one of the same run (aim: at least 0.8).`,
    metrics,
    systems: ["errand-postgres", "errand-sqlite"],
    timeoutMs: 4 * (120_000 + counts.budgetMs),
    async run(system, scope) {
      const adapter = await open(system, scope);
      const out: Record<string, number> = {};
      for (const { flow, key } of FLOW_CONDITIONS) {
        const settings: WorkerSettings = { concurrency: 50, maxAttempts: 3, flow };
        await adapter.bulkEnqueue(noop(n), settings);
        await settle(system, scope.target);
        const procs = await spawn(system, scope, settings, 1);
        await procs.start();
        const complete = await within(
          procs.until(() => procs.done >= n),
          counts.budgetMs,
        );
        const end = complete ? await drained(adapter, procs.lastAt) : procs.lastAt;
        const reports = await procs.report();
        await procs.stop();
        scope.procs = undefined;
        const done = reports.reduce((a, r) => a + r.done, 0);
        out[key] = (complete ? n : done) / ((end - procs.firstStart) / 1000);
        if (!complete) out.partial = done;
      }
      out.jobsPerSec = out.none;
      for (const { key } of FLOW_CONDITIONS.slice(1)) out[`${key}Ratio`] = out[key] / out.none;
      return out;
    },
  };
}
