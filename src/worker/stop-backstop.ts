/**
 * The last resort of a worker's hard shutdown timeout: a thread that kills the process when the
 * stop is past its budget and the event loop has stopped running.
 *
 * Every wait of a stop is raced against timers (deadline.ts, process.ts), and timers run on the
 * event loop. A handler that computes without yielding during the graceful stop holds them all:
 * with `--shutdown-timeout 1s` and a handler computing for 20 s, the worker did not exit within
 * 15 s (test/reliability/stop-blocked-loop.test.ts). A thread has its own loop. Armed when the
 * stop begins, it waits (Atomics.wait) until the stop's budget has passed; from then on it kills
 * only once the main thread's loop has not run for STALL_MS: the main thread writes the time of
 * its last turn into shared memory every BEAT_MS while armed, so a stop that is slow but whose loop runs (another caller
 * began it with a longer timeout; a SQLite statement in its busy wait, up to 5 s) is never cut —
 * its own timers end it. A kill writes a fatal log line to stderr and sends the process SIGKILL,
 * the one way a thread can end its process at once (`process.exit` in a thread ends the thread).
 * The running jobs stay `running`, as with any hard stop the store did not answer: their leases
 * run out and rescuers return them. The thread is unref'd, so it never keeps a process alive.
 *
 * What it cannot do:
 * - See a signal: signals are handled on the main thread's loop, so a SIGTERM that arrives while
 *   a handler already blocks the loop begins the stop (and arms this) when the handler yields.
 * - Kill PID 1 of a PID namespace (node as a container's first process): the kernel drops the
 *   signals such a process sends itself. The thread then logs that the kill had no effect; run the
 *   worker under an init (`docker run --init`, tini), as Node's own Docker guidance says.
 * - Work from a worker thread: there `runUntilSignal` arms nothing, since killing the process
 *   would take down a main thread that can terminate the thread itself.
 */
import { isMainThread, Worker } from "node:worker_threads";

/** How often the main thread shows the thread that its loop runs. */
const BEAT_MS = 250;
/** How long the loop must not have run for a kill: past a SQLite busy wait (busy_timeout, 5 s). */
const STALL_MS = 6000;

// Plain JavaScript, evaluated in the thread (no module resolution, no preloads: execArgv is []).
const THREAD = `
const { workerData } = require("node:worker_threads");
const { writeSync } = require("node:fs");
const shared = new Int32Array(workerData.shared); // [disarmed, ms from armedAt to the last beat]
const { armedAt, deadlineAt, stallMs, pid } = workerData;
const line = (msg) => {
  const entry = { level: 60, time: Date.now(), name: "errand", msg };
  try { writeSync(2, JSON.stringify(entry) + "\\n"); } catch {}
};
let wait = deadlineAt - Date.now();
for (;;) {
  if (Atomics.wait(shared, 0, 0, Math.min(Math.max(wait, 1), 2 ** 31 - 1)) !== "timed-out") break; // disarmed
  const now = Date.now();
  const stalled = now - (armedAt + Atomics.load(shared, 1));
  wait = Math.max(deadlineAt - now, stallMs - stalled);
  if (wait > 0) continue;
  line(workerData.message.replace("STALLED", String(stalled)));
  process.kill(pid, "SIGKILL");
  Atomics.wait(shared, 0, 0, 500);
  line("SIGKILL had no effect: this process is PID " + pid + " of its namespace, which cannot signal itself; run the worker under an init (docker run --init, tini) for the shutdown timeout to hold");
  break;
}
`;

export interface Backstop {
  /** The stop ended: the thread ends without doing anything. */
  disarm(): void;
}

const NONE: Backstop = { disarm() {} };

/**
 * Arms the backstop for a stop whose budget is `budgetMs` from now. `warn` is told (now, while
 * the loop runs) when no thread can be had: the stop then goes on without a backstop.
 */
export function armStopBackstop(budgetMs: number, warn: (message: string) => void): Backstop {
  if (!isMainThread) return NONE;
  const shared = new Int32Array(new SharedArrayBuffer(8));
  const armedAt = Date.now();
  const message = `the graceful stop is past its budget of ${budgetMs} ms and the event loop has not run for STALLED ms (a handler computing without yielding?): killing the process with SIGKILL; its running jobs return when their leases run out`;
  let thread: Worker;
  try {
    thread = new Worker(THREAD, {
      eval: true,
      execArgv: [],
      env: {},
      stdout: true,
      stderr: true,
      workerData: {
        shared: shared.buffer,
        armedAt,
        deadlineAt: armedAt + budgetMs,
        stallMs: STALL_MS,
        pid: process.pid,
        message,
      },
    });
  } catch (err) {
    warn(
      `no backstop thread for this stop (${(err as Error).message}): a handler that blocks the event loop can hold the stop past its timeout`,
    );
    return NONE;
  }
  thread.unref();
  thread.on("error", () => {}); // a thread that fails later leaves the stop as it would be without it
  const beat = setInterval(() => Atomics.store(shared, 1, Date.now() - armedAt), BEAT_MS);
  beat.unref();
  let armed = true;
  return {
    disarm() {
      if (!armed) return;
      armed = false;
      clearInterval(beat);
      Atomics.store(shared, 0, 1);
      Atomics.notify(shared, 0);
    },
  };
}
