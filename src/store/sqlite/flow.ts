/**
 * Flow control on SQLite: the state store/flow-plan.ts decides from, read and written in one
 * BEGIN IMMEDIATE transaction per claim (flow-queries.ts), so every process on the file sees
 * each claim's effect before it claims.
 */
import type Database from "better-sqlite3";
import {
  type ClaimBatch,
  claimLogRetention,
  type DueJob,
  dueOrder,
  type FlowState,
  type KeptWindow,
  keyRoom,
  keysToVisit,
  NO_KEY,
  planFlowClaim,
  queueRoom,
  rateWindowMs,
} from "../flow-plan.js";
import type { FlowClaim, FlowClaimRequest, FlowLimits, FlowStatus } from "../types.js";
import type { Connection } from "./connection.js";
import * as Q from "./flow-queries.js";
import { isQueuePaused } from "./pauses.js";
import { CLAIM_JOBS } from "./queries.js";
import { type ClaimRow, flowClaimedFromRow } from "./rows.js";

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
  if (windowMs > 0) {
    const kept = (c.q(Q.FLOW_KEPT_WINDOW).get({ queue }) as KeptWindow | undefined) ?? null;
    const { retainMs, write } = claimLogRetention(windowMs, kept, now);
    if (write) c.q(Q.FLOW_KEEP_WINDOW).run({ queue, ...write });
    c.q(Q.FLOW_FORGET_CLAIMS).run({ queue, since: now - retainMs });
  }
  const running = readRunningFor(c, queue, flow, req.limit);
  const claims = windowMs > 0 ? readClaims(c, queue, now - windowMs) : new Map<string, ClaimBatch[]>();
  const pausedUntil = readPauses(c, queue, now);
  const cursor = (c.q(Q.FLOW_CURSOR).get({ queue }) as { cursor: string } | undefined)?.cursor ?? null;
  const state: FlowState = { now, running, claims, pausedUntil, cursor };
  const plain = claimUnkeyed(c, req, state);
  if (plain)
    return record(c, req, state, plain, {
      held: 0,
      retryInMs: null,
      cursor: plain.length > 0 ? NO_KEY : null,
    });
  const due = dueJobs(c, req, flow, state);
  const plan = planFlowClaim(flow, state, due, req.limit);
  if (plan.picks.length === 0) return { jobs: [], held: plan.held, retryInMs: plan.retryInMs };
  const rows = c.q(Q.FLOW_CLAIM_JOBS).all({
    ids: JSON.stringify(plan.picks.map((p) => p.job.id)),
    worker: req.workerId,
    now,
    leaseMs: req.leaseMs,
  }) as FlowClaimRow[];
  const byId = new Map(rows.map((r) => [r.id, r]));
  const taken: FlowClaimRow[] = [];
  for (const pick of plan.picks) {
    const row = byId.get(Number(pick.job.id));
    if (row) taken.push(row);
  }
  return record(c, req, state, taken, plan);
}

/** A claimed row; flow_key absent when the claim knew none has one (claimUnkeyed). */
type FlowClaimRow = ClaimRow & { flow_key?: string | null };

/**
 * A queue whose limits leave room for the whole claim and that has no pending job with a flow
 * key: the plan would take the first `limit` due jobs in claim order (one group, no key to
 * rotate among), which is CLAIM_JOBS's pick — so claim them with it, without reading them first
 * and claiming by id (claims of 250 under a global or rate limit that does not bind: 9.9-12.2
 * µs CPU per job before, 7.7-9.8 after, a plain claim 7.2-8.5; bench/sqlite-flow-ab.ts, load
 * 5-9). Null: plan the claim.
 */
function claimUnkeyed(c: Connection, req: FlowClaimRequest, state: FlowState): FlowClaimRow[] | null {
  const { queue, limit } = req;
  if (!Number.isInteger(limit) || limit <= 0 || queueRoom(req.flow, state, limit).room < limit) return null;
  if (c.q(Q.FLOW_ANY_KEYED).get({ queue }) !== undefined) return null;
  const rows = c.q(CLAIM_JOBS).all({
    queue,
    limit,
    worker: req.workerId,
    leaseMs: req.leaseMs,
    now: state.now,
  }) as ClaimRow[];
  rows.sort((a, b) => b.priority - a.priority || a.run_at - b.run_at || a.id - b.id);
  return rows; // no flow_key: none has one
}

/** The claimed rows as jobs (in pick order), with the claim written to the log and the cursor. */
function record(
  c: Connection,
  req: FlowClaimRequest,
  state: FlowState,
  rows: FlowClaimRow[],
  plan: { held: number; retryInMs: number | null; cursor: string | null },
): FlowClaim {
  const { queue } = req;
  const taken = new Map<string, number>();
  const jobs = rows.map((row) => {
    const key = row.flow_key ?? NO_KEY;
    taken.set(key, (taken.get(key) ?? 0) + 1);
    return flowClaimedFromRow(row);
  });
  if (rateWindowMs(req.flow) > 0) {
    const log = c.q(Q.FLOW_RECORD_CLAIM);
    for (const [key, n] of taken) log.run({ queue, key, now: state.now, n });
  }
  if (plan.cursor !== null && plan.cursor !== state.cursor)
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
  const heads = new Map<string, DueJob>();
  const walk = (after: string | null, upto: string | null, n: number) => {
    if (n <= 0) return [];
    const rows = c
      .q(after === null ? Q.FLOW_KEYS_FIRST : Q.FLOW_KEYS_AFTER)
      .all({ queue, limit: n, upto, ...(after === null ? {} : { after }) }) as (DueRow & { key: string })[];
    for (const r of rows) heads.set(r.key, { id: r.id, priority: r.priority, runAt: r.run_at });
    return rows.map((r) => r.key);
  };
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
    const rows = c.q(Q.FLOW_KEYS_DUE).all({ queue, now, limit: share, keys: JSON.stringify(list) }) as {
      key: string;
      jobs: string;
    }[];
    for (const r of rows) {
      const jobs = (JSON.parse(r.jobs) as [number, number, number][]).map(
        ([id, priority, runAt]): DueJob => ({ id, priority, runAt }),
      );
      // A key with no due job stays out of the plan (its pause or rate window delays nothing).
      if (jobs.length > 0) due.set(r.key, jobs.sort(dueOrder));
    }
  };
  // A claim takes one job per key per turn: a share of it is enough from each key with room.
  // A share of one is the head the walk read, when it is due (its first job in claim order).
  const share = Math.ceil(limit / Math.max(1, open.length + (unkeyed.length > 0 ? 1 : 0)));
  const unread: string[] = [];
  for (const key of open) {
    const head = heads.get(key);
    if (share === 1 && head !== undefined && head.runAt <= now) due.set(key, [head]);
    else unread.push(key);
  }
  read(unread, share);
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

/**
 * The running jobs a claim's limits need: none without a concurrency limit; the queue's total
 * for a global limit, and for a per-key limit that no key can reach in this claim (the total
 * plus the claim within the limit: every key's count is below it, so the per-key counts would
 * decide nothing — reading them grouped by key cost ~0.15 ms per claim with 250 jobs running).
 */
function readRunningFor(c: Connection, queue: string, flow: FlowLimits, limit: number): Map<string, number> {
  if (flow.keyConcurrency === undefined && flow.globalConcurrency === undefined) return new Map();
  const total = (c.q(Q.FLOW_RUNNING_TOTAL).get({ queue }) as { n: number }).n;
  if (flow.keyConcurrency !== undefined && total + limit > flow.keyConcurrency) return readRunning(c, queue);
  return new Map([[NO_KEY, total]]);
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

/** Deletes the matching pause rows (one statement); returns how many were still in effect. */
export function resumeFlow(c: Connection, req: { queue: string; key?: string | null }): number {
  const rows = (
    req.key === undefined
      ? c.q(Q.FLOW_RESUME_ALL).all({ queue: req.queue })
      : c.q(Q.FLOW_RESUME_KEY).all({ queue: req.queue, key: req.key ?? NO_KEY })
  ) as { until: number }[];
  const now = c.now();
  return rows.filter((r) => r.until > now).length;
}
