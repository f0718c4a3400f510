/**
 * The memory store's leases: claiming a row (a fresh lease token), extending, returning and
 * rescuing leases, and finishing attempts (finishJobs, completeInTransaction), every write
 * fenced by the lease token. MemoryStore (./index.ts) builds on it.
 */
import type { AttemptRecord, JobLogLine } from "../../job.js";
import { attemptFromOutcome, outcomeTransition } from "../common.js";
import type { ClaimedJob, Lease, LeaseStatus, Outcome, RescuedJob } from "../types.js";
import { MemoryJobTable, type Row } from "./job-table.js";
import { clone, jsonCopy } from "./registry.js";

export abstract class MemoryLeases extends MemoryJobTable {
  protected claimRow(r: Row, req: { workerId: string; leaseMs: number }, now: number): ClaimedJob {
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
    // Copied before the row changes: a value JSON cannot copy must not leave half an outcome.
    const result = outcome.kind === "completed" ? jsonCopy(outcome.result ?? null) : undefined;
    const t = outcomeTransition(outcome, row.cancelRequested, now);
    row.attempts.push(
      attemptFromOutcome(outcome, t, row.attempt, row.startedAt ?? new Date(now), new Date(now)),
    );
    row.state = t.state;
    if (t.uncharge) row.attempt -= 1;
    if (t.runAt) row.runAt = t.runAt;
    if (outcome.error) row.lastError = outcome.error.message;
    if (outcome.kind === "completed") row.result = result;
    if (t.state !== "pending") row.finishedAt = new Date(now);
    row.lockedBy = null;
    row.lockedUntil = null;
    row.cancelRequested = false;
    if (t.state === "pending") this.notify(row.queue);
    else this.settled(row, now);
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
}
