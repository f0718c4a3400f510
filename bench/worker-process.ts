/**
 * One worker process of a benchmark run. The harness forks it with the system, the run's
 * target and the worker settings in the environment; it opens the system, says "ready",
 * starts its workers on "start", reports done counts every 20 ms, and on "report" sends its
 * counts, CPU time, peak memory and latency samples; on "stop" it stops and exits.
 *
 *   BENCH_SYSTEM=errand-postgres BENCH_TARGET='{…}' BENCH_SETTINGS='{"concurrency":10,"maxAttempts":1}'
 *   node --import tsx bench/worker-process.ts     (normally started by bench/run.ts)
 */
import { readFileSync } from "node:fs";
import { loadSystem } from "./adapters/index.js";
import type { Handler, RunningWorkers, Target, WorkerSettings } from "./adapters/types.js";
import { now } from "./adapters/types.js";
import type { ChildMessage, ParentMessage } from "./protocol.js";

function send(message: ChildMessage): void {
  process.send?.(message);
}

/** Peak resident set size of this process so far, from the kernel (VmHWM), in bytes. */
function vmHwm(): number {
  try {
    const match = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync("/proc/self/status", "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * BENCH_TRACE_SQL=1 (diagnosis only): count this process's queries by statement and print the
 * counts to stderr when it stops — how many round trips a system makes per job.
 */
async function traceSql(): Promise<() => void> {
  const { default: pg } = await import("pg");
  const counts = new Map<string, { n: number; ms: number }>();
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const first = args[0] as string | { text?: string; name?: string };
    const text = typeof first === "string" ? first : (first?.text ?? first?.name ?? "?");
    const key = text.replace(/\s+/g, " ").trim().slice(0, 90);
    const entry = counts.get(key) ?? { n: 0, ms: 0 };
    counts.set(key, entry);
    entry.n++;
    const t0 = now();
    const result = original.apply(this, args);
    if (result && typeof (result as Promise<unknown>).then === "function") {
      (result as Promise<unknown>).then(
        () => void (entry.ms += now() - t0),
        () => void (entry.ms += now() - t0),
      );
    }
    return result;
  };
  return () => {
    const lines = [...counts].sort((a, b) => b[1].n - a[1].n).slice(0, 25);
    process.stderr.write(
      `[trace-sql ${process.pid}]\n${lines.map(([k, v]) => `${String(v.n).padStart(8)} ${(v.ms / v.n).toFixed(2).padStart(8)} ms  ${k}`).join("\n")}\n`,
    );
  };
}

async function main(): Promise<void> {
  const printTrace = process.env.BENCH_TRACE_SQL === "1" ? await traceSql() : null;
  const system = await loadSystem(process.env.BENCH_SYSTEM ?? "");
  const target = JSON.parse(process.env.BENCH_TARGET ?? "{}") as Target;
  const settings = JSON.parse(process.env.BENCH_SETTINGS ?? "{}") as WorkerSettings;

  let done = 0;
  let failed = 0;
  let firstStart = 0;
  let lastAt = 0;
  const latencies: number[] = [];
  const handler: Handler = (payload, attempt) => {
    const t = now();
    if (firstStart === 0) firstStart = t;
    if (payload.m === 1) latencies.push(t - payload.t);
    if (payload.f === 1 && attempt <= 1) {
      failed++;
      lastAt = t;
      throw new Error("bench: planned failure on the first attempt");
    }
    done++;
    lastAt = t;
  };

  let peakRss = process.memoryUsage.rss();
  let peakHeap = process.memoryUsage().heapUsed;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }, 100);

  const adapter = await system.create(target);
  await adapter.prepareWorkers?.(settings);

  let running: RunningWorkers | null = null;
  let cpuStart = process.cpuUsage();
  let progress: NodeJS.Timeout | null = null;
  let reported = -1;

  const stop = async () => {
    if (progress) clearInterval(progress);
    clearInterval(sampler);
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, 10_000).unref());
    await Promise.race([
      (async () => {
        await running?.stop();
        await adapter.close();
      })(),
      deadline,
    ]);
    printTrace?.();
    send({ type: "stopped" });
    process.disconnect?.();
    process.exit(0);
  };

  process.on("message", (message: ParentMessage) => {
    void (async () => {
      try {
        if (message.type === "start") {
          cpuStart = process.cpuUsage();
          running = await adapter.startWorkers(settings, handler);
          send({ type: "started" });
          progress = setInterval(() => {
            const sum = done + failed;
            if (sum === reported) return;
            reported = sum;
            send({ type: "progress", done, failed, firstStart, lastAt });
          }, 20);
        } else if (message.type === "report") {
          const cpu = process.cpuUsage(cpuStart);
          peakRss = Math.max(peakRss, process.memoryUsage.rss());
          send({
            type: "report",
            done,
            failed,
            firstStart,
            lastAt,
            cpuMs: (cpu.user + cpu.system) / 1000,
            peakRss: Math.max(peakRss, vmHwm()),
            peakHeap,
            latencies,
          });
        } else if (message.type === "stop") {
          await stop();
        }
      } catch (err) {
        send({ type: "error", message: (err as Error).stack ?? String(err) });
      }
    })();
  });
  process.on("disconnect", () => process.exit(0));
  send({ type: "ready", pid: process.pid });
}

main().catch((err) => {
  send({ type: "error", message: (err as Error).stack ?? String(err) });
  setTimeout(() => process.exit(1), 100);
});
