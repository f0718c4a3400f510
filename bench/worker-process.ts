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
import { findSystem } from "./adapters/index.js";
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

async function main(): Promise<void> {
  const system = findSystem(process.env.BENCH_SYSTEM ?? "");
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
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
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
    await Promise.race([(async () => {
      await running?.stop();
      await adapter.close();
    })(), deadline]);
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
