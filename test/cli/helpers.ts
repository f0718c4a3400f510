/** Runs the real `errand` CLI in child processes (through tsx, from src/) and waits on conditions. */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Errand, openErrand, silentLogger } from "../../src/index.js";
import type { AnyJobDefinition } from "../../src/job.js";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The CLI's source entry, run through tsx. */
export const CLI_SOURCE = join(ROOT, "src/cli/main.ts");
/** The fixture jobs as TypeScript (loaded by the CLI through tsx). */
export const FIXTURE_JOBS_TS = join(ROOT, "test/fixtures/jobs.ts");
const BUILD_CACHE = join(ROOT, "node_modules/.cache");

/**
 * Most tests run the CLI compiled to JavaScript, as `npm run build` ships it: a process through
 * tsx costs about three times the CPU, and these tests start dozens. The build is a plain
 * per-file transpile of src/ and the fixtures (TypeScript's transpileModule), cached under
 * node_modules/.cache/ with a hash of the sources, so test files share it and a change rebuilds it.
 * The cache lives inside this checkout (not the shared temp directory), so its imports resolve to
 * this checkout's node_modules and a build can never outlive the dependencies it was made with.
 */
export const BUILD = compiledBuild();
export const CLI = join(BUILD, "src/cli/main.js");
export const FIXTURE_JOBS = join(BUILD, "test/fixtures/jobs.js");
/** The flow-control fixture jobs (test/flow/), compiled. */
export const FLOW_JOBS = join(BUILD, "test/fixtures/flow-jobs.js");
/** The process-reliability fixture jobs (test/reliability/), compiled. */
export const PROCESS_JOBS = join(BUILD, "test/fixtures/process-jobs.js");

function sourceFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) files.push(path);
    }
  };
  walk("src");
  files.push(
    "test/fixtures/jobs.ts",
    "test/fixtures/process-jobs.ts",
    "test/fixtures/spin-thread.ts",
    "test/fixtures/flow-jobs.ts",
  );
  return files.sort();
}

/** Builds of older sources, untouched for a day, are removed. */
function removeStaleBuilds(current: string): void {
  const dayAgo = Date.now() - 86_400_000;
  for (const name of readdirSync(BUILD_CACHE)) {
    const path = join(BUILD_CACHE, name);
    if (!name.startsWith("errand-cli-build-") || path === current) continue;
    try {
      if (statSync(path).mtimeMs < dayAgo) rmSync(path, { recursive: true, force: true });
    } catch {
      // another test process removed it first
    }
  }
}

function compiledBuild(): string {
  const files = sourceFiles();
  const hash = createHash("sha256");
  for (const file of files)
    hash
      .update(file)
      .update("\0")
      .update(readFileSync(join(ROOT, file)))
      .update("\0");
  mkdirSync(BUILD_CACHE, { recursive: true });
  const dir = join(BUILD_CACHE, `errand-cli-build-${hash.digest("hex").slice(0, 16)}`);
  removeStaleBuilds(dir);
  if (existsSync(join(dir, "package.json"))) return dir;
  const require = createRequire(import.meta.url);
  const ts = require("typescript") as typeof import("typescript");
  const staging = `${dir}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  for (const file of files) {
    const out = ts.transpileModule(readFileSync(join(ROOT, file), "utf8"), {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: false },
    });
    const target = join(staging, file.replace(/\.ts$/, ".js"));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, out.outputText);
  }
  chmodSync(join(staging, "src/cli/main.js"), 0o755);
  // Last, so a directory with a package.json is complete: "type": "module" and the version.
  copyFileSync(join(ROOT, "package.json"), join(staging, "package.json"));
  try {
    renameSync(staging, dir);
  } catch {
    rmSync(staging, { recursive: true, force: true }); // another test file built it first
  }
  return dir;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The environment of a child: no ERRAND_* settings from the outside, plus `env`. */
function childEnv(env: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ERRAND_")));
  return { ...base, NODE_NO_WARNINGS: "1", ...env };
}

export interface Running {
  child: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<RunResult>;
}

/**
 * Starts `errand <args>` (compiled; `source: true` runs src/ through tsx); output is collected.
 * `cwd`: the working directory (default the checkout).
 */
export function start(
  args: string[],
  env: Record<string, string> = {},
  options: { source?: boolean; cwd?: string } = {},
): Running {
  const argv = options.source ? ["--import", "tsx", CLI_SOURCE, ...args] : [CLI, ...args];
  return startNode(argv, env, options.cwd);
}

/** Starts a TypeScript script of this checkout (through tsx), its output collected as `start` does. */
export function startScript(file: string, env: Record<string, string> = {}): Running {
  return startNode(["--import", "tsx", join(ROOT, file)], env);
}

function startNode(argv: string[], env: Record<string, string>, cwd?: string): Running {
  const child = spawn(process.execPath, argv, {
    cwd: cwd ?? ROOT,
    env: childEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr?.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<RunResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, pid: child.pid ?? -1, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Runs `errand <args>` to the end (killed after `timeoutMs`). */
export async function run(
  args: string[],
  env: Record<string, string> = {},
  options: { source?: boolean; timeoutMs?: number; cwd?: string } = {},
): Promise<RunResult> {
  const proc = start(args, env, options);
  const timeoutMs = options.timeoutMs ?? 60_000;
  const timer = setTimeout(() => proc.child.kill("SIGKILL"), timeoutMs);
  try {
    return await proc.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Runs many commands, at most `limit` at once, results in order. */
export async function runAll(
  commands: string[][],
  env: Record<string, string> = {},
  limit = 4,
): Promise<RunResult[]> {
  const results: RunResult[] = new Array(commands.length);
  let next = 0;
  const lane = async () => {
    while (next < commands.length) {
      const i = next++;
      results[i] = await run(commands[i], env);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, commands.length) }, lane));
  return results;
}

/** Polls `check` until it returns a truthy value; fails after `timeoutMs` with `what`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 30_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Waits for a child to exit, killing it (and failing) after `timeoutMs`. */
export async function exitOf(proc: Running, timeoutMs = 30_000): Promise<RunResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      proc.child.kill("SIGKILL");
      reject(
        new Error(
          `process ${proc.pid} did not exit within ${timeoutMs} ms; stderr:\n${proc.stderr().slice(-2000)}`,
        ),
      );
    }, timeoutMs);
  });
  try {
    return await Promise.race([proc.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A fresh directory with a SQLite file path in it; `cleanup` removes it. */
export function scratch(prefix = "errand-cli-"): { dir: string; db: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(dir, "running"));
  return { dir, db: join(dir, "errand.db"), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Opens the store a test inspects (and migrates it, so children find it ready). */
export function inspect(db: string, jobs: readonly AnyJobDefinition[] = []): Promise<Errand> {
  return openErrand({ url: db, logger: silentLogger(), jobs });
}

/** No stack trace in CLI output: no "    at " frame lines. */
export function hasStack(text: string): boolean {
  return /^\s+at .+\(.*:\d+:\d+\)$/m.test(text) || /^\s+at .+:\d+:\d+$/m.test(text);
}
