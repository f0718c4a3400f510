/**
 * What the Postgres server writes for one claim and one finish of B jobs, by WAL record type
 * (pg_walinspect, PostgreSQL 15+; created in the database if missing): a fresh schema with N
 * pending jobs, analyzed, a few claim/finish cycles through the store, a checkpoint and one more
 * cycle (so full-page images do not count), then one finish and one claim between LSNs. Only
 * records that touch the schema's relations count (other sessions write WAL in between); the
 * counts and sizes do not depend on the machine's load.
 *
 *   node --import tsx bench/wal-records.ts [batch, default 500] [jobs, default 5000]
 *
 * FILLFACTOR=n (diagnosis): jobs' fillfactor before the insert.
 */
import pg from "pg";
import { openStore } from "../src/store/open.js";
import type { ClaimedJob, Store } from "../src/store/types.js";

const [batch = "500", jobs = "5000"] = process.argv.slice(2);
const B = Number(batch);
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const schema = `wal_records_${process.pid}`;

const admin = new pg.Client(PG_URL);
await admin.connect();
await admin.query("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
const store: Store = await openStore(PG_URL, { schema });
try {
  await store.migrate();
  if (process.env.FILLFACTOR)
    await admin.query(`ALTER TABLE "${schema}".jobs SET (fillfactor = ${Number(process.env.FILLFACTOR)})`);
  const job = { queue: "q", name: "noop", payload: {}, priority: 0, maxAttempts: 3 };
  for (let i = 0; i < Number(jobs); i += 5000)
    await store.insertJobs(Array.from({ length: Math.min(5000, Number(jobs) - i) }, () => job));
  await admin.query(`ANALYZE "${schema}".jobs`);

  const req = { queue: "q", limit: B, workerId: "w", leaseMs: 30_000 };
  const finish = (running: ClaimedJob[]) =>
    store.finishJobs(
      running.map((j) => ({ id: j.id, leaseToken: j.leaseToken, kind: "completed", worker: "w" })),
    );
  const lsn = async () =>
    (await admin.query("SELECT pg_current_wal_flush_lsn()::text AS l")).rows[0].l as string;
  let running = await store.claimJobs(req);
  for (let i = 0; i < 3; i++) {
    await finish(running);
    running = await store.claimJobs(req);
  }
  await admin.query("CHECKPOINT");
  await finish(running);
  running = await store.claimJobs(req);
  const beforeFinish = await lsn();
  await finish(running);
  const afterFinish = await lsn();
  const claimed = (await store.claimJobs(req)).length;
  const afterClaim = await lsn();
  await print(`finish of ${running.length}`, beforeFinish, afterFinish, running.length);
  await print(`claim of ${claimed}`, afterFinish, afterClaim, claimed);
} finally {
  await store.close();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}

async function print(what: string, from: string, to: string, n: number): Promise<void> {
  const { rows } = await admin.query(
    `SELECT resource_manager || '/' || record_type AS type, count(*) AS count, sum(record_length) AS bytes
     FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) w
     WHERE EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = $3::regnamespace
                   AND w.block_ref LIKE '%/' || c.relfilenode || ' %')
     GROUP BY 1 ORDER BY 3 DESC`,
    [from, to, schema],
  );
  const total = rows.reduce((sum, r) => sum + Number(r.bytes), 0);
  console.log(`${what}: ${(total / n).toFixed(0)} WAL bytes per job`);
  for (const r of rows)
    console.log(
      `  ${String(r.type).padEnd(22)} ${(Number(r.count) / n).toFixed(2).padStart(6)} records, ${(Number(r.bytes) / n).toFixed(1).padStart(6)} bytes per job`,
    );
}
