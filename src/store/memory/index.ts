/**
 * The in-process store: tests and throwaway scripts. It is also the reference
 * implementation of the Store contract — the SQL stores must behave the same,
 * and test/conformance/ holds all three to it.
 */
import type { AttemptRecord, JobLogLine, JobRecord } from "../../job.js";
import { attemptFromOutcome, bulkState, newJobRecord, outcomeTransition } from "../common.js";
import { needsDependencyPlan } from "../dependency-plan.js";
import type {
  ClaimedJob,
  FlowClaim,
  FlowLimits,
  FlowStatus,
  InsertResult,
  JobFilter,
  JobLinks,
  JobPage,
  Lease,
  LeaseStatus,
  NewJob,
  Outcome,
  PruneRequest,
  QueueStats,
  RescuedJob,
  Store,
  ThroughputBucket,
} from "../types.js";
import { holderAction, replacementRunAt } from "../unique.js";
import { type LinkedRow, MemoryLinks, recordOf, unlinked } from "./dependencies.js";
import { claimOrder, MemoryFlow } from "./flow.js";
import { deadLetterGroupsOf, listRows, statsOf, throughputOf, timingsOf } from "./reads.js";
import { clone, MemoryRegistry } from "./registry.js";

interface Row extends LinkedRow {
  seq: number;
  leaseToken: number;
  flowKey: string | null;
  traceContext: string | null;
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
  private readonly links = new MemoryLinks();

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
    return clone(recordOf(row));
  }

  async insertJobs(jobs: NewJob[]): Promise<InsertResult[]> {
    const now = this.clock();
    const results: InsertResult[] = [];
    const createdQueues = new Set<string>();
    const linked = needsDependencyPlan(jobs);
    if (linked) this.links.check(jobs, this.jobs);
    for (const input of jobs) {
      const keyId = input.key ? this.byKey.get(`${input.queue}\u0000${input.key}`) : undefined;
      const existing = keyId ? this.jobs.get(keyId) : undefined;
      // The key's holder: a duplicate, one to replace, or one that gives the key up (unique.ts).
      const action = existing ? (input.unique ? holderAction(input.unique, existing, now) : "match") : null;
      if (existing && action !== "release") {
        if (action === "replace") this.replaceRow(existing, input, now);
        if (action === "replace") createdQueues.add(existing.queue); // it may be due sooner
        const job = this.publicJob(existing);
        // As the SQL stores answer: `replaced` only when it was.
        results.push(action === "replace" ? { job, created: false, replaced: true } : { job, created: false });
        continue;
      }
      const seq = ++this.seq;
      const runAt = input.runAt ? new Date(input.runAt) : new Date(now + (input.delayMs ?? 0));
      // The stored copy is private; the caller's record gets its own (with payloadJson, the
      // payload the caller handed over).
      const stored = input.payloadJson === undefined ? clone(input.payload) : JSON.parse(input.payloadJson);
      const record = newJobRecord(String(seq), input, stored, runAt, new Date(now));
      const row: Row = {
        ...record,
        seq,
        leaseToken: 0,
        flowKey: input.flowKey ?? null,
        traceContext: input.traceContext ?? null,
        ...unlinked(),
      };
      this.jobs.set(row.id, row);
      if (row.key) this.byKey.set(`${row.queue}\u0000${row.key}`, row.id);
      createdQueues.add(row.queue);
      const job =
        input.payloadJson === undefined
          ? this.publicJob(row)
          : newJobRecord(row.id, input, input.payload, new Date(runAt), new Date(now));
      results.push({ job, created: true });
    }
    if (linked) this.links.apply(jobs, results, this.jobs, now);
    for (const queue of createdQueues) this.notify(queue);
    return results;
  }

  /** A pending job holding a key takes a new enqueue's payload, run time, priority and flow key. */
  private replaceRow(row: Row, input: NewJob, now: number): void {
    row.payload = input.payloadJson === undefined ? clone(input.payload) : JSON.parse(input.payloadJson);
    row.runAt = new Date(
      replacementRunAt(input.unique as NonNullable<NewJob["unique"]>, input, row.createdAt, now),
    );
    row.priority = input.priority;
    row.flowKey = input.flowKey ?? null;
  }

  /** Nothing to record (every finish reaches onJobsFinished); the jobs as they are. */
  awaitJobs(ids: string[]): Promise<JobRecord[]> {
    return this.getJobs(ids);
  }

  async getJobs(ids: string[]): Promise<JobRecord[]> {
    const rows = [...new Set(ids.map(String))].map((id) => this.jobs.get(id));
    return rows.filter((row) => row !== undefined).map((row) => this.publicJob(row));
  }

  async getJob(id: string): Promise<JobRecord | null> {
    const row = this.jobs.get(String(id));
    return row ? this.publicJob(row) : null;
  }

  async getJobLinks(id: string): Promise<JobLinks> {
    return this.links.links(String(id), this.jobs);
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
      traceContext: r.traceContext,
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
        this.settled(row, now);
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
    else this.settled(row, now);
  }

  /** A finished job wakes its waiters (waitFor) and resolves its dependents (dependencies.ts); most have none. */
  private settled(row: Row, now: number): void {
    this.finished(row.id);
    if (row.hasDependents) this.links.finished(row, this.jobs, now, (queue) => this.notify(queue));
  }

  async completeInTransaction<T>(
    lease: Lease,
    worker: string,
    fn: (tx: unknown) => Promise<T> | T,
    logs?: () => JobLogLine[] | undefined,
  ): Promise<{ applied: boolean; value?: T }> {
    if (!this.held(lease)) return { applied: false };
    const value = await fn(null);
    const row = this.held(lease);
    if (!row) return { applied: false };
    const outcome: Outcome = { ...lease, kind: "completed", result: value, worker };
    const lines = logs?.();
    if (lines) outcome.logs = lines;
    this.applyOutcome(row, outcome, this.clock());
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
      else this.settled(row, now);
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
    if (row.state === "pending" || row.state === "waiting") {
      row.state = "cancelled";
      row.finishedAt = new Date(this.clock());
      this.settled(row, this.clock());
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
    this.forgetLedgerOf(row.id);
    this.finished(row.id);
    this.links.deleted(row.id);
    // Only the job holding the key frees it: one that gave it up shares it with its holder.
    const key = `${row.queue}\u0000${row.key}`;
    if (row.key && this.byKey.get(key) === row.id) this.byKey.delete(key);
  }

  async pruneFinished(req: PruneRequest): Promise<number> {
    const now = this.clock();
    if (req.globalOnceAgeMs !== undefined) this.pruneGlobalLedger(req.globalOnceAgeMs);
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
