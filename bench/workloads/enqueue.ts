/** The enqueue workloads: how fast jobs get in, in batches and one awaited call at a time. */
import { now } from "../adapters/types.js";
import type { Counts, WorkloadDef } from "../workloads.js";
import { noop, open, THROUGHPUT } from "./steps.js";

export function bulkWorkload(counts: Counts): WorkloadDef {
  return {
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
  };
}

export function singleWorkload(counts: Counts): WorkloadDef {
  return {
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
  };
}
