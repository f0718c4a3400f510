/**
 * Jobs for the lease tests (test/reliability/*heartbeat*): `long` runs `ms` and counts its runs;
 * `idle` is the only job of queue "other", so a second worker serving "other" does nothing but
 * rescue — it takes `long` over the moment its lease runs out.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { defineJob } from "../../src/index.js";

export function leaseJobs(ms: number) {
  const counter = { runs: 0 };
  const long = defineJob({
    name: "long",
    queue: "q",
    schema: z.object({}),
    async run() {
      counter.runs++;
      await sleep(ms);
      return "done";
    },
  });
  const idle = defineJob({ name: "idle", queue: "other", schema: z.object({}), run: () => null });
  return { long, idle, counter };
}

/**
 * Leases of 1 s renewed every 100 ms, rescuers every 30 ms: with 300 ms leases a heartbeat
 * delayed by a loaded machine (CI at load 20+) let the rescuer take a job for that reason alone.
 */
export const SHORT_LEASES = { pollInterval: 20, lease: 1000, heartbeat: 100, rescueInterval: 30 };
