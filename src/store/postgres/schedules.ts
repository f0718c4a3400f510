/** Cron schedules: synced from code, upserted and removed by hand, found due, advanced once per slot. */
import type { ScheduleInput, ScheduleRecord } from "../types.js";
import type { Db } from "./db.js";
import { serialize } from "./json.js";
import { toSchedule } from "./rows.js";

function scheduleJson(schedules: ScheduleInput[]): string {
  // Last definition of a name wins, as repeated upserts would.
  const byName = new Map(schedules.map((s) => [s.name, s]));
  return serialize(
    [...byName.values()].map((s) => ({
      name: s.name,
      cron: s.cron,
      timezone: s.timezone,
      job_name: s.jobName,
      queue: s.queue,
      payload: s.payload ?? null,
      priority: s.priority,
      flow_key: s.flowKey ?? null,
      missed: s.missed,
      source: s.source,
      next_run_at: new Date(s.nextRunAt).toISOString(),
    })),
    "schedule",
  );
}

export async function syncSchedules(db: Db, schedules: ScheduleInput[]): Promise<void> {
  await db.transaction(async (client) => {
    await db.run("DELETE_STALE_CODE_SCHEDULES", [schedules.map((s) => s.name)], client, false);
    if (schedules.length > 0) await db.run("UPSERT_SCHEDULES", [scheduleJson(schedules)], client, false);
  });
}

export async function upsertSchedule(db: Db, schedule: ScheduleInput): Promise<void> {
  await db.run("UPSERT_SCHEDULES", [scheduleJson([schedule])], db.pool, false);
}

export async function removeSchedule(db: Db, name: string): Promise<boolean> {
  const result = await db.run("REMOVE_SCHEDULE", [name]);
  return (result.rowCount ?? 0) > 0;
}

export async function listSchedules(db: Db): Promise<ScheduleRecord[]> {
  const { rows } = await db.run("LIST_SCHEDULES");
  return rows.map(toSchedule).sort((a, b) => a.name.localeCompare(b.name));
}

export async function dueSchedules(db: Db): Promise<ScheduleRecord[]> {
  const { rows } = await db.run("DUE_SCHEDULES");
  return rows.map(toSchedule).sort((a, b) => a.name.localeCompare(b.name));
}

export async function advanceSchedule(
  db: Db,
  req: { name: string; expectedNextRunAt: Date; nextRunAt: Date; lastSlot: Date | null },
): Promise<boolean> {
  const result = await db.run("ADVANCE_SCHEDULE", [
    req.name,
    new Date(req.expectedNextRunAt),
    new Date(req.nextRunAt),
    req.lastSlot ? new Date(req.lastSlot) : null,
  ]);
  return (result.rowCount ?? 0) > 0;
}
