/** Why a job's signal aborted. The reason decides what the attempt's outcome is. */
export type AbortCause = "timeout" | "cancelled" | "lease-lost" | "shutdown";

export class JobAbort extends Error {
  readonly cause: AbortCause;
  constructor(cause: AbortCause, message: string) {
    super(message);
    this.name = "JobAbort";
    this.cause = cause;
  }
}

/** Thrown by ctx.snooze to end the handler; the executor turns it into a "snoozed" outcome. */
export class SnoozeSignal extends Error {
  readonly delayMs: number;
  constructor(delayMs: number) {
    super(`snoozed for ${delayMs} ms`);
    this.name = "SnoozeSignal";
    this.delayMs = delayMs;
  }
}
