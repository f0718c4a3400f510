/**
 * The worker processes of one run: real child processes (bench/worker-process.ts), each with
 * its own connections, started together, watched through their progress messages, and
 * stopped (or killed, by their own pids) at the end.
 */
import { type ChildProcess, fork } from "node:child_process";
import { join } from "node:path";
import type { Target, WorkerSettings } from "./adapters/types.js";
import { ROOT } from "./adapters/util.js";
import type { ChildMessage, ChildReport } from "./protocol.js";

const ENTRY = join(ROOT, "bench", "worker-process.ts");

interface Child {
  proc: ChildProcess;
  done: number;
  failed: number;
  firstStart: number;
  lastAt: number;
  exited: boolean;
  waiters: Array<{ type: ChildMessage["type"]; resolve: (m: ChildMessage) => void }>;
}

export class WorkerProcs {
  private readonly children: Child[] = [];
  private error: string | null = null;
  private listeners: Array<() => void> = [];

  private constructor() {}

  /** Forks `count` worker processes and waits until each has opened the system. */
  static async spawn(
    system: string,
    target: Target,
    settings: WorkerSettings,
    count: number,
    options: { profileDir?: string } = {},
  ): Promise<WorkerProcs> {
    const procs = new WorkerProcs();
    const execArgv = ["--import", "tsx"];
    if (options.profileDir) execArgv.push("--cpu-prof", `--cpu-prof-dir=${options.profileDir}`);
    for (let i = 0; i < count; i++) {
      const proc = fork(ENTRY, [], {
        cwd: ROOT,
        execArgv,
        stdio: ["ignore", "ignore", "inherit", "ipc"],
        env: {
          ...process.env,
          BENCH_SYSTEM: system,
          BENCH_TARGET: JSON.stringify(target),
          BENCH_SETTINGS: JSON.stringify(settings),
        },
      });
      const child: Child = { proc, done: 0, failed: 0, firstStart: 0, lastAt: 0, exited: false, waiters: [] };
      proc.on("message", (m: ChildMessage) => procs.onMessage(child, m));
      proc.on("exit", (code, signal) => {
        child.exited = true;
        if (code !== 0 && !procs.error) procs.fail(`worker process ${proc.pid} exited (${signal ?? code})`);
      });
      procs.children.push(child);
    }
    await procs.all("ready");
    return procs;
  }

  get pids(): number[] {
    return this.children.map((c) => c.proc.pid ?? 0);
  }

  private onMessage(child: Child, m: ChildMessage): void {
    if (m.type === "progress") {
      child.done = m.done;
      child.failed = m.failed;
      child.firstStart = m.firstStart;
      child.lastAt = m.lastAt;
      for (const l of [...this.listeners]) l();
    } else if (m.type === "error") {
      this.fail(`worker process ${child.proc.pid}: ${m.message}`);
    }
    const waiting = child.waiters.filter((w) => w.type === m.type);
    child.waiters = child.waiters.filter((w) => w.type !== m.type);
    for (const w of waiting) w.resolve(m);
  }

  private fail(message: string): void {
    this.error ??= message;
    for (const l of [...this.listeners]) l();
    for (const child of this.children) {
      const waiters = child.waiters;
      child.waiters = [];
      for (const w of waiters) w.resolve({ type: "error", message });
    }
  }

  private waitFor(child: Child, type: ChildMessage["type"]): Promise<ChildMessage> {
    if (this.error) return Promise.resolve({ type: "error", message: this.error });
    return new Promise((resolve) => child.waiters.push({ type, resolve }));
  }

  private async all(type: ChildMessage["type"]): Promise<ChildMessage[]> {
    const messages = await Promise.all(this.children.map((c) => this.waitFor(c, type)));
    if (this.error) throw new Error(this.error);
    return messages;
  }

  /** Starts every process's workers at once. */
  async start(): Promise<void> {
    const started = this.all("started");
    for (const c of this.children) c.proc.send({ type: "start" });
    await started;
  }

  get done(): number {
    return this.children.reduce((a, c) => a + c.done, 0);
  }

  get failed(): number {
    return this.children.reduce((a, c) => a + c.failed, 0);
  }

  /** Earliest first handler call over the processes (epoch ms). */
  get firstStart(): number {
    const starts = this.children.map((c) => c.firstStart).filter((t) => t > 0);
    return starts.length ? Math.min(...starts) : 0;
  }

  get lastAt(): number {
    return Math.max(0, ...this.children.map((c) => c.lastAt));
  }

  /** Resolves when `predicate` holds after a progress message; rejects on a child's error. */
  until(predicate: () => boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.error) {
          this.listeners = this.listeners.filter((l) => l !== check);
          reject(new Error(this.error));
        } else if (predicate()) {
          this.listeners = this.listeners.filter((l) => l !== check);
          resolve();
        }
      };
      this.listeners.push(check);
      check();
    });
  }

  async report(): Promise<ChildReport[]> {
    const reports = this.all("report");
    for (const c of this.children) c.proc.send({ type: "report" });
    return (await reports) as ChildReport[];
  }

  /** Asks every process to stop; kills (by pid) any still alive after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    const exited = Promise.all(
      this.children.map((c) =>
        c.exited ? Promise.resolve() : new Promise<void>((r) => c.proc.once("exit", () => r())),
      ),
    );
    for (const c of this.children) {
      if (!c.exited && c.proc.connected) c.proc.send({ type: "stop" });
    }
    this.error ??= "stopping";
    const timer = new Promise<void>((r) => setTimeout(r, graceMs).unref());
    await Promise.race([exited, timer]);
    this.kill();
  }

  /** Kills every process of this run still alive (SIGKILL, by pid). */
  kill(): void {
    for (const c of this.children) {
      if (!c.exited && c.proc.pid) {
        try {
          process.kill(c.proc.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
  }
}
