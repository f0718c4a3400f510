/**
 * Flow control on SQLite: the state store/flow-plan.ts decides from, read and written in one
 * BEGIN IMMEDIATE transaction per claim (flow-queries.ts), so every process on the file sees
 * each claim's effect before it claims.
 */
import type Database from "better-sqlite3";
import {
  type DueJob,
  dueOrder,
  type FlowState,
  keysToVisit,
  NO_KEY,
  planFlowClaim,
  rateWindowMs,
} from "../flow-plan.js";
import type { ClaimedJob, FlowClaim, FlowClaimRequest, FlowStatus } from "../types.js";
import type { Connection } from "./connection.js";
import * as Q from "./flow-queries.js";
import { isQueuePaused } from "./pauses.js";
import { type ClaimRow, claimedFromRow } from "./rows.js";

const built = new WeakMap<Connection, Database.Transaction<(req: FlowClaimRequest) => FlowClaim>>();

export function claimFlowJobs(c: Connection, req: FlowClaimRequest): FlowClaim {
  // The application holds a transaction on a shared handle: try again at the next poll (as claimJobs).
  if (c.db.inTransaction) return { jobs: [], held: 0, retryInMs: null };
  let tx = built.get(c);
  if (!tx) {
    tx = c.db.transaction((r: FlowClaimRequest) => claimIn(c, r));
    built.set(c, tx);
  }
  return tx.immediate(req);
}

function claimIn(c: Connection, req: FlowClaimRequest): FlowClaim {
  const { queue, flow } = req;
  if (isQueuePaused(c, queue)) return { jobs: [], held: 0, retryInMs: null }; // as claimJobs
  const now = c.now();
  const windowMs = rateWindowMs(flow);
  if (windowMs > 0) c.q(Q.FLOW_FORGET_CLAIMS).run({ queue, since: now - windowMs });
  const { running, claims, pausedUntil } = readFlowState(c, queue, now, windowMs);
  const cursor = (c.q(Q.FLOW_CURSOR).get({ queue }) as { cursor: string } | undefined)?.cursor ?? null;
  const state: FlowState = { now, running, claims, pausedUntil, cursor };
  const due = dueJobs(c, queue, now, req.limit, cursor, keysToVisit(req.limit, state));
  const plan = planFlowClaim(flow, state, due, req.limit);
  const jobs: ClaimedJob[] = [];
  const claim = c.q(Q.FLOW_CLAIM_JOB);
  const record = c.q(Q.FLOW_RECORD_CLAIM);
  for (const pick of plan.picks) {
    const row = claim.get({ id: pick.job.id, worker: req.workerId, now, leaseMs: req.leaseMs }) as
      | (ClaimRow & { flow_key: string | null })
      | undefined;
    if (!row) continue;
    jobs.push({ ...claimedFromRow(row), flowKey: row.flow_key });
    if (windowMs > 0) record.run({ queue, key: pick.key, now });
  }
  if (plan.cursor !== null && plan.cursor !== cursor)
    c.q(Q.FLOW_SET_CURSOR).run({ queue, cursor: plan.cursor });
  return { jobs, held: plan.held, retryInMs: plan.retryInMs };
}

/**
 * Up to `limit` due jobs of each of up to `maxKeys` flow keys, the keys in rotation order (after
 * `cursor`, then from the start), walked one index probe per key; and the jobs without a key.
 */
function dueJobs(
  c: Connection,
  queue: string,
  now: number,
  limit: number,
  cursor: string | null,
  maxKeys: number,
): Map<string, DueJob[]> {
  const first = c.q(Q.FLOW_FIRST_KEY);
  const next = c.q(Q.FLOW_NEXT_KEY);
  const keyAfter = (after: string | null) =>
    ((after === null ? first.get({ queue }) : next.get({ queue, after })) as { key: string } | undefined)
      ?.key ?? null;
  const keys: string[] = [];
  for (let k = keyAfter(cursor); k !== null && keys.length < maxKeys; k = keyAfter(k)) keys.push(k);
  if (cursor !== null)
    for (let k = keyAfter(null); k !== null && k <= cursor && keys.length < maxKeys; k = keyAfter(k))
      keys.push(k);
  const due = new Map<string, DueJob[]>();
  const keyDue = c.q(Q.FLOW_KEY_DUE);
  // A claim takes one job per key per turn: each key's share of `limit` is enough.
  const share = Math.ceil(limit / Math.max(1, keys.length));
  for (const key of keys) {
    const jobs = keyDue.all({ queue, key, now, limit: share }) as {
      id: number;
      priority: number;
      run_at: number;
    }[];
    if (jobs.length > 0)
      due.set(
        key,
        jobs.map((j) => ({ id: j.id, priority: j.priority, runAt: j.run_at })),
      );
  }
  const unkeyed = c.q(Q.FLOW_UNKEYED_DUE).all({ queue, now, limit }) as {
    id: number;
    priority: number;
    run_at: number;
  }[];
  if (unkeyed.length > 0) {
    const list = [
      ...(due.get(NO_KEY) ?? []),
      ...unkeyed.map((j) => ({ id: j.id, priority: j.priority, runAt: j.run_at })),
    ];
    due.set(NO_KEY, list.sort(dueOrder));
  }
  return due;
}

/** A queue's flow state now: read in one deferred transaction (a consistent snapshot), no lock. */
export function flowStatus(c: Connection, req: { queue: string; windowMs: number }): FlowStatus {
  return c.db.transaction(() => {
    const now = c.now();
    return { now: new Date(now), ...readFlowState(c, req.queue, now, req.windowMs) };
  })();
}

/** Running jobs, claims within `windowMs` (oldest first) and paused budgets of a queue, by flow key. */
function readFlowState(c: Connection, queue: string, now: number, windowMs: number): Omit<FlowStatus, "now"> {
  const running = new Map<string, number>();
  for (const r of c.q(Q.FLOW_RUNNING).all({ queue }) as { key: string; n: number }[]) running.set(r.key, r.n);
  const claims = new Map<string, number[]>();
  if (windowMs > 0) {
    for (const r of c.q(Q.FLOW_CLAIMS).all({ queue, since: now - windowMs }) as {
      key: string;
      at: number;
    }[]) {
      const times = claims.get(r.key);
      if (times) times.push(r.at);
      else claims.set(r.key, [r.at]);
    }
  }
  for (const times of claims.values()) times.sort((x, y) => x - y);
  const pausedUntil = new Map<string, number>();
  for (const r of c.q(Q.FLOW_PAUSES).all({ queue, now }) as { key: string; until: number }[])
    pausedUntil.set(r.key, r.until);
  return { running, claims, pausedUntil };
}

export function pauseFlow(c: Connection, req: { queue: string; key: string | null; ms: number }): void {
  c.q(Q.FLOW_PAUSE).run({ queue: req.queue, key: req.key ?? NO_KEY, until: Math.ceil(c.now() + req.ms) });
}
