/**
 * The in-process store: tests and throwaway scripts. It is also the reference
 * implementation of the Store contract — the SQL stores must behave the same,
 * and test/conformance/ holds all three to it.
 */
import type { JobRecord } from "../../job.js";
import { bulkState } from "../common.js";
import type {
  ClaimedJob,
  FlowClaim,
  FlowLimits,
  FlowStatus,
  JobFilter,
  JobLinks,
  JobPage,
  PruneRequest,
  QueueStats,
  Store,
  ThroughputBucket,
} from "../types.js";
import { claimOrder, MemoryFlow } from "./flow.js";
import type { Row } from "./job-table.js";
import { MemoryLeases } from "./leases.js";
import { deadLetterGroupsOf, listRows, statsOf, throughputOf, timingsOf } from "./reads.js";

export interface MemoryStoreOptions {
  /** The store's clock, in ms since the epoch. Tests may inject one. */
  clock?: () => number;
}

/**
 * The job table and inserting (./job-table.ts), leases and finishing (./leases.ts), and through
 * them the ledger, schedules and worker registry (./registry.ts) are inherited.
 */
export class MemoryStore extends MemoryLeases implements Store {
  readonly kind = "memory" as const;
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

  async resumeFlow(req: { queue: string; key?: string | null }): Promise<number> {
    const lifted = this.flow.resume(req, this.clock());
    if (lifted > 0) this.notify(req.queue);
    return lifted;
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
