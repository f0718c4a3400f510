/**
 * What the storage layout of a finished job costs, in errand's own schema: inserts N jobs,
 * ANALYZEs and checkpoints (steady state), then claims B with the store's claim and records the
 * B jobs finished in one of three shapes, until none are left, one call at a time on one
 * connection each. Prints the wall time per job (client and server) of the claim and the finish.
 *
 *   node --import tsx bench/finish-shapes.ts [update|move|delete] [jobs, default 50000] [batch, default 500]
 *
 * - update: the store's own finish (FINISH_COMPLETED: a new row version in jobs).
 * - move: the finished rows deleted from jobs and inserted into a table of finished jobs with the
 *   same columns, a primary key and errand's finished index (finished_at, queue, state), in one
 *   statement — the layout that keeps only pending and running jobs in the hot table.
 * - delete: the finished rows deleted and kept nowhere (graphile-worker's shape): what a finish
 *   costs when it keeps no history, result or retention at all — the floor, not a design.
 * FILLFACTOR=n sets the jobs table's fillfactor before the insert (room for updated versions).
 * Every statement runs with the store's triggers in place (the delete and move fire the delete
 * triggers). bench/NOTES.md finding 19 has the figures.
 */
import pg from "pg";
import { openStore } from "../src/store/open.js";
import type { NewJob } from "../src/store/types.js";

const [shape = "update", jobs = "50000", batch = "500"] = process.argv.slice(2);
if (!["update", "move", "delete"].includes(shape)) throw new Error(`shape must be update, move or delete; got ${shape}`);
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const schema = `finish_shapes_${process.pid}`;
const N = Number(jobs);
const B = Number(batch);
const store = await openStore(PG_URL, { schema });
await store.migrate();
const client = new pg.Client(PG_URL);
await client.connect();
if (process.env.FILLFACTOR) await client.query(`ALTER TABLE ${schema}.jobs SET (fillfactor = ${Number(process.env.FILLFACTOR)})`);
const job: NewJob = { queue: "q", name: "noop", payload: { i: 1 }, priority: 0, maxAttempts: 3 };
for (let i = 0; i < N; i += 5000) await store.insertJobs(Array.from({ length: Math.min(5000, N - i) }, () => job));
await client.query(`CREATE TABLE ${schema}.finished (LIKE ${schema}.jobs INCLUDING DEFAULTS)`);
await client.query(`ALTER TABLE ${schema}.finished ADD PRIMARY KEY (id)`);
await client.query(`CREATE INDEX ON ${schema}.finished (finished_at, queue, state)`);
await client.query(`ANALYZE ${schema}.jobs`);
await client.query("CHECKPOINT");

const columns = (
  await client.query(
    `SELECT array_agg(quote_ident(attname) ORDER BY attnum) AS names FROM pg_attribute
     WHERE attrelid = '${schema}.jobs'::regclass AND attnum > 0 AND NOT attisdropped`,
  )
).rows[0].names as string[];
// The finished row: what FINISH_COMPLETED writes, every other column as it was.
const written: Record<string, string> = {
  state: "'completed'",
  finished_at: "statement_timestamp()",
  completed_by: "d.u_worker",
  result: "d.u_result::jsonb",
  locked_by: "NULL",
  locked_until: "NULL",
};
const opaqueArrays = "unnest((SELECT $1::bigint[]), (SELECT $2::int[]))";
const MOVE = `
WITH u AS (SELECT * FROM unnest((SELECT $1::bigint[]), (SELECT $2::int[]), (SELECT $3::text[]), (SELECT $4::text[])) AS u(id, token, result, worker)),
d AS (
  DELETE FROM ${schema}.jobs j USING u
  WHERE j.id = u.id AND j.lease_token = u.token AND j.state = (SELECT 'running'::text)
  RETURNING j.*, u.result AS u_result, u.worker AS u_worker
)
INSERT INTO ${schema}.finished (${columns.join(", ")})
SELECT ${columns.map((c) => written[c] ?? `d.${c}`).join(", ")} FROM d RETURNING id`;
const DELETE = `
DELETE FROM ${schema}.jobs j USING ${opaqueArrays} AS u(id, token)
WHERE j.id = u.id AND j.lease_token = u.token AND j.state = (SELECT 'running'::text)`;

let claimMs = 0;
let finishMs = 0;
for (let done = 0; done < N; ) {
  let t = performance.now();
  const claimed = await store.claimJobs({ queue: "q", limit: B, workerId: "w", leaseMs: 15_000 });
  claimMs += performance.now() - t;
  t = performance.now();
  const ids = claimed.map((c) => c.id);
  const tokens = claimed.map((c) => c.leaseToken);
  if (shape === "move")
    await client.query({ name: "move", text: MOVE, values: [ids, tokens, ids.map(() => "null"), ids.map(() => "w")] });
  else if (shape === "delete") await client.query({ name: "delete", text: DELETE, values: [ids, tokens] });
  else
    await store.finishJobs(claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "w" })));
  finishMs += performance.now() - t;
  done += claimed.length;
}
const us = (ms: number) => ((ms / N) * 1000).toFixed(1);
console.log(
  `${shape} (fillfactor ${process.env.FILLFACTOR ?? 100}), ${N} jobs in batches of ${B}: claim ${us(claimMs)} µs/job, finish ${us(finishMs)} µs/job`,
);
await store.close();
await client.query(`DROP SCHEMA ${schema} CASCADE`);
await client.end();
