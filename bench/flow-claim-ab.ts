/**
 * Two texts of the Postgres flow_claim function side by side, on a shared machine: the text of a
 * git revision (`before`, installed as flow_claim_before) and the working tree's (flow_claim),
 * in one scratch schema, each claiming its own queue of N jobs over K flow keys, with a plain
 * CLAIM_JOBS queue as the yardstick. Each round times C claims of each queue in turn (the
 * order rotates between rounds), every claim followed by the finish of the claim before it, so
 * about one claim's jobs are running when the next claims (as a worker of concurrency B keeps
 * them) and the running set stays small. Claims are prepared statements on one connection, as
 * the store runs them (the function's plans are cached per connection). Prints the median time
 * per claim of each queue and the ratios (before/after and plain/each), with the load average.
 *
 *   node --import tsx bench/flow-claim-ab.ts [before=main] [limit=per-key|global|rate] [rounds=20]
 *     [claims per round C=20] [batch B=50] [keys K=100] [analyzed|fresh]
 *
 * N is what the rounds need plus a reserve of 5,000 jobs per queue. The limits never bind:
 * per-key concurrency 100,000, globalConcurrency 100,000, rate 1,000,000 per second.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { openStore } from "../src/store/open.js";
import * as Q from "../src/store/postgres/queries.js";
import { FLOW_CLAIM_DEFINITION } from "../src/store/postgres/sql/flow-claim-function.js";
import type { NewJob } from "../src/store/types.js";

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
const N = ROUNDS * CLAIMS * BATCH + 5000;
const URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const schema = `flow_ab_${process.pid}`;

/** The function text at `rev`, renamed flow_claim_before. */
async function beforeDefinition(rev: string): Promise<string> {
  const source = execFileSync("git", ["show", `${rev}:src/store/postgres/sql/flow-claim-function.ts`], {
    encoding: "utf8",
  });
  const dir = mkdtempSync(join(tmpdir(), "flow-ab-"));
  const file = join(dir, "before.ts");
  const fragments = resolve("src/store/postgres/sql/fragments.ts");
  writeFileSync(file, source.replaceAll('"./fragments.js"', JSON.stringify(fragments)));
  try {
    const mod = (await import(file)) as { FLOW_CLAIM_DEFINITION: string };
    return mod.FLOW_CLAIM_DEFINITION.replace("{{schema}}.flow_claim(", "{{schema}}.flow_claim_before(");
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

const store = await openStore(URL, { schema });
await store.migrate();
const queues = ["plain", "before", "after"] as const;
for (const queue of queues) {
  for (let i = 0; i < N; i += 5000) {
    await store.insertJobs(
      Array.from(
        { length: Math.min(5000, N - i) },
        (_, j): NewJob => ({
          queue,
          name: "noop",
          payload: {},
          priority: 0,
          maxAttempts: 3,
          flowKey: keyed && queue !== "plain" ? `k${(i + j) % KEYS}` : undefined,
        }),
      ),
    );
  }
}
await store.close();

const client = new pg.Client(URL);
await client.connect();
try {
  await client.query(Q.bindSchema(await beforeDefinition(beforeRev), schema));
  await client.query(Q.bindSchema(FLOW_CLAIM_DEFINITION, schema));
  if (state === "analyzed") await client.query(`ANALYZE "${schema}".jobs`);
  const flowSql = (fn: string) =>
    `SELECT * FROM "${schema}".${fn}($1, $2, $3, 'w', 60000, $4, $5, $6, $7::float8, $8, $9::float8, NULL)`;
  const sql = {
    plain: Q.bindSchema(Q.CLAIM_JOBS, schema),
    before: flowSql("flow_claim_before"),
    after: flowSql("flow_claim"),
  };
  const finishSql = Q.bindSchema(Q.FINISH_COMPLETED, schema);
  const running: Record<string, string[]> = { plain: [], before: [], after: [] };

  async function finish(ids: string[]) {
    if (ids.length === 0) return;
    await client.query({
      name: "finish",
      text: finishSql,
      values: [ids, ids.map(() => 1), ids.map(() => null), ids.map(() => "w")],
    });
  }
  /** One claim of `queue` (timed), then the finish of its previous claim. */
  async function step(queue: (typeof queues)[number]): Promise<number> {
    const values =
      queue === "plain" ? [queue, BATCH, "w", 60000] : [`ab:${queue}`, queue, BATCH, ...ARGS[limit]];
    const started = performance.now();
    const { rows } = await client.query({ name: queue, text: sql[queue], values });
    const ms = performance.now() - started;
    const ids = (rows as { id: string | null }[]).filter((r) => r.id !== null).map((r) => r.id as string);
    if (ids.length !== BATCH) throw new Error(`${queue} claimed ${ids.length}, not ${BATCH}`);
    await finish(running[queue]);
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
  const perRound = times.before.map((b, i) => b / times.after[i]);
  console.log(
    `${limit} limit, ${KEYS} keys, claims of ${BATCH}, ${ROUNDS} rounds of ${CLAIMS} claims per queue, ${state}; before = ${beforeRev}`,
  );
  console.log(
    `ms per claim (median of rounds): plain ${m.plain.toFixed(3)}, before ${m.before.toFixed(3)}, after ${m.after.toFixed(3)}`,
  );
  console.log(
    `before/after ${(m.before / m.after).toFixed(2)} (per round ${Math.min(...perRound).toFixed(2)}-${Math.max(...perRound).toFixed(2)}); ` +
      `plain/before ${(m.plain / m.before).toFixed(2)}, plain/after ${(m.plain / m.after).toFixed(2)}`,
  );
  console.log(
    `load average (1 min) during the run: ${Math.min(...load).toFixed(1)}-${Math.max(...load).toFixed(1)}`,
  );
} finally {
  await client.end();
  const drop = new pg.Client(URL);
  await drop.connect();
  await drop.query(`DROP SCHEMA "${schema}" CASCADE`);
  await drop.end();
}
