/** bench/RESULTS.md: a table per workload with medians, ranges and ratios to errand; the aims of issue 7. */
import { flowAims, flowTable } from "./flow-report.js";
import { advantage, type BenchResults, fmt, summarize } from "./results.js";
import type { Metric } from "./workloads.js";

const ERRANDS = ["errand-postgres", "errand-sqlite"];

function cell(
  results: BenchResults,
  workload: string,
  system: string,
  metric: Metric,
  withRange: boolean,
): string {
  const s = summarize(results, workload, system, metric.key);
  if (!Number.isFinite(s.median)) return s.failed ? "failed" : "—";
  const d = metric.digits ?? 0;
  const main = fmt(s.median, d);
  return withRange && s.ok > 1 ? `${main} (${fmt(s.min, d)}–${fmt(s.max, d)})` : main;
}

function ratio(
  results: BenchResults,
  workload: string,
  errand: string,
  system: string,
  metric: Metric,
): string {
  if (system === errand) return "1.00";
  if (ERRANDS.includes(system)) return "—";
  const e = summarize(results, workload, errand, metric.key).median;
  const o = summarize(results, workload, system, metric.key).median;
  const a = advantage(e, o, metric);
  return Number.isFinite(a) ? `${fmt(a, 2)}×` : "—";
}

function workloadTable(results: BenchResults, w: BenchResults["workloads"][number]): string[] {
  const lines: string[] = [];
  const systems = results.systems.filter((s) =>
    results.records.some((r) => r.workload === w.name && r.system === s.name),
  );
  if (systems.length === 0) return lines;
  const head = w.metrics[0];
  const errands = ERRANDS.filter((e) => systems.some((s) => s.name === e));
  lines.push(`### ${w.title}`, "", w.description, "");
  const header = [
    "System",
    `${head.label}${head.unit && head.unit !== head.label ? ` (${head.unit})` : ""}: median (min–max)`,
    ...errands.map((e) => `${e} advantage`),
    ...w.metrics.slice(1).map((m) => `${m.label}${m.unit ? ` (${m.unit})` : ""}`),
    "runs ok",
  ];
  lines.push(
    `| ${header.join(" | ")} |`,
    `| ${header.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`,
  );
  let partial = false;
  for (const s of systems) {
    const sum = summarize(results, w.name, s.name, head.key);
    const cut = results.records.some(
      (r) => r.workload === w.name && r.system === s.name && r.metrics?.partial !== undefined,
    );
    partial ||= cut;
    const row = [
      `${s.name} (${s.backend})`,
      `${cell(results, w.name, s.name, head, true)}${cut ? " †" : ""}`,
      ...errands.map((e) => ratio(results, w.name, e, s.name, head)),
      ...w.metrics.slice(1).map((m) => cell(results, w.name, s.name, m, false)),
      `${sum.ok}/${sum.ok + sum.failed}`,
    ];
    lines.push(`| ${row.join(" | ")} |`);
  }
  if (partial) {
    lines.push("", "† did not finish within the time budget; the figure is from the jobs done by then.");
  }
  const failures = systems
    .map((s) => ({ s, errors: summarize(results, w.name, s.name, head.key).errors }))
    .filter((f) => f.errors.length > 0);
  if (failures.length) {
    lines.push("");
    for (const f of failures)
      lines.push(`- **${f.s.name}** failed: ${f.errors.map((e) => e.split("\n")[0]).join("; ")}`);
  }
  lines.push("");
  return lines;
}

interface Aim {
  aim: string;
  status: "met" | "NOT MET" | "not measured";
  detail: string;
}

function med(results: BenchResults, workload: string, system: string, metric: string): number {
  return summarize(results, workload, system, metric).median;
}

function aims(results: BenchResults): Aim[] {
  const out: Aim[] = [];
  const process = results.workloads.filter((w) => w.group === "process");
  const pgPeers = results.systems
    .filter((s) => s.backend === "postgres" && !s.name.startsWith("errand"))
    .map((s) => s.name);
  const has = (workload: string, system: string) =>
    Number.isFinite(med(results, workload, system, "jobsPerSec"));

  // Throughput: 2x the fastest Postgres peer, ahead of BullMQ.
  for (const w of process) {
    const e = med(results, w.name, "errand-postgres", "jobsPerSec");
    const peers = pgPeers
      .filter((p) => has(w.name, p))
      .map((p) => ({ p, v: med(results, w.name, p, "jobsPerSec") }));
    const best = peers.sort((a, b) => b.v - a.v)[0];
    const bull = med(results, w.name, "bullmq", "jobsPerSec");
    if (!Number.isFinite(e) || !best) {
      out.push({
        aim: `${w.title}: errand-postgres ≥ 2× the fastest Postgres peer, ahead of BullMQ`,
        status: "not measured",
        detail: "errand-postgres or the peers not run",
      });
      continue;
    }
    const ok2x = e >= 2 * best.v;
    const okBull = !Number.isFinite(bull) || e > bull;
    out.push({
      aim: `${w.title}: errand-postgres ≥ 2× the fastest Postgres peer, ahead of BullMQ`,
      status: ok2x && okBull ? "met" : "NOT MET",
      detail: `errand-postgres ${fmt(e)} jobs/s = ${fmt(e / best.v, 2)}× ${best.p} (${fmt(best.v)})${Number.isFinite(bull) ? `, ${fmt(e / bull, 2)}× BullMQ (${fmt(bull)})` : ""}`,
    });
  }
  // A burst into a never-analyzed table is no slower for errand than steady state.
  for (const w of process.filter((x) => x.name.endsWith("-burst"))) {
    const steady = w.name.slice(0, -"-burst".length);
    for (const e of ERRANDS) {
      const b = med(results, w.name, e, "jobsPerSec");
      const s = med(results, steady, e, "jobsPerSec");
      const measured = Number.isFinite(b) && Number.isFinite(s);
      out.push({
        aim: `${e}: a burst into a never-analyzed table at least as fast as steady state (${steady})`,
        status: !measured ? "not measured" : b >= s ? "met" : "NOT MET",
        detail: measured ? `burst ${fmt(b)} jobs/s, steady state ${fmt(s)} jobs/s` : "not run",
      });
    }
  }
  // Bulk enqueue.
  for (const e of ERRANDS) {
    const v = med(results, "bulk", e, "jobsPerSec");
    out.push({
      aim: `Bulk enqueue ≥ 100,000 jobs/s (${e})`,
      status: !Number.isFinite(v) ? "not measured" : v >= 100_000 ? "met" : "NOT MET",
      detail: Number.isFinite(v) ? `${fmt(v)} jobs/s` : "not run",
    });
  }
  // Latency.
  for (const w of results.workloads.filter((x) => x.group === "latency")) {
    for (const [e, limit] of [
      ["errand-postgres", 2],
      ["errand-sqlite", 1],
    ] as const) {
      const v = med(results, w.name, e, "p50");
      out.push({
        aim: `p50 enqueue-to-start ≤ ${limit} ms, idle workers (${e}, ${w.title.replace("Enqueue-to-start latency ", "")})`,
        status: !Number.isFinite(v) ? "not measured" : v <= limit ? "met" : "NOT MET",
        detail: Number.isFinite(v) ? `${fmt(v, 2)} ms` : "not run",
      });
    }
  }
  // SQLite, one worker process.
  const sqliteOne = process
    .filter((w) => w.name.endsWith("-p1"))
    .map((w) => med(results, w.name, "errand-sqlite", "jobsPerSec"));
  const bestSqlite = Math.max(...sqliteOne.filter(Number.isFinite), Number.NEGATIVE_INFINITY);
  out.push({
    aim: "SQLite ≥ 20,000 jobs/s processed by one worker process",
    status: !Number.isFinite(bestSqlite) ? "not measured" : bestSqlite >= 20_000 ? "met" : "NOT MET",
    detail: Number.isFinite(bestSqlite) ? `best ${fmt(bestSqlite)} jobs/s` : "not run",
  });
  // CPU per 1,000 jobs.
  for (const e of ERRANDS) {
    const cpus = process
      .map((w) => ({ w: w.name, v: med(results, w.name, e, "cpuMsPer1k") }))
      .filter((x) => Number.isFinite(x.v));
    const worst = cpus.sort((a, b) => b.v - a.v)[0];
    out.push({
      aim: `Worker CPU ≤ 25 ms per 1,000 no-op jobs (${e})`,
      status: !worst ? "not measured" : worst.v <= 25 ? "met" : "NOT MET",
      detail: worst ? cpus.map((c) => `${c.w}: ${fmt(c.v, 1)} ms`).join(", ") : "not run",
    });
  }
  out.push({
    aim: "Worker memory flat over a long run",
    status: "not measured",
    detail:
      "the bench reports peak RSS per worker process per run; a soak run (hours, RSS sampled over time) is not part of it",
  });
  return out;
}

export function renderReport(results: BenchResults): string {
  const m = results.machine;
  const lines: string[] = [];
  lines.push(
    "# errand benchmarks",
    "",
    `Generated by \`${results.command}\` on ${results.date} (${results.mode} mode, ${results.runs} run${results.runs > 1 ? "s" : ""} per figure, ${fmt(results.wallSeconds / 60, 1)} minutes). Do not edit by hand: rerun the bench.`,
    "",
    "Every figure is the median of the runs, with the range (min–max) when there was more than one. Systems are interleaved: each round runs every system once, in a rotating order, before the next round. Each run starts on a fresh Postgres schema / Redis key prefix / SQLite file, dropped afterwards. Worker processes are real child processes (`bench/worker-process.ts`) started after their jobs are enqueued; throughput runs from the first handler call to the moment the store records every job finished. CPU is user + system time of the worker processes (`process.cpuUsage`), peak RSS the largest worker process's VmHWM.",
    "",
    ...(results.merged
      ? [
          `Workloads marked "from the ${results.merged}" were measured in that earlier run (\`--merge\`), not in this one.`,
          "",
        ]
      : []),
    "**errand advantage** = how many times better errand is than that system on the headline figure (throughput: errand ÷ system; latency: system ÷ errand). Above 1.00× errand wins, below it loses.",
    "",
    "![throughput and latency](results.svg)",
    "",
    "## Machine",
    "",
    `- ${m.nproc} cores (${m.cpu}), ${fmt(m.memoryGb, 0)} GB memory, ${m.os}`,
    `- Node.js ${m.node}`,
    `- ${m.postgres} on 127.0.0.1:5432 (loopback, shared by every Postgres system)`,
    `- Redis ${m.redis} on 127.0.0.1:6379`,
    `- Baseline peak RSS of an idle Node process: ${m.baselineRssMb.node} MB; under the tsx loader (as the worker processes run): ${m.baselineRssMb.tsx} MB — part of every worker's memory figure`,
    `- Load average (1 min) when the bench started: ${m.loadStart}, when it ended: ${m.loadEnd ?? "?"} — anything else running on the machine shares its ${m.nproc} cores with the systems measured`,
    "",
    "## errand's code",
    "",
    results.code?.end && results.code.end !== results.code.start
      ? `**errand's code changed during the run** (others commit to the same checkout, and each worker process loads \`src/\` afresh): at the start \`${results.code.start}\`, at the end \`${results.code.end}\`. errand's runs are a mix of the two.`
      : `\`${results.code?.start ?? "unknown"}\``,
    "",
    ...(results.notes?.length ? ["## Notes on this run", "", ...results.notes.map((n) => `- ${n}`), ""] : []),
    "## Systems and settings",
    "",
    "| System | Version | Settings |",
    "| --- | --- | --- |",
  );
  for (const s of results.systems) {
    lines.push(
      `| ${s.name} | ${s.version} | ${s.unavailable ? `**unavailable**: ${s.unavailable}` : s.settings} |`,
    );
  }
  lines.push(
    "",
    "Not benchmarked: **Sidequest on SQLite** — `@sidequest/sqlite-backend@1.16.5` (the latest) depends on `@sidequest/core@1.16.5`, which does not exist on the npm registry (the newest is 1.16.4), so it cannot be installed.",
    "",
    "pg-boss 12, graphile-worker 0.18 and Sidequest 1.16 declare Node.js ≥ 22 in their `engines`; this machine has Node.js 20, on which they ran without errors. BullMQ 6 made its Redis driver an optional peer dependency; ioredis 5 is a dev dependency of the project.",
    "",
    "Peers' job payloads are not validated; errand's job uses a pass-through Standard Schema validator, so no validator library's cost is charged to it. Every system's per-job log lines are off (errand: `silentLogger()`, graphile-worker: a no-op logger, Sidequest: level error).",
    "",
    "## Results",
    "",
  );
  for (const w of results.workloads) lines.push(...(w.group === "flow" ? flowTable(results, w) : workloadTable(results, w)));

  lines.push(
    "## Aims of issue 7",
    "",
    "errand's default settings against each peer's best settings.",
    "",
    "| Aim | Status | Measured |",
    "| --- | --- | --- |",
  );
  for (const a of [...aims(results), ...flowAims(results)])
    lines.push(`| ${a.aim} | ${a.status === "NOT MET" ? "**NOT MET**" : a.status} | ${a.detail} |`);
  lines.push(
    "",
    "Why errand falls short where it does, with profiles of the worker process, is in [NOTES.md](NOTES.md).",
    "",
  );
  return lines.join("\n");
}
