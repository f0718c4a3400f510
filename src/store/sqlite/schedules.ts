/** The SQLite store's schedules table: syncing the code's schedules, upserts, due ones, advancing. */
import type { ScheduleInput, ScheduleRecord } from "../types.js";
import type { Connection } from "./connection.js";
import * as Q from "./queries.js";
import { type ScheduleRow, scheduleFromRow, toJson } from "./rows.js";

/** One BEGIN IMMEDIATE transaction: drops the code's schedules no longer given, upserts the rest. */
export function syncSchedules(c: Connection, schedules: ScheduleInput[]): void {
  c.db
    .transaction(() => {
      c.q(Q.SCHEDULE_DELETE_STALE_CODE).run(JSON.stringify(schedules.map((s) => s.name)));
      for (const s of schedules) upsertSchedule(c, s);
    })
    .immediate();
}

export function upsertSchedule(c: Connection, s: ScheduleInput): void {
  c.q(Q.SCHEDULE_UPSERT).run({
    name: s.name,
    cron: s.cron,
    timezone: s.timezone,
    jobName: s.jobName,
    queue: s.queue,
    payload: toJson(s.payload),
    priority: s.priority,
    flowKey: s.flowKey ?? null,
    missed: s.missed,
    source: s.source,
    nextRunAt: new Date(s.nextRunAt).getTime(),
  });
}

export function removeSchedule(c: Connection, name: string): boolean {
  return c.q(Q.SCHEDULE_DELETE).run(name).changes > 0;
}

export function listSchedules(c: Connection): ScheduleRecord[] {
  return schedulesFrom(c, Q.SCHEDULE_LIST);
}

export function dueSchedules(c: Connection): ScheduleRecord[] {
  return schedulesFrom(c, Q.SCHEDULE_DUE);
}

function schedulesFrom(c: Connection, sql: string): ScheduleRecord[] {
  return (c.q(sql).all() as ScheduleRow[]).map(scheduleFromRow).sort((a, b) => a.name.localeCompare(b.name));
}

/** Moves a schedule on, if nobody else did since `expectedNextRunAt` was read. */
export function advanceSchedule(
  c: Connection,
  req: { name: string; expectedNextRunAt: Date; nextRunAt: Date; lastSlot: Date | null },
): boolean {
  return (
    c.q(Q.SCHEDULE_ADVANCE).run({
      name: req.name,
      expected: req.expectedNextRunAt.getTime(),
      nextRunAt: req.nextRunAt.getTime(),
      lastSlot: req.lastSlot ? req.lastSlot.getTime() : null,
    }).changes === 1
  );
}
