/**
 * The Postgres server's share of the processing loop, in load-independent counts: inserts N jobs
 * into a fresh schema, optionally ANALYZEs it (steady state), then claims B and finishes B
 * (completed) until none are left — each statement run as the store runs it (a named prepared
 * statement on one connection, so the plan cache and its generic-plan choice are the store's)
 * under EXPLAIN (ANALYZE, BUFFERS, WAL). Prints per job: shared buffers hit+read, WAL bytes,
 * server execution time and trigger time, for claim and finish; and the plan of one batch in
 * batch k (PLANS=k; 0: the first, planned with the batch's values), and TRACE=1 each batch's time
 * and its plan's shape whenever that changes.
 *
 *   node --import tsx bench/hot-plans.ts [fresh|analyzed] [batch, default 500] [jobs, default 50000]
 *
 * The finish is FINISH_COMPLETED, as the store writes a batch of plain completions;
 * FINISH=general runs the general FINISH_JOBS instead, FINISH=alternate the two in turn (even
 * batches general, odd ones FINISH_COMPLETED; reported apart): a comparison on a busy machine.
 */
import pg from "pg";
import { openStore } from "../src/store/open.js";
import * as Q from "../src/store/postgres/queries.js";
import type { NewJob } from "../src/store/types.js";

const [state = "fresh", batch = "500", jobs = "50000"] = process.argv.slice(2);
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const schema = `hot_plans_${process.pid}`;
const N = Number(jobs);
const B = Number(batch);
const store = await openStore(PG_URL, { schema });
await store.migrate();
// FILLFACTOR=n (diagnosis): jobs' fillfactor before the insert, so each page keeps room for the
// claim's and the finish's new row versions (non-HOT updates still put them on the same page).
if (process.env.FILLFACTOR) {
  const admin = new pg.Client(PG_URL);
  await admin.connect();
  await admin.query(`ALTER TABLE "${schema}".jobs SET (fillfactor = ${Number(process.env.FILLFACTOR)})`);
  await admin.end();
}
const job: NewJob = { queue: "q", name: "noop", payload: {}, priority: 0, maxAttempts: 3 };
for (let i = 0; i < N; i += 5000)
  await store.insertJobs(Array.from({ length: Math.min(5000, N - i) }, () => job));
await store.close();

const client = new pg.Client(PG_URL);
await client.connect();
if (state === "analyzed") {
  for (const t of ["jobs", "job_counts", "job_count_deltas"]) await client.query(`ANALYZE "${schema}".${t}`);
}
// NO_TRIGGERS=1 (diagnosis only: stats() is wrong afterwards): what the count triggers cost.
if (process.env.NO_TRIGGERS === "1") await client.query(`ALTER TABLE "${schema}".jobs DISABLE TRIGGER USER`);
// DROP_INDEXES=a,b (diagnosis only: the queries those indexes serve get slow): what each costs the loop.
for (const index of (process.env.DROP_INDEXES ?? "").split(",").filter(Boolean))
  await client.query(`DROP INDEX "${schema}".${index}`);
await client.query("CHECKPOINT").catch(() => {}); // full-page writes after a checkpoint: the same for both states
const claimSql = Q.bindSchema(Q.CLAIM_JOBS, schema);
const alternate = process.env.FINISH === "alternate";
const generalSql = Q.bindSchema(Q.FINISH_JOBS, schema);
const completedSql = Q.bindSchema(Q.FINISH_COMPLETED, schema);

interface Totals {
  buffers: number;
  walBytes: number;
  execMs: number;
  triggerMs: number;
  calls: number;
  jobs: number;
}
const totals = { claim: newTotals(), finish: newTotals(), general: newTotals() };
function newTotals(): Totals {
  return { buffers: 0, walBytes: 0, execMs: 0, triggerMs: 0, calls: 0, jobs: 0 };
}

type Node = Record<string, unknown> & { Plans?: Node[] };
/** EXPLAIN's counters of a node include its children (CTEs and InitPlans too): the root's are the statement's. */
function add(
  t: Totals,
  explain: Array<{ Plan: Node; "Execution Time": number; Triggers?: Array<{ Time: number }> }>,
  jobs: number,
) {
  const top = explain[0];
  const plan = top.Plan;
  t.buffers += Number(plan["Shared Hit Blocks"] ?? 0) + Number(plan["Shared Read Blocks"] ?? 0);
  t.walBytes += Number(plan["WAL Bytes"] ?? 0);
  t.execMs += top["Execution Time"];
  t.triggerMs += (top.Triggers ?? []).reduce((a, x) => a + x.Time, 0);
  t.calls++;
  t.jobs += jobs;
}

/** One line per plan node: type, relation/index, rows × loops, buffers, time. */
function print(
  what: string,
  top: { Plan: Node; "Execution Time": number; Triggers?: Array<{ "Trigger Name": string; Time: number }> },
) {
  console.log(`${what} (batch ${shown}): ${top["Execution Time"].toFixed(2)} ms`);
  const walk = (n: Node, depth: number) => {
    const on = [
      n["Relation Name"],
      n["Index Name"] && `using ${n["Index Name"]}`,
      n["CTE Name"] && `CTE ${n["CTE Name"]}`,
    ]
      .filter(Boolean)
      .join(" ");
    const buffers = Number(n["Shared Hit Blocks"] ?? 0) + Number(n["Shared Read Blocks"] ?? 0);
    console.log(
      `${"  ".repeat(depth + 1)}${n["Parent Relationship"] ? `${n["Parent Relationship"]}: ` : ""}${n["Node Type"]}${on ? ` ${on}` : ""}` +
        ` rows=${n["Actual Rows"]} loops=${n["Actual Loops"]} buffers=${buffers} ${Number(n["Actual Total Time"]).toFixed(2)} ms`,
    );
    for (const c of n.Plans ?? []) walk(c, depth + 1);
  };
  walk(top.Plan, 0);
  for (const t of top.Triggers ?? []) console.log(`  trigger ${t["Trigger Name"]}: ${t.Time.toFixed(2)} ms`);
}

/** TRACE=1: each batch's time, and its plan's shape whenever that changes. */
const lastShape: Record<string, string> = {};
function trace(k: number, what: string, top: { Plan: Node; "Execution Time": number }) {
  const shape = (n: Node): string =>
    `${n["Node Type"]}${n["Index Name"] ? `[${n["Index Name"]}]` : ""}(${(n.Plans ?? []).map(shape).join(",")})`;
  const s = shape(top.Plan);
  console.log(`${what} ${k}: ${top["Execution Time"].toFixed(2)} ms${s !== lastShape[what] ? ` ${s}` : ""}`);
  lastShape[what] = s;
}

let claimName = "";
const explainOpts = "ANALYZE, BUFFERS, WAL, FORMAT JSON";
await client.query(`PREPARE c(text, int, text, float8) AS ${claimSql}`);
claimName = "c";
await client.query(
  `PREPARE g(bigint[], int[], text[], float8[], text[], text[], text[], text[], text[]) AS ${generalSql}`,
);
await client.query(`PREPARE f(bigint[], int[], text[], text[]) AS ${completedSql}`);
const generalFor = (k: number) => process.env.FINISH === "general" || (alternate && k % 2 === 0);
const shown = process.env.PLANS === undefined ? -1 : Number(process.env.PLANS);
let done = 0;
for (let k = 0; done < N; k++) {
  const show = k === shown;
  const c = await client.query(`EXPLAIN (${explainOpts}) EXECUTE ${claimName}('q', ${B}, 'w', 15000)`);
  if (show) print("claim", c.rows[0]["QUERY PLAN"][0]);
  // EXPLAIN ANALYZE ran the claim: read back what it claimed (running, this worker) to finish it.
  const { rows } = await client.query(
    `SELECT id, lease_token FROM "${schema}".jobs WHERE state = 'running' AND locked_by = 'w' ORDER BY id`,
  );
  add(totals.claim, c.rows[0]["QUERY PLAN"], rows.length);
  if (rows.length === 0) break;
  const n = rows.length;
  const fill = (v: string, type: string) => `array_fill(${v}::${type}, ARRAY[${n}])`;
  const ids = `'{${rows.map((r) => r.id).join(",")}}'`;
  const tokens = `'{${rows.map((r) => r.lease_token).join(",")}}'`;
  const general = generalFor(k);
  const args = general
    ? [
        ids,
        tokens,
        fill("'completed'", "text"),
        fill("0", "float8"),
        fill("'null'", "text"),
        fill("'w'", "text"),
      ].concat([fill("NULL", "text"), fill("NULL", "text"), fill("NULL", "text")])
    : [ids, tokens, fill("'null'", "text"), fill("'w'", "text")];
  const f = await client.query(`EXPLAIN (${explainOpts}) EXECUTE ${general ? "g" : "f"}(${args.join(", ")})`);
  add(general ? totals.general : totals.finish, f.rows[0]["QUERY PLAN"], rows.length);
  if (process.env.TRACE === "1") trace(k, "claim", c.rows[0]["QUERY PLAN"][0]);
  if (process.env.TRACE === "1") trace(k, "finish", f.rows[0]["QUERY PLAN"][0]);
  if (show) print("finish", f.rows[0]["QUERY PLAN"][0]);
  done += rows.length;
}
const per = (t: Totals) =>
  `${(t.buffers / t.jobs).toFixed(1)} buffers/job, ${(t.walBytes / t.jobs).toFixed(0)} WAL bytes/job, ${((t.execMs / t.jobs) * 1000).toFixed(1)} µs/job server time (triggers ${((t.triggerMs / t.jobs) * 1000).toFixed(1)})`;
console.log(`${state}, ${done} jobs in batches of ${B}`);
console.log(`  claim:  ${per(totals.claim)}`);
if (totals.finish.calls > 0) console.log(`  finish (FINISH_COMPLETED): ${per(totals.finish)}`);
if (totals.general.calls > 0) console.log(`  finish (FINISH_JOBS):      ${per(totals.general)}`);
await client.query(`DROP SCHEMA "${schema}" CASCADE`);
await client.end();
