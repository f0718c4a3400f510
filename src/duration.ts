/** A duration: milliseconds as a number, or a string like "200ms", "5s", "1.5m", "2h", "1d". */
export type Duration = number | `${number}${"ms" | "s" | "m" | "h" | "d"}` | string;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses a Duration into milliseconds. The one place durations are parsed. */
export function parseDuration(value: Duration, what = "duration"): number {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) {
      throw new TypeError(`${what} must be a non-negative number of milliseconds, got ${value}`);
    }
    return value;
  }
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(String(value));
  if (!match) {
    throw new TypeError(
      `${what} must be a number of milliseconds or a string like "200ms", "5s", "5m", "2h", "1d"; got ${JSON.stringify(value)}`,
    );
  }
  return Math.round(Number(match[1]) * UNIT_MS[match[2]]);
}
