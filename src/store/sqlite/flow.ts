/**
 * Flow control on SQLite: the state store/flow-plan.ts decides from, read and written in one
 * BEGIN IMMEDIATE transaction per claim (flow-queries.ts), so every process on the file sees
 * each claim's effect before it claims.
 */
import type Database from "better-sqlite3";
import { type FlowState, NO_KEY, planFlowClaim, rateWindowMs } from "../flow-plan.js";
import type { ClaimedJob, FlowClaim, FlowLimits } from "../types.js";
import type { Connection } from "./connection.js";
import * as Q from "./flow-queries.js";
import { type ClaimRow, claimedFromRow } from "./rows.js";

interface FlowRequest {
  queue: string;
  limit: number;
  workerId: string;
  leaseMs: number;
  flow: FlowLimits;
}

const built = new WeakMap<Connection, Database.Transaction<(req: FlowRequest) => FlowClaim>>();

export function claimFlowJobs(c: Connection, req: FlowRequest): FlowClaim {
  // The application holds a transaction on a shared handle: try again at the next poll (as claimJobs).
  if (c.db.inTransaction) return { jobs: [], held: 0, retryInMs: null };
  let tx = built.get(c);
  if (!tx) {
    tx = c.db.transaction((r: FlowRequest) => claimIn(c, r));
    built.set(c, tx);
  }
  return tx.immediate(req);
}

function claimIn(c: Connection, req: FlowRequest): FlowClaim {
  const { queue, flow } = req;
  const now = c.now();
  const windowMs = rateWindowMs(flow);
  const running = new Map<string, number>();
  for (const r of c.q(Q.FLOW_RUNNING).all({ queue }) as { key: string; n: number }[]) running.set(r.key, r.n);
  const claims = new Map<string, number[]>();
  if (windowMs > 0) {
    c.q(Q.FLOW_FORGET_CLAIMS).run({ queue, since: now - windowMs });
    for (const r of c.q(Q.FLOW_CLAIMS).all({ queue, since: now - windowMs }) as {
      key: string;
      at: number;
    }[]) {
      const times = claims.get(r.key);
      if (times) times.push(r.at);
      else claims.set(r.key, [r.at]);
    }
  }
  const pausedUntil = new Map<string, number>();
  for (const r of c.q(Q.FLOW_PAUSES).all({ queue, now }) as { key: string; until: number }[])
    pausedUntil.set(r.key, r.until);
  const cursor = (c.q(Q.FLOW_CURSOR).get({ queue }) as { cursor: string } | undefined)?.cursor ?? null;
  const due = new Map<string, { id: number; rn: number }[]>();
  for (const r of c.q(Q.FLOW_DUE).all({ queue, now, limit: req.limit }) as {
    id: number;
    key: string;
    rn: number;
  }[]) {
    const list = due.get(r.key);
    if (list) list.push(r);
    else due.set(r.key, [r]);
  }
  for (const list of due.values()) list.sort((a, b) => a.rn - b.rn);
  const state: FlowState = { now, running, claims, pausedUntil, cursor };
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

export function pauseFlow(c: Connection, req: { queue: string; key: string | null; ms: number }): void {
  c.q(Q.FLOW_PAUSE).run({ queue: req.queue, key: req.key ?? NO_KEY, until: Math.ceil(c.now() + req.ms) });
}
