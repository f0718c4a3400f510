/**
 * The cost of flow control when its limits do not bind (issue 16: at most 20% lower throughput):
 * one in-process worker (concurrency 50) drains N no-op jobs of four queues in turn — no flow
 * control, a global concurrency limit of 10,000, a per-key limit of 10,000 over 100 keys, and a
 * queue-wide rate limit of 1,000,000 per second —
 * on PostgreSQL and on SQLite. Reports jobs/s per queue and the ratios to the plain queue.
 *
 *   node --import tsx bench/flow-control.ts [N=5000] [rounds=3] [stores=postgres,sqlite] [batchSize] [readAhead]
 *
 * batchSize and readAhead are the worker's options (defaults: the worker's own), for trying how
 * claim size moves each condition.
 *
 * Quote the figures with the machine's load (uptime): they are wall-clock throughputs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { defineJob, type Errand, openErrand, silentLogger } from "../src/index.js";
import { freshSchema, postgresUrl } from "../test/helpers/postgres.js";

const N = Number(process.argv[2] ?? 5000);
const ROUNDS = Number(process.argv[3] ?? 3);
const STORES = (process.argv[4] ?? "postgres,sqlite").split(",");
const workerOptions = {
  ...(process.argv[5] ? { batchSize: Number(process.argv[5]) } : {}),
  ...(process.argv[6] ? { readAhead: process.argv[6] as `${number}ms` } : {}),
};
const schema = z.object({ key: z.string() });
const plain = defineJob({ name: "plain", queue: "plain", schema, run: () => {} });
const global = defineJob({
  name: "global",
  queue: "global",
  schema,
  globalConcurrency: 10_000,
  run: () => {},
});
const perKey = defineJob({
  name: "per-key",
  queue: "per-key",
  schema,
  concurrency: { key: (p) => p.key, limit: 10_000 },
  run: () => {},
});
const rate = defineJob({
  name: "rate",
  queue: "rate",
  schema,
  rateLimit: { limit: 1_000_000, per: "1s" },
  run: () => {},
});
const JOBS = [plain, global, perKey, rate];

async function drain(errand: Errand, def: (typeof JOBS)[number]): Promise<number> {
  await errand.enqueueMany(
    def,
    Array.from({ length: N }, (_, i) => ({ payload: { key: `k${i % 100}` } })),
  );
  let done = 0;
  const finished = new Promise<void>((resolve) =>
    errand.on("completed", () => {
      if (++done === N) resolve();
    }),
  );
  const started = performance.now();
  const worker = errand.work({ [def.queue]: { concurrency: 50 } }, workerOptions);
  await finished;
  const ms = performance.now() - started;
  await worker.stop();
  errand.removeAllListeners("completed");
  return (N / ms) * 1000;
}

async function run(name: string, open: () => Promise<{ errand: Errand; cleanup(): Promise<void> }>) {
  const rates: Record<string, number[]> = { plain: [], global: [], "per-key": [], rate: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const def of JOBS) {
      const { errand, cleanup } = await open();
      try {
        rates[def.name].push(await drain(errand, def));
      } finally {
        await cleanup();
      }
    }
  }
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1];
  const base = median(rates.plain);
  for (const [queue, list] of Object.entries(rates)) {
    console.log(
      `${name} ${queue.padEnd(8)} ${median(list).toFixed(0).padStart(6)} jobs/s (median of ${ROUNDS}; ${list.map((x) => x.toFixed(0)).join(", ")})  ratio ${(median(list) / base).toFixed(2)}`,
    );
  }
}

console.log(
  `N=${N}, worker options ${JSON.stringify(workerOptions)}, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
if (STORES.includes("postgres")) await run("postgres", async () => {
  const { schema: s, drop } = freshSchema("errand_bench_flow");
  const errand = await openErrand({ url: postgresUrl(), schema: s, logger: silentLogger(), jobs: JOBS });
  return {
    errand,
    async cleanup() {
      await errand.close();
      await drop();
    },
  };
});
if (STORES.includes("sqlite")) await run("sqlite", async () => {
  const dir = mkdtempSync(join(tmpdir(), "errand-bench-flow-"));
  const errand = await openErrand({ url: join(dir, "errand.db"), logger: silentLogger(), jobs: JOBS });
  return {
    errand,
    async cleanup() {
      await errand.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
console.log(
  `load average after: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
