/**
 * errand on SQLite, one worker in this process: N no-op jobs (default 30,000) at a concurrency
 * (default 50); prints jobs/s, worker CPU per 1,000 jobs and peak RSS.
 *
 *   node --import tsx bench/sqlite-worker.ts [jobs] [concurrency]
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineJob, openErrand, silentLogger } from "../src/index.js";

const schema = {
  "~standard": { version: 1, vendor: "x", validate: (v: unknown) => ({ value: v }) },
} as const;
const noop = defineJob({ name: "noop", queue: "q", schema: schema as never, run: () => {} });
const url = join(mkdtempSync(join(tmpdir(), "tp-")), "e.db");
const errand = await openErrand({ url, jobs: [noop], logger: silentLogger() });
const N = Number(process.argv[2] ?? 30000);
for (let i = 0; i < N; i += 5000)
  await errand.enqueueMany(
    noop,
    Array.from({ length: 5000 }, () => ({ payload: {} })),
  );
let peak = 0;
const t = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage().rss);
}, 50);
const cpu0 = process.cpuUsage();
const t0 = Date.now();
const w = errand.work({ q: { concurrency: Number(process.argv[3] ?? 50) } });
for (;;) {
  const s = (await errand.stats())[0];
  if (s.completed === N) break;
  await new Promise((r) => setTimeout(r, 20));
}
const ms = Date.now() - t0;
const cpu = process.cpuUsage(cpu0);
await w.stop();
clearInterval(t);
console.log(
  `${N} jobs in ${ms} ms = ${Math.round((N / ms) * 1000)} jobs/s; cpu ${((cpu.user + cpu.system) / 1000 / (N / 1000)).toFixed(1)} ms/1000 jobs; peak rss ${Math.round(peak / 1e6)} MB`,
);
await errand.close();
