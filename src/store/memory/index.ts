/**
 * The in-process store: tests and throwaway scripts. It is also the reference
 * implementation of the Store contract — the SQL stores must behave the same,
 * and test/conformance/ holds all three to it.
 */
import type { AttemptRecord, JobRecord } from "../../job.js";
import { attemptFromOutcome, bulkState, newJobRecord, outcomeTransition } from "../common.js";
import type {
  ClaimedJob,
  FlowClaim,
  FlowLimits,
  FlowStatus,
  InsertResult,
  JobFilter,
  JobPage,
  Lease,
  LeaseStatus,
  NewJob,
  Outcome,
  QueueStats,
  RescuedJob,
  Store,
  ThroughputBucket,
} from "../types.js";
import { claimOrder, MemoryFlow } from "./flow.js";
import { deadLetterGroupsOf, listRows, statsOf, throughputOf, timingsOf } from "./reads.js";
import { clone, MemoryRegistry } from "./registry.js";

interface Row extends JobRecord {
  seq: number;
  leaseToken: number;
  flowKey: string | null;
}

export interface MemoryStoreOptions {
  /** The store's clock, in ms since the epoch. Tests may inject one. */
  clock?: () => number;
}

/** The ledger, schedules and worker registry are inherited from MemoryRegistry (./registry.ts). */
export class MemoryStore extends MemoryRegistry implements Store {
  readonly kind = "memory" as const;
  private readonly jobs = new Map<string, Row>();
  private readonly byKey = new Map<string, string>();
  private seq = 0;
  private readonly flow = new MemoryFlow();

  constructor(options: MemoryStoreOptions = {}) {
    super(options.clock ?? Date.now);
  }

  async migrate(): Promise<void> {}
  async close(): Promise<void> {
    this.listeners.clear();
  }
  async now(): Promise<Date> {
    return new Date(this.clock());
  }

  private publicJob(row: Row): JobRecord {
    const { seq: _seq, leaseToken: _token, flowKey: _flowKey, ...job } = row;
    return clone(job);
  }

  async insertJobs(jobs: NewJob[]): Promise<InsertResult[]> {
    const now = this.clock();
    const results: InsertResult[] = [];
    const createdQueues = new Set<string>();
    for (const input of jobs) {
      const keyId = input.key ? this.byKey.get(`${input.queue}\u0000${input.key}`) : undefined;
      const existing = keyId ? this.jobs.get(keyId) : undefined;
      if (existing) {
        results.push({ job: this.publicJob(existing), created: false });
        continue;
      }
      const seq = ++this.seq;
      const runAt = input.runAt ? new Date(input.runAt) : new Date(now + (input.delayMs ?? 0));
      // The stored copy is private; the caller's record gets its own (with payloadJson, the
      // payload the caller handed over).
      const stored = input.payloadJson === undefined ? clone(input.payload) : JSON.parse(input.payloadJson);
      const record = newJobRecord(String(seq), input, stored, runAt, new Date(now));
      const row: Row = { ...record, seq, leaseToken: 0, flowKey: input.flowKey ?? null };
      this.jobs.set(row.id, row);
      if (row.key) this.byKey.set(`${row.queue}\u0000${row.key}`, row.id);
      createdQueues.add(row.queue);
      const job =
        input.payloadJson === undefined
          ? this.publicJob(row)
          : newJobRecord(row.id, input, input.payload, new Date(runAt), new Date(now));
      results.push({ job, created: true });
    }
    for (const queue of createdQueues) this.notify(queue);
    return results;
  }

  async getJob(id: string): Promise<JobRecord | null> {
    const row = this.jobs.get(String(id));
    return row ? this.publicJob(row) : null;
  }

  async listJobs(filter: JobFilter): Promise<JobPage> {
    const { page, nextCursor } = listRows(this.jobs.values(), filter);
    return { jobs: page.map((r) => this.publicJob(r)), nextCursor };
  }

  async stats(): Promise<QueueStats[]> {
    return statsOf(this.jobs.values(), this.clock());
  }

  async throughput(sinceMs: number, bucketMs: number): Promise<ThroughputBucket[]> {
    return throughputOf(this.jobs.values(), this.clock(), sinceMs, bucketMs);
  }

  async claimJobs(req: {
    queue: string;
    limit: number;
    workerId: string;
    leaseMs: number;
  }): Promise<ClaimedJob[]> {
    const now = this.clock();
    if (this.pausedQueues.has(req.queue)) return [];
    const due = [...this.jobs.values()]
      .filter((r) => r.queue === req.queue && r.state === "pending" && r.runAt.getTime() <= now)
      .sort(claimOrder)
      .slice(0, Math.max(0, req.limit));
    return due.map((r) => this.claimRow(r, req, now));
  }

  async claimFlowJobs(req: {
    queue: string;
    limit: number;
    workerId: string;
    leaseMs: number;
    flow: FlowLimits;
  }): Promise<FlowClaim> {
    if (this.pausedQueues.has(req.queue)) return { jobs: [], held: 0, retryInMs: null }; // as claimJobs
    const now = this.clock();
    const rows = [...this.jobs.values()].filter((r) => r.queue === req.queue);
    return this.flow.claim(req, rows, now, (r) => ({ ...this.claimRow(r, req, now), flowKey: r.flowKey }));
  }

  async flowStatus(req: { queue: string; windowMs: number }): Promise<FlowStatus> {
    const running = new Map<string, number>();
    for (const r of this.jobs.values()) {
      if (r.queue !== req.queue || r.state !== "running") continue;
      const key = r.flowKey ?? "";
      running.set(key, (running.get(key) ?? 0) + 1);
    }
    return { running, ...this.flow.status(req.queue, this.clock(), req.windowMs) };
  }

  async pauseFlow(req: { queue: string; key: string | null; ms: number }): Promise<void> {
    this.flow.pause(req, this.clock());
  }

  private claimRow(r: Row, req: { workerId: string; leaseMs: number }, now: number): ClaimedJob {
    r.state = "running";
    r.attempt += 1;
    r.leaseToken += 1;
    r.lockedBy = req.workerId;
    r.lockedUntil = new Date(now + req.leaseMs);
    r.startedAt = new Date(now);
    r.progress = null;
    return {
      id: r.id,
      queue: r.queue,
      name: r.name,
      payload: clone(r.payload),
      priority: r.priority,
      attempt: r.attempt,
      maxAttempts: r.maxAttempts,
      key: r.key,
      runAt: new Date(r.runAt),
      createdAt: new Date(r.createdAt),
      leaseToken: r.leaseToken,
      lockedUntil: new Date(r.lockedUntil),
    };
  }

  private held(lease: Lease): Row | undefined {
    const row = this.jobs.get(lease.id);
    return row && row.state === "running" && row.leaseToken === lease.leaseToken ? row : undefined;
  }

  async extendLeases(leases: Lease[], leaseMs: number): Promise<LeaseStatus[]> {
    const now = this.clock();
    return leases.map((lease) => {
      const row = this.held(lease);
      if (row) row.lockedUntil = new Date(now + leaseMs);
      return { id: lease.id, held: row !== undefined, cancelRequested: row?.cancelRequested ?? false };
    });
  }

  async returnJobs(leases: Lease[]): Promise<number> {
    const now = this.clock();
    let returned = 0;
    for (const lease of leases) {
      const row = this.held(lease);
      if (!row) continue;
      row.attempt -= 1;
      if (row.attempt === 0) row.startedAt = null;
      row.lockedBy = null;
      row.lockedUntil = null;
      row.progress = null;
      if (row.cancelRequested) {
        row.state = "cancelled";
        row.finishedAt = new Date(now);
        row.cancelRequested = false;
      } else {
        row.state = "pending";
        this.notify(row.queue);
      }
      returned++;
    }
    return returned;
  }

  async finishJobs(outcomes: Outcome[]): Promise<boolean[]> {
    const now = this.clock();
    const applied = outcomes.map((outcome) => {
      const row = this.held(outcome);
      if (!row) return false;
      this.applyOutcome(row, outcome, now);
      return true;
    });
    return applied;
  }

  private applyOutcome(row: Row, outcome: Outcome, now: number): void {
    const t = outcomeTransition(outcome, row.cancelRequested, now);
    row.attempts.push(
      attemptFromOutcome(outcome, t, row.attempt, row.startedAt ?? new Date(now), new Date(now)),
    );
    row.state = t.state;
    if (t.uncharge) row.attempt -= 1;
    if (t.runAt) row.runAt = t.runAt;
    if (outcome.error) row.lastError = outcome.error.message;
    if (outcome.kind === "completed") row.result = clone(outcome.result ?? null);
    if (t.state !== "pending") row.finishedAt = new Date(now);
    row.lockedBy = null;
    row.lockedUntil = null;
    row.cancelRequested = false;
    if (t.state === "pending") this.notify(row.queue);
  }

  async completeInTransaction<T>(
    lease: Lease,
    worker: string,
    fn: (tx: unknown) => Promise<T> | T,
  ): Promise<{ applied: boolean; value?: T }> {
    if (!this.held(lease)) return { applied: false };
    const value = await fn(null);
    const row = this.held(lease);
    if (!row) return { applied: false };
    this.applyOutcome(row, { ...lease, kind: "completed", result: value, worker }, this.clock());
    return { applied: true, value };
  }

  async setProgress(lease: Lease, progress: { fraction: number; message?: string }): Promise<boolean> {
    const row = this.held(lease);
    if (row) row.progress = { ...progress };
    return row !== undefined;
  }

  async rescueExpiredLeases(): Promise<RescuedJob[]> {
    const now = this.clock();
    const rescued: RescuedJob[] = [];
    for (const row of this.jobs.values()) {
      if (row.state !== "running" || (row.lockedUntil?.getTime() ?? 0) >= now) continue;
      const record: AttemptRecord = {
        attempt: row.attempt,
        startedAt: (row.startedAt ?? new Date(now)).toISOString(),
        finishedAt: new Date(now).toISOString(),
        worker: row.lockedBy,
        outcome: "lost",
        error: `lease expired: worker ${row.lockedBy ?? "?"} stopped heartbeating`,
        kind: "lost",
      };
      row.attempts.push(record);
      row.lastError = record.error ?? null;
      row.state = row.cancelRequested ? "cancelled" : row.attempt >= row.maxAttempts ? "failed" : "pending";
      if (row.state === "pending") row.runAt = new Date(now);
      else row.finishedAt = new Date(now);
      row.lockedBy = null;
      row.lockedUntil = null;
      row.cancelRequested = false;
      rescued.push({ id: row.id, queue: row.queue, name: row.name, state: row.state, attempt: row.attempt });
      if (row.state === "pending") this.notify(row.queue);
    }
    return rescued;
  }

  async countJobsAhead(
    job: { id: string; queue: string; priority: number; runAt: Date },
    cap: number,
  ): Promise<number> {
    const now = this.clock();
    const self = this.jobs.get(String(job.id));
    const me = { priority: job.priority, runAt: job.runAt, seq: self?.seq ?? Number.POSITIVE_INFINITY };
    let ahead = 0;
    for (const r of this.jobs.values()) {
      if (ahead >= cap) break;
      const due = r.queue === job.queue && r.state === "pending" && r.runAt.getTime() <= now;
      if (due && r !== self && claimOrder(r, me) < 0) ahead++;
    }
    return ahead;
  }

  async nextRunAt(queues: string[]): Promise<Date | null> {
    let next: number | null = null;
    for (const r of this.jobs.values()) {
      if (r.state === "pending" && queues.includes(r.queue)) {
        const t = r.runAt.getTime();
        if (next === null || t < next) next = t;
      }
    }
    return next === null ? null : new Date(next);
  }

  async cancelJob(id: string): Promise<JobRecord | null> {
    const row = this.jobs.get(String(id));
    if (!row) return null;
    if (row.state === "pending") {
      row.state = "cancelled";
      row.finishedAt = new Date(this.clock());
    } else if (row.state === "running") {
      row.cancelRequested = true;
    }
    return this.publicJob(row);
  }

  private selectFinished(filter: { ids?: string[]; queue?: string }, states: string[]): Row[] {
    const ids = filter.ids ? new Set(filter.ids.map(String)) : null;
    return [...this.jobs.values()].filter(
      (r) =>
        states.includes(r.state) && (!ids || ids.has(r.id)) && (!filter.queue || r.queue === filter.queue),
    );
  }

  async retryJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    const now = this.clock();
    const rows = this.selectFinished(filter, filter.ids ? ["failed", "cancelled"] : ["failed"]);
    for (const row of rows) {
      row.state = "pending";
      row.runAt = new Date(now);
      row.attempt = 0;
      row.finishedAt = null;
      this.notify(row.queue);
    }
    return rows.length;
  }

  async discardJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    const rows = this.selectFinished(filter, ["failed"]);
    for (const row of rows) this.deleteRow(row);
    return rows.length;
  }

  async actOnJobs(batch: Parameters<Store["actOnJobs"]>[0]): Promise<number> {
    const state = bulkState(batch.action);
    const { page } = listRows(this.jobs.values(), { ...batch, state });
    const ids = page.map((r) => r.id);
    if (batch.action === "retry") return this.retryJobs({ ids });
    if (batch.action === "discard") return this.discardJobs({ ids });
    for (const id of ids) await this.cancelJob(id);
    return ids.length;
  }

  async deadLetterGroups(queue?: string): ReturnType<Store["deadLetterGroups"]> {
    return deadLetterGroupsOf(this.jobs.values(), queue);
  }

  async recentTimings(windowMs: number, limit: number): ReturnType<Store["recentTimings"]> {
    return timingsOf(this.jobs.values(), this.clock() - windowMs, limit);
  }

  private deleteRow(row: Row): void {
    this.jobs.delete(row.id);
    if (row.key) this.byKey.delete(`${row.queue}\u0000${row.key}`);
  }

  async pruneFinished(req: { completedAgeMs: number; failedAgeMs: number }): Promise<number> {
    const now = this.clock();
    let pruned = 0;
    for (const row of [...this.jobs.values()]) {
      const finished = row.finishedAt?.getTime();
      if (finished === undefined) continue;
      const age = now - finished;
      const old =
        ((row.state === "completed" || row.state === "cancelled") && age > req.completedAgeMs) ||
        (row.state === "failed" && age > req.failedAgeMs);
      if (old) {
        this.deleteRow(row);
        pruned++;
      }
    }
    return pruned;
  }
}
