/** The flow-control workload: the cost of a limit that does not bind (errand only). */
import type { FlowCondition, WorkerSettings } from "../adapters/types.js";
import { settle } from "../settle.js";
import type { Counts, Metric, WorkloadDef } from "../workloads.js";
import { finish, noop, open, spawn, THROUGHPUT } from "./steps.js";

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
export function flowWorkload(counts: Counts): WorkloadDef {
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
        const { complete, end, done } = await finish(adapter, procs, n, counts.budgetMs);
        scope.procs = undefined;
        out[key] = (complete ? n : done) / ((end - procs.firstStart) / 1000);
        if (!complete) out.partial = done;
      }
      out.jobsPerSec = out.none;
      for (const { key } of FLOW_CONDITIONS.slice(1)) out[`${key}Ratio`] = out[key] / out.none;
      return out;
    },
  };
}
