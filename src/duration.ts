import { ValidationError } from "./errand-error.js";

/**
 * A duration: milliseconds as a number, or a string like "200ms", "5s", "1.5m", "2h", "1d".
 * A template literal type, so a typo like "5x" or "5 min" is a compile error, not a run-time one.
 */
export type Duration = number | `${number}${DurationUnit}`;

export type DurationUnit = "ms" | "s" | "m" | "h" | "d";

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a Duration into milliseconds. The one place durations are parsed. It takes any string,
 * not only a Duration: text from a command line, a URL or a config file is checked here, and a
 * bad one is a ValidationError naming `what`.
 */
export function parseDuration(value: Duration | string, what = "duration"): number {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) {
      throw new ValidationError(`${what} must be a non-negative number of milliseconds, got ${value}`);
    }
    return value;
  }
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(String(value));
  if (!match) {
    throw new ValidationError(
      `${what} must be a number of milliseconds or a string like "200ms", "5s", "5m", "2h", "1d"; got ${JSON.stringify(value)}`,
    );
  }
  return Math.round(Number(match[1]) * UNIT_MS[match[2]]);
}

/**
 * The longest delay a Node timer holds (about 24.8 days): Node fires a longer one after 1 ms,
 * with only a TimeoutOverflowWarning (a job `timeout: "30d"` timed every attempt out at once,
 * a stop with a 30-day timeout released its jobs at once: test/long-durations.test.ts).
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** parseDuration for a duration that a timer waits: at most MAX_TIMER_MS, or a ValidationError naming `what`. */
export function parseTimerDuration(value: Duration | string, what = "duration"): number {
  const ms = parseDuration(value, what);
  if (ms > MAX_TIMER_MS)
    throw new ValidationError(
      `${what} must be at most ${MAX_TIMER_MS} ms (about 24.8 days, the longest a timer waits); got ${JSON.stringify(value)}`,
    );
  return ms;
}
