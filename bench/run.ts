/**
 * `npm run bench`: errand against its peers, side by side, on this machine.
 *
 *   npm run bench                       full run: every workload, every system, 3 runs each
 *   npm run bench -- --quick            about two minutes: small counts, 1 run
 *   npm run bench -- --only errand-postgres,pg-boss --workload process,latency --runs 5
 *   npm run bench -- --profile /tmp/prof   worker processes write V8 CPU profiles (--cpu-prof)
 *   npm run bench -- --merge bench/results-quick.json   add an earlier run's workloads that this
 *                                       run did not measure to the report (marked as such)
 *   npm run bench -- --budget 45        seconds a processing/mixed run may take (default 90, quick 20)
 *
 * --workload takes names or prefixes: bulk, single, process (or process-c50-p4), latency
 * (or latency-100), mixed, flow (errand only: flow control that does not bind, against none). Writes bench/RESULTS.md, bench/results.svg and bench/results.json
 * (unless --no-write). Needs PostgreSQL on 127.0.0.1:5432 (BENCH_PG_URL) and Redis on
 * 127.0.0.1:6379 (BENCH_REDIS_URL).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadSystem, SYSTEM_NAMES } from "./adapters/index.js";
import type { SystemDef, Target } from "./adapters/types.js";
import { ROOT } from "./adapters/util.js";
import { renderChart } from "./chart.js";
import { codeVersion, machine } from "./machine.js";
import { renderReport } from "./report.js";
import { type BenchResults, fmt, type RunRecord, type SystemInfo } from "./results.js";
import { type Leftovers, sweep as sweepUnder } from "./sweep.js";
import { FULL, QUICK, type RunScope, type WorkloadDef, workloads } from "./workloads.js";

const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";

/** Systems left out of --quick unless named with --only (slow, and not errand's main rivals). */
const QUICK_SKIP = new Set(["graphile-worker", "sidequest"]);

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    workload: { type: "string" },
    runs: { type: "string" },
    profile: { type: "string" },
    merge: { type: "string" },
    budget: { type: "string" },
    "no-write": { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (args.help) {
  console.log(
    [
      "usage: npm run bench -- [--quick] [--only sys1,sys2] [--workload w1,w2] [--runs N] [--profile DIR] [--no-write]",
      `systems:   ${SYSTEM_NAMES.join(", ")}`,
      `workloads: ${workloads(FULL)
        .map((w) => w.name)
        .join(", ")}`,
    ].join("\n"),
  );
  process.exit(0);
}

const invocation = `ebench_${Date.now().toString(36)}`;
const tmp = mkdtempSync(join(tmpdir(), "errand-bench-"));
let seq = 0;

function makeTarget(): Target {
  const runId = `${invocation}_${(seq++).toString(36).padStart(3, "0")}`;
  return {
    runId,
    namespace: runId,
    pgUrl: PG_URL,
    redisUrl: REDIS_URL,
    sqlitePath: join(tmp, `${runId}.db`),
  };
}

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

function list(value: string | undefined): string[] | null {
  return value
    ? value
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)
    : null;
}

async function timeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout: ${what} took over ${fmt(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

const leftovers: Leftovers = { pgUrl: PG_URL, redisUrl: REDIS_URL, invocation, tmp, log };

/** Drops what the runs under `prefix` (default: every run of this invocation) left behind. */
function sweep(prefix?: string): Promise<void> {
  return sweepUnder(leftovers, prefix);
}

let active: RunScope | null = null;

async function runOne(
  w: WorkloadDef,
  system: SystemDef,
): Promise<Omit<RunRecord, "workload" | "system" | "run">> {
  const scope: RunScope = { target: makeTarget(), profileDir: args.profile };
  active = scope;
  const running = w.run(system, scope);
  running.catch(() => {}); // after a timeout it is abandoned; its rejection is expected
  try {
    const metrics = await timeout(running, w.timeoutMs, `${w.name} on ${system.name}`);
    return { ok: true, metrics };
  } catch (err) {
    return { ok: false, error: (err as Error).message.split("\n")[0] };
  } finally {
    scope.procs?.kill();
    if (scope.adapter) await timeout(scope.adapter.teardown(), 20_000, "teardown").catch(() => {});
    await sweep(scope.target.runId);
    active = null;
  }
}

function headline(w: WorkloadDef, metrics: Record<string, number>): string {
  return w.metrics
    .filter((m) => Number.isFinite(metrics[m.key]))
    .map(
      (m) =>
        `${fmt(metrics[m.key], m.digits ?? 0)} ${m.unit || m.label}${m.unit && m.label !== m.unit && m.key !== "jobsPerSec" ? ` ${m.label}` : ""}`,
    )
    .join(", ");
}

/** Adds the workloads (and their systems) of an earlier results.json that this run did not measure. */
function mergeEarlier(results: BenchResults, file: string): void {
  const earlier = JSON.parse(readFileSync(file, "utf8")) as BenchResults;
  const label = `${earlier.mode} run of ${earlier.date.slice(0, 16).replace("T", " ")} UTC, ${earlier.runs} run${earlier.runs > 1 ? "s" : ""}, load average ${earlier.machine.loadStart}`;
  for (const w of earlier.workloads) {
    if (results.workloads.some((x) => x.name === w.name)) continue;
    const title = w.title.includes(" — from the ") ? w.title : `${w.title} — from the ${label}`;
    results.workloads.push({ ...w, title });
    results.records.push(...earlier.records.filter((r) => r.workload === w.name));
  }
  for (const s of earlier.systems)
    if (!results.systems.some((x) => x.name === s.name)) results.systems.push(s);
  const order = ["bulk", "single", "process", "latency", "mixed", "flow"];
  results.workloads.sort((a, b) => order.indexOf(a.group) - order.indexOf(b.group));
  results.merged = label;
}

/**
 * errand is measured as users run it: the compiled JavaScript in dist/, like every peer's
 * package. Under the tsx loader, src/ pays esbuild's keepNames wrapper on every closure it
 * creates (a defineProperty per closure per job) and its source maps: ~30% more CPU per job.
 * Built afresh here so the numbers are always of the code in src/.
 */
function buildErrand(): void {
  log("building errand (npm run build) ...");
  execFileSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
}

async function main(): Promise<void> {
  const started = performance.now();
  const counts = { ...(args.quick ? QUICK : FULL) };
  if (args.budget) counts.budgetMs = Number(args.budget) * 1000;
  const runs = Number(args.runs ?? (args.quick ? 1 : 3));
  if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs must be a positive integer");

  const only = list(args.only);
  for (const name of only ?? []) {
    if (!SYSTEM_NAMES.includes(name))
      throw new Error(`unknown system "${name}"; known: ${SYSTEM_NAMES.join(", ")}`);
  }
  const wanted = list(args.workload);
  const all = workloads(counts);
  // A workload's full name selects it alone (process-c10-p1, not its -burst sibling); else a prefix or a group.
  const matches = (w: WorkloadDef, p: string) =>
    all.some((x) => x.name === p) ? w.name === p : w.name.startsWith(`${p}-`) || w.group === p;
  const chosen = wanted ? all.filter((w) => wanted.some((p) => matches(w, p))) : all;
  if (chosen.length === 0)
    throw new Error(`no workload matches ${args.workload}; known: ${all.map((w) => w.name).join(", ")}`);

  const names = SYSTEM_NAMES.filter((s) => (only ? only.includes(s) : !(args.quick && QUICK_SKIP.has(s))));
  if (names.some((n) => n.startsWith("errand"))) buildErrand();
  const selected: SystemDef[] = [];
  for (const name of names) selected.push(await loadSystem(name));
  const infos: SystemInfo[] = [];
  for (const s of selected) {
    const unavailable = await s.unavailable();
    infos.push({ name: s.name, backend: s.backend, version: s.version(), settings: s.settings, unavailable });
    log(unavailable ? `✗ ${s.name}: unavailable — ${unavailable}` : `✓ ${s.name}: ${s.version()}`);
  }
  const usable = selected.filter((s) => !infos.find((i) => i.name === s.name)?.unavailable);

  const results: BenchResults = {
    date: new Date().toISOString(),
    mode: args.quick ? "quick" : "full",
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
    runs,
    wallSeconds: 0,
    machine: await machine(PG_URL, REDIS_URL),
    systems: infos,
    workloads: chosen.map(({ name, group, title, description, metrics }) => ({
      name,
      group,
      title,
      description,
      metrics,
    })),
    records: [],
    code: { start: codeVersion() },
  };
  log(
    `${results.machine.nproc} cores, Node ${results.machine.node}, ${results.machine.postgres}, Redis ${results.machine.redis}, load average ${results.machine.loadStart}`,
  );
  if (results.machine.loadStart > results.machine.nproc) {
    log(
      `warning: the load average (${results.machine.loadStart}) is above the core count: other work on this machine will distort the figures`,
    );
  }

  const total = chosen.reduce(
    (n, w) => n + runs * usable.filter((s) => !w.systems || w.systems.includes(s.name)).length,
    0,
  );
  let index = 0;
  const onSignal = () => {
    log("interrupted: cleaning up");
    active?.procs?.kill();
    void sweep().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  try {
    for (const w of chosen) {
      log(`\n== ${w.title}`);
      for (let run = 1; run <= runs; run++) {
        // Round-robin by run, starting one system later each round.
        const order = usable
          .map((_, i) => usable[(i + run - 1) % usable.length])
          .filter((s) => !w.systems || w.systems.includes(s.name));
        for (const system of order) {
          index++;
          const t0 = performance.now();
          const prefix = `[${index}/${total}] ${w.name} · ${system.name} · run ${run}/${runs}`;
          const record = await runOne(w, system);
          results.records.push({ workload: w.name, system: system.name, run, ...record });
          const secs = ((performance.now() - t0) / 1000).toFixed(1);
          log(
            record.ok
              ? `${prefix}: ${headline(w, record.metrics!)} (${secs} s)`
              : `${prefix}: FAILED — ${record.error} (${secs} s)`,
          );
        }
      }
    }
  } finally {
    await sweep();
  }

  if (args.merge) mergeEarlier(results, args.merge);
  results.wallSeconds = (performance.now() - started) / 1000;
  results.machine.loadEnd = Number(loadavg()[0].toFixed(2));
  results.code.end = codeVersion();
  if (!args["no-write"]) {
    writeFileSync(join(ROOT, "bench", "results.json"), `${JSON.stringify(results, null, 2)}\n`);
    writeFileSync(join(ROOT, "bench", "RESULTS.md"), renderReport(results));
    writeFileSync(join(ROOT, "bench", "results.svg"), renderChart(results));
    log(`\nwrote bench/RESULTS.md, bench/results.svg, bench/results.json (${fmt(results.wallSeconds, 0)} s)`);
  }
  process.exit(0);
}

main().catch(async (err) => {
  console.error(err instanceof Error ? err.message : err);
  await sweep().catch(() => {});
  process.exit(1);
});
