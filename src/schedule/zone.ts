/**
 * Time-zone arithmetic on top of Intl (no tz database of our own): the UTC offset of a zone at
 * an instant, and the instant a wall-clock time of a zone stands for under errand's DST rule.
 *
 * A "wall time" here is a wall-clock reading encoded as if it were UTC: the number of ms since
 * the epoch of the same calendar fields in UTC. So the wall time of 2026-03-29 02:30 in Berlin
 * is Date.UTC(2026, 2, 29, 2, 30).
 */
import { ValidationError } from "../errors.js";

const HOUR = 3_600_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

/**
 * Checks an IANA time zone name and returns its canonical spelling ("europe/berlin" →
 * "Europe/Berlin", "Etc/UTC" → "UTC"). Unknown names are a ValidationError.
 */
export function checkTimezone(timezone: unknown, context?: string): string {
  const of = context ? ` (${context})` : "";
  if (typeof timezone !== "string" || timezone.trim() === "") {
    throw new ValidationError(
      `time zone${of} must be an IANA name like "Europe/Berlin" or "UTC"; got ${JSON.stringify(timezone)}`,
    );
  }
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    throw new ValidationError(
      `unknown time zone ${JSON.stringify(timezone)}${of}: use an IANA name like "Europe/Berlin", "America/New_York" or "UTC"`,
    );
  }
}

function formatter(timezone: string): Intl.DateTimeFormat {
  let f = formatters.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(timezone, f);
  }
  return f;
}

const WALL = /^(\d+)\/(\d+)\/(\d+), (\d+):(\d+):(\d+)$/;
/** Offsets already computed, per zone and second: the slot search asks for the same ones often. */
const cache = new Map<string, number>();
const CACHE_LIMIT = 50_000;

/** The offset of `timezone` from UTC at `instantMs`, in ms (Berlin in summer: +7 200 000). */
export function offsetAt(timezone: string, instantMs: number): number {
  if (timezone === "UTC") return 0;
  const seconds = Math.floor(instantMs / 1000) * 1000;
  const key = `${timezone}@${seconds}`;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  // format() and a regex: about twice as fast as formatToParts. en-US gives "9/9/2001, 06:33:19".
  const text = formatter(timezone).format(seconds);
  const m = WALL.exec(text);
  if (!m) throw new Error(`unexpected date format from Intl for ${timezone}: ${JSON.stringify(text)}`);
  const [year, month, day, hour, minute, second] = [m[3], m[1], m[2], m[4], m[5], m[6]].map(Number);
  let wall = Date.UTC(year, month - 1, day, hour, minute, second);
  if (year < 100) wall = new Date(wall).setUTCFullYear(year); // Date.UTC reads 0-99 as 1900-1999
  const offset = wall - seconds;
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(key, offset);
  return offset;
}

/** The wall time (see top of file) of an instant in a zone. */
export function wallTime(timezone: string, instantMs: number): number {
  return instantMs + offsetAt(timezone, instantMs);
}

/**
 * The instant a wall-clock time stands for, by errand's DST rule:
 * - a time that occurs once: that instant;
 * - a time that occurs twice (the autumn fold): its FIRST occurrence;
 * - a time that does not exist (the spring gap): the first valid instant after the gap, i.e.
 *   the instant of the transition itself (Berlin 2026-03-29 02:30 → 03:00 CEST = 01:00Z).
 * This mapping never decreases as the wall time grows, which the slot search relies on.
 */
export function wallToInstant(timezone: string, wallMs: number): number {
  if (timezone === "UTC") return wallMs;
  // Offsets that may apply to this wall time: the zone's offsets within a day either side.
  const offsets = new Set<number>();
  for (const probe of [-24, -12, 0, 12, 24]) offsets.add(offsetAt(timezone, wallMs + probe * HOUR));
  const valid: number[] = [];
  for (const offset of offsets) {
    const instant = wallMs - offset;
    if (offsetAt(timezone, instant) === offset) valid.push(instant);
  }
  if (valid.length > 0) return Math.min(...valid);
  // In a gap: the transition lies in (wall − larger offset, wall − smaller offset]. Binary search
  // for the first second whose offset differs from the one before the gap.
  const sorted = [...offsets].sort((a, b) => a - b);
  let lo = Math.floor((wallMs - sorted[sorted.length - 1]) / 1000) * 1000; // before the transition
  let hi = Math.ceil((wallMs - sorted[0]) / 1000) * 1000; // after it
  const before = offsetAt(timezone, lo);
  if (offsetAt(timezone, hi) === before) return wallMs - offsetAt(timezone, wallMs); // not a gap after all (defensive)
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (offsetAt(timezone, mid) === before) lo = mid;
    else hi = mid;
  }
  return hi;
}
