/**
 * The enqueue path alone, through the public API (openErrand, enqueueMany, enqueue), on each store:
 *
 *   node --import tsx bench/enqueue.ts [memory,sqlite,postgres] [--jobs 100000] [--runs 3]
 *
 * - bulk: `--jobs` jobs through enqueueMany in calls of 5,000 (as `npm run bench` does), then
 *   the same jobs in one call (several Postgres statements in one transaction);
 * - single: 2,000 sequential enqueue calls.
 * Payloads are the bench's ({ i, t }); the schema is a pass-through Standard Schema validator,
 * so the figures are errand's own cost. Each measurement runs `--runs` times on a fresh SQLite
 * file / Postgres schema; the best run is printed, as wall-clock jobs/s and as milliseconds of
 * this process's CPU per 1,000 jobs (the CPU figure stays meaningful on a busy machine; for
 * Postgres it leaves out the server's work). Postgres URL: ERRAND_BENCH_PG_URL /
 * ERRAND_TEST_PG_URL (default postgres://postgres@127.0.0.1:5432/test).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import pg from "pg";
import { defineJob, type Errand, openErrand, silentLogger } from "../src/index.js";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { jobs: { type: "string", default: "100000" }, runs: { type: "string", default: "3" } },
});
const JOBS = Number(args.jobs);
const RUNS = Number(args.runs);
const SINGLE = 2_000;
const CHUNK = 5_000;
const stores = (positionals[0] ?? "memory,sqlite,postgres").split(",");
const pgUrl =
  process.env.ERRAND_BENCH_PG_URL ||
  process.env.ERRAND_TEST_PG_URL ||
  "postgres://postgres@127.0.0.1:5432/test";
const dir = join(import.meta.dirname ?? ".", ".work");

type Payload = { i: number; t: number };
const passThrough: StandardSchemaV1<Payload> = {
  "~standard": { version: 1, vendor: "bench", validate: (value) => ({ value: value as Payload }) },
};
const job = defineJob({ name: "bench-noop", queue: "bench", schema: passThrough, run: () => {} });

async function withErrand<T>(store: string, fn: (errand: Errand) => Promise<T>): Promise<T> {
  const id = randomBytes(4).toString("hex");
  const logger = silentLogger();
  let errand: Errand;
  let cleanup = async () => {};
  if (store === "memory") errand = await openErrand({ url: "memory:", logger });
  else if (store === "sqlite") {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `enqueue-${id}.db`);
    errand = await openErrand({ url: path, logger });
    cleanup = async () => {
      for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
    };
  } else {
    const schema = `errand_bench_${id}`;
    errand = await openErrand({ url: pgUrl, schema, logger });
    cleanup = async () => {
      const admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    };
  }
  try {
    return await fn(errand);
  } finally {
    await errand.close();
    await cleanup();
  }
}

interface Measure {
  perSec: number;
  cpuMsPer1000: number;
}

async function measure(n: number, fn: () => Promise<void>): Promise<Measure> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  await fn();
  const ms = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { perSec: (n / ms) * 1000, cpuMsPer1000: ((used.user + used.system) / 1000 / n) * 1000 };
}

async function best(store: string, n: number, fn: (errand: Errand) => Promise<void>): Promise<Measure> {
  const runs: Measure[] = [];
  for (let r = 0; r < RUNS; r++) runs.push(await withErrand(store, (errand) => measure(n, () => fn(errand))));
  return runs.reduce((a, b) => (b.perSec > a.perSec ? b : a));
}

const items = Array.from({ length: JOBS }, (_, i) => ({ payload: { i, t: 0 } }));

const show = (what: string, m: Measure, unit: string) =>
  console.log(
    `${what.padEnd(44)} ${Math.round(m.perSec).toLocaleString("en-US").padStart(9)} ${unit}  ${m.cpuMsPer1000.toFixed(1).padStart(6)} ms CPU / 1,000`,
  );

for (const store of stores) {
  const chunked = await best(store, JOBS, async (errand) => {
    for (let i = 0; i < items.length; i += CHUNK) await errand.enqueueMany(job, items.slice(i, i + CHUNK));
  });
  show(`${store}: enqueueMany ${JOBS.toLocaleString("en-US")} in calls of ${CHUNK}`, chunked, "jobs/s ");
  const whole = await best(store, JOBS, async (errand) => {
    await errand.enqueueMany(job, items);
  });
  show(`${store}: enqueueMany ${JOBS.toLocaleString("en-US")} in one call`, whole, "jobs/s ");
  const single = await best(store, SINGLE, async (errand) => {
    for (let i = 0; i < SINGLE; i++) await errand.enqueue(job, { i, t: Date.now() });
  });
  show(`${store}: enqueue × ${SINGLE.toLocaleString("en-US")}, sequential`, single, "calls/s");
}
