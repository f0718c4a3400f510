/**
 * waitFor's settle latency: 1,000 jobs enqueued, a waitFor on each from this process, a worker
 * in this process runs them (concurrency 20, 10 ms each). For every job: the time from
 * its finish (the store's finished_at: the start of the statement that completed it, so the
 * figure includes that statement's own commit) to the moment its promise settled here. The
 * waits use `waitRecheck: "1h"`: every settle came from a notification, none from the recheck.
 *
 *   node --import tsx bench/wait-for.ts [memory|sqlite|postgres|all] [jobs, default 1000]
 *
 * Prints p50/p95/p99/max per store, how much of it passed before the wake-up reached this
 * process, and the machine's load average at the start and the end (2 shared cores: quote the
 * load with the figures).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { z } from "zod";
import { defineJob, openErrand, silentLogger } from "../src/index.js";

const args = process.argv.slice(2);
const which = args[0] ?? "all";
const N = Number(args[1] ?? 1000);
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

const square = defineJob({
  name: "square",
  queue: "wait",
  schema: z.object({ n: z.number() }),
  run: async ({ n }) => {
    // Each job takes a few ms, so finishes spread over time as in an application, instead of
    // 1,000 no-op jobs finishing in one burst that holds this process's event loop.
    await new Promise((resolve) => setTimeout(resolve, 10));
    return n * n;
  },
});

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function run(kind: "memory" | "sqlite" | "postgres"): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "errand-wait-bench-"));
  const schema = `wait_bench_${process.pid}`;
  const url = kind === "memory" ? "memory:" : kind === "sqlite" ? join(dir, "e.db") : PG_URL;
  const errand = await openErrand({
    url,
    ...(kind === "postgres" ? { schema } : {}),
    jobs: [square],
    logger: silentLogger(),
    waitRecheck: "1h",
  });
  try {
    const jobs = await errand.enqueueMany(
      square,
      Array.from({ length: N }, (_, n) => ({ payload: { n } })),
    );
    const settledAt = new Map<string, number>();
    // When each job's wake-up reached this process (the first that named it).
    const wokenAt = new Map<string, number>();
    const subscribe = errand.store.onJobsFinished.bind(errand.store);
    errand.store.onJobsFinished = (listener) =>
      subscribe((ids) => {
        const now = Date.now();
        for (const id of ids ?? []) if (!wokenAt.has(id)) wokenAt.set(id, now);
        listener(ids);
      });
    const waits = jobs.map((job) => errand.waitFor(job).then(() => settledAt.set(job.id, Date.now())));
    const worker = errand.work({ wait: { concurrency: 20 } }, { pollInterval: 50 });
    await Promise.all(waits);
    await worker.stop();
    const latencies: number[] = [];
    const toWake: number[] = [];
    for (const job of jobs) {
      const record = await errand.getJob(job.id);
      const finished = record?.finishedAt?.getTime();
      if (finished === undefined) throw new Error(`job ${job.id} has no finish time`);
      latencies.push((settledAt.get(job.id) ?? Number.NaN) - finished);
      const woken = wokenAt.get(job.id);
      if (woken !== undefined) toWake.push(woken - finished);
    }
    latencies.sort((a, b) => a - b);
    toWake.sort((a, b) => a - b);
    const fmt = (v: number) => `${v.toFixed(0)} ms`;
    console.log(
      `${kind.padEnd(8)} ${N} waits: settle after finish p50 ${fmt(percentile(latencies, 50))}, p95 ${fmt(percentile(latencies, 95))}, p99 ${fmt(percentile(latencies, 99))}, max ${fmt(latencies[latencies.length - 1])}; within 50 ms: ${latencies.filter((l) => l <= 50).length}/${N}`,
    );
    if (toWake.length > 0)
      console.log(
        `${"".padEnd(8)} of which finish → wake-up arrived: p50 ${fmt(percentile(toWake, 50))}, p95 ${fmt(percentile(toWake, 95))} (${toWake.length} jobs named by a wake-up)`,
      );
  } finally {
    await errand.close();
    rmSync(dir, { recursive: true, force: true });
    if (kind === "postgres") {
      const client = new pg.Client(PG_URL);
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  }
}

console.log(
  `load average at start: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
for (const kind of ["memory", "sqlite", "postgres"] as const)
  if (which === "all" || which === kind) await run(kind);
console.log(
  `load average at end: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
