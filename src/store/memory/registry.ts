/**
 * The memory store's registry: the idempotency ledger, the schedules, the paused queues, the
 * worker registry and the wake-up listeners. None of it touches the jobs table, so the job table
 * (./job-table.ts), and through it MemoryStore (./index.ts), inherits it.
 */
import type { LedgerEntryKey, QueuePause, ScheduleInput, ScheduleRecord, WorkerInfo } from "../types.js";

interface LedgerEntry {
  jobId: string;
  value: unknown;
  createdAt: number;
}

export const clone = <T>(value: T): T => (value === undefined ? value : structuredClone(value));

/**
 * A result or ctx.once value as the SQL stores hold it: its JSON form (a Date becomes its ISO
 * text, NaN null, a function property is dropped, a `toJSON` is applied; `undefined` is null).
 * A structured clone kept Dates, Maps and NaN that SQLite and PostgreSQL give back as strings,
 * `{}` and null, so a unit test on memory (errand/testing) saw other values than production; and
 * it threw on a function property, half-way through recording a completion
 * (test/results/json-results.test.ts). The worker has checked the value is JSON already.
 */
export function jsonCopy(value: unknown): unknown {
  const text = value === undefined ? undefined : JSON.stringify(value);
  return text === undefined ? null : JSON.parse(text);
}

export class MemoryRegistry {
  protected readonly clock: () => number;
  /** ctx.once entries by scope ("" global, else the job's id), then by key. */
  private readonly ledger = new Map<string, Map<string, LedgerEntry>>();
  private readonly schedules = new Map<string, ScheduleRecord>();
  private readonly workers = new Map<string, WorkerInfo>();
  /** Paused queues and since when (claimJobs takes nothing from them). */
  protected readonly pausedQueues = new Map<string, Date>();
  protected readonly listeners = new Set<(queue: string | null) => void>();
  private readonly finishedListeners = new Set<(ids: string[] | null) => void>();

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

  /** A job reached a final state or was deleted (waitFor's wake-up). */
  protected finished(id: string): void {
    for (const listener of this.finishedListeners) queueMicrotask(() => listener([id]));
  }

  onJobsFinished(listener: (ids: string[] | null) => void): () => void {
    this.finishedListeners.add(listener);
    return () => this.finishedListeners.delete(listener);
  }

  /** Nothing to record: every finish in this process reaches onJobsFinished. */
  async unawaitJobs(_ids: string[]): Promise<void> {}

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

  /** A per-job read also finds a global entry its own job recorded, as the SQL stores' (their migrations say why). */
  async ledgerGet({ key, jobId, global }: LedgerEntryKey): Promise<{ found: boolean; value?: unknown }> {
    let entry = global ? undefined : this.ledger.get(String(jobId))?.get(key);
    const shared = this.ledger.get("")?.get(key);
    if (!entry && shared && (global || shared.jobId === String(jobId))) entry = shared;
    return entry ? { found: true, value: clone(entry.value) } : { found: false };
  }

  async ledgerPut({ key, jobId, global }: LedgerEntryKey, value: unknown): Promise<void> {
    const scope = global ? "" : String(jobId);
    let entries = this.ledger.get(scope);
    if (!entries) {
      entries = new Map();
      this.ledger.set(scope, entries);
    }
    if (!entries.has(key))
      entries.set(key, {
        jobId: String(jobId),
        // undefined stays undefined: the SQL stores read a stored NULL back as that.
        value: value === undefined ? undefined : jsonCopy(value),
        createdAt: this.clock(),
      });
  }

  /** A deleted job's own ctx.once entries go with it. */
  protected forgetLedgerOf(jobId: string): void {
    this.ledger.delete(jobId);
  }

  /** Global ctx.once entries recorded more than `ageMs` ago. */
  protected pruneGlobalLedger(ageMs: number): void {
    const entries = this.ledger.get("");
    if (!entries) return;
    const cutoff = this.clock() - ageMs;
    for (const [key, entry] of entries) if (entry.createdAt < cutoff) entries.delete(key);
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
      flowKey: input.flowKey ?? null,
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
