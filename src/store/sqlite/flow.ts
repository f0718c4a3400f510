/**
 * Flow control on SQLite: the state store/flow-plan.ts decides from, read and written in one
 * BEGIN IMMEDIATE transaction per claim (flow-queries.ts), so every process on the file sees
 * each claim's effect before it claims.
 */
import type Database from "better-sqlite3";
import {
  type ClaimBatch,
  type DueJob,
  dueOrder,
  type FlowState,
  keyRoom,
  keysToVisit,
  NO_KEY,
  planFlowClaim,
  queueRoom,
  rateWindowMs,
} from "../flow-plan.js";
import type { ClaimedJob, FlowClaim, FlowClaimRequest, FlowLimits, FlowStatus } from "../types.js";
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
  // Running jobs matter to concurrency limits only; the queue's total is an index-only count.
  const running =
    flow.keyConcurrency !== undefined
      ? readRunning(c, queue)
      : flow.globalConcurrency !== undefined
        ? new Map([[NO_KEY, (c.q(Q.FLOW_RUNNING_TOTAL).get({ queue }) as { n: number }).n]])
        : new Map<string, number>();
  const claims = windowMs > 0 ? readClaims(c, queue, now - windowMs) : new Map<string, ClaimBatch[]>();
  const pausedUntil = readPauses(c, queue, now);
  const cursor = (c.q(Q.FLOW_CURSOR).get({ queue }) as { cursor: string } | undefined)?.cursor ?? null;
  const state: FlowState = { now, running, claims, pausedUntil, cursor };
  const due = dueJobs(c, req, flow, state);
  const plan = planFlowClaim(flow, state, due, req.limit);
  if (plan.picks.length === 0) return { jobs: [], held: plan.held, retryInMs: plan.retryInMs };
  const rows = c.q(Q.FLOW_CLAIM_JOBS).all({
    ids: JSON.stringify(plan.picks.map((p) => p.job.id)),
    worker: req.workerId,
    now,
    leaseMs: req.leaseMs,
  }) as (ClaimRow & { flow_key: string | null })[];
  const byId = new Map(rows.map((r) => [r.id, r]));
  const jobs: ClaimedJob[] = [];
  const taken = new Map<string, number>();
  for (const pick of plan.picks) {
    const row = byId.get(Number(pick.job.id));
    if (!row) continue;
    jobs.push({ ...claimedFromRow(row), flowKey: row.flow_key });
    taken.set(pick.key, (taken.get(pick.key) ?? 0) + 1);
  }
  if (windowMs > 0) {
    const record = c.q(Q.FLOW_RECORD_CLAIM);
    for (const [key, n] of taken) record.run({ queue, key, now, n });
  }
  if (plan.cursor !== null && plan.cursor !== cursor)
    c.q(Q.FLOW_SET_CURSOR).run({ queue, cursor: plan.cursor });
  return { jobs, held: plan.held, retryInMs: plan.retryInMs };
}

type DueRow = { id: number; priority: number; run_at: number };
const toDue = (rows: DueRow[]): DueJob[] =>
  rows.map((j) => ({ id: j.id, priority: j.priority, runAt: j.run_at }));

/**
 * The candidates of one claim, by flow key: the keys in rotation order (after the cursor, then
 * from the start), enough of them for the queue's room plus the keys the state shows blocked
 * (running at their cap, paused, their rate window full) — keysToVisit's bound at most; a share
 * of the claim from each key with room and enough of the others' to count what a limit holds
 * back; and the jobs without a key. Four statements whatever the number of keys (the walk and
 * the reads were two statements per key: 300 for a claim over 100 keys).
 */
function dueJobs(
  c: Connection,
  req: FlowClaimRequest,
  flow: FlowLimits,
  state: FlowState,
): Map<string, DueJob[]> {
  const { queue, limit } = req;
  const { now, cursor } = state;
  const room = queueRoom(flow, state, limit).room;
  const named = new Set([...state.running.keys(), ...state.claims.keys(), ...state.pausedUntil.keys()]);
  let blocked = 0;
  for (const key of named) if (key !== NO_KEY && keyRoom(flow, state, key).room <= 0) blocked++;
  const want = Math.min(keysToVisit(limit, state), room + blocked + 1);
  const walk = (after: string | null, upto: string | null, n: number) =>
    n <= 0
      ? []
      : (
          c
            .q(after === null ? Q.FLOW_KEYS_FIRST : Q.FLOW_KEYS_AFTER)
            .all({ queue, limit: n, upto, ...(after === null ? {} : { after }) }) as { key: string }[]
        ).map((r) => r.key);
  const keys = walk(cursor, null, want);
  if (cursor !== null) keys.push(...walk(null, cursor, want - keys.length));
  const open = keys.filter((k) => keyRoom(flow, state, k).room > 0);
  const shut = keys.filter((k) => keyRoom(flow, state, k).room <= 0);
  // The keyless group among the whole claim's worth of jobs when the queue has no per-key limit,
  // else among the first 100 (each a table lookup, and a keyed backlog has none to find).
  const keyed = flow.keyConcurrency !== undefined || flow.keyRate !== undefined;
  const unkeyed = toDue(
    c
      .q(Q.FLOW_UNKEYED_DUE)
      .all({ queue, now, limit, window: keyed ? 100 : Math.max(limit, 100) }) as DueRow[],
  );
  const due = new Map<string, DueJob[]>();
  const read = (list: string[], share: number) => {
    if (list.length === 0) return;
    const rows = c
      .q(Q.FLOW_KEYS_DUE)
      .all({ queue, now, limit: share, keys: JSON.stringify(list) }) as (DueRow & { key: string })[];
    for (const r of rows) {
      const jobs = due.get(r.key);
      const job = { id: r.id, priority: r.priority, runAt: r.run_at };
      if (jobs) jobs.push(job);
      else due.set(r.key, [job]);
    }
  };
  // A claim takes one job per key per turn: a share of it is enough from each key with room.
  read(open, Math.ceil(limit / Math.max(1, open.length + (unkeyed.length > 0 ? 1 : 0))));
  read(shut, Math.ceil(limit / Math.max(1, keys.length)));
  if (unkeyed.length > 0) due.set(NO_KEY, [...(due.get(NO_KEY) ?? []), ...unkeyed].sort(dueOrder));
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
  const claims = new Map<string, number[]>();
  if (windowMs > 0) {
    for (const [key, batches] of readClaims(c, queue, now - windowMs))
      claims.set(
        key,
        batches.flatMap((b) => Array<number>(b.n).fill(b.at)).sort((x, y) => x - y),
      );
  }
  return { running: readRunning(c, queue), claims, pausedUntil: readPauses(c, queue, now) };
}

function readRunning(c: Connection, queue: string): Map<string, number> {
  const running = new Map<string, number>();
  for (const r of c.q(Q.FLOW_RUNNING).all({ queue }) as { key: string; n: number }[])
    running.set(r.key, (running.get(r.key) ?? 0) + r.n);
  return running;
}

function readClaims(c: Connection, queue: string, since: number): Map<string, ClaimBatch[]> {
  const claims = new Map<string, ClaimBatch[]>();
  for (const r of c.q(Q.FLOW_CLAIMS).all({ queue, since }) as { key: string; at: number; n: number }[]) {
    const batches = claims.get(r.key);
    if (batches) batches.push({ at: r.at, n: r.n });
    else claims.set(r.key, [{ at: r.at, n: r.n }]);
  }
  return claims;
}

function readPauses(c: Connection, queue: string, now: number): Map<string, number> {
  const pausedUntil = new Map<string, number>();
  for (const r of c.q(Q.FLOW_PAUSES).all({ queue, now }) as { key: string; until: number }[])
    pausedUntil.set(r.key, r.until);
  return pausedUntil;
}

export function pauseFlow(c: Connection, req: { queue: string; key: string | null; ms: number }): void {
  c.q(Q.FLOW_PAUSE).run({ queue: req.queue, key: req.key ?? NO_KEY, until: Math.ceil(c.now() + req.ms) });
}
