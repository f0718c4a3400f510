/**
 * The claim statement (CLAIM_JOBS) of another checkout against this one's, on real tables: each
 * side gets a fresh Postgres schema with N pending no-op jobs (analyzed, as in the bench's steady
 * state), then the sides take turns claiming B jobs with their own statement on a connection of
 * their own until every job is claimed (nothing is finished: the claim alone). Prints per job the
 * CPU of the side's backend (from /proc, 10 ms ticks summed over the run), this process's CPU
 * while it waited for and decoded the answer as node-postgres delivers it (rows or arrays, not
 * made into jobs), and the wall time. Written for the claim that answers in arrays
 * (src/store/postgres/claim-arrays.ts, bench/NOTES.md finding 21).
 *
 *   node --import tsx bench/claim-answer-ab.ts OTHER_CHECKOUT [B, default 250] [N, default 50000]
 *
 * OTHER_CHECKOUT: a directory with this repository's src/ (`git archive REV | tar -x -C DIR`,
 * node_modules linked).
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { openStore } from "../src/store/open.js";
import { CLAIM_JOBS } from "../src/store/postgres/sql/leases.js";
import { insertBacklog } from "../test/helpers/plans.js";

const [other, batch = "250", jobs = "50000"] = process.argv.slice(2);
if (!other) throw new Error("usage: bench/claim-answer-ab.ts OTHER_CHECKOUT [B] [N]");
const URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const B = Number(batch);
const N = Number(jobs);
const theirs = (await import(pathToFileURL(join(resolve(other), "src/store/postgres/sql/leases.ts")).href))
  .CLAIM_JOBS as string;

interface Side {
  name: string;
  sql: string;
  schema: string;
  client: pg.Client;
  backend: number;
  ticks: number;
  clientUs: number;
  wallMs: number;
}

const ticksOf = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime + stime
};

const sides: Side[] = [];
for (const [name, sql] of [
  [resolve(other), theirs],
  ["this checkout", CLAIM_JOBS],
] as const) {
  const schema = `claim_answer_${sides.length}_${process.pid}`;
  const store = await openStore(URL, { schema });
  await store.migrate();
  await insertBacklog(store, "q", N, () => undefined);
  await store.close();
  const client = new pg.Client(URL);
  await client.connect();
  await client.query(`ANALYZE "${schema}".jobs`);
  const backend = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
  const text = sql.replaceAll("{{schema}}", `"${schema}"`);
  sides.push({ name, sql: text, schema, client, backend, ticks: 0, clientUs: 0, wallMs: 0 });
}
for (let claimed = 0; claimed < N; claimed += B)
  for (const side of sides) {
    const ticks = ticksOf(side.backend);
    const wall = performance.now();
    const cpu = process.cpuUsage();
    await side.client.query({ name: "claim", text: side.sql, values: ["q", B, "w", 15_000] });
    const used = process.cpuUsage(cpu);
    side.clientUs += used.user + used.system;
    side.wallMs += performance.now() - wall;
    side.ticks += ticksOf(side.backend) - ticks;
  }
for (const side of sides) {
  const perJob = (us: number) => (us / N).toFixed(2);
  console.log(
    `${side.name}, claims of ${B}: server ${perJob(side.ticks * 10_000)} µs, client ${perJob(side.clientUs)} µs, wall ${perJob(side.wallMs * 1000)} µs per job`,
  );
  await side.client.query(`DROP SCHEMA "${side.schema}" CASCADE`);
  await side.client.end();
}
