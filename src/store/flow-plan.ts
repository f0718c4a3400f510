/**
 * Flow control's one decision, shared by every store: given what a queue's limits allow (who is
 * running, who was claimed within the rate windows, which budgets a 429 paused) and the due jobs
 * of each flow key, which jobs one claim may take. Each store reads that state and writes the
 * claim under one lock per queue (Postgres: an advisory lock; SQLite: its single writer; memory:
 * one thread), so concurrent claimers never overshoot a limit, and all three decide the same way.
 *
 * - Concurrency caps count the queue's `running` jobs (claimed jobs hold their slot until they
 *   finish or a rescuer returns them, so a killed worker's slot comes back with its lease).
 * - Rate limits are sliding windows: at most `limit` claims in any `perMs`, counted from a log of
 *   claims kept in the store (exact, unlike a token bucket's burst): one entry per key per claim,
 *   with the number of jobs it took, so a non-binding limit of 10,000/s reads a few hundred
 *   entries per claim, not 10,000 times.
 * - Fairness: claims rotate among flow keys in key order, starting after the key the previous
 *   claim of the queue served last (a cursor kept in the store), one job per key per round. Jobs
 *   without a key form one group of their own ("" here, before every key). Within a key, the
 *   usual order holds: priority, run_at, insertion.
 */
import type { FlowLimits } from "./types.js";

/** The group of jobs without a flow key; also the key of the queue-wide pause. */
export const NO_KEY = "";

export interface FlowState {
  now: number;
  /** Running jobs of the queue by flow key (NO_KEY for jobs without one). */
  running: Map<string, number>;
  /** Claims within the longest rate window, by flow key: when (epoch ms) and how many jobs. */
  claims: Map<string, ClaimBatch[]>;
  /** Budgets paused until (epoch ms) by key; NO_KEY pauses the whole queue. */
  pausedUntil: Map<string, number>;
  /** The key served last by the previous claim of this queue, or null. */
  cursor: string | null;
}

/** One claim's jobs of one flow key, as the claim log keeps them. */
export interface ClaimBatch {
  at: number;
  n: number;
}

export interface FlowPick<J> {
  job: J;
  key: string;
}

export interface FlowPlan<J> {
  picks: FlowPick<J>[];
  /** The key served last (the next claim starts after it). */
  cursor: string | null;
  /** Due jobs left behind by a limit. */
  held: number;
  /** When a rate window or a pause that held jobs back frees up (ms from now), or null. */
  retryInMs: number | null;
}

/** A due job as the SQL stores list their candidates: claim order is priority, run_at, id. */
export interface DueJob {
  id: string | number;
  priority: number;
  runAt: number;
}

export function dueOrder(a: DueJob, b: DueJob): number {
  return b.priority - a.priority || a.runAt - b.runAt || Number(a.id) - Number(b.id);
}

/**
 * How many flow keys a claim visits, in rotation order: enough for `limit` keys with room even
 * when every key the state names (running, recently claimed, paused) is blocked, plus some that
 * hold only jobs not due yet. Past them a claim sees no more keys; the next one goes on from
 * its cursor, so rotation still reaches every key.
 */
export function keysToVisit(limit: number, state: FlowState): number {
  const named = new Set([...state.running.keys(), ...state.claims.keys(), ...state.pausedUntil.keys()]);
  return limit + named.size + 32;
}

/** The longest rate window of the limits (how far back the claim log must reach), 0 if none. */
export function rateWindowMs(flow: FlowLimits): number {
  return Math.max(flow.rate?.perMs ?? 0, flow.keyRate?.perMs ?? 0);
}

/**
 * How long a queue's claim log is kept, and what to record of it. Every claimer reads the log
 * over its own rate window, but claimers of one queue may use different windows: during a rolling
 * deploy that changes `per`, old and new processes claim side by side (work() can refuse only the
 * definitions of its own process). Each claim forgot the claims older than its own window, so a
 * process with a 1 s window erased the claims a 1 min window still counted, and the 1 min
 * process claimed its limit again within the minute (test/conformance/flow-limits-change.test.ts:
 * 2 a minute per key let 5 through in 4 s, on every store). So the queue records the longest
 * window in use (`keepMs`) until `keepUntil`, and no claim forgets a claim inside it. A claimer
 * with that window renews the record once per window (`keepUntil` is 3 windows ahead, renewed
 * when less than 2 are left), so a claim log read every window costs one write a window; when
 * the long-window processes are gone, the record lapses after at most 3 of their windows and the
 * log shrinks to the windows left.
 */
export interface KeptWindow {
  keepMs: number;
  keepUntil: number;
}

/** The log's retention for a claim with rate window `windowMs` (> 0) at `now`, and the record to write (or null). */
export function claimLogRetention(
  windowMs: number,
  kept: KeptWindow | null,
  now: number,
): { retainMs: number; write: KeptWindow | null } {
  const live = kept !== null && kept.keepUntil > now;
  const retainMs = live ? Math.max(windowMs, kept.keepMs) : windowMs;
  const renew =
    !live || windowMs > kept.keepMs || (windowMs === kept.keepMs && kept.keepUntil - now < 2 * windowMs);
  return { retainMs, write: renew ? { keepMs: windowMs, keepUntil: now + 3 * windowMs } : null };
}

/** The keys in rotation order: those after `cursor` first, then from the start. */
export function rotation(keys: Iterable<string>, cursor: string | null): string[] {
  const sorted = [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (cursor === null) return sorted;
  const after = sorted.findIndex((k) => k > cursor);
  return after < 0 ? sorted : [...sorted.slice(after), ...sorted.slice(0, after)];
}

/**
 * How many more claims a sliding window allows now, and when the next one frees (ms from now)
 * if none does. `batches` are the claims within the window's reach (any order).
 */
function windowRoom(batches: readonly ClaimBatch[] | undefined, limit: number, perMs: number, now: number) {
  const inWindow = (batches ?? []).filter((b) => b.at > now - perMs);
  const room = limit - inWindow.reduce((n, b) => n + b.n, 0);
  if (room > 0) return { room, freesInMs: null };
  // The claim whose leaving the window makes room for one more: the limit-th newest.
  inWindow.sort((a, b) => b.at - a.at);
  let newer = 0;
  let at = now;
  for (const b of inWindow) {
    newer += b.n;
    at = b.at;
    if (newer >= limit) break;
  }
  return { room: 0, freesInMs: Math.max(1, at + perMs - now + 1) };
}

/**
 * What the queue as a whole allows one claim of at most `limit` jobs (its pause, global
 * concurrency and rate window), and when a rate window or pause that holds it frees.
 */
export function queueRoom(
  flow: FlowLimits,
  state: FlowState,
  limit: number,
): { room: number; waits: number[] } {
  const { now } = state;
  const waits: number[] = [];
  let room = limit;
  const queuePause = state.pausedUntil.get(NO_KEY);
  if (queuePause !== undefined && queuePause > now) {
    room = 0;
    waits.push(queuePause - now);
  }
  if (flow.globalConcurrency !== undefined) {
    let running = 0;
    for (const n of state.running.values()) running += n;
    room = Math.min(room, flow.globalConcurrency - running);
  }
  if (flow.rate) {
    const w = windowRoom([...state.claims.values()].flat(), flow.rate.limit, flow.rate.perMs, now);
    room = Math.min(room, w.room);
    if (w.freesInMs !== null) waits.push(w.freesInMs);
  }
  return { room: Math.max(0, room), waits };
}

/** What one flow key allows (its pause, concurrency and rate window; unbounded for NO_KEY), and when it frees. */
export function keyRoom(
  flow: FlowLimits,
  state: FlowState,
  key: string,
): { room: number; wait: number | null } {
  if (key === NO_KEY) return { room: Number.POSITIVE_INFINITY, wait: null };
  const { now } = state;
  const paused = state.pausedUntil.get(key);
  if (paused !== undefined && paused > now) return { room: 0, wait: paused - now };
  let room = Number.POSITIVE_INFINITY;
  if (flow.keyConcurrency !== undefined) room = flow.keyConcurrency - (state.running.get(key) ?? 0);
  if (flow.keyRate && room > 0) {
    const w = windowRoom(state.claims.get(key), flow.keyRate.limit, flow.keyRate.perMs, now);
    room = Math.min(room, w.room);
    if (w.freesInMs !== null) return { room: 0, wait: w.freesInMs };
  }
  return { room: Math.max(0, room), wait: null };
}

/**
 * The plan of one claim of at most `limit` jobs. `due` holds each key's due jobs in claim
 * order (at least `limit` of each, when it has that many).
 */
export function planFlowClaim<J>(
  flow: FlowLimits,
  state: FlowState,
  due: Map<string, J[]>,
  limit: number,
): FlowPlan<J> {
  const dueCount = [...due.values()].reduce((n, jobs) => n + jobs.length, 0);
  const queue = queueRoom(flow, state, limit);
  const room = queue.room;
  let waits = queue.waits;
  // Each key's own room (jobs without a key have none of their own).
  const keyRooms = new Map<string, number>();
  for (const key of due.keys()) {
    const r = keyRoom(flow, state, key);
    keyRooms.set(key, r.room);
    if (r.wait !== null) waits.push(r.wait);
  }

  // Round-robin: one job per key per round, in rotation order, until the room is spent.
  const order = rotation(due.keys(), state.cursor);
  const next = new Map<string, number>(order.map((k) => [k, 0]));
  const picks: FlowPick<J>[] = [];
  let cursor = state.cursor;
  let progressed = true;
  while (picks.length < room && progressed) {
    progressed = false;
    for (const key of order) {
      if (picks.length >= room) break;
      const jobs = due.get(key) as J[];
      const i = next.get(key) as number;
      if (i >= jobs.length || (keyRooms.get(key) as number) <= 0) continue;
      picks.push({ job: jobs[i], key });
      next.set(key, i + 1);
      keyRooms.set(key, (keyRooms.get(key) as number) - 1);
      cursor = key;
      progressed = true;
    }
  }
  const held = Math.max(0, Math.min(dueCount, limit) - picks.length);
  if (held === 0) waits = [];
  return { picks, cursor, held, retryInMs: waits.length > 0 ? Math.min(...waits) : null };
}
