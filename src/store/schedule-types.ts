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
  /**
   * The flow key of the enqueued jobs, computed from the fixed payload by the process that knows
   * the job when it defined or added the schedule; null when that process did not know the job
   * (or the job declares no key). A scheduler that does not know the job enqueues with this key.
   */
  flowKey: string | null;
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

/** What a store is given to write; flowKey may be left out (none). */
export type ScheduleInput = Omit<
  ScheduleRecord,
  "lastFiredAt" | "lastSlot" | "createdAt" | "pausedAt" | "flowKey"
> & {
  flowKey?: string | null;
};

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
