/**
 * What a schedule is before it reaches the store: its checked parts, and the row the store keeps.
 * The scheduler (schedules defined in code) and the facade's `addSchedule` (schedules added by
 * hand, `errand schedule add`) both build their rows here, so the two cannot drift apart.
 */
import { ValidationError } from "../errors.js";
import { checkInteger, checkName, PRIORITY_RANGE } from "../job.js";
import type { MissedPolicy, ScheduleInput } from "../store/types.js";
import { CronExpression } from "./cron.js";

export interface ScheduleOptions {
  /** IANA time zone the cron fields are read in (default "UTC"). */
  timezone?: string;
  /** After downtime: fire only the latest missed slot (default) or every one of them. */
  missed?: MissedPolicy;
  /** Priority of the enqueued jobs (default: the job's own). */
  priority?: number;
}

/** next_run_at of a schedule whose pattern never matches again. */
export const NEVER = new Date("9999-12-31T23:59:59.000Z");

/** Checks a schedule's name, cron, zone, policy and priority; returns the parts a store row needs. */
export function checkSchedule(
  name: unknown,
  cron: unknown,
  options: ScheduleOptions,
): { name: string; cron: CronExpression; missed: MissedPolicy; priority?: number } {
  const n = checkName(name as string, "schedule name");
  if (options === null || typeof options !== "object")
    throw new ValidationError(`schedule "${n}": options must be an object`);
  const expression = CronExpression.parse(cron, options.timezone ?? "UTC", `schedule "${n}"`);
  const missed = options.missed ?? "latest";
  if (missed !== "latest" && missed !== "all") {
    throw new ValidationError(
      `schedule "${n}": missed must be "latest" or "all"; got ${JSON.stringify(missed)}`,
    );
  }
  const priority =
    options.priority === undefined
      ? undefined
      : checkInteger(options.priority, `schedule "${n}" priority`, PRIORITY_RANGE);
  return { name: n, cron: expression, missed, priority };
}

/** The store row of a checked schedule, due at its first slot after `now` (the store's clock). */
export function scheduleRow(
  checked: { name: string; cron: CronExpression; missed: MissedPolicy },
  job: { jobName: string; queue: string; payload: unknown; priority: number },
  source: ScheduleInput["source"],
  now: number,
): ScheduleInput {
  return {
    name: checked.name,
    cron: checked.cron.expression,
    timezone: checked.cron.timezone,
    jobName: job.jobName,
    queue: job.queue,
    payload: job.payload,
    priority: job.priority,
    missed: checked.missed,
    source,
    nextRunAt: checked.cron.next(now) ?? NEVER,
  };
}
