/**
 * Flow control on PostgreSQL: one transaction per claim of a flow-controlled queue — the queue's
 * advisory lock, the state (sql/flow.ts FLOW_STATE, FLOW_DUE), the decision (store/flow-plan.ts,
 * shared with every store), the claim and its record. The lock serialises claimers of that queue
 * on every host, so the running counts and claim log read here are the truth until COMMIT.
 */
import type pg from "pg";
import { type DueJob, dueOrder, type FlowState, NO_KEY, planFlowClaim, rateWindowMs } from "../flow-plan.js";
import type { FlowClaim, FlowClaimRequest, FlowStatus, InsertResult, NewJob } from "../types.js";
import type { Queryable } from "./connection.js";
import { type Db, Rollback } from "./db.js";
import { type Row, toClaimed } from "./rows.js";

export async function claimFlowJobs(db: Db, req: FlowClaimRequest): Promise<FlowClaim> {
  const result = await db.transaction((client) => claimOn(db, client, req));
  if (result === Rollback) return { jobs: [], held: 0, retryInMs: null };
  return result as FlowClaim;
}

async function claimOn(db: Db, client: pg.PoolClient, req: FlowClaimRequest): Promise<FlowClaim> {
  const { queue, flow } = req;
  const windowMs = rateWindowMs(flow);
  await db.run("FLOW_LOCK", [`errand.flow:${db.schema}:${queue}`], client);
  const { rows } = await db.run("FLOW_READ", [queue, windowMs, req.limit], client);
  const state: FlowState = {
    now: 0,
    running: new Map(),
    claims: new Map(),
    pausedUntil: new Map(),
    cursor: null,
  };
  const due = new Map<string, DueJob[]>();
  for (const r of rows as Row[]) {
    const key = r.key as string;
    const v = Number(r.v);
    if (r.kind === "n") state.now = v;
    else if (r.kind === "r") state.running.set(key, v);
    else if (r.kind === "p") state.pausedUntil.set(key, v);
    else if (r.kind === "k") state.cursor = key;
    else if (r.kind === "c") push(state.claims, key, v);
    else push(due, key, { id: String(r.id), priority: Number(r.priority), runAt: v });
  }
  for (const list of due.values()) list.sort(dueOrder);
  const plan = planFlowClaim(flow, state, due, req.limit);
  if (plan.picks.length === 0) return { jobs: [], held: plan.held, retryInMs: plan.retryInMs };
  const { rows: claimedRows } = await db.run(
    "FLOW_CLAIM",
    [
      plan.picks.map((p) => String(p.job.id)),
      req.workerId,
      req.leaseMs,
      queue,
      plan.picks.map((p) => p.key),
      plan.cursor,
      windowMs,
    ],
    client,
  );
  const byId = new Map((claimedRows as Row[]).map((r) => [String(r.id), r]));
  const jobs = plan.picks
    .filter((p) => byId.has(String(p.job.id)))
    .map((p) => {
      const row = byId.get(String(p.job.id)) as Row;
      return { ...toClaimed(row), flowKey: (row.flow_key as string | null) ?? null };
    });
  return { jobs, held: plan.held, retryInMs: plan.retryInMs };
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** A queue's flow state now (FLOW_STATUS: one statement, a consistent snapshot). */
export async function flowStatus(db: Db, req: { queue: string; windowMs: number }): Promise<FlowStatus> {
  const { rows } = await db.run("FLOW_STATUS", [req.queue, req.windowMs]);
  const status: FlowStatus = {
    now: new Date(0),
    running: new Map(),
    claims: new Map(),
    pausedUntil: new Map(),
  };
  for (const r of rows as Row[]) {
    const key = r.key as string;
    const v = Number(r.v);
    if (r.kind === "n") status.now = new Date(v);
    else if (r.kind === "r") status.running.set(key, v);
    else if (r.kind === "p") status.pausedUntil.set(key, v);
    else push(status.claims, key, v);
  }
  for (const times of status.claims.values()) times.sort((a, b) => a - b);
  return status;
}

export async function pauseFlow(
  db: Db,
  req: { queue: string; key: string | null; ms: number },
): Promise<void> {
  await db.run("FLOW_PAUSE", [req.queue, req.key ?? NO_KEY, req.ms]);
}

/** The flow keys of the jobs `results` created, on `on` (inside the inserting transaction). */
export async function setFlowKeys(
  db: Db,
  on: Queryable,
  jobs: NewJob[],
  results: InsertResult[],
): Promise<void> {
  const ids: string[] = [];
  const keys: string[] = [];
  for (let i = 0; i < jobs.length; i++) {
    const key = jobs[i].flowKey;
    if (key !== undefined && key !== null && results[i].created) {
      ids.push(results[i].job.id);
      keys.push(key);
    }
  }
  if (ids.length > 0) await db.run("FLOW_SET_KEYS", [ids, keys], on, false);
}
