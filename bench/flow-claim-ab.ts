/**
 * Two texts of the Postgres flow_claim function side by side, on a shared machine: the text of a
 * git revision (`before`) and the working tree's (`after`), each in a scratch schema of its own
 * (a table and indexes of its own: one function's scans would otherwise clean up dead index
 * entries for the other) claiming a queue of N jobs over K flow keys, with a plain CLAIM_JOBS
 * queue in a third schema as the yardstick. Each round times C claims of each queue in turn (the
 * order rotates between rounds), every claim followed by the finish of the claim before it, so
 * about one claim's jobs are running when the next claims (as a worker of concurrency B keeps
 * them) and the running set stays small. Claims are prepared statements on one connection, as
 * the store runs them (the function's plans are cached per connection). Prints the median time
 * per claim of each queue, the median of the rounds' ratios (before/after, plain/each), the
 * shared buffers per claim (auto_explain of 10 more claims each: load-independent), the server
 * backend's CPU time per claim (its /proc/PID/schedstat run time around each claim, summed over
 * the rounds: on a shared machine less noisy than wall time, which counts the waits for a core;
 * needs the server on this machine, else omitted) and the load.
 *
 *   node --import tsx bench/flow-claim-ab.ts [before=main] [limit=per-key|global|rate] [rounds=20]
 *     [claims per round C=20] [batch B=50] [keys K=100] [analyzed|fresh]
 *
 * N is what the rounds need plus a reserve of 5,000 jobs per queue. The limits never bind:
 * per-key concurrency 100,000, globalConcurrency 100,000, rate 1,000,000 per second.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { openStore } from "../src/store/open.js";
import * as Q from "../src/store/postgres/queries.js";
import { FLOW_CLAIM_DEFINITION } from "../src/store/postgres/sql/flow-claim-function.js";
import { insertBacklog } from "../test/helpers/plans.js";

const [
  beforeRev = "main",
  limit = "per-key",
  roundsArg = "20",
  claimsArg = "20",
  batchArg = "50",
  keysArg = "100",
  state = "fresh",
] = process.argv.slice(2);
const ROUNDS = Number(roundsArg);
const CLAIMS = Number(claimsArg);
const BATCH = Number(batchArg);
const KEYS = Number(keysArg);
const N = (ROUNDS * CLAIMS + 10) * BATCH + 5000;
const URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const schemas = {
  plain: `flow_ab_plain_${process.pid}`,
  before: `flow_ab_before_${process.pid}`,
  after: `flow_ab_after_${process.pid}`,
};

/** The function text at `rev` (its sql/ files that exist there, imports pointed at this tree's fragments). */
async function beforeDefinition(rev: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "flow-ab-"));
  const fragments = resolve("src/store/postgres/sql/fragments.ts");
  for (const name of ["flow-claim-function.ts", "flow-claim-walk.ts"]) {
    let source: string;
    try {
      source = execFileSync("git", ["show", `${rev}:src/store/postgres/sql/${name}`], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      });
    } catch {
      continue; // flow-claim-walk.ts is newer than migration 12
    }
    writeFileSync(join(dir, name), source.replaceAll('"./fragments.js"', JSON.stringify(fragments)));
  }
  try {
    const mod = (await import(join(dir, "flow-claim-function.ts"))) as { FLOW_CLAIM_DEFINITION: string };
    return mod.FLOW_CLAIM_DEFINITION;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ARGS: Record<string, (string | number | null)[]> = {
  // p_global, p_key_limit, p_rate, p_rate_ms, p_key_rate, p_key_rate_ms
  "per-key": [null, 100_000, null, null, null, null],
  global: [100_000, null, null, null, null, null],
  rate: [null, null, 1_000_000, 1000, null, null],
};
if (!ARGS[limit]) throw new Error(`limit must be one of ${Object.keys(ARGS).join(", ")}, not ${limit}`);
const keyed = limit === "per-key";

const queues = ["plain", "before", "after"] as const;
for (const queue of queues) {
  const store = await openStore(URL, { schema: schemas[queue] });
  await store.migrate();
  await insertBacklog(store, queue, N, (i) => (keyed && queue !== "plain" ? `k${i % KEYS}` : undefined));
  await store.close();
}

const client = new pg.Client(URL);
await client.connect();
try {
  await client.query(Q.bindSchema(await beforeDefinition(beforeRev), schemas.before));
  await client.query(Q.bindSchema(FLOW_CLAIM_DEFINITION, schemas.after));
  if (state === "analyzed") for (const s of Object.values(schemas)) await client.query(`ANALYZE "${s}".jobs`);
  const flowSql = (schema: string) =>
    `SELECT * FROM "${schema}".flow_claim($1, $2, $3, 'w', 60000, $4, $5, $6, $7::float8, $8, $9::float8, NULL)`;
  const sql = {
    plain: Q.bindSchema(Q.CLAIM_JOBS, schemas.plain),
    before: flowSql(schemas.before),
    after: flowSql(schemas.after),
  };
  const running: Record<string, string[]> = { plain: [], before: [], after: [] };
  const backend = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
  /** The backend's CPU time so far (ns), or null when its /proc entry cannot be read. */
  const backendCpu = (): number | null => {
    try {
      return Number(readFileSync(`/proc/${backend}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      return null;
    }
  };
  const cpu: Record<string, number> = { plain: 0, before: 0, after: 0 };
  let cpuKnown = backendCpu() !== null;

  async function finish(queue: (typeof queues)[number], ids: string[]) {
    if (ids.length === 0) return;
    await client.query({
      name: `finish-${queue}`,
      text: Q.bindSchema(Q.FINISH_COMPLETED, schemas[queue]),
      values: [ids, ids.map(() => 1), ids.map(() => null), ids.map(() => "w")],
    });
  }
  /** One claim of `queue` (timed), then the finish of its previous claim. */
  async function step(queue: (typeof queues)[number]): Promise<number> {
    const values =
      queue === "plain" ? [queue, BATCH, "w", 60000] : [`ab:${queue}`, queue, BATCH, ...ARGS[limit]];
    const cpuBefore = cpuKnown ? backendCpu() : null;
    const started = performance.now();
    const { rows } = await client.query({ name: queue, text: sql[queue], values });
    const ms = performance.now() - started;
    const cpuAfter = cpuKnown ? backendCpu() : null;
    if (cpuBefore === null || cpuAfter === null) cpuKnown = false;
    else cpu[queue] += cpuAfter - cpuBefore;
    const ids = (rows as { id: string | null }[]).filter((r) => r.id !== null).map((r) => r.id as string);
    if (ids.length !== BATCH) throw new Error(`${queue} claimed ${ids.length}, not ${BATCH}`);
    await finish(queue, running[queue]);
    running[queue] = ids;
    return ms;
  }

  const times: Record<string, number[]> = { plain: [], before: [], after: [] };
  const load = [loadavg()[0]];
  for (let round = 0; round < ROUNDS; round++) {
    const order = queues.map((_, i) => queues[(i + round) % queues.length]);
    for (const queue of order) {
      let total = 0;
      for (let c = 0; c < CLAIMS; c++) total += await step(queue);
      times[queue].push(total / CLAIMS);
    }
    load.push(loadavg()[0]);
  }
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1];
  const m = { plain: median(times.plain), before: median(times.before), after: median(times.after) };
  const ratio = (a: number[], b: number[]) => median(a.map((x, i) => x / b[i]));
  const cpuPerClaim = (queue: string) => cpu[queue] / (ROUNDS * CLAIMS) / 1e6;
  const cpuLine = cpuKnown
    ? `server backend CPU ms per claim (${ROUNDS * CLAIMS} claims each): plain ${cpuPerClaim("plain").toFixed(3)}, ` +
      `before ${cpuPerClaim("before").toFixed(3)}, after ${cpuPerClaim("after").toFixed(3)}; ` +
      `before/after ${(cpu.before / cpu.after).toFixed(2)}`
    : "server backend CPU: not readable here (/proc/PID/schedstat)";

  // Shared buffers per claim (load-independent): auto_explain of the top-level statement, whose
  // counts include the function's own statements.
  const buffers: Record<string, number> = {};
  const notices: string[] = [];
  client.on("notice", (msg) => notices.push(msg.message ?? ""));
  await client.query("LOAD 'auto_explain'");
  await client.query(
    "SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_timing = off; " +
      "SET auto_explain.log_buffers = on; SET auto_explain.log_format = 'json'; SET auto_explain.log_level = 'notice'",
  );
  for (const queue of queues) {
    let total = 0;
    for (let c = 0; c < 10; c++) {
      notices.length = 0;
      await step(queue);
      const json = JSON.parse(notices[0].slice(notices[0].indexOf("{"))) as {
        Plan: { "Shared Hit Blocks": number; "Shared Read Blocks": number };
      };
      total += json.Plan["Shared Hit Blocks"] + json.Plan["Shared Read Blocks"];
    }
    buffers[queue] = total / 10;
  }

  console.log(
    `${limit} limit, ${KEYS} keys, claims of ${BATCH}, ${ROUNDS} rounds of ${CLAIMS} claims per queue, ${state}; before = ${beforeRev}`,
  );
  console.log(
    `ms per claim (median of rounds): plain ${m.plain.toFixed(3)}, before ${m.before.toFixed(3)}, after ${m.after.toFixed(3)}`,
  );
  console.log(
    `median of the rounds' ratios: before/after ${ratio(times.before, times.after).toFixed(2)}, ` +
      `plain/before ${ratio(times.plain, times.before).toFixed(2)}, plain/after ${ratio(times.plain, times.after).toFixed(2)}`,
  );
  console.log(cpuLine);
  console.log(
    `shared buffers per claim: plain ${buffers.plain.toFixed(0)}, before ${buffers.before.toFixed(0)}, after ${buffers.after.toFixed(0)}`,
  );
  console.log(
    `load average (1 min) during the run: ${Math.min(...load).toFixed(1)}-${Math.max(...load).toFixed(1)}`,
  );
} finally {
  await client.end();
  const drop = new pg.Client(URL);
  await drop.connect();
  for (const s of Object.values(schemas)) await drop.query(`DROP SCHEMA "${s}" CASCADE`);
  await drop.end();
}
