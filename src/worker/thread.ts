/**
 * runInThread: a job handler that runs a module in a worker thread (issue 12, item 7).
 *
 * A CPU-bound handler on the main thread blocks the event loop, so the heartbeat cannot extend
 * its lease: past the lease another worker runs the job again (watchdog.ts warns). In a thread
 * the computation leaves the main loop free, and the lease is kept for as long as it runs — what
 * BullMQ's sandboxed processors do for CPU-bound work.
 *
 *   defineJob({ name: "render", schema, run: runInThread(new URL("./render.js", import.meta.url)) })
 *
 * The module's default export (or its `run` export) is called as `fn(payload, info)` with
 * `info = { job, attempt }`, in a fresh thread per execution; what it returns (or resolves to)
 * is the job's result, and what it throws fails the attempt like any handler error (the error's
 * message, name, stack, `code`, `retryAfterMs` and `rateLimited` come back, so PermanentError and
 * RetryableError keep their meaning). When `ctx.signal` aborts (timeout, cancel, lost lease,
 * shutdown), the thread is terminated. Limits: the module must be JavaScript (see THREAD_SOURCE);
 * the payload, result and error cross by structured clone; `ctx.once`, `ctx.progress`, `ctx.completeInTransaction` and `ctx.snooze` are not
 * available inside the thread; a thread costs some milliseconds to start, so this is for jobs
 * that compute for long, not for short ones.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { JobContext } from "../job.js";

/**
 * The thread's code, as CommonJS evaluated by the Worker (no separate entry file: its path would
 * differ between src/ and a build). The thread loads the module with Node's own loader: on
 * Node 20 the hooks of a loader such as tsx do not reach worker threads, so the module must be
 * JavaScript (compile a TypeScript one; `--import tsx` does not load it in the thread).
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const send = (message) => parentPort.postMessage(message);
import(workerData.module)
  .then((mod) => {
    const fn = typeof mod.default === "function" ? mod.default
      : typeof mod.run === "function" ? mod.run
      : mod.default && typeof mod.default.default === "function" ? mod.default.default : undefined;
    if (!fn) throw new TypeError("runInThread: " + workerData.module + " exports no default function (or run)");
    return fn(workerData.payload, workerData.info);
  })
  .then(
    (result) => send({ ok: true, result: result === undefined ? null : result }),
    (err) => {
      const e = err !== null && typeof err === "object" ? err : { message: String(err) };
      send({ ok: false, error: {
        message: String(e.message ?? err), name: e.name, stack: e.stack, code: e.code,
        retryAfterMs: e.retryAfterMs, rateLimited: e.rateLimited,
      } });
    },
  );
`;

interface ThreadError {
  message: string;
  name?: string;
  stack?: string;
  code?: unknown;
  retryAfterMs?: unknown;
  rateLimited?: unknown;
}

/** Info the thread's function receives besides the payload (structured-cloned). */
export interface ThreadJobInfo {
  job: JobContext["job"];
  attempt: number;
}

/** A handler that runs `module`'s default export in a worker thread (see the file comment). */
export function runInThread<R = unknown>(
  module: string | URL,
): (payload: unknown, ctx: JobContext) => Promise<R> {
  const href = moduleHref(module);
  return (payload, ctx) =>
    new Promise<R>((resolve, reject) => {
      if (ctx.signal.aborted) return reject(ctx.signal.reason);
      const info: ThreadJobInfo = { job: { ...ctx.job }, attempt: ctx.attempt };
      const thread = new Worker(THREAD_SOURCE, { eval: true, workerData: { module: href, payload, info } });
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        ctx.signal.removeEventListener("abort", onAbort);
        fn();
        void thread.terminate();
      };
      const onAbort = () => settle(() => reject(ctx.signal.reason));
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      thread.on("message", (m: { ok: true; result: R } | { ok: false; error: ThreadError }) =>
        settle(() => (m.ok ? resolve(m.result) : reject(rebuildError(m.error)))),
      );
      // An uncaught exception inside the thread fails this attempt only, not the worker process.
      thread.on("error", (err) => settle(() => reject(err)));
      thread.on("exit", (code) =>
        settle(() => reject(new Error(`runInThread: the thread exited (code ${code}) without a result`))),
      );
    });
}

/** A path (absolute, or relative to the working directory) or a file: URL, as a file: URL. */
function moduleHref(module: string | URL): string {
  if (module instanceof URL) return module.href;
  if (typeof module !== "string" || module.length === 0)
    throw new TypeError("runInThread needs a module path or file: URL");
  if (module.startsWith("file:")) return new URL(module).href;
  return pathToFileURL(resolve(module)).href;
}

function rebuildError(e: ThreadError): Error {
  const err = new Error(e.message);
  if (e.name) err.name = e.name;
  if (e.stack) err.stack = e.stack;
  const fields = err as Error & Record<string, unknown>;
  if (e.code !== undefined) fields.code = e.code;
  if (e.retryAfterMs !== undefined) fields.retryAfterMs = e.retryAfterMs;
  if (e.rateLimited !== undefined) fields.rateLimited = e.rateLimited;
  return err;
}
