/**
 * Sums a sampling heap profile (bench/one-worker.ts BENCH_HEAP_PROFILE, or Chrome DevTools'
 * "Allocation sampling") by function and by file: where the sampled bytes were allocated.
 *
 *   node --import tsx bench/heap-summary.ts FILE.heapprofile [top, default 30]
 */
import { readFileSync } from "node:fs";

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Node[];
}

const [file, top = "30"] = process.argv.slice(2);
if (!file) throw new Error("usage: bench/heap-summary.ts FILE.heapprofile [top]");
const { head } = JSON.parse(readFileSync(file, "utf8")) as { head: Node };
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
let total = 0;
const shortUrl = (url: string) =>
  url.replace(/^file:\/\/.*?\/(dist|src|node_modules)\//, "$1/") || "(native/V8)";
(function walk(n: Node) {
  const where = shortUrl(n.callFrame.url);
  const name = `${n.callFrame.functionName || "(anonymous)"}  ${where}:${n.callFrame.lineNumber + 1}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + n.selfSize);
  byFile.set(where, (byFile.get(where) ?? 0) + n.selfSize);
  total += n.selfSize;
  for (const c of n.children) walk(c);
})(head);
const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(top)))
    console.log(
      `${((100 * v) / total).toFixed(1).padStart(5)}%  ${(v / 1e6).toFixed(1).padStart(7)} MB  ${k}`,
    );
};
console.log(`${(total / 1e6).toFixed(1)} MB sampled`);
print("By file", byFile);
print("By function", byFunction);
