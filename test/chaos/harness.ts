/**
 * What the reliability tests share: worker processes (test/fixtures/chaos-worker.ts), a private
 * PostgreSQL cluster, a seeded PRNG, and reading back the traces the fixtures leave.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { JobRecord } from "../../src/job.js";
import type { Store } from "../../src/store/types.js";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const WORKER = join(ROOT, "test/fixtures/chaos-worker.ts");
export const JOBS = join(ROOT, "test/fixtures/chaos-jobs.ts");
export const CLOCK_SHIFT = join(ROOT, "test/fixtures/chaos-clock-shift.mjs");
export const CLI = join(ROOT, "src/cli/main.ts");

// ── seeded randomness ──────────────────────────────────────────────────────────────────────

/** mulberry32: a small, fast, seedable PRNG (the chaos schedule is reproducible from the seed). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ── processes ──────────────────────────────────────────────────────────────────────────────

/** The environment of a child: none of the outside ERRAND_* / CHAOS_* settings, plus `env`. */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) =>
        !k.startsWith("ERRAND_") &&
        !k.startsWith("CHAOS_") &&
        k !== "NODE_OPTIONS" &&
        k !== "NODE_TEST_CONTEXT",
    ),
  );
  return { ...base, NODE_NO_WARNINGS: "1", ...env };
}

export interface Proc {
  child: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Whether the process has exited. */
  readonly done: boolean;
}

/** Spawns `node [--import preload] --import tsx <script> ...args`. */
export function spawnNode(
  script: string,
  args: string[],
  env: Record<string, string>,
  preload?: string,
): Proc {
  const nodeArgs = [...(preload ? ["--import", preload] : []), "--import", "tsx", script, ...args];
  const child = spawn(process.execPath, nodeArgs, {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => {
    out += d;
  });
  child.stderr?.setEncoding("utf8").on("data", (d: string) => {
    err = (err + d).slice(-200_000);
  });
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("error", () => {
      done = true;
      resolve({ code: null, signal: null });
    });
    child.on("exit", (code, signal) => {
      done = true;
      resolve({ code, signal });
    });
  });
  return {
    child,
    pid: child.pid ?? -1,
    stdout: () => out,
    stderr: () => err,
    exited,
    get done() {
      return done;
    },
  };
}

/** Starts a chaos worker process; resolves once it printed "ready". */
export function spawnWorker(env: Record<string, string>, preload?: string): Proc {
  return spawnNode(WORKER, [], env, preload);
}

/** Waits until a worker says ready (or fails with its stderr). */
export async function whenReady(proc: Proc, timeoutMs = 180_000): Promise<void> {
  await waitUntil(
    () => {
      if (proc.done)
        throw new Error(`worker ${proc.pid} exited before it was ready:\n${proc.stderr().slice(-3000)}`);
      return proc.stdout().includes("ready ");
    },
    `worker ${proc.pid} to be ready`,
    timeoutMs,
    50,
  );
}

/** Sends a signal if the process still runs. */
export function signal(proc: Proc, sig: NodeJS.Signals): void {
  if (proc.done) return;
  try {
    process.kill(proc.pid, sig);
  } catch {
    // already gone
  }
}

/** Stops every process: SIGCONT (a stopped one cannot die gracefully), SIGTERM, then SIGKILL after `graceMs`. */
export async function stopAll(procs: Iterable<Proc>, graceMs = 10_000): Promise<void> {
  const list = [...procs].filter((p) => !p.done);
  for (const p of list) {
    signal(p, "SIGCONT");
    signal(p, "SIGTERM");
  }
  await Promise.all(
    list.map(async (p) => {
      const timer = setTimeout(() => signal(p, "SIGKILL"), graceMs);
      await p.exited;
      clearTimeout(timer);
    }),
  );
}

/** Kills every process at once (cleanup after a failure). */
export async function killAll(procs: Iterable<Proc>): Promise<void> {
  const list = [...procs].filter((p) => !p.done);
  for (const p of list) signal(p, "SIGKILL");
  await Promise.all(list.map((p) => p.exited));
}

// ── waiting ────────────────────────────────────────────────────────────────────────────────

/** Polls `check` until truthy; throws after `timeoutMs` naming `what` (errors thrown by `check` propagate). */
export async function waitUntil<T>(
  check: () => Promise<T> | T,
  what: string,
  timeoutMs: number,
  everyMs = 25,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

// ── a private PostgreSQL cluster ───────────────────────────────────────────────────────────

export const PG_BIN = process.env.CHAOS_PG_BIN ?? "/usr/lib/postgresql/15/bin";

export interface PrivatePostgres {
  url: string;
  port: number;
  dir: string;
  /** `pg_ctl restart -m fast`: every connection is cut, the server is back when this resolves. */
  restart(): void;
  /** Stops the server and deletes its folder. Idempotent. */
  destroy(): void;
}

/** Why a private cluster cannot be started here, or null. */
export function privatePostgresUnavailable(): string | null {
  if (!existsSync(join(PG_BIN, "initdb")) || !existsSync(join(PG_BIN, "pg_ctl")))
    return `no PostgreSQL binaries in ${PG_BIN}`;
  if (process.getuid?.() !== 0) {
    return "a private PostgreSQL cluster is started as the postgres user with runuser, which needs root";
  }
  try {
    execFileSync("id", ["-u", "postgres"], { stdio: "ignore" });
  } catch {
    return "no postgres OS user";
  }
  return null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const live = new Set<PrivatePostgres>();
process.on("exit", () => {
  for (const pg of live) pg.destroy();
});

/**
 * initdb into a fresh temp folder owned by the postgres OS user and start it on a free port.
 * Never touches the machine's shared server. Durability settings are off (fsync): the tests
 * restart the server, they do not crash the machine.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), "errand-chaos-pg-"));
  const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
  chownSync(dir, uid, gid);
  const data = join(dir, "data");
  const asPostgres = (cmd: string, args: string[], timeout = 120_000) =>
    execFileSync("runuser", ["-u", "postgres", "--", join(PG_BIN, cmd), ...args], { stdio: "pipe", timeout });
  let destroyed = false;
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c shared_buffers=64MB`;
  const pgCtl = (action: string, extra: string[] = []) =>
    asPostgres("pg_ctl", [
      "-D",
      data,
      "-l",
      join(dir, "server.log"),
      "-w",
      "-t",
      "120",
      "-o",
      options,
      ...extra,
      action,
    ]);
  const instance: PrivatePostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    restart() {
      pgCtl("restart", ["-m", "fast"]);
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      live.delete(instance);
      try {
        if (existsSync(join(data, "postmaster.pid"))) pgCtl("stop", ["-m", "immediate"]);
      } catch {
        // the folder goes anyway; a server without its folder exits on its own
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  live.add(instance);
  try {
    asPostgres("initdb", [
      "-D",
      data,
      "-A",
      "trust",
      "-U",
      "postgres",
      "-E",
      "UTF8",
      "--no-sync",
      "--no-instructions",
    ]);
    writeFileSync(join(dir, "server.log"), "");
    chownSync(join(dir, "server.log"), uid, gid);
    pgCtl("start");
  } catch (err) {
    const log = existsSync(join(dir, "server.log"))
      ? readFileSync(join(dir, "server.log"), "utf8").slice(-2000)
      : "";
    instance.destroy();
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(
      `could not start a private PostgreSQL: ${e.message}\n${e.stderr?.toString() ?? ""}\n${log}`,
    );
  }
  return instance;
}

// ── reading back ───────────────────────────────────────────────────────────────────────────

/** Every job of a store (pages of 1000). */
export async function allJobs(store: Store): Promise<JobRecord[]> {
  const jobs: JobRecord[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await store.listJobs({ limit: 1000, cursor });
    jobs.push(...page.jobs);
    if (!page.nextCursor) return jobs;
    cursor = page.nextCursor;
  }
}

export interface Execution {
  jobId: string;
  attempt: number;
  pid: number;
  start: number;
  /** null: the process died (or froze for good) before the handler ended. */
  end: number | null;
  how: string | null;
}

/** Executions from the exec-<pid>.log traces of chaos-jobs.ts. */
export function readExecutions(dir: string): Execution[] {
  const out: Execution[] = [];
  for (const file of readdirSync(dir).filter((f) => f.startsWith("exec-"))) {
    const open = new Map<string, Execution>();
    for (const line of readFileSync(join(dir, file), "utf8").split("\n")) {
      const [tag, jobId, attempt, pid, ms, how] = line.split(" ");
      if (tag === "S") {
        const e: Execution = {
          jobId,
          attempt: Number(attempt),
          pid: Number(pid),
          start: Number(ms),
          end: null,
          how: null,
        };
        out.push(e);
        open.set(`${jobId}:${attempt}`, e);
      } else if (tag === "E") {
        const e = open.get(`${jobId}:${attempt}`);
        if (e) {
          e.end = Number(ms);
          e.how = how ?? null;
          open.delete(`${jobId}:${attempt}`);
        }
      }
    }
  }
  return out;
}

export interface FinishTrace {
  id: string;
  token: number;
  kind: string;
  applied: boolean;
  pid: number;
}

/** The store-write spy lines of chaos-worker.ts. */
export function readFinishes(dir: string): FinishTrace[] {
  const out: FinishTrace[] = [];
  for (const file of readdirSync(dir).filter((f) => f.startsWith("finish-"))) {
    const pid = Number(file.slice("finish-".length, -".log".length));
    for (const line of readFileSync(join(dir, file), "utf8").split("\n")) {
      if (!line) continue;
      const [id, token, kind, applied] = line.split(" ");
      out.push({ id, token: Number(token), kind, applied: applied === "true", pid });
    }
  }
  return out;
}

/** The pid inside a chaos worker id (`chaos:<pid>`), or null. */
export function pidOfWorker(worker: string | null | undefined): number | null {
  const m = /^chaos:(\d+)$/.exec(worker ?? "");
  return m ? Number(m[1]) : null;
}

export function scratchDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
