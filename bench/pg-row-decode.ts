/**
 * What node-postgres costs the worker per row of an answer, against one row of arrays: why
 * CLAIM_JOBS answers in arrays (src/store/postgres/claim-arrays.ts; issue 13, bench/NOTES.md
 * finding 21). A query shaped like the claim's answer — B rows of the
 * claim's 12 columns from generate_series, no table — is run 200,000 / B times on one
 * connection, either as B rows (`rows`, as CLAIM_JOBS answers) or as one row of per-column
 * arrays (`arrays`: array_agg(...)::text and the payloads joined by \x01, split in JS). Prints
 * per 1,000 rows the CPU of this process (client), of its backend (server, from /proc) and the
 * wall time. The young generation's survival shows with V8's own trace:
 *
 *   node --import tsx bench/pg-row-decode.ts rows|arrays [B, default 250]
 *   node --trace-gc-nvp --import tsx bench/pg-row-decode.ts rows 10 | grep -o 'new_space_survive_rate_=[0-9.]*%'
 *
 * The `arrays` split is the minimum a decoder would do (ids, payloads, priorities): a real one
 * must also unquote text arrays, so its client figure is a lower bound.
 */
import { readFileSync } from "node:fs";
import pg from "pg";

const [mode = "rows", batch = "250"] = process.argv.slice(2);
if (mode !== "rows" && mode !== "arrays") throw new Error("usage: bench/pg-row-decode.ts rows|arrays [B]");
const B = Number(batch);
const client = new pg.Client(process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test");
await client.connect();
const ROWS = `SELECT g AS id, 'q' AS queue, 'noop' AS name, '{"a":1}' AS payload, 0 AS priority,
  1 AS attempt, 3 AS max_attempts, NULL AS key, 1733500000000::int8 AS run_at,
  1733500000000::int8 AS created_at, 1 AS lease_token, 1733500015000::int8 AS locked_until
FROM generate_series(1, $1::int) g`;
const ARRAYS = `SELECT array_agg(id)::text AS id, array_agg(queue)::text AS queue,
  array_agg(name)::text AS name, string_agg(payload, E'\\x01') AS payload,
  array_agg(priority)::text AS priority, array_agg(attempt)::text AS attempt,
  array_agg(max_attempts)::text AS max_attempts, array_agg(run_at)::text AS run_at,
  array_agg(lease_token)::text AS lease_token FROM (${ROWS}) r`;
const pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
const backendMs = () => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * (1000 / 100); // utime + stime, 100 Hz ticks
};
const server0 = backendMs();
const wall0 = performance.now();
const cpu0 = process.cpuUsage();
let rows = 0;
for (let i = 0; i < 200_000 / B; i++) {
  if (mode === "rows") {
    rows += (await client.query({ name: "rows", text: ROWS, values: [B] })).rows.length;
    continue;
  }
  const r = (await client.query({ name: "arrays", text: ARRAYS, values: [B] })).rows[0];
  const ids = (r.id as string).slice(1, -1).split(",");
  const payloads = (r.payload as string).split("\x01");
  const priorities = (r.priority as string).slice(1, -1).split(",");
  rows += ids.map((id, k) => ({ id, payload: payloads[k], priority: Number(priorities[k]) })).length;
}
const cpu = process.cpuUsage(cpu0);
const per = (ms: number) => (ms / (rows / 1000)).toFixed(2);
console.log(
  `${mode}, ${B} rows per query: client ${per((cpu.user + cpu.system) / 1000)}, server ${per(backendMs() - server0)}, wall ${per(performance.now() - wall0)} ms per 1,000 rows`,
);
await client.end();
