/** Messages between the harness and its worker processes (over the fork IPC channel). */

export type ParentMessage = { type: "start" } | { type: "report" } | { type: "stop" };

export interface ChildReport {
  type: "report";
  /** Successful handler runs. */
  done: number;
  /** Planned failures (first attempts of failing jobs). */
  failed: number;
  /** First handler call (epoch ms), 0 if none. */
  firstStart: number;
  /** Last handler return (epoch ms). */
  lastAt: number;
  /** User + system CPU since "start", ms. */
  cpuMs: number;
  /** Peak RSS in bytes (max of sampled rss and the kernel's VmHWM). */
  peakRss: number;
  /** Peak V8 heap used (sampled every 100 ms), bytes. */
  peakHeap: number;
  /** Enqueue-to-start latencies of measured jobs, ms. */
  latencies: number[];
}

export type ChildMessage =
  | { type: "ready"; pid: number }
  | { type: "started" }
  | { type: "progress"; done: number; failed: number; firstStart: number; lastAt: number }
  | ChildReport
  | { type: "stopped" }
  | { type: "error"; message: string };
