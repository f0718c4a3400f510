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
 *
 * BENCH_BIG=1 adds the big-table check: the latency of claimJobs(100), insertJobs(1),
 * insertJobs(5,000), nextRunAt and stats() on an empty schema and on one holding 5,000,000
 * finished and 1,000,000 pending jobs (BIG_FINISHED / BIG_PENDING to change; the rows are
 * generated in SQL with triggers off and the counters rebuilt, which needs a superuser).
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

/** Median latency in ms of `fn` over `n` runs. */
async function latency(n: number, fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return median(times);
}

async function fillBig(store: PostgresStore, finished: number, pending: number): Promise<void> {
  const s = `"${store.schema}"`;
  const client = await store.pool.connect();
  try {
    await client.query("SET session_replication_role = replica"); // no triggers: counters rebuilt below
    await client.query(
      `INSERT INTO ${s}.jobs (queue, name, state, attempt, max_attempts, run_at, payload, attempts, created_at, started_at, finished_at)
       SELECT 'q' || (g % 5), 'job', CASE WHEN g % 100 < 90 THEN 'completed' WHEN g % 100 < 97 THEN 'failed' ELSE 'cancelled' END,
              1, 3, t, jsonb_build_object('i', g), '[{"attempt":1,"outcome":"completed"}]', t, t, t + interval '10 ms'
       FROM (SELECT g, now() - interval '7 days' + g * interval '7 days' / $1::int AS t FROM generate_series(1, $1::int) g) x`,
      [finished],
    );
    await client.query(
      `INSERT INTO ${s}.jobs (queue, name, priority, max_attempts, run_at, payload, created_at)
       SELECT 'q' || (g % 5), 'job', g % 3, 3,
              CASE WHEN g % 10 = 0 THEN now() + interval '1 hour' ELSE now() - interval '1 hour' + g * interval '1 ms' END,
              jsonb_build_object('i', g), now()
       FROM generate_series(1, $1::int) g`,
      [pending],
    );
    await client.query("RESET session_replication_role");
    await client.query(
      `INSERT INTO ${s}.job_counts (queue, state, bucket, n)
       SELECT queue, state, ${s}.job_bucket(state, run_at, finished_at), count(*) FROM ${s}.jobs GROUP BY 1, 2, 3`,
    );
    await client.query(`VACUUM ANALYZE ${s}.jobs`);
    await client.query(`VACUUM ANALYZE ${s}.job_counts`);
  } finally {
    client.release();
  }
  await store.stats(); // folds the old buckets once
}

async function bigTable(): Promise<void> {
  const finished = Number(process.env.BIG_FINISHED ?? 5_000_000);
  const pending = Number(process.env.BIG_PENDING ?? 1_000_000);
  const probe = async (store: PostgresStore) => {
    let k = 0;
    return {
      claim: await latency(15, () =>
        store.claimJobs({ queue: "q1", limit: 100, workerId: "w", leaseMs: 60_000 }),
      ),
      insert1: await latency(15, () => store.insertJobs(jobs(1, "q1"))),
      insert5000: await latency(5, () => store.insertJobs(jobs(5_000, `bulk${k++}`))),
      nextRunAt: await latency(15, () => store.nextRunAt(["q0", "q1", "q2", "q3", "q4"])),
      stats: await latency(15, () => store.stats()),
    };
  };
  const empty = await withStore(async (store) => {
    // The same mix as the big table's pending jobs: 5 queues × 3 priorities, interleaved.
    await store.insertJobs(
      Array.from({ length: 15_000 }, (_, i) => ({ ...jobs(1, `q${i % 5}`)[0], priority: i % 3 })),
    );
    return probe(store);
  });
  const big = await withStore(async (store) => {
    const start = performance.now();
    await fillBig(store, finished, pending);
    console.log(
      `  (generated ${finished.toLocaleString("en-US")} finished + ${pending.toLocaleString("en-US")} pending rows in ${Math.round((performance.now() - start) / 1000)} s)`,
    );
    return probe(store);
  });
  console.log(
    `median latency, ms            empty    ${finished / 1e6}M finished + ${pending / 1e6}M pending`,
  );
  for (const key of Object.keys(empty) as Array<keyof typeof empty>) {
    console.log(
      `  ${key.padEnd(26)} ${empty[key].toFixed(2).padStart(8)}    ${big[key].toFixed(2).padStart(8)}`,
    );
  }
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
if (process.env.BENCH_BIG) await bigTable();
