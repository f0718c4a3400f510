/**
 * The reference model of test/conformance/model.test.ts, written from docs/semantics.md (it does
 * not reuse src/store/common.ts): the jobs and leases a store should hold, how an outcome moves a
 * job, the comparison with the real store after every step, and the base of every command.
 */
import assert from "node:assert/strict";
import type fc from "fast-check";
import type { JobRecord, JobState } from "../../../src/job.js";
import type { Lease, OutcomeKind, Store } from "../../../src/store/types.js";
import type { TestClock } from "../../helpers/clock.js";
export const HOUR = 3_600_000;
export const LONG_LEASE = 60_000;
export const SHORT_LEASE = 20;
export const SHORT_WAIT = 35;
const STEP_GAP = 2;
const SLACK_MS = 5;
export type Queue = "a" | "b";

// ---------------------------------------------------------------- the reference model

export interface MJob {
  seq: number;
  queue: Queue;
  priority: number;
  maxAttempts: number;
  key: string | null;
  state: JobState;
  /** Executions charged. */
  attempt: number;
  /** History entries. */
  history: number;
  /** Claimable once pending (false: due an hour from now). */
  due: boolean;
  /** run_at as read back from the store after the step that set it (orders claims). */
  runAt: number;
  /** Where the store's run_at must lie, set by the step that changed it; checked, then cleared. */
  runAtWindow: [number, number] | null;
  /** Claim generation: a lease is held iff the job runs and the lease is of the current generation. */
  gen: number;
  cancelRequested: boolean;
  /** The lease of a running job has run out (not yet rescued). */
  expired: boolean;
  deleted: boolean;
}

interface MLease {
  seq: number;
  gen: number;
}

export interface Model {
  jobs: MJob[];
  leases: MLease[];
}

export interface Real {
  store: Store;
  /** The store's test clock: time passes only when a command moves it. */
  clock: TestClock;
  /** Store id of each model job, by seq. */
  ids: string[];
  /** Store leases, parallel to model.leases. */
  leases: Lease[];
}

export const held = (m: Model, lease: MLease): MJob | undefined => {
  const job = m.jobs[lease.seq];
  return !job.deleted && job.state === "running" && job.gen === lease.gen ? job : undefined;
};

/** docs/semantics.md, Order: priority desc, then run_at, then insertion order. */
export function expectedClaim(m: Model, queue: Queue, limit: number): MJob[] {
  return m.jobs
    .filter((j) => !j.deleted && j.queue === queue && j.state === "pending" && j.due)
    .sort((x, y) => y.priority - x.priority || x.runAt - y.runAt || x.seq - y.seq)
    .slice(0, limit);
}

/** How an outcome moves a job (docs/semantics.md, States and Attempts; types.ts OutcomeKind). */
export function applyOutcome(job: MJob, kind: OutcomeKind, delayed: boolean, t0: number, t1: number): void {
  job.history += 1;
  job.expired = false;
  const cancel = job.cancelRequested && kind !== "completed";
  job.cancelRequested = false;
  if (cancel) {
    job.state = "cancelled";
    return;
  }
  switch (kind) {
    case "completed":
    case "failed":
    case "cancelled":
      job.state = kind;
      return;
    case "retry":
    case "snoozed": {
      job.state = "pending";
      if (kind === "snoozed") job.attempt -= 1;
      const d = delayed ? HOUR : 0;
      job.due = !delayed;
      job.runAtWindow = [t0 + d, t1 + d];
      return;
    }
    case "released":
      job.state = "pending";
      job.attempt -= 1;
      job.due = true;
      job.runAtWindow = [t0, t1];
      return;
  }
}

// ---------------------------------------------------------------- comparison

async function compare(m: Model, r: Real, step: string): Promise<void> {
  const page = await r.store.listJobs({ limit: 1000 });
  const byId = new Map<string, JobRecord>(page.jobs.map((j) => [j.id, j]));
  const live = m.jobs.filter((j) => !j.deleted);
  assert.equal(page.jobs.length, live.length, `${step}: number of jobs`);
  for (const job of m.jobs) {
    const id = r.ids[job.seq];
    const rec = byId.get(id);
    if (job.deleted) {
      assert.equal(rec, undefined, `${step}: job #${job.seq} (${id}) was deleted`);
      continue;
    }
    assert.ok(rec, `${step}: job #${job.seq} (${id}) exists`);
    const what = `${step}: job #${job.seq} (${id})`;
    assert.deepEqual(
      {
        state: rec.state,
        attempt: rec.attempt,
        history: rec.attempts.length,
        cancelRequested: rec.cancelRequested,
      },
      { state: job.state, attempt: job.attempt, history: job.history, cancelRequested: job.cancelRequested },
      what,
    );
    const runAt = rec.runAt.getTime();
    if (job.runAtWindow) {
      const [lo, hi] = job.runAtWindow;
      assert.ok(
        runAt >= lo - SLACK_MS && runAt <= hi + SLACK_MS,
        `${what}: runAt ${rec.runAt.toISOString()} not within [${new Date(lo).toISOString()}, ${new Date(hi).toISOString()}]`,
      );
      job.runAtWindow = null;
    }
    job.runAt = runAt;
  }
}

// ---------------------------------------------------------------- commands

export abstract class Cmd implements fc.AsyncCommand<Model, Real> {
  check(_m: Readonly<Model>): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    await this.step(m, r);
    r.clock.advance(STEP_GAP);
    await compare(m, r, this.toString());
  }
  protected abstract step(m: Model, r: Real): Promise<void>;
  abstract toString(): string;
}

/** Index counted from the newest entry: small (and shrunk) indices pick recent jobs and leases. */
const fromEnd = (length: number, index: number): number => length - 1 - (index % length);
export const pick = <T>(list: readonly T[], index: number): T => list[fromEnd(list.length, index)];

/**
 * Which lease a command uses: `live` picks among the leases still held, so most finishes and
 * extends act on running jobs; `stale` picks a lease whose job was taken over (rescued and
 * claimed again) — the case fencing exists for. With none of that kind, any lease ever
 * handed out (counted from the newest).
 */
export interface LeaseRef {
  live: boolean;
  index: number;
}

export function resolveLease(m: Model, ref: LeaseRef): number {
  const indices = (keep: (lease: MLease) => boolean) =>
    m.leases.flatMap((lease, i) => (keep(lease) ? [i] : []));
  const live = indices((lease) => held(m, lease) !== undefined);
  if (ref.live && live.length > 0) return pick(live, ref.index);
  const takenOver = indices((lease) => {
    const job = m.jobs[lease.seq];
    return !job.deleted && job.state === "running" && job.gen !== lease.gen;
  });
  if (!ref.live && takenOver.length > 0) return pick(takenOver, ref.index);
  return fromEnd(m.leases.length, ref.index);
}

export const leaseString = (ref: LeaseRef) => `${ref.live ? "live" : "stale"} lease ${ref.index}`;
