/**
 * Cron expressions: parsed and matched by croner (5 fields, or 6 with seconds first; the
 * @daily-style nicknames too), turned into UTC instants here by errand's own DST rule.
 *
 * Why not croner's own time-zone support: croner treats "fixed-time" patterns (single values in
 * the second, minute and hour fields, e.g. `30 2 * * *`) by the rule we want, but runs other
 * patterns (`0 * * * *`, `* /15 2 * * *`) on BOTH occurrences of a repeated hour in autumn and
 * skips non-existent times in spring. errand promises one rule for every pattern:
 *
 *   The fields of a cron expression are wall-clock times of the schedule's time zone.
 *   Every matching wall-clock time fires exactly once:
 *   - a time that does not exist (the spring-forward gap) fires at the first valid instant
 *     after the gap — Europe/Berlin 2026-03-29 02:30 fires at 03:00 CEST (01:00Z);
 *   - a time that occurs twice (the fall-back fold) fires on its first occurrence only —
 *     Europe/Berlin 2026-10-25 02:30 fires at 02:30 CEST (00:30Z), not again at 02:30 CET.
 *   Times that land on the same instant (all of a gap's times) are one slot.
 *
 * So an hourly schedule in Europe/Berlin has 23 slots on the 23-hour spring day and 24 on the
 * 25-hour autumn day (02:00 CET is the same wall time as 02:00 CEST, which already fired). Schedules that must keep a strict interval in
 * real time should use UTC, the default: UTC has no DST.
 *
 * We get there by letting croner enumerate wall-clock matches in UTC (where no DST exists) and
 * mapping each to an instant with zone.ts's wallToInstant, which never decreases as the wall time
 * grows: so the first match at or past the boundary wall time of `t` is the next slot after `t`.
 */
import { Cron } from "croner";
import { ValidationError } from "../errors.js";
import { checkTimezone, offsetAt, wallTime, wallToInstant } from "./zone.js";

const HOUR = 3_600_000;

export class CronExpression {
  private constructor(
    readonly expression: string,
    readonly timezone: string,
    private readonly cron: Cron,
  ) {}

  /**
   * Parses and checks an expression and a time zone (default UTC). Errors are ValidationErrors
   * naming the problem: bad syntax, an unknown zone, or a pattern that never matches.
   */
  static parse(expression: unknown, timezone: unknown = "UTC", context?: string): CronExpression {
    const of = context ? ` (${context})` : "";
    if (typeof expression !== "string" || expression.trim() === "" || expression.length > 256) {
      throw new ValidationError(
        `cron expression${of} must be a non-empty string of at most 256 characters; got ${JSON.stringify(expression)}`,
      );
    }
    const text = expression.trim().replace(/\s+/g, " ");
    const zone = checkTimezone(timezone, context);
    let cron: Cron;
    try {
      cron = new Cron(text, { utcOffset: 0, paused: true, mode: "5-or-6-parts" }); // utcOffset: 7x faster than timezone "UTC"
    } catch (err) {
      const reason = String((err as Error).message ?? err)
        .replace(/^Cron\w*:\s*/, "")
        .replace(/\.+$/, "");
      throw new ValidationError(
        `invalid cron expression ${JSON.stringify(text)}${of}: ${reason}. Expected 5 fields "minute hour day-of-month month day-of-week" ` +
          `(e.g. "0 9 * * 1-5"), 6 with seconds first, or a nickname like @daily`,
      );
    }
    const parsed = new CronExpression(text, zone, cron);
    if (parsed.next(Date.now()) === null) {
      throw new ValidationError(
        `cron expression ${JSON.stringify(text)}${of} never matches a date (e.g. February 30th)`,
      );
    }
    return parsed;
  }

  /** The first slot strictly after `afterMs`, or null if the pattern never matches again. */
  next(afterMs: number): Date | null {
    const boundary = this.boundary(afterMs);
    const match = this.cron.nextRun(new Date(boundary - 1000)); // croner: strictly after its argument
    return match ? new Date(wallToInstant(this.timezone, match.getTime())) : null;
  }

  /** The latest slot at or before `atMs`, or null if there is none. */
  latest(atMs: number): Date | null {
    const [match] = this.cron.previousRuns(1, new Date(this.boundary(atMs))); // strictly before its argument
    return match ? new Date(wallToInstant(this.timezone, match.getTime())) : null;
  }

  /**
   * The smallest whole-second wall time whose instant is after `t`. Because wallToInstant never
   * decreases, every wall-clock match from here on is a slot after `t`, and every one before it
   * is a slot at or before `t`. Outside DST transitions this is the wall time of t plus a second;
   * near one (the repeated hour) a binary search over at most a few hours of wall time finds it,
   * instead of scanning up to 3600 matches of a per-second pattern.
   */
  private boundary(t: number): number {
    const tz = this.timezone;
    const lo = Math.floor(wallTime(tz, t) / 1000) * 1000; // maps to an instant ≤ t
    if (wallToInstant(tz, lo + 1000) > t) return lo + 1000;
    // No wall time past t + (the largest offset near t) can map to an instant ≤ t.
    let maxOffset = -Infinity;
    for (const probe of [-24, -12, 0, 12, 24])
      maxOffset = Math.max(maxOffset, offsetAt(tz, t + probe * HOUR));
    let low = lo + 1000; // maps ≤ t
    let high = Math.ceil((t + maxOffset) / 1000) * 1000 + 1000; // maps > t
    while (high - low > 1000) {
      const mid = low + Math.floor((high - low) / 2000) * 1000;
      if (wallToInstant(tz, mid) > t) high = mid;
      else low = mid;
    }
    return high;
  }

  /** The first slot at or after `atMs`. */
  firstAtOrAfter(atMs: number): Date | null {
    return this.next(Math.floor(atMs) - 1);
  }

  /** The next `count` slots after `afterMs` (for listings). */
  upcoming(afterMs: number, count: number): Date[] {
    const out: Date[] = [];
    let cursor = afterMs;
    for (let i = 0; i < count; i++) {
      const slot = this.next(cursor);
      if (!slot) break;
      out.push(slot);
      cursor = slot.getTime();
    }
    return out;
  }
}
