#!/usr/bin/env node
// Runs the test suite with Node's own runner (through tsx for TypeScript).
// Usage: node scripts/test.mjs [dir-or-file ...]   (default: every test/**/*.test.ts)
// Each file runs in its own process; files run two at a time (this machine has 2 cores).
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function collect(path, out) {
  if (statSync(path).isDirectory()) {
    for (const entry of readdirSync(path).sort()) {
      if (entry === "node_modules" || entry === "fixtures") continue;
      collect(join(path, entry), out);
    }
  } else if (path.endsWith(".test.ts")) out.push(path);
  return out;
}

const args = process.argv.slice(2);
const roots = args.length > 0 ? args : ["test"];
const files = roots.flatMap((root) => collect(root, []));
if (files.length === 0) {
  console.error(`no test files found under ${roots.join(", ")}`);
  process.exit(1);
}
const concurrency = process.env.ERRAND_TEST_CONCURRENCY ?? "2";
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, "--test-reporter=spec", ...files],
  { stdio: "inherit" },
);
process.exit(result.status ?? 1);
