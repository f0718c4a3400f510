/**
 * The CPU errand burns on SQLite while nothing happens, measured over a number of seconds
 * (default 10) after a 12 s warm-up, in this process:
 *
 * - `worker`: one idle worker (concurrency 10) on a fresh file: its loop, heartbeat, rescuer,
 *   scheduler and the store's cross-process wake-up;
 * - `store`: one listener on a store's onJobsAvailable and nothing else: the wake-up alone;
 * - `open`: a store opened and nobody listening: the baseline of `store`.
 *
 *   node --import tsx bench/sqlite-idle.ts [seconds] [worker|store|open]
 *
 * The warm-up outlasts V8's memory reducer: about 8 s after start, an idle process runs a few
 * full GCs (about 100 ms of CPU here), which would otherwise dwarf what is measured.
 * tsx's loader costs CPU of its own (about 10 ms a second here, with nothing to do): for
 * figures, bundle the script and run it with plain node, e.g.
 *
 *   npx esbuild bench/sqlite-idle.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=.idle.mjs && node .idle.mjs 10 store
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineJob, openErrand, silentLogger } from "../src/index.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";

const schema = {
  "~standard": { version: 1, vendor: "x", validate: (v: unknown) => ({ value: v }) },
} as const;
const noop = defineJob({ name: "noop", queue: "q", schema: schema as never, run: () => {} });
const seconds = Number(process.argv[2] ?? 10);
const mode = process.argv[3] ?? "worker";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), "errand-idle-"));
const url = join(dir, "e.db");

let stop: () => Promise<void>;
if (mode === "store" || mode === "open") {
  const store = openSqliteStore({ path: url });
  await store.migrate();
  const off = mode === "store" ? store.onJobsAvailable(() => {}) : () => {};
  stop = async () => {
    off();
    await store.close();
  };
} else {
  const errand = await openErrand({ url, jobs: [noop], logger: silentLogger() });
  const worker = errand.work({ q: { concurrency: 10 } });
  stop = async () => {
    await worker.stop();
    await errand.close();
  };
}
await sleep(12_000);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await sleep(seconds * 1000);
const cpu = process.cpuUsage(cpu0);
const ms = performance.now() - t0;
await stop();
rmSync(dir, { recursive: true, force: true });
const used = (cpu.user + cpu.system) / 1000;
console.log(
  `idle ${mode}, ${(ms / 1000).toFixed(1)} s: CPU ${used.toFixed(1)} ms (user ${(cpu.user / 1000).toFixed(1)}, system ${(cpu.system / 1000).toFixed(1)}) = ${((used / ms) * 100).toFixed(3)}% of one core`,
);
