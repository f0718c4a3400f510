/**
 * processJobs: a bounded, one-shot run of the worker — for hosts that scale to zero, where an
 * HTTP tick (or `errand tick`) is the only time the application runs.
 *
 * It is the same Worker (claim loops, executor, heartbeat, batched completer, rescuer), started
 * with a claim budget and a deadline: it claims at most `limit` due jobs across its queues and
 * no more once `timeBudget` is spent or nothing is due, lets the claimed jobs finish, and past
 * the deadline plus `finishTimeout` aborts and releases whatever still runs (back to pending,
 * attempt not charged) — so it always finishes or releases what it claimed.
 *
 * On a host that scales to zero no worker runs between ticks, so a run also does the worker's
 * housekeeping once: before claiming it rescues jobs whose lease expired (a previous tick's
 * process was killed mid-job), and after its jobs are done it prunes finished jobs past
 * retention (7 days completed, 30 days failed, unless `worker.retention` says otherwise).
 */
import { EventEmitter } from "node:events";
import { type Duration, parseTimerDuration } from "../duration.js";
import { ValidationError } from "../errors.js";
import { checkInteger } from "../job.js";
import { knownFields, onlyKnownFields } from "../known-fields.js";
import { type Deps, type QueueOptions, Worker, type WorkerOptions } from "./worker.js";

export interface ProcessJobsOptions {
  /** Queues to serve. Default: every queue of the registered jobs. */
  queues?: string[];
  /** Most jobs claimed in this run. Default 100; 1 to 10 000. */
  limit?: number;
  /** No job is claimed after this much time. Default 10s. */
  timeBudget?: Duration;
  /** Jobs of one queue running at once. Default 10 (never more than `limit`). */
  concurrency?: number;
  /**
   * Jobs still running when the time budget is spent may go on this much longer; then they are
   * aborted and returned to pending without spending an attempt. Default 30s.
   */
  finishTimeout?: Duration;
  /** Lease, heartbeat and worker id, as for a worker. */
  worker?: Pick<WorkerOptions, "lease" | "heartbeat" | "id" | "batchSize" | "retention">;
}

const PROCESS_FIELDS = knownFields("queues", "limit", "timeBudget", "concurrency", "finishTimeout", "worker");
const PROCESS_WORKER_FIELDS = knownFields("lease", "heartbeat", "id", "batchSize", "retention");

export interface ProcessJobsResult {
  /** Jobs claimed by this run. */
  claimed: number;
  completed: number;
  /** Failed attempts that will run again. */
  retried: number;
  /** Jobs that went to the dead-letter queue. */
  failed: number;
  snoozed: number;
  cancelled: number;
  /** Jobs returned to pending unfinished (still running at the end of the finish timeout). */
  released: number;
  /** Due pending jobs of these queues left after the run. */
  stillDue: number;
  durationMs: number;
}

const COUNTED = {
  completed: "completed",
  retrying: "retried",
  failed: "failed",
  snoozed: "snoozed",
  cancelled: "cancelled",
  released: "released",
} as const;
type Counted = (typeof COUNTED)[keyof typeof COUNTED];

function zeroCounts(): Record<Counted, number> {
  return Object.fromEntries(Object.values(COUNTED).map((k) => [k, 0])) as Record<Counted, number>;
}

/** Forwards the worker's events to the errand and counts this run's outcomes. */
class CountingEvents extends EventEmitter {
  readonly counts = zeroCounts();

  constructor(private readonly target: EventEmitter) {
    super();
  }

  /** Every outcome event counts here, so the worker must build it even with no listener outside. */
  override listenerCount(event: string | symbol): number {
    return typeof event === "string" && Object.hasOwn(COUNTED, event) ? 1 : this.target.listenerCount(event);
  }

  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (typeof event === "string" && Object.hasOwn(COUNTED, event))
      this.counts[COUNTED[event as keyof typeof COUNTED]]++;
    return this.target.emit(event, ...args);
  }
}

/** Runs one bounded batch. `deps` are the errand's worker dependencies; `knownQueues` its queues. */
export async function processJobs(
  deps: Deps,
  knownQueues: string[],
  options: ProcessJobsOptions = {},
  /** Told of the run's worker before it claims (Errand.close stops it); the returned function when it is done. */
  track: (worker: Worker) => () => void = () => () => {},
): Promise<ProcessJobsResult> {
  const started = Date.now();
  const check = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      throw err instanceof ValidationError
        ? err
        : new ValidationError(`processJobs: ${(err as Error).message}`);
    }
  };
  onlyKnownFields(options, PROCESS_FIELDS, "processJobs options");
  if (options.worker !== undefined && options.worker !== null)
    onlyKnownFields(options.worker, PROCESS_WORKER_FIELDS, "processJobs options: worker");
  const limit = check(() => checkInteger(options.limit ?? 100, "limit", { min: 1, max: 10_000 }));
  const budgetMs = check(() => parseTimerDuration(options.timeBudget ?? "10s", "timeBudget"));
  const finishMs = check(() => parseTimerDuration(options.finishTimeout ?? "30s", "finishTimeout"));
  const concurrency = Math.min(
    limit,
    check(() => checkInteger(options.concurrency ?? 10, "concurrency", { min: 1, max: 10_000 })),
  );
  const queues = options.queues ?? knownQueues;
  if (!Array.isArray(queues))
    throw new ValidationError("processJobs: queues must be an array of queue names");
  for (const queue of queues) {
    if (!knownQueues.includes(queue)) {
      throw new ValidationError(
        `processJobs: unknown queue "${queue}": no registered job uses it; known queues: ${knownQueues.join(", ") || "(no jobs registered)"}`,
      );
    }
  }
  const stillDue = async () => {
    const stats = await deps.store.stats();
    return stats.filter((s) => queues.includes(s.queue)).reduce((sum, s) => sum + s.pending, 0);
  };
  if (queues.length === 0) {
    return {
      claimed: 0,
      ...zeroCounts(),
      stillDue: 0,
      durationMs: Date.now() - started,
    };
  }

  const events = new CountingEvents(deps.events);
  const spec: Record<string, QueueOptions> = Object.fromEntries(queues.map((q) => [q, { concurrency }]));
  const worker = new Worker(
    { ...deps, events, maintenance: undefined },
    spec,
    { ...options.worker, pruneInterval: 0 },
    { limit, deadline: started + budgetMs },
  );
  const housekeeping = async (task: () => Promise<void>, what: string) => {
    try {
      await task();
    } catch (err) {
      deps.log.warn({ err }, `${what} failed; the next run tries again`);
    }
  };
  const untrack = track(worker);
  let stop: Awaited<ReturnType<Worker["settle"]>>;
  try {
    await housekeeping(() => worker.rescue(), "rescuing expired leases");
    worker.start();
    stop = await worker.settle(finishMs);
  } finally {
    untrack();
  }
  await housekeeping(() => worker.prune(), "pruning finished jobs");
  const { counts } = events;
  return {
    claimed: worker.claims.claimed,
    ...counts,
    released: Math.max(counts.released, stop.released),
    stillDue: await stillDue(),
    durationMs: Date.now() - started,
  };
}
