/**
 * Re-renders bench/RESULTS.md and bench/results.svg from bench/results.json (or a given file)
 * without running anything: `node --import tsx bench/render.ts [results.json]`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./adapters/util.js";
import { renderChart } from "./chart.js";
import { renderReport } from "./report.js";
import type { BenchResults } from "./results.js";

const file = process.argv[2] ?? join(ROOT, "bench", "results.json");
const results = JSON.parse(readFileSync(file, "utf8")) as BenchResults;
writeFileSync(join(ROOT, "bench", "RESULTS.md"), renderReport(results));
writeFileSync(join(ROOT, "bench", "results.svg"), renderChart(results));
console.log(`wrote bench/RESULTS.md and bench/results.svg from ${file}`);
