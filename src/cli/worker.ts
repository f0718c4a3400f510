/** `errand worker`: serve queues from a jobs module until SIGTERM/SIGINT (docs/semantics.md, Shutdown). */
import type { Command } from "commander";
import { ValidationError } from "../errors.js";
import { runUntilSignal } from "../worker/process.js";
import type { QueueOptions } from "../worker/worker.js";
import {
  CliError,
  cliLogger,
  collect,
  globals,
  logStore,
  openFromOptions,
  parseDurationOption,
  parseIntOption,
  UsageError,
} from "./common.js";
import { jobsModuleOption, loadJobs } from "./load-jobs.js";

const CONCURRENCY_RANGE = { min: 1, max: 10_000 };
export const DEFAULT_CONCURRENCY = 10;

interface WorkerCliOptions {
  jobs?: string;
  queue?: string[];
  concurrency?: string[];
  shutdownTimeout: string;
  lease: string;
  pollInterval: string;
  waitForStore: string;
}

export function registerWorker(program: Command): void {
  program
    .command("worker")
    .description("run jobs: serve the queues of a jobs module until SIGTERM or SIGINT")
    .option(
      "-j, --jobs <module>",
      "module exporting the job definitions (.js, .mjs or .ts); default $ERRAND_JOBS",
    )
    .option(
      "-q, --queue <name>",
      "serve only this queue (repeatable, or comma-separated); default every queue of the module",
      collect,
    )
    .option(
      "-c, --concurrency <queue=N>",
      `jobs run at once per queue, e.g. emails=2 (repeatable, or comma-separated); a bare N sets every other queue; default ${DEFAULT_CONCURRENCY}`,
      collect,
    )
    .option(
      "--shutdown-timeout <duration>",
      "on SIGTERM/SIGINT, how long running jobs may finish before they are released",
      "30s",
    )
    .option(
      "--lease <duration>",
      "how long a claim holds a job without a heartbeat (a dead worker's jobs return after it)",
      "15s",
    )
    .option("--poll-interval <duration>", "safety-net poll when no wake-up arrives", "2s")
    .option(
      "--wait-for-store <duration>",
      "at start, how long to wait for a store that cannot be reached (retrying with backoff, each attempt logged); 0 fails at once, `forever` never gives up",
      "forever",
    )
    .addHelpText(
      "after",
      `
Exit codes: 0 after a clean stop; 1 when the shutdown timeout was reached (unfinished jobs are
back in pending, the interrupted attempt recorded but not charged), on a second signal, or after
an uncaught error; 2 for a wrong command line.

The shutdown timeout is hard: past it (and a second for the last outcomes) the worker exits
1 even when the database cannot take writes; a second signal exits within about a second.
An uncaught exception or unhandled rejection charges the job whose code caused it a "crashed"
attempt (every running job, when no job's code did), so a job that keeps crashing the worker
ends in the dead-letter queue. A warning names the jobs running when the event loop was blocked
for half the --lease or more: their leases may have been lost.

Examples:
  errand worker --jobs ./dist/jobs.js
  errand worker --jobs ./src/jobs.ts --concurrency emails=2 --concurrency reports=1
  errand worker --jobs ./jobs.mjs --queue emails --shutdown-timeout 1m`,
    )
    .action(async (opts: WorkerCliOptions, cmd: Command) => {
      const code = await runWorker(opts, cmd);
      // Exit explicitly: handles left open by job code (its own pools, timers) must not keep a
      // stopped worker alive.
      process.exit(code);
    });
}

async function runWorker(opts: WorkerCliOptions, cmd: Command): Promise<number> {
  const shutdownTimeoutMs = parseDurationOption(opts.shutdownTimeout, "--shutdown-timeout", { timer: true });
  const leaseMs = parseDurationOption(opts.lease, "--lease", { timer: true });
  if (leaseMs < 100)
    throw new UsageError(`--lease must be at least 100ms; got ${JSON.stringify(opts.lease)}`);
  const pollMs = parseDurationOption(opts.pollInterval, "--poll-interval", { timer: true });
  if (pollMs < 1)
    throw new UsageError(`--poll-interval must be at least 1ms; got ${JSON.stringify(opts.pollInterval)}`);
  const waitMs =
    opts.waitForStore.trim() === "forever"
      ? Number.POSITIVE_INFINITY
      : parseDurationOption(opts.waitForStore, "--wait-for-store");
  const concurrency = parseConcurrency(opts.concurrency ?? []);
  const selected = (opts.queue ?? [])
    .flatMap((q) => q.split(","))
    .map((q) => q.trim())
    .filter(Boolean);
  const jobs = await loadJobs(jobsModuleOption(opts.jobs));

  const log = await cliLogger();
  // A worker may start before its database (containers, failover): it waits and says so.
  const errand = await openFromOptions(globals(cmd), { jobs, logger: log, wait: { log, maxMs: waitMs } });
  try {
    const spec = queueSpec(errand.queueNames, selected, concurrency);
    logStore(globals(cmd), errand, log); // once the command line is known to be right
    // A function, so the signal handlers are in place before the worker claims its first job.
    const startWorker = () => {
      try {
        return errand.work(spec, {
          lease: leaseMs,
          shutdownTimeout: shutdownTimeoutMs,
          pollInterval: pollMs,
        });
      } catch (err) {
        if (err instanceof RangeError || err instanceof TypeError || err instanceof ValidationError)
          throw new UsageError(err.message);
        throw err;
      }
    };
    const report = await runUntilSignal(startWorker, errand, { shutdownTimeout: shutdownTimeoutMs, log });
    return report.exitCode;
  } catch (err) {
    await errand.close();
    throw err;
  }
}

/** `emails=2`, `reports=1,emails=3`, or a bare `5` for every queue not named. */
export function parseConcurrency(values: string[]): { perQueue: Map<string, number>; fallback: number } {
  const perQueue = new Map<string, number>();
  let fallback = DEFAULT_CONCURRENCY;
  for (const part of values.flatMap((v) => v.split(","))) {
    const item = part.trim();
    if (item === "") continue;
    const match = /^([^=\s]+)\s*=\s*(.*)$/.exec(item);
    if (!match) {
      if (/^[+-]?\d+$/.test(item)) {
        fallback = parseIntOption(item, "--concurrency", CONCURRENCY_RANGE);
        continue;
      }
      throw new UsageError(
        `--concurrency takes queue=N (like emails=2) or a number; got ${JSON.stringify(item)}`,
      );
    }
    perQueue.set(match[1], parseIntOption(match[2], `--concurrency ${match[1]}`, CONCURRENCY_RANGE));
  }
  return { perQueue, fallback };
}

/** The queues to serve and their concurrency; any queue not used by a loaded job is an error. */
export function queueSpec(
  known: string[],
  selected: string[],
  concurrency: { perQueue: Map<string, number>; fallback: number },
): Record<string, QueueOptions> {
  const unknown = (queue: string, flag: string) =>
    new UsageError(
      `${flag}: unknown queue "${queue}"; the jobs module's queues are: ${known.join(", ") || "(none)"}`,
    );
  for (const q of selected) if (!known.includes(q)) throw unknown(q, "--queue");
  for (const q of concurrency.perQueue.keys()) {
    if (!known.includes(q)) throw unknown(q, "--concurrency");
    if (selected.length > 0 && !selected.includes(q)) {
      throw new UsageError(`--concurrency names queue "${q}", which --queue does not select`);
    }
  }
  const queues = selected.length > 0 ? [...new Set(selected)] : known;
  if (queues.length === 0) throw new CliError("the jobs module defines no queues");
  return Object.fromEntries(
    queues.map((q) => [q, { concurrency: concurrency.perQueue.get(q) ?? concurrency.fallback }]),
  );
}
