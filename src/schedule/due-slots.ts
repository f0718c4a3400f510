/**
 * Which slots of a schedule are due, by its missed policy: the pure part of firing (scheduler.ts
 * enqueues them and moves next_run_at on). docs/semantics.md, Schedules.
 */
import type { MissedPolicy } from "../store/types.js";
import type { CronExpression } from "./cron.js";
import { NEVER } from "./row.js";

/** At most this many slots are enqueued for one schedule in one call (missed: "all"); the rest follow on the next. */
export const MAX_SLOTS_PER_FIRE = 1000;

export interface DueSlots {
  /** The slots to enqueue now, oldest first. */
  slots: Date[];
  /** What next_run_at becomes once they are enqueued. */
  nextRunAt: Date;
  /** missed "all": more due slots are left for the next call (the cap was reached). */
  capped: boolean;
  /** missed "latest": the slot fired is later than next_run_at, so the slots from next_run_at to it were skipped. */
  skipped: boolean;
}

/**
 * The due slots of a schedule whose next_run_at is `expected`, at `now` (epoch ms).
 * - "all": every slot from `expected` up to now, at most MAX_SLOTS_PER_FIRE; when capped,
 *   next_run_at stays in the past, so the next call goes on where this one stopped.
 * - "latest": only the latest slot at or before now (none if it is before `expected`).
 */
export function dueSlots(cron: CronExpression, missed: MissedPolicy, expected: Date, now: number): DueSlots {
  if (missed === "all") {
    const slots: Date[] = [];
    let slot = cron.firstAtOrAfter(expected.getTime());
    while (slot && slot.getTime() <= now && slots.length < MAX_SLOTS_PER_FIRE) {
      slots.push(slot);
      slot = cron.next(slot.getTime());
    }
    const capped = slots.length === MAX_SLOTS_PER_FIRE && slot !== null && slot.getTime() <= now;
    return { slots, nextRunAt: slot ?? NEVER, capped, skipped: false };
  }
  const latest = cron.latest(now);
  const slots = latest && latest.getTime() >= expected.getTime() ? [latest] : [];
  const skipped = latest !== null && latest.getTime() > expected.getTime();
  return { slots, nextRunAt: cron.next(now) ?? NEVER, capped: false, skipped };
}
