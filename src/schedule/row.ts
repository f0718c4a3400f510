/**
 * What a schedule is before it reaches the store: its checked parts, and the row the store keeps.
 * The scheduler (schedules defined in code) and the facade's `addSchedule` (schedules added by
 * hand, `errand schedule add`) both build their rows here, so the two cannot drift apart. Also
 * the types of the scheduler's API (kept here for the scheduler's length).
 */
import { ValidationError } from "../errors.js";
import { flowKeyOf } from "../flow.js";
import { type AnyJobDefinition, checkInteger, checkName, PRIORITY_RANGE } from "../job.js";
import type { MissedPolicy, ScheduleInput, ScheduleRecord } from "../store/types.js";
import { CronExpression } from "./cron.js";

export interface ScheduleOptions {
  /** IANA time zone the cron fields are read in (default "UTC"). */
  timezone?: string;
  /** After downtime: fire only the latest missed slot (default) or every one of them. */
  missed?: MissedPolicy;
  /** Priority of the enqueued jobs (default: the job's own). */
  priority?: number;
}

/** A schedule added by hand (`errand schedule add`): kept in the store until removed. */
export interface ScheduleByHand extends ScheduleOptions {
  name: string;
  cron: string;
  jobName: string;
  queue: string;
  payload: unknown;
  /** Priority of the enqueued jobs (default 0). */
  priority?: number;
}

/** One slot a fire call enqueued (or found already enqueued). */
export interface FiredSlot {
  schedule: string;
  slot: Date;
  jobId: string;
  /** false: the slot's job already existed (another scheduler fired it). */
  created: boolean;
}

export interface FireResult {
  /** Slot jobs this call created. */
  fired: number;
  slots: FiredSlot[];
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
  job: { jobName: string; queue: string; payload: unknown; priority: number; flowKey: string | null },
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
    flowKey: job.flowKey,
    missed: checked.missed,
    source,
    nextRunAt: checked.cron.next(now) ?? NEVER,
  };
}

/**
 * A process that knows the job enqueues its slots under the key its definition computes; a
 * scheduler that does not know the job uses the row's key instead (scheduler.ts enqueueSlots).
 * When the row's key is missing (added by hand without the job's definition) or stale (the key
 * function changed since), the key this process computes — the slots other schedulers fire
 * escape the per-key limits; else undefined. Read once per fire, never on the claim path.
 */
export function staleStoredKey(def: AnyJobDefinition, schedule: ScheduleRecord): string | undefined {
  if (!def.flow?.key) return undefined;
  let key: string | null;
  try {
    key = flowKeyOf(def.flow, schedule.payload, `payload of schedule "${schedule.name}"`, def.name);
  } catch {
    return undefined; // enqueueMany reports the payload
  }
  return key === null || key === schedule.flowKey ? undefined : key;
}
