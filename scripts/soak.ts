/**
 * Soak: SOAK_JOBS (default 1,000,000) no-op jobs through PostgreSQL with four worker processes
 * (test/fixtures/chaos-worker.ts, the library's own worker), reporting every worker's memory
 * (RSS) over time, throughput, and enqueue-to-start / enqueue-to-finish latency percentiles
 * (database clock). Not part of CI: `npm run soak`.
 *
 * The producer keeps at most SOAK_BACKLOG (default 20,000) jobs pending, so the latency is that of
 * a steady stream, not of draining a backlog. PostgreSQL: SOAK_PG_URL, else a private cluster
 * started for the run (as for the chaos test) and deleted afterwards. SOAK_WORKERS (default 4),
 * SOAK_CONCURRENCY (default 50), SOAK_REPORT=<file.json> writes the figures.
 */
import { writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { openErrand, silentLogger } from "../src/index.js";
import type { AnyJobDefinition } from "../src/job.js";
import { openPostgresStore } from "../src/store/postgres/index.js";
import {
  killAll,
  type PrivatePostgres,
  type Proc,
  spawnWorker,
  startPrivatePostgres,
  stopAll,
  whenReady,
} from "../test/chaos/harness.js";
import { clock } from "../test/fixtures/chaos-jobs.js";

const env = process.env;
const TOTAL = Number(env.SOAK_JOBS ?? 1_000_000);
const WORKERS = Number(env.SOAK_WORKERS ?? 4);
const CONCURRENCY = Number(env.SOAK_CONCURRENCY ?? 50);
const BACKLOG = Number(env.SOAK_BACKLOG ?? 20_000);
const BATCH = 5_000;
const SCHEMA = `errand_soak_${process.pid}`;

async function rssMb(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const m = /VmRSS:\s+(\d+) kB/.exec(status);
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  let server: PrivatePostgres | undefined;
  const procs: Proc[] = [];
  if (!env.SOAK_PG_URL) server = await startPrivatePostgres();
  const url = env.SOAK_PG_URL ?? (server as PrivatePostgres).url;
  const pool = new pg.Pool({ connectionString: url, max: 4, application_name: "soak" });
  pool.on("error", () => {});
  const store = openPostgresStore({ pool, schema: SCHEMA });
  try {
    await store.migrate();
    const errand = await openErrand({
      store,
      jobs: [clock] as unknown as AnyJobDefinition[],
      logger: silentLogger(),
    });
    for (let i = 0; i < WORKERS; i++) {
      procs.push(
        spawnWorker({
          CHAOS_URL: url,
          CHAOS_SCHEMA: SCHEMA,
          CHAOS_QUEUES: "clock",
          CHAOS_CONCURRENCY: String(CONCURRENCY),
          CHAOS_LEASE_MS: "15000",
          CHAOS_POLL_MS: "1000",
          CHAOS_LOG_LEVEL: "error",
        }),
      );
    }
    await Promise.all(procs.map((p) => whenReady(p)));
    console.log(
      `soak: ${TOTAL.toLocaleString("en")} jobs, ${WORKERS} workers × concurrency ${CONCURRENCY}, PostgreSQL ${server ? "private cluster" : url.replace(/\/\/[^@/]*@/, "//***@")}`,
    );

    const t0 = Date.now();
    let enqueued = 0;
    const counts = async () => {
      const s = (await store.stats()).find((q) => q.queue === "clock");
      return {
        done: (s?.completed ?? 0) + (s?.failed ?? 0),
        pending: (s?.pending ?? 0) + (s?.delayed ?? 0) + (s?.running ?? 0),
      };
    };
    const producer = (async () => {
      while (enqueued < TOTAL) {
        const { pending } = await counts();
        if (pending > BACKLOG) {
          await sleep(20);
          continue;
        }
        const n = Math.min(BATCH, TOTAL - enqueued);
        await errand.enqueueMany(
          clock,
          Array.from({ length: n }, () => ({ payload: { ms: 0, firstOnly: false } })),
        );
        enqueued += n;
      }
    })();

    const samples: { t: number; done: number; rss: (number | null)[] }[] = [];
    let lastPrint = 0;
    for (;;) {
      await sleep(2_000);
      const { done } = await counts();
      const rss = await Promise.all(procs.map((p) => rssMb(p.pid)));
      const t = (Date.now() - t0) / 1000;
      samples.push({ t, done, rss });
      if (t - lastPrint >= 10 || done >= TOTAL) {
        lastPrint = t;
        const prev = samples.length > 5 ? samples[samples.length - 6] : samples[0];
        const rate = (done - prev.done) / Math.max(0.001, t - prev.t);
        console.log(
          `  ${t.toFixed(0).padStart(5)} s  ${done.toLocaleString("en").padStart(10)} done  ${Math.round(rate).toLocaleString("en").padStart(7)} jobs/s  RSS MB ${rss.join(" / ")}`,
        );
      }
      if (done >= TOTAL) break;
      if (procs.some((p) => p.done)) throw new Error("a worker process exited during the soak");
    }
    await producer;
    const seconds = (Date.now() - t0) / 1000;
    await stopAll(procs, 30_000);

    const { rows } = await pool.query(`
      SELECT percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at) * 1000) AS start_ms,
             percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at) * 1000) AS finish_ms,
             max(extract(epoch FROM finished_at - created_at) * 1000) AS max_finish_ms,
             count(*) FILTER (WHERE state = 'completed') AS completed,
             count(*) FILTER (WHERE jsonb_array_length(attempts) > 1) AS rerun
      FROM "${SCHEMA}".jobs`);
    const lat = rows[0];
    const fmt = (a: number[]) => a.map((v) => `${Number(v).toFixed(1)} ms`).join(" / ");
    // Memory after warm-up (the first 10% of the run) against the end: growth would be a leak.
    const warm = samples.filter((s) => s.t >= seconds * 0.1);
    const rssOf = (s: (typeof samples)[number]) => Math.max(...s.rss.map((r) => r ?? 0));
    const report = {
      jobs: TOTAL,
      completed: Number(lat.completed),
      rerun: Number(lat.rerun),
      workers: WORKERS,
      concurrency: CONCURRENCY,
      seconds: Math.round(seconds),
      jobsPerSecond: Math.round(TOTAL / seconds),
      startLatencyMs: { p50: lat.start_ms[0], p95: lat.start_ms[1], p99: lat.start_ms[2] },
      finishLatencyMs: {
        p50: lat.finish_ms[0],
        p95: lat.finish_ms[1],
        p99: lat.finish_ms[2],
        max: Number(lat.max_finish_ms),
      },
      rssMb: {
        afterWarmup: warm.length > 0 ? rssOf(warm[0]) : null,
        peak: Math.max(...samples.map(rssOf)),
        end: samples.length > 0 ? rssOf(samples[samples.length - 1]) : null,
        timeline: samples
          .filter((_, i) => i % Math.max(1, Math.floor(samples.length / 20)) === 0)
          .map((s) => ({ t: Math.round(s.t), done: s.done, rss: s.rss })),
      },
    };
    console.log(
      `soak done: ${report.completed.toLocaleString("en")} of ${TOTAL.toLocaleString("en")} completed in ${report.seconds} s (${report.jobsPerSecond.toLocaleString("en")} jobs/s), ${report.rerun} ran twice\n` +
        `  enqueue→start p50/p95/p99: ${fmt(lat.start_ms)}; enqueue→finish: ${fmt(lat.finish_ms)}\n` +
        `  worker RSS (largest of ${WORKERS}): ${report.rssMb.afterWarmup} MB after warm-up, ${report.rssMb.peak} MB peak, ${report.rssMb.end} MB at the end`,
    );
    if (env.SOAK_REPORT) writeFileSync(env.SOAK_REPORT, JSON.stringify(report, null, 2));
    if (report.completed !== TOTAL) process.exitCode = 1;
    await errand.close();
  } finally {
    await killAll(procs);
    await store.close().catch(() => {});
    await pool.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`).catch(() => {});
    await pool.end().catch(() => {});
    server?.destroy();
  }
}

await main();
