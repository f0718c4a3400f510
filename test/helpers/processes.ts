/** Node processes started apart and released together, for races between processes. */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { ROOT } from "./sqlite.js";
import { within } from "./wait.js";

export interface Release {
  /** Added to each process's environment (with CHILD_INDEX, its number from 0). */
  env: Record<string, string>;
  /** One process, in an error: "child 3 exited 1: ...". */
  label?: string;
  /** All of them, in a timeout: "child processes to start". */
  what?: string;
  /** How long they may take to start, and then to finish. */
  timeoutMs?: number;
}

/**
 * Starts `n` node processes with `args` (from the repository root). Each prints "ready" once it
 * is up and waits for "go" on stdin: once all are up, all are released at once — a barrier, so
 * their work overlaps. Each prints one JSON line last, its result. Any still running at the end
 * is killed.
 */
export async function releasedTogether<R>(
  n: number,
  args: string[],
  { env, label = "child", what = "child processes", timeoutMs = 60_000 }: Release,
): Promise<R[]> {
  const procs: ChildProcessWithoutNullStreams[] = [];
  const outputs: Promise<R>[] = [];
  const ready: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, ...env, CHILD_INDEX: String(i) },
    });
    procs.push(child);
    let stdout = "";
    let stderr = "";
    let signalReady: () => void = () => {};
    ready.push(new Promise((resolve) => (signalReady = resolve)));
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.startsWith("ready\n")) signalReady();
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    outputs.push(
      new Promise((resolve, reject) => {
        child.on("error", reject);
        child.on("close", (status) => {
          if (status !== 0) return reject(new Error(`${label} ${i} exited ${status}: ${stderr}`));
          const last = stdout.trim().split("\n").pop() ?? "";
          try {
            resolve(JSON.parse(last) as R);
          } catch {
            reject(new Error(`${label} ${i} printed no result: ${stdout} ${stderr}`));
          }
        });
      }),
    );
  }
  try {
    await within(Promise.all(ready), timeoutMs, `${what} to start`);
    for (const child of procs) child.stdin.end("go\n");
    return await within(Promise.all(outputs), timeoutMs, `${what} to finish`);
  } finally {
    for (const child of procs) if (child.exitCode === null) child.kill();
  }
}
