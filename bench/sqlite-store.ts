/**
 * The SQLite store on its own, no worker around it:
 *
 *   node --import tsx bench/sqlite-store.ts            (ERRAND_BENCH_LARGE=0 skips the 1M-row part)
 *
 * 1. bulk insert: 100,000 jobs in one insertJobs call (one transaction);
 * 2. claim(batch 50) + finishJobs(completed) until 50,000 jobs are done, all of one priority
 *    (FIFO) and with three priorities interleaved;
 * 3. with 1,000,000 pending rows: claim latency, stats() and nextRunAt() times.
 *
 * Each run uses a fresh database file under bench/.work/ (WAL, synchronous=NORMAL). Parts 1 and
 * 2 run three times and report the best run, as wall-clock jobs/s and as jobs per CPU-second of
 * this process (the second stays meaningful on a machine busy with other work).
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { openSqliteStore, type SqliteStore } from "../src/store/sqlite/index.js";
import type { NewJob } from "../src/store/types.js";

const dir = join(import.meta.dirname ?? ".", ".work");
mkdirSync(dir, { recursive: true });

async function fresh(name: string): Promise<{ store: SqliteStore; done: () => Promise<void> }> {
  const path = join(dir, `${name}-${process.pid}.db`);
  for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
  const store = openSqliteStore({ path });
  await store.migrate();
  return {
    store,
    done: async () => {
      await store.close();
      for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
    },
  };
}

/** `priorities` 3: priorities 0, 1, 2 interleaved, so claim order skips around the table. */
const jobs = (n: number, queue = "bench", priorities = 3): NewJob[] =>
  Array.from({ length: n }, (_, i) => ({
    queue,
    name: "noop",
    payload: { i, to: `user${i}@example.com` },
    priority: i % priorities,
    maxAttempts: 3,
  }));

const rate = (n: number, ms: number) => `${Math.round((n / ms) * 1000).toLocaleString("en-US")} jobs/s`;
const fmt = (ms: number) => `${ms.toFixed(ms < 10 ? 2 : 0)} ms`;
const RUNS = 3;

/** Wall-clock and CPU (user + system) milliseconds of `fn`. */
async function measure(fn: () => Promise<void>): Promise<{ wall: number; cpu: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { wall, cpu: (cpu.user + cpu.system) / 1000 };
}

function report(what: string, n: number, runs: { wall: number; cpu: number }[]): void {
  const wall = Math.min(...runs.map((r) => r.wall));
  const cpu = Math.min(...runs.map((r) => r.cpu));
  console.log(
    `${what.padEnd(34)} best of ${runs.length}: ${fmt(wall)} = ${rate(n, wall)} wall, ${rate(n, cpu)} of CPU`,
  );
}

async function bulkInsert(): Promise<void> {
  const runs = [];
  for (let run = 0; run < RUNS; run++) {
    const { store, done } = await fresh("insert");
    const batch = jobs(100_000);
    runs.push(
      await measure(async () => {
        const results = await store.insertJobs(batch);
        if (results.length !== 100_000) throw new Error("insert count");
      }),
    );
    await done();
  }
  report("bulk insert 100,000 jobs", 100_000, runs);
}

async function claimFinish(priorities: number): Promise<void> {
  const runs = [];
  for (let run = 0; run < RUNS; run++) {
    const { store, done } = await fresh("claim");
    await store.insertJobs(jobs(50_000, "bench", priorities));
    let finished = 0;
    runs.push(
      await measure(async () => {
        for (;;) {
          const claimed = await store.claimJobs({
            queue: "bench",
            limit: 50,
            workerId: "bench",
            leaseMs: 30_000,
          });
          if (claimed.length === 0) break;
          const applied = await store.finishJobs(
            claimed.map((j) => ({
              id: j.id,
              leaseToken: j.leaseToken,
              kind: "completed" as const,
              worker: "bench",
            })),
          );
          finished += applied.filter(Boolean).length;
        }
      }),
    );
    if (finished !== 50_000) throw new Error(`finished ${finished}`);
    await done();
  }
  report(`claim(50) + finishJobs, ${priorities} prio${priorities > 1 ? "s" : ""}`, 50_000, runs);
}

async function large(): Promise<void> {
  const { store, done } = await fresh("large");
  const t0 = performance.now();
  for (let i = 0; i < 10; i++) await store.insertJobs(jobs(100_000, i % 2 ? "big" : "other"));
  console.log(`setup          1,000,000 pending jobs in ${fmt(performance.now() - t0)}`);
  // Some finished history for the last-hour/day counts.
  for (let i = 0; i < 200; i++) {
    const claimed = await store.claimJobs({ queue: "big", limit: 50, workerId: "bench", leaseMs: 30_000 });
    await store.finishJobs(
      claimed.map((j) => ({ id: j.id, leaseToken: j.leaseToken, kind: "completed" as const, worker: "w" })),
    );
  }
  const samples: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    const claimed = await store.claimJobs({ queue: "big", limit: 50, workerId: "bench", leaseMs: 30_000 });
    samples.push(performance.now() - t);
    await store.finishJobs(
      claimed.map((j) => ({ id: j.id, leaseToken: j.leaseToken, kind: "completed" as const, worker: "w" })),
    );
  }
  samples.sort((a, b) => a - b);
  console.log(`claim(50) at 1M rows: median ${fmt(samples[100])}, p99 ${fmt(samples[198])}`);
  let t = performance.now();
  const stats = await store.stats();
  console.log(
    `stats() at 1M rows: ${fmt(performance.now() - t)} (${stats.map((s) => `${s.queue}: ${s.pending} pending, ${s.completed} completed`).join("; ")})`,
  );
  t = performance.now();
  await store.nextRunAt(["big", "other"]);
  console.log(`nextRunAt() at 1M rows: ${fmt(performance.now() - t)}`);
  t = performance.now();
  const page = await store.listJobs({ queue: "big", limit: 50 });
  await store.listJobs({ queue: "big", limit: 50, cursor: page.nextCursor ?? undefined });
  console.log(`listJobs(queue) 2 pages at 1M rows: ${fmt(performance.now() - t)}`);
  await done();
}

await bulkInsert();
await claimFinish(1);
await claimFinish(3);
if (process.env.ERRAND_BENCH_LARGE !== "0") await large();
