/**
 * The Store's records of schedules (cron definitions and their next slot), paused queues and
 * live workers: what the scheduler, the operator actions and the dashboard read and write.
 */

export type MissedPolicy = "latest" | "all";

export interface ScheduleRecord {
  name: string;
  cron: string;
  timezone: string;
  jobName: string;
  queue: string;
  payload: unknown;
  priority: number;
  missed: MissedPolicy;
  /** "code": defined in code and synced at start-up; "cli": added by hand. */
  source: "code" | "cli";
  nextRunAt: Date;
  lastFiredAt: Date | null;
  lastSlot: Date | null;
  createdAt: Date;
  /** Set while the schedule is paused (it does not fire); null when it runs. */
  pausedAt: Date | null;
}

export type ScheduleInput = Omit<ScheduleRecord, "lastFiredAt" | "lastSlot" | "createdAt" | "pausedAt">;

/** A paused queue: its claims take nothing until it is resumed (see Store.pauseQueue). */
export interface QueuePause {
  queue: string;
  pausedAt: Date;
}

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  queues: Record<string, number>;
  startedAt: Date;
  lastHeartbeatAt: Date;
  running: number;
  processed: number;
}
