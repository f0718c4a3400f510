/**
 * The fake clock of errand/testing: errand's clock (the memory store's), moved only by the test.
 * Everything errand times by its store's clock follows it — run times and delays, retry backoff,
 * snoozes, leases and their rescue, schedule slots — so a test moves through hours of them in
 * no time. It does not replace Date.now() or setTimeout (a handler's own timers run in real
 * time): errand's clock is a parameter, never a patched global.
 */
import { type Duration, parseDuration } from "../duration.js";
import { ValidationError } from "../errors.js";
import { checkRunAt } from "../instant.js";

/** A point in time: a Date, ISO 8601 text, or milliseconds since the epoch. */
export type TimeInput = Date | string | number;

/** Where a fake clock starts unless told: a fixed instant, so a test reads the same every run. */
export const DEFAULT_START = "2026-01-01T00:00:00.000Z";

export function toEpochMs(time: TimeInput, what: string): number {
  if (typeof time === "number") {
    if (!Number.isFinite(time))
      throw new ValidationError(`${what} must be a finite number of ms; got ${time}`);
    return checkRunAt(new Date(time), what).getTime();
  }
  try {
    return checkRunAt(time, what).getTime();
  } catch (err) {
    throw new ValidationError((err as Error).message);
  }
}

export class FakeClock {
  private ms: number;

  constructor(start: TimeInput = DEFAULT_START) {
    this.ms = toEpochMs(start, "now");
  }

  /** The current fake time. A bound function: pass `clock.now` to code that wants a clock. */
  readonly now = (): Date => new Date(this.ms);

  /** The current fake time in ms since the epoch (what the store reads). */
  readonly nowMs = (): number => this.ms;

  /**
   * Moves the clock to `time`. Only forward: a lease, a run time or a schedule's next slot
   * computed earlier would otherwise lie in a future that never comes as expected.
   */
  readonly set = (time: TimeInput): Date => {
    const to = toEpochMs(time, "clock.set");
    if (to < this.ms) {
      throw new ValidationError(
        `the fake clock only moves forward: it is ${new Date(this.ms).toISOString()}, asked for ${new Date(to).toISOString()}`,
      );
    }
    this.ms = to;
    return this.now();
  };

  /** Moves the clock forward by `duration` ("5m", "1d", or ms); nothing runs (see TestErrand.advance). */
  readonly advance = (duration: Duration): Date =>
    this.set(this.ms + parseDuration(duration, "clock.advance"));
}

/**
 * A seeded pseudo-random source (mulberry32) for backoff jitter: the same seed draws the same
 * jitter, so a test's retry times are the same every run and on every machine.
 */
export function seededRandom(seed: number): () => number {
  if (!Number.isInteger(seed)) throw new ValidationError(`seed must be an integer; got ${seed}`);
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
