import type { EventEmitter } from "node:events";
import type { Logger } from "../logger.js";
import type { ActiveJob } from "./executor.js";

/** The public event (Errand.on) for each outcome kind. */
export const EVENT_OF = {
  completed: "completed",
  retry: "retrying",
  failed: "failed",
  snoozed: "snoozed",
  released: "released",
  cancelled: "cancelled",
} as const;

/** Emits a job's outcome event; a listener that throws is logged, never breaks the worker. */
export function emitOutcome(
  events: EventEmitter,
  log: Logger,
  event: string,
  active: ActiveJob,
  result?: unknown,
  error?: Error,
  delayMs?: number,
): void {
  if (events.listenerCount(event) === 0) return; // most workers have no listeners: build nothing
  const startedAt = new Date(active.startedAt);
  const durationMs = active.finishedAt - active.startedAt;
  emitSafely(events, log, event, { job: active.job, result, error, delayMs, startedAt, durationMs });
}

/**
 * Emits `started` as a handler begins (before its first line runs): the job, and when this
 * worker started it. Built only when someone listens.
 */
export function emitStarted(events: EventEmitter, log: Logger, active: ActiveJob): void {
  if (events.listenerCount("started") === 0) return;
  emitSafely(events, log, "started", { job: active.job, startedAt: new Date(active.startedAt) });
}

/** Emits an event (a public one, or a worker's test signal); a listener that throws is logged, never breaks the worker. */
export function emitSafely(events: EventEmitter, log: Logger, event: string, ...args: unknown[]): void {
  try {
    events.emit(event, ...args);
  } catch (err) {
    log.error({ err, event }, "an event listener threw");
  }
}
