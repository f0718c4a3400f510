/**
 * Flow control on PostgreSQL. A claim of a flow-controlled queue is one statement (FLOW_CLAIM):
 * the flow_claim function takes the queue's advisory lock, reads the state, decides as
 * store/flow-plan.ts does and claims, so every claimer on every host sees each claim's effect
 * before it claims (sql/flow-claim-function.ts).
 */
import { NO_KEY } from "../flow-plan.js";
import type { ClaimedJob, FlowClaim, FlowClaimRequest, FlowStatus, InsertResult, NewJob } from "../types.js";
import type { Queryable } from "./connection.js";
import type { Db } from "./db.js";
import { type Notifier, notifyLocally } from "./notifier.js";
import { type Row, toClaimed } from "./rows.js";

/** Stores that have claimed a queue with a concurrency limit: their finishes notify freed slots. */
const capped = new WeakSet<Db>();

/** Whether `db`'s finishes may free a concurrency slot a worker waits for (leases.ts finishJobs). */
export function freesSlots(db: Db): boolean {
  return capped.has(db);
}

export async function claimFlowJobs(db: Db, req: FlowClaimRequest): Promise<FlowClaim> {
  const { queue, flow } = req;
  if (flow.globalConcurrency !== undefined || flow.keyConcurrency !== undefined) capped.add(db);
  const { rows } = await db.run("FLOW_CLAIM", [
    `errand.flow:${db.schema}:${queue}`,
    queue,
    req.limit,
    req.workerId,
    req.leaseMs,
    flow.globalConcurrency ?? null,
    flow.keyConcurrency ?? null,
    flow.rate?.limit ?? null,
    flow.rate?.perMs ?? null,
    flow.keyRate?.limit ?? null,
    flow.keyRate?.perMs ?? null,
  ]);
  const jobs: ClaimedJob[] = [];
  let held = 0;
  let retryInMs: number | null = null;
  for (const r of rows as Row[]) {
    if (r.id === null) {
      held = Number(r.held);
      retryInMs = r.retry_ms === null ? null : Math.max(1, Math.ceil(Number(r.retry_ms)));
    } else {
      const job = toClaimed(r); // not spread: its times are accessors (rows.ts ClaimedRow)
      job.flowKey = (r.flow_key as string | null) ?? null;
      jobs.push(job);
    }
  }
  return { jobs, held, retryInMs };
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

/** Lifts flow budget pauses (FLOW_RESUME); returns how many were in effect. */
export async function resumeFlow(
  db: Db,
  notifier: Notifier,
  req: { queue: string; key?: string | null },
): Promise<number> {
  const wasListening = notifier.isListening;
  const one = req.key !== undefined;
  const { rows } = await db.run("FLOW_RESUME", [req.queue, one ? (req.key ?? NO_KEY) : NO_KEY, one]);
  const lifted = Number(rows[0]?.n ?? 0);
  if (lifted > 0) notifyLocally(notifier, wasListening, () => [req.queue]);
  return lifted;
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
