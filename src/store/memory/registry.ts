/**
 * The memory store's registry: the idempotency ledger, the schedules, the paused queues, the
 * worker registry and the wake-up listeners. None of it touches the jobs table, so MemoryStore
 * (./index.ts) inherits it.
 */
import type { QueuePause, ScheduleInput, ScheduleRecord, WorkerInfo } from "../types.js";

export const clone = <T>(value: T): T => (value === undefined ? value : structuredClone(value));

export class MemoryRegistry {
  protected readonly clock: () => number;
  private readonly ledger = new Map<string, { jobId: string; value: unknown }>();
  private readonly schedules = new Map<string, ScheduleRecord>();
  private readonly workers = new Map<string, WorkerInfo>();
  /** Paused queues and since when (claimJobs takes nothing from them). */
  protected readonly pausedQueues = new Map<string, Date>();
  protected readonly listeners = new Set<(queue: string | null) => void>();

  constructor(clock: () => number) {
    this.clock = clock;
  }

  protected notify(queue: string | null): void {
    for (const listener of this.listeners) queueMicrotask(() => listener(queue));
  }

  onJobsAvailable(listener: (queue: string | null) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async pauseQueue(queue: string): Promise<QueuePause> {
    let pausedAt = this.pausedQueues.get(queue);
    if (!pausedAt) {
      pausedAt = new Date(this.clock());
      this.pausedQueues.set(queue, pausedAt);
    }
    return { queue, pausedAt: new Date(pausedAt) };
  }

  async resumeQueue(queue: string): Promise<boolean> {
    const was = this.pausedQueues.delete(queue);
    if (was) this.notify(queue);
    return was;
  }

  async listPausedQueues(): Promise<QueuePause[]> {
    return [...this.pausedQueues]
      .map(([queue, pausedAt]) => ({ queue, pausedAt: new Date(pausedAt) }))
      .sort((a, b) => a.queue.localeCompare(b.queue));
  }

  async isQueuePaused(queue: string): Promise<boolean> {
    return this.pausedQueues.has(queue);
  }

  async ledgerGet(key: string): Promise<{ found: boolean; value?: unknown }> {
    const entry = this.ledger.get(key);
    return entry ? { found: true, value: clone(entry.value) } : { found: false };
  }

  async ledgerPut(key: string, jobId: string, value: unknown): Promise<void> {
    if (!this.ledger.has(key)) this.ledger.set(key, { jobId, value: clone(value) });
  }

  async syncSchedules(schedules: ScheduleInput[]): Promise<void> {
    const names = new Set(schedules.map((s) => s.name));
    for (const [name, s] of this.schedules)
      if (s.source === "code" && !names.has(name)) this.schedules.delete(name);
    for (const s of schedules) await this.upsertSchedule(s);
  }

  async upsertSchedule(input: ScheduleInput): Promise<void> {
    const existing = this.schedules.get(input.name);
    const unchanged = existing && existing.cron === input.cron && existing.timezone === input.timezone;
    this.schedules.set(input.name, {
      ...clone(input),
      // Keep the position in time of an unchanged schedule so a restart neither skips nor repeats a slot.
      nextRunAt: unchanged ? existing.nextRunAt : input.nextRunAt,
      lastFiredAt: existing?.lastFiredAt ?? null,
      lastSlot: existing?.lastSlot ?? null,
      createdAt: existing?.createdAt ?? new Date(this.clock()),
      pausedAt: existing?.pausedAt ?? null,
    });
  }

  async setSchedulePaused(name: string, paused: boolean): Promise<ScheduleRecord | null> {
    const s = this.schedules.get(name);
    if (!s) return null;
    if (!paused) s.pausedAt = null;
    else s.pausedAt ??= new Date(this.clock());
    return clone(s);
  }

  async removeSchedule(name: string): Promise<boolean> {
    return this.schedules.delete(name);
  }

  async listSchedules(): Promise<ScheduleRecord[]> {
    return [...this.schedules.values()].map(clone).sort((a, b) => a.name.localeCompare(b.name));
  }

  async dueSchedules(): Promise<ScheduleRecord[]> {
    const now = this.clock();
    return (await this.listSchedules()).filter((s) => s.pausedAt === null && s.nextRunAt.getTime() <= now);
  }

  async advanceSchedule(req: {
    name: string;
    expectedNextRunAt: Date;
    nextRunAt: Date;
    lastSlot: Date | null;
  }): Promise<boolean> {
    const s = this.schedules.get(req.name);
    if (!s || s.nextRunAt.getTime() !== req.expectedNextRunAt.getTime()) return false;
    s.nextRunAt = new Date(req.nextRunAt);
    if (req.lastSlot) {
      s.lastSlot = new Date(req.lastSlot);
      s.lastFiredAt = new Date(this.clock());
    }
    return true;
  }

  async registerWorker(info: Omit<WorkerInfo, "startedAt" | "lastHeartbeatAt">): Promise<void> {
    const now = new Date(this.clock());
    this.workers.set(info.id, { ...clone(info), startedAt: now, lastHeartbeatAt: now });
  }

  async heartbeatWorker(id: string, running: number, processed: number): Promise<void> {
    const w = this.workers.get(id);
    if (w) Object.assign(w, { running, processed, lastHeartbeatAt: new Date(this.clock()) });
  }

  async unregisterWorker(id: string): Promise<void> {
    this.workers.delete(id);
  }

  async listWorkers(staleMs: number): Promise<WorkerInfo[]> {
    const now = this.clock();
    return [...this.workers.values()].filter((w) => now - w.lastHeartbeatAt.getTime() <= staleMs).map(clone);
  }
}
