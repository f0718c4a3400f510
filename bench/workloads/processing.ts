/**
 * The processing workloads: workers draining no-op jobs (steady state and a burst into a
 * never-analyzed table), and a mixed run of priorities, delays and retries.
 */
import type { JobSpec } from "../adapters/types.js";
import { now } from "../adapters/types.js";
import { settle } from "../settle.js";
import type { Counts, WorkloadDef } from "../workloads.js";
import { CPU, finish, HEAP, MB, noop, open, phase, RSS, spawn, THROUGHPUT } from "./steps.js";

export function processWorkloads(counts: Counts): WorkloadDef[] {
  return counts.processVariants.map(({ concurrency, processes, burst }) => {
    const n = counts.process;
    const workers = `${processes} worker process${processes > 1 ? "es" : ""}`;
    return {
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
        const { complete, end, reports, done } = await finish(adapter, procs, n, counts.budgetMs);
        const seconds = (end - procs.firstStart) / 1000;
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
    };
  });
}

export function mixedWorkload(counts: Counts): WorkloadDef {
  const m = counts.mixed;
  return {
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
      const { complete, end, reports, done } = await finish(adapter, procs, m, counts.budgetMs);
      const seconds = (end - t0) / 1000;
      return {
        jobsPerSec: (complete ? m : done) / seconds,
        seconds,
        ...(complete ? {} : { partial: done }),
        retries: reports.reduce((a, r) => a + r.failed, 0),
        peakRssMb: Math.max(...reports.map((r) => r.peakRss)) / MB,
        cpuMsPer1k: reports.reduce((a, r) => a + r.cpuMs, 0) / (m / 1000),
      };
    },
  };
}
