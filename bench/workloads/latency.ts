/** The latency workloads: from the enqueue call to the handler's start, at a steady rate. */
import { setTimeout as sleep } from "node:timers/promises";
import type { Adapter, WorkerSettings } from "../adapters/types.js";
import { now } from "../adapters/types.js";
import { percentile } from "../stats.js";
import type { Counts, WorkloadDef } from "../workloads.js";
import { MB, open, RSS, spawn } from "./steps.js";

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

export function latencyWorkloads(counts: Counts): WorkloadDef[] {
  return counts.latency.map(({ rate, jobs }) => ({
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
  }));
}
