/**
 * Summarises V8 CPU profiles (from `npm run bench -- --profile DIR`, which starts the worker
 * processes with --cpu-prof): the functions and the files with the most self time.
 *
 *   node --import tsx bench/profile-summary.ts DIR/*.cpuprofile [--top 30]
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { ROOT } from "./adapters/util.js";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const topAt = args.indexOf("--top");
const top = topAt >= 0 ? Number(args[topAt + 1]) : 30;
const files = args.filter((a, i) => !a.startsWith("--") && (topAt < 0 || i !== topAt + 1));
if (files.length === 0) {
  console.error("usage: node --import tsx bench/profile-summary.ts FILE.cpuprofile... [--top N]");
  process.exit(2);
}

const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
let total = 0;
let idle = 0;

function place(url: string): string {
  if (!url) return "(native/V8)";
  const path = url.replace(/^file:\/\//, "");
  const nm = path.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const rest = path.slice(nm + 14).split("/");
    return `node_modules/${rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (path.startsWith("node:")) return path;
  return relative(ROOT, path);
}

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  for (const [id, us] of self) {
    const n = nodes.get(id);
    if (!n) continue;
    const { functionName, url, lineNumber } = n.callFrame;
    if (functionName === "(idle)") {
      idle += us;
      continue;
    }
    const where = place(url);
    const key = `${functionName || "(anonymous)"}  ${where}${url ? `:${lineNumber + 1}` : ""}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byFile.set(where, (byFile.get(where) ?? 0) + us);
    total += us;
  }
}

function print(title: string, map: Map<string, number>, n: number): void {
  console.log(`\n${title}`);
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) {
    console.log(
      `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${key}`,
    );
  }
}

console.log(
  `${files.length} profile(s): ${(total / 1000).toFixed(0)} ms busy, ${(idle / 1000).toFixed(0)} ms idle (percentages are of busy time)`,
);
print("Self time by file / package", byFile, 20);
print("Self time by function", byFunction, top);
