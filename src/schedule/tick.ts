/**
 * One tick, as a scale-to-zero host runs it (the HTTP endpoint and `errand tick`): fire the due
 * schedules, then process a bounded batch of due jobs, and report both.
 */
import type { Duration } from "../duration.js";
import type { Errand } from "../errand.js";
import { knownFields, onlyKnownFields } from "../known-fields.js";
import type { ProcessJobsResult } from "../worker/drain.js";

const TICK_FIELDS = knownFields("limit", "timeBudget", "queues", "finishTimeout", "beforeProcess");

export interface TickOptions {
  /** Most jobs processed. Default 100. */
  limit?: number;
  /** No job is claimed after this. Default 10s. */
  timeBudget?: Duration;
  /** Queues processed. Default: every queue of the registered jobs. */
  queues?: string[];
  /** Jobs still running at the end of the budget get this much longer, then are released. Default 30s. */
  finishTimeout?: Duration;
  /** Runs after the schedules fired and before jobs are processed (e.g. enqueue work found by a scan). */
  beforeProcess?: (errand: Errand) => Promise<unknown> | unknown;
}

export interface TickResult extends ProcessJobsResult {
  /** Schedule slots this tick enqueued (slots another scheduler had already fired are not counted). */
  schedulesFired: number;
}

export async function runTick(errand: Errand, options: TickOptions = {}): Promise<TickResult> {
  // Before the schedules fire: a tick with a typo does nothing rather than half of it.
  onlyKnownFields(options, TICK_FIELDS, "runTick options");
  const started = Date.now();
  const { fired } = await errand.fireSchedules();
  await options.beforeProcess?.(errand);
  const processed = await errand.processJobs({
    limit: options.limit ?? 100,
    timeBudget: options.timeBudget ?? "10s",
    queues: options.queues,
    finishTimeout: options.finishTimeout,
  });
  const result: TickResult = { schedulesFired: fired, ...processed, durationMs: Date.now() - started };
  errand.log.info(result, "tick done");
  return result;
}
