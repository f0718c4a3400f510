/**
 * The last resort of a worker's hard shutdown timeout: a thread that kills the process when the
 * stop has not ended long after its timeout.
 *
 * Every wait of a stop is raced against timers (deadline.ts, process.ts), and timers run on the
 * event loop. A handler that computes without yielding during the graceful stop holds them all:
 * with `--shutdown-timeout 1s` and a handler computing for 20 s, the worker exited after the 20 s
 * (test/reliability/stop-blocked-loop.test.ts). A thread has its own loop. Armed when the stop
 * begins, it sleeps in Atomics.wait until the stop has had its budget; if the main thread has not
 * disarmed it by then, it writes a fatal log line to stderr and sends the process SIGKILL — the
 * one way a thread can end its process at once (`process.exit` in a thread ends the thread). The
 * running jobs are left `running`, as with any hard stop the store did not answer: their leases
 * run out and rescuers return them. The thread is unref'd, so it never keeps a process alive.
 *
 * What it cannot do: a signal is handled on the event loop, so a SIGTERM that arrives while a
 * handler already blocks the loop is not seen until the handler yields, and the stop (and this
 * thread) begins only then.
 */
import { hostname } from "node:os";
import { Worker } from "node:worker_threads";

const THREAD = `
const { workerData } = require("node:worker_threads");
const { writeSync } = require("node:fs");
const flag = new Int32Array(workerData.flag);
if (Atomics.wait(flag, 0, 0, workerData.ms) === "timed-out") {
  const line = JSON.parse(workerData.line);
  line.time = Date.now();
  try { writeSync(2, JSON.stringify(line) + "\\n"); } catch {}
  process.kill(workerData.pid, "SIGKILL");
}
`;

export interface Backstop {
  /** The stop ended in time: the thread ends without doing anything. */
  disarm(): void;
}

/** Arms the backstop: the process is killed `ms` from now unless disarmed first. */
export function armStopBackstop(ms: number): Backstop {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  // A line shaped as the logger's JSON (level 60 = fatal), since the logger lives on the blocked thread.
  const line = JSON.stringify({
    level: 60,
    pid: process.pid,
    hostname: hostname(),
    name: "errand",
    msg: `the graceful stop did not end within ${ms} ms (a handler blocking the event loop?): killing the process with SIGKILL; its running jobs return when their leases run out`,
  });
  let thread: Worker;
  try {
    thread = new Worker(THREAD, {
      eval: true,
      workerData: { flag: flag.buffer, ms, pid: process.pid, line },
      stdout: true,
      stderr: true,
    });
  } catch {
    // No thread to be had (a resource limit): the stop goes on as it would without the backstop.
    // Throwing here would throw from the signal handler that began the stop.
    return { disarm() {} };
  }
  thread.unref();
  thread.on("error", () => {}); // a thread that failed later leaves the stop as it was too
  let armed = true;
  return {
    disarm() {
      if (!armed) return;
      armed = false;
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
    },
  };
}
