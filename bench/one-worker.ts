/**
 * errand with one worker in this process, no child processes: N no-op jobs (default 30,000) at a
 * concurrency (default 50) on SQLite (a fresh file) or Postgres (a fresh schema); prints jobs/s,
 * worker CPU per 1,000 jobs (this process: worker and, on SQLite, the database), peak RSS and the
 * young-generation collections of the timed phase (a count of what it allocates, load or not).
 * The clock stops when the last outcome is written (the worker's graceful stop drains them).
 * For quick before/after checks of the worker's hot path; `npm run bench` is the comparison.
 * Like the bench, it runs the compiled package (dist/): `npm run build` first.
 *
 *   npm run build && node --import tsx bench/one-worker.ts [sqlite|postgres] [jobs] [concurrency] [batchSize] [readAhead]
 *
 * BENCH_CRASH_SCOPE=1 runs each job in its crash-attribution scope, as under `errand worker` or
 * runUntilSignal (src/worker/crash.ts); without it, as `errand.work()` alone.
 * BENCH_PROFILE=FILE.cpuprofile profiles the timed phase only (no module loading, no enqueue):
 * summarise it with `node --import tsx bench/profile-summary.ts FILE.cpuprofile`.
 * BENCH_HEAP_PROFILE=FILE.heapprofile samples what the timed phase allocates (collected objects
 * included, one sample per 32 KB): open it in Chrome DevTools' Memory tab, or sum it by function
 * with `node --import tsx bench/heap-summary.ts FILE.heapprofile`.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { constants, PerformanceObserver } from "node:perf_hooks";
import pg from "pg";
import { defineJob, openErrand, silentLogger } from "../dist/index.js";

const [kind = "sqlite", jobs = "30000", concurrency = "50", batchSize, readAhead] = process.argv.slice(2);
const N = Number(jobs);
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const schema = `one_worker_${process.pid}`;
const passThrough = {
  "~standard": { version: 1, vendor: "x", validate: (v: unknown) => ({ value: v }) },
} as const;
let ran = 0;
let allRan: () => void = () => {};
const done = new Promise<void>((resolve) => {
  allRan = resolve;
});
const noop = defineJob({
  name: "noop",
  queue: "q",
  schema: passThrough as never,
  run: () => {
    if (++ran === N) allRan();
  },
});
if (process.env.BENCH_CRASH_SCOPE === "1") (await import("../dist/worker/crash.js")).attributeCrashes();
const url = kind === "postgres" ? PG_URL : join(mkdtempSync(join(tmpdir(), "errand-one-worker-")), "e.db");
const errand = await openErrand({ url, schema, jobs: [noop], logger: silentLogger() });
for (let i = 0; i < N; i += 5000)
  await errand.enqueueMany(
    noop,
    Array.from({ length: Math.min(5000, N - i) }, () => ({ payload: {} })),
  );
let peak = 0;
const sampler = setInterval(() => {
  // rss() alone: memoryUsage() also walks V8's heap spaces, which the profile showed as 3.5% of
  // the timed phase's samples (finding 15 in bench/NOTES.md) — the bench's cost, not the worker's.
  peak = Math.max(peak, process.memoryUsage.rss());
}, 50);
const profileTo = process.env.BENCH_PROFILE;
const heapTo = process.env.BENCH_HEAP_PROFILE;
const session = profileTo || heapTo ? new Session() : undefined;
if (session) session.connect();
if (session && profileTo) {
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
}
if (session && heapTo) {
  await session.post("HeapProfiler.enable");
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 32 * 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
}
// Young-generation collections in the timed phase: how much the worker allocates, whatever the load.
let scavenges = 0;
const gcs = new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR)
      scavenges++;
});
gcs.observe({ entryTypes: ["gc"] });
const cpu0 = process.cpuUsage();
const t0 = Date.now();
const worker = errand.work(
  { q: { concurrency: Number(concurrency) } },
  {
    ...(batchSize ? { batchSize: Number(batchSize) } : {}),
    // A number is milliseconds ("0" turns read-ahead off); otherwise a duration like "100ms".
    ...(readAhead
      ? { readAhead: /^\d+$/.test(readAhead) ? Number(readAhead) : (readAhead as `${number}ms`) }
      : {}),
  },
);
await done;
await worker.stop(); // every outcome written
const ms = Date.now() - t0;
const cpu = process.cpuUsage(cpu0);
gcs.disconnect();
if (session && profileTo) {
  const { profile } = await session.post("Profiler.stop");
  writeFileSync(profileTo, JSON.stringify(profile));
}
if (session && heapTo) {
  const { profile } = await session.post("HeapProfiler.stopSampling");
  writeFileSync(heapTo, JSON.stringify(profile));
}
session?.disconnect();
const completed = (await errand.stats()).find((q) => q.queue === "q")?.completed;
if (completed !== N) throw new Error(`expected ${N} completed jobs, the store says ${completed}`);
clearInterval(sampler);
console.log(
  `${kind}: ${N} jobs in ${ms} ms = ${Math.round((N / ms) * 1000)} jobs/s; cpu ${((cpu.user + cpu.system) / 1000 / (N / 1000)).toFixed(1)} ms/1000 jobs; peak rss ${Math.round(peak / 1e6)} MB; ${scavenges} scavenges`,
);
await errand.close();
if (kind === "postgres") {
  const client = new pg.Client(PG_URL);
  await client.connect();
  await client.query(`DROP SCHEMA ${schema} CASCADE`);
  await client.end();
}
