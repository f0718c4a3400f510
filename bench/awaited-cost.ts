/**
 * What the waitFor trigger (migrations.ts 8, jobs_notify_awaited) costs the Postgres hot path
 * while nobody waits: the same claim + finish loop as bench/store-cost.ts on two fresh schemas,
 * one as migrated and one with the trigger dropped, in interleaved rounds (A, B, A, B, …) so the
 * machine's load falls on both alike. Prints µs per job (client and server) for each round and
 * the medians.
 *
 *   node --import tsx bench/awaited-cost.ts [batch, default 10] [jobs per round, default 5000] [rounds, default 4]
 */
import { loadavg } from "node:os";
import pg from "pg";
import { openStore } from "../src/store/open.js";
import type { NewJob, Store } from "../src/store/types.js";

const [batch = "10", jobs = "5000", rounds = "4"] = process.argv.slice(2);
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const B = Number(batch);
const N = Number(jobs);
const job: NewJob = { queue: "q", name: "noop", payload: {}, priority: 0, maxAttempts: 3 };

async function admin(sql: string): Promise<void> {
  const client = new pg.Client(PG_URL);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function round(store: Store): Promise<number> {
  for (let i = 0; i < N; i += 5000)
    await store.insertJobs(Array.from({ length: Math.min(5000, N - i) }, () => job));
  const started = performance.now();
  for (let done = 0; done < N; ) {
    const claimed = await store.claimJobs({ queue: "q", limit: B, workerId: "w", leaseMs: 15_000 });
    await store.finishJobs(
      claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "w" })),
    );
    done += claimed.length;
  }
  return ((performance.now() - started) * 1000) / N;
}

const schemas = { with: `awaited_cost_a_${process.pid}`, without: `awaited_cost_b_${process.pid}` };
const stores: Record<string, Store> = {};
for (const [name, schema] of Object.entries(schemas)) {
  stores[name] = await openStore(PG_URL, { schema });
  await stores[name].migrate();
}
await admin(`DROP TRIGGER jobs_notify_awaited ON "${schemas.without}".jobs`);
console.log(
  `batch ${B}, ${N} jobs a round; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
const results: Record<string, number[]> = { with: [], without: [] };
try {
  for (let r = 0; r < Number(rounds); r++) {
    for (const name of r % 2 === 0 ? ["with", "without"] : ["without", "with"]) {
      const us = await round(stores[name]);
      results[name].push(us);
      console.log(`round ${r + 1} ${name.padEnd(7)} trigger: ${us.toFixed(1)} µs/job`);
    }
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
  console.log(
    `median: with ${median(results.with).toFixed(1)} µs/job, without ${median(results.without).toFixed(1)} µs/job; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
} finally {
  for (const [name, schema] of Object.entries(schemas)) {
    await stores[name].close();
    await admin(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
}
