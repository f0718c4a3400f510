/**
 * The store's share of a job, without a worker: inserts N jobs, then claims B and finishes B
 * (all completed) in turn until none are left, one call at a time. Prints the wall time per job
 * of each call (client and server together) for SQLite (a fresh file) or Postgres (a fresh schema).
 *
 *   node --import tsx bench/store-cost.ts [sqlite|postgres] [batch, default 500] [jobs, default 20000] [analyzed]
 *
 * `analyzed`: the table's statistics are taken after the insert (ANALYZE), as in the bench's
 * steady state (bench/settle.ts); without it the table has never been analyzed.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { openStore } from "../src/store/open.js";
import type { NewJob } from "../src/store/types.js";

const [kind = "sqlite", batch = "500", jobs = "20000", analyzed] = process.argv.slice(2);
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const schema = `store_cost_${process.pid}`;
const url = kind === "postgres" ? PG_URL : join(mkdtempSync(join(tmpdir(), "errand-store-cost-")), "e.db");
const store = await openStore(url, { schema });
await store.migrate();
const N = Number(jobs);
const B = Number(batch);
const job: NewJob = { queue: "q", name: "noop", payload: {}, priority: 0, maxAttempts: 3 };
for (let i = 0; i < N; i += 5000)
  await store.insertJobs(Array.from({ length: Math.min(5000, N - i) }, () => job));
if (analyzed === "analyzed") {
  if (kind === "postgres") {
    const client = new pg.Client(PG_URL);
    await client.connect();
    await client.query(`ANALYZE ${schema}.jobs`);
    await client.end();
  } else {
    const db = new Database(url);
    db.exec("ANALYZE");
    db.close();
  }
}
let claimMs = 0;
let finishMs = 0;
for (let done = 0; done < N; ) {
  let t = performance.now();
  const claimed = await store.claimJobs({ queue: "q", limit: B, workerId: "w", leaseMs: 15_000 });
  claimMs += performance.now() - t;
  t = performance.now();
  await store.finishJobs(
    claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "w" })),
  );
  finishMs += performance.now() - t;
  done += claimed.length;
}
const us = (ms: number) => ((ms / N) * 1000).toFixed(1);
console.log(
  `${kind}${analyzed === "analyzed" ? " (analyzed)" : ""}, batches of ${B}: claim ${us(claimMs)} µs/job, finish ${us(finishMs)} µs/job → ${Math.round(N / ((claimMs + finishMs) / 1000))} jobs/s one call at a time`,
);
await store.close();
if (kind === "postgres") {
  const client = new pg.Client(PG_URL);
  await client.connect();
  await client.query(`DROP SCHEMA ${schema} CASCADE`);
  await client.end();
}
