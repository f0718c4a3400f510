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
