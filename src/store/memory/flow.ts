/**
 * Flow control in memory (store/flow-plan.ts decides; this keeps the state it decides from): the
 * claim log of the rate windows, the paused budgets and each queue's rotation cursor. One
 * thread, so a claim is atomic by construction.
 */
import {
  type ClaimBatch,
  claimLogRetention,
  type FlowState,
  type KeptWindow,
  NO_KEY,
  planFlowClaim,
  rateWindowMs,
} from "../flow-plan.js";
import type { ClaimedJob, FlowClaim, FlowLimits, FlowStatus } from "../types.js";

/** What flow control reads of a job row. */
export interface FlowRow {
  state: string;
  runAt: Date;
  priority: number;
  seq: number;
  flowKey: string | null;
}

/** The claim order: priority first, then run_at, then insertion. */
export function claimOrder(
  a: Pick<FlowRow, "priority" | "runAt" | "seq">,
  b: Pick<FlowRow, "priority" | "runAt" | "seq">,
): number {
  return b.priority - a.priority || a.runAt.getTime() - b.runAt.getTime() || a.seq - b.seq;
}

export class MemoryFlow {
  /** The claim log by queue, then key: one batch per key per claim. */
  private readonly claims = new Map<string, Map<string, ClaimBatch[]>>();
  private readonly pauses = new Map<string, Map<string, number>>();
  private readonly cursors = new Map<string, string>();
  /** The longest rate window in use, by queue (claimLogRetention). */
  private readonly kept = new Map<string, KeptWindow>();

  claim<R extends FlowRow>(
    req: { queue: string; limit: number; flow: FlowLimits },
    rows: R[],
    now: number,
    claimRow: (row: R) => ClaimedJob,
  ): FlowClaim {
    const { queue, flow } = req;
    const running = new Map<string, number>();
    const due = new Map<string, R[]>();
    for (const r of rows) {
      const key = r.flowKey ?? NO_KEY;
      if (r.state === "running") running.set(key, (running.get(key) ?? 0) + 1);
      else if (r.state === "pending" && r.runAt.getTime() <= now) {
        const list = due.get(key);
        if (list) list.push(r);
        else due.set(key, [r]);
      }
    }
    for (const list of due.values()) list.sort(claimOrder);
    const windowMs = rateWindowMs(flow);
    const log = this.claims.get(queue) ?? new Map<string, ClaimBatch[]>();
    if (windowMs > 0) {
      const { retainMs, write } = claimLogRetention(windowMs, this.kept.get(queue) ?? null, now);
      if (write) this.kept.set(queue, write);
      for (const [key, batches] of log) {
        const kept = batches.filter((b) => b.at > now - retainMs);
        if (kept.length > 0) log.set(key, kept);
        else log.delete(key);
      }
    }
    // The plan reads this claimer's window only, as the SQL stores read it.
    const inWindow = new Map<string, ClaimBatch[]>();
    for (const [key, batches] of log) {
      const recent = batches.filter((b) => b.at > now - windowMs);
      if (recent.length > 0) inWindow.set(key, recent);
    }
    const state: FlowState = {
      now,
      running,
      claims: inWindow,
      pausedUntil: this.pauses.get(queue) ?? new Map(),
      cursor: this.cursors.get(queue) ?? null,
    };
    const plan = planFlowClaim(flow, state, due, req.limit);
    const jobs = plan.picks.map((p) => claimRow(p.job));
    if (windowMs > 0) {
      const taken = new Map<string, number>();
      for (const p of plan.picks) taken.set(p.key, (taken.get(p.key) ?? 0) + 1);
      for (const [key, n] of taken) {
        const batches = log.get(key);
        if (batches) batches.push({ at: now, n });
        else log.set(key, [{ at: now, n }]);
      }
      this.claims.set(queue, log);
    }
    if (plan.cursor !== null) this.cursors.set(queue, plan.cursor);
    return { jobs, held: plan.held, retryInMs: plan.retryInMs };
  }

  /** The claims within `windowMs` and the pauses beyond now of a queue (flowStatus). */
  status(queue: string, now: number, windowMs: number): Omit<FlowStatus, "running"> {
    const claims = new Map<string, number[]>();
    for (const [key, batches] of this.claims.get(queue) ?? []) {
      const recent = batches
        .filter((b) => b.at > now - windowMs)
        .flatMap((b) => Array<number>(b.n).fill(b.at));
      if (windowMs > 0 && recent.length > 0) claims.set(key, recent);
    }
    const pausedUntil = new Map<string, number>();
    for (const [key, until] of this.pauses.get(queue) ?? []) if (until > now) pausedUntil.set(key, until);
    return { now: new Date(now), claims, pausedUntil };
  }

  pause(req: { queue: string; key: string | null; ms: number }, now: number): void {
    const pauses = this.pauses.get(req.queue) ?? new Map<string, number>();
    const key = req.key ?? NO_KEY;
    pauses.set(key, Math.max(pauses.get(key) ?? 0, now + req.ms));
    this.pauses.set(req.queue, pauses);
  }

  /** Drops the matching pauses (every key when `key` is undefined); returns how many were in effect. */
  resume(req: { queue: string; key?: string | null }, now: number): number {
    const pauses = this.pauses.get(req.queue);
    if (!pauses) return 0;
    const keys = req.key === undefined ? [...pauses.keys()] : [req.key ?? NO_KEY];
    let lifted = 0;
    for (const key of keys) {
      if ((pauses.get(key) ?? 0) > now) lifted++;
      pauses.delete(key);
    }
    if (pauses.size === 0) this.pauses.delete(req.queue);
    return lifted;
  }
}
