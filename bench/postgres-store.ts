/**
 * PostgreSQL store micro-benchmark: the store alone, no worker runtime.
 *
 *   node --import tsx bench/postgres-store.ts
 *
 * - bulk insert: 100,000 jobs in one insertJobs call (one transaction, 5,000-row statements);
 * - processing: claim (batch 100) + finishJobs (the whole batch, one statement) over 50,000
 *   no-op jobs, with 1 and with 4 concurrent claimers on one queue.
 * Each measurement runs 3 times on a fresh schema; the median is printed. URL from
 * ERRAND_BENCH_PG_URL / ERRAND_TEST_PG_URL (default postgres://postgres@127.0.0.1:5432/test).
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { openPostgresStore, type PostgresStore } from "../src/store/postgres/index.js";
import type { NewJob } from "../src/store/types.js";

const url =
  process.env.ERRAND_BENCH_PG_URL ||
  process.env.ERRAND_TEST_PG_URL ||
  "postgres://postgres@127.0.0.1:5432/test";
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

async function withStore<T>(fn: (store: PostgresStore) => Promise<T>): Promise<T> {
  const schema = `errand_bench_${randomBytes(4).toString("hex")}`;
  const store = openPostgresStore({ url, schema, poolSize: 10 });
  try {
    await store.migrate();
    return await fn(store);
  } finally {
    await store.close();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}

function jobs(n: number, queue = "bench"): NewJob[] {
  return Array.from({ length: n }, (_, i) => ({
    queue,
    name: "noop",
    payload: { i },
    priority: 0,
    maxAttempts: 3,
  }));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function bulkInsert(n: number): Promise<number> {
  return withStore(async (store) => {
    const batch = jobs(n);
    const start = performance.now();
    const results = await store.insertJobs(batch);
    const seconds = (performance.now() - start) / 1000;
    if (results.length !== n) throw new Error("short insert");
    return n / seconds;
  });
}

async function processJobs(n: number, claimers: number, batch = 100): Promise<number> {
  return withStore(async (store) => {
    await store.insertJobs(jobs(n));
    let done = 0;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: claimers }, async (_, w) => {
        for (;;) {
          const claimed = await store.claimJobs({
            queue: "bench",
            limit: batch,
            workerId: `w${w}`,
            leaseMs: 30_000,
          });
          if (claimed.length === 0) return;
          const applied = await store.finishJobs(
            claimed.map((c) => ({
              id: c.id,
              leaseToken: c.leaseToken,
              kind: "completed" as const,
              result: null,
              worker: `w${w}`,
            })),
          );
          done += applied.filter(Boolean).length;
        }
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    if (done !== n) throw new Error(`processed ${done} of ${n}`);
    return n / seconds;
  });
}

async function measure(label: string, fn: () => Promise<number>): Promise<void> {
  const rates: number[] = [];
  for (let i = 0; i < RUNS; i++) rates.push(await fn());
  console.log(
    `${label.padEnd(52)} ${Math.round(median(rates)).toLocaleString("en-US").padStart(9)} jobs/s  (runs: ${rates.map((r) => Math.round(r)).join(", ")})`,
  );
}

console.log(
  `errand PostgreSQL store bench — ${url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@")}, median of ${RUNS}`,
);
await measure("bulk insert 100,000 jobs (one insertJobs call)", () => bulkInsert(100_000));
await measure("claim(100) + finishJobs, 50,000 no-op jobs, 1 claimer", () => processJobs(50_000, 1));
await measure("claim(100) + finishJobs, 50,000 no-op jobs, 4 claimers", () => processJobs(50_000, 4));
