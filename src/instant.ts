/**
 * Run times: ISO 8601 text read strictly, and the range of run times and delays errand accepts.
 * The one place `runAt` and `delay` are checked (the API, the CLI's --run-at and --delay).
 */

/**
 * Run times from 0001-01-01 to 9999-12-31: the four-digit years of ISO 8601. Every store holds
 * them (PostgreSQL's timestamptz goes from 4713 BC to 294276 AD, a JS Date ±275,760 years,
 * SQLite keeps epoch milliseconds) and every tool prints them as ISO text; past them, PostgreSQL
 * fails mid-insert ("timestamp out of range") where the other stores would take them.
 */
export const EARLIEST_RUN_AT = new Date("0001-01-01T00:00:00.000Z");
export const LATEST_RUN_AT = new Date("9999-12-31T23:59:59.999Z");

/**
 * Delays of at most 100 years (36,525 days). A longer one is a unit mistake, not a plan, and a
 * fixed bound is checked before the store's clock is read, so every store refuses the same
 * values; now + 100 years stays far inside the run-time range above. (Unchecked, 99999999999d
 * was an "interval out of range" from PostgreSQL and an invalid date in the other stores.)
 */
export const MAX_DELAY_MS = 36_525 * 86_400_000;
const MAX_DELAY_TEXT = "100 years (36525d)";

const ISO_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):?(\d{2}))?)?$/;

const EXAMPLE = "2026-01-31T09:00:00Z";

/**
 * ISO 8601 text as a Date, or null when it is not one or names no real time: a JS Date would
 * roll 2026-02-30 over to March 2 and T24:00 to the next day instead of refusing them.
 */
export function parseIsoTime(text: string): Date | null {
  const m = ISO_TIME.exec(text);
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  if (hour > 23 || minute > 59 || second > 59) return null;
  if (Number(m[7] ?? 0) > 23 || Number(m[8] ?? 0) > 59) return null;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : date;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** A run time (a Date or ISO text) within the range every store holds, or a TypeError naming the value. */
export function checkRunAt(value: unknown, name = "runAt"): Date {
  const date = value instanceof Date ? value : typeof value === "string" ? parseIsoTime(value) : null;
  if (!date) {
    throw new TypeError(
      typeof value === "string"
        ? `${name} must be an ISO 8601 time like ${EXAMPLE}, and a real one (a day its month has, hours 00-23); got ${JSON.stringify(value)}`
        : `${name} must be a Date or an ISO 8601 time like ${EXAMPLE}; got ${String(value)}`,
    );
  }
  const ms = date.getTime();
  if (!(ms >= EARLIEST_RUN_AT.getTime() && ms <= LATEST_RUN_AT.getTime())) {
    throw new TypeError(
      `${name} must be from 0001-01-01 to 9999-12-31T23:59:59.999Z (what every store can hold); got ${
        typeof value === "string"
          ? JSON.stringify(value)
          : Number.isNaN(ms)
            ? "Invalid Date"
            : date.toISOString()
      }`,
    );
  }
  return date;
}

/** A delay in milliseconds of at most MAX_DELAY_MS, or a TypeError naming the value given. */
export function checkDelay(ms: number, given: unknown, name = "delay"): number {
  if (ms > MAX_DELAY_MS) {
    throw new TypeError(
      `${name} must be at most ${MAX_DELAY_TEXT}; got ${typeof given === "string" ? JSON.stringify(given) : `${given} ms`}`,
    );
  }
  return ms;
}
