/**
 * The flow workload's part of bench/RESULTS.md: a row per system and condition (no limit, then
 * each limit that does not bind) with its throughput and its ratio to the no-limit row of the same
 * runs, and the aim of issue 16 (each non-binding limit at least 0.8× no limit).
 */
import { type BenchResults, fmt, summarize } from "./results.js";
import { FLOW_CONDITIONS } from "./workloads/flow.js";

const AIM = 0.8;

export function flowTable(results: BenchResults, w: BenchResults["workloads"][number]): string[] {
  const systems = results.systems.filter((s) =>
    results.records.some((r) => r.workload === w.name && r.system === s.name),
  );
  if (systems.length === 0) return [];
  const lines = [`### ${w.title}`, "", w.description, ""];
  lines.push(
    "| System | Condition | jobs/s: median (min–max) | ÷ no limit (median of the runs' ratios) | runs ok |",
  );
  lines.push("| --- | --- | ---: | ---: | ---: |");
  for (const s of systems) {
    for (const { key, label } of FLOW_CONDITIONS) {
      const v = summarize(results, w.name, s.name, key);
      const r = summarize(results, w.name, s.name, `${key}Ratio`);
      const range = v.ok > 1 ? ` (${fmt(v.min)}–${fmt(v.max)})` : "";
      const ratio = key === "none" ? "1.00" : fmt(r.median, 2);
      lines.push(
        `| ${s.name} | ${label} | ${fmt(v.median)}${range} | ${ratio} | ${v.ok}/${v.ok + v.failed} |`,
      );
    }
    const errors = summarize(results, w.name, s.name, "none").errors;
    if (errors.length) lines.push(`| ${s.name} | failed: ${errors.join("; ")} | | | |`);
  }
  lines.push("");
  return lines;
}

export function flowAims(
  results: BenchResults,
): { aim: string; status: "met" | "NOT MET" | "not measured"; detail: string }[] {
  const w = results.workloads.find((x) => x.group === "flow");
  if (!w) return [];
  return ["errand-postgres", "errand-sqlite"].flatMap((system) =>
    FLOW_CONDITIONS.slice(1).map(({ key, label }) => {
      const r = summarize(results, w.name, system, `${key}Ratio`).median;
      return {
        aim: `Flow control that does not bind (${label}) ≥ ${AIM}× no limit (${system}; issue 16)`,
        status: !Number.isFinite(r)
          ? ("not measured" as const)
          : r >= AIM
            ? ("met" as const)
            : ("NOT MET" as const),
        detail: Number.isFinite(r) ? `${fmt(r, 2)}×` : "not run",
      };
    }),
  );
}
