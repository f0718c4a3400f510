/**
 * The Store conformance suite's shared parts: the contract of src/store/types.ts and
 * docs/semantics.md is specified once, by topic, in the *.test.ts files of this folder, and each
 * runs against every store of the one registry (test/helpers/targets.ts) — like River's driver
 * test suite.
 *
 * Rules every test here keeps, so the suite runs unchanged on memory, SQLite and Postgres:
 * - each test opens its own store and cleans it up (`eachStore`'s `it`);
 * - "now" is the store's clock (`store.now()`), never the test's — SQL stores use the
 *   database clock — so time checks bracket an operation between two `store.now()` reads;
 * - time passes for real but briefly (leases of 30–80 ms, and any wait for a time-based
 *   transition polls with a bounded helper, `poll`), or — where a test needs time to pass, as
 *   for an expired lease, a stale worker or a retention cut-off — the store reads a test clock
 *   (`it.withClock`) the test moves, so nothing waits a fixed time;
 * - ids are opaque strings, payloads are JSON values (jsonb may reorder keys and
 *   reformat text, so searches look for words, not JSON syntax).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { JobRecord } from "../../src/job.js";
import type {
  ClaimedJob,
  FlowLimits,
  NewJob,
  Outcome,
  OutcomeKind,
  ScheduleInput,
  Store,
} from "../../src/store/types.js";
import { type TestClock, testClock } from "../helpers/clock.js";
import { type StoreTarget, targets } from "../helpers/targets.js";

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Calls `fn` until it returns something truthy; fails after `timeoutMs`. */
export async function poll<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 3000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
}

/** Timestamps from SQL stores may be rounded to the millisecond (or stored with µs and read back truncated). */
export const SLACK_MS = 5;

export function assertWithin(
  actual: Date | string | null | undefined,
  lo: number,
  hi: number,
  what: string,
): void {
  assert.ok(actual !== null && actual !== undefined, `${what} is set`);
  const t = typeof actual === "string" ? Date.parse(actual) : actual.getTime();
  assert.ok(!Number.isNaN(t), `${what} is a valid time: ${String(actual)}`);
  assert.ok(
    t >= lo - SLACK_MS && t <= hi + SLACK_MS,
    `${what} = ${new Date(t).toISOString()} not within [${new Date(lo).toISOString()}, ${new Date(hi).toISOString()}]`,
  );
}

export const nowMs = async (store: Store) => (await store.now()).getTime();

export function newJob(over: Partial<NewJob> = {}): NewJob {
  return { queue: "q", name: "task", payload: {}, priority: 0, maxAttempts: 3, ...over };
}

export async function insertOne(store: Store, over: Partial<NewJob> = {}): Promise<JobRecord> {
  const [r] = await store.insertJobs([newJob(over)]);
  assert.equal(r.created, true);
  return r.job;
}

export async function mustGet(store: Store, id: string): Promise<JobRecord> {
  const job = await store.getJob(id);
  assert.ok(job, `job ${id} exists`);
  return job;
}

export async function claimOne(
  store: Store,
  queue = "q",
  leaseMs = 60_000,
  workerId = "w1",
): Promise<ClaimedJob> {
  const claimed = await store.claimJobs({ queue, limit: 1, workerId, leaseMs });
  assert.equal(claimed.length, 1, `one job claimed from ${queue}`);
  return claimed[0];
}

export async function finish(
  store: Store,
  lease: { id: string; leaseToken: number },
  kind: OutcomeKind,
  extra: Partial<Outcome> = {},
): Promise<boolean> {
  const [applied] = await store.finishJobs([
    { id: lease.id, leaseToken: lease.leaseToken, kind, worker: "w1", ...extra },
  ]);
  return applied;
}

/** Waits until the rescuer has taken `id` back (its lease must be short), and returns what it reported. */
let flowWorkers = 0;
/** A flow-limited claim of queue `queue` by a new worker id each time. */
export function flowClaim(store: Store, flow: FlowLimits, limit = 100, queue = "q") {
  return store.claimFlowJobs({ queue, limit, workerId: `w${++flowWorkers}`, leaseMs: 60_000, flow });
}

/** Completes every job of `jobs` (held leases), in one finishJobs. */
export function completeAll(store: Store, jobs: ClaimedJob[]) {
  return store.finishJobs(
    jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, kind: "completed" as const, worker: "w" })),
  );
}

export async function rescue(store: Store, id: string) {
  return poll(`the rescuer to take job ${id} back`, async () =>
    (await store.rescueExpiredLeases()).find((r) => r.id === id),
  );
}

export const ids = (jobs: Array<{ id: string }>) => jobs.map((j) => j.id);

export function schedule(name: string, over: Partial<ScheduleInput> = {}): ScheduleInput {
  return {
    name,
    cron: "*/5 * * * *",
    timezone: "UTC",
    jobName: "report",
    queue: "reports",
    payload: { kind: "daily", tags: ["é", "ü"] },
    priority: 0,
    flowKey: null,
    missed: "latest",
    source: "code",
    nextRunAt: new Date(Date.UTC(2030, 0, 1, 0, 0, 0)),
    ...over,
  };
}

/** A test with a fresh store of its own. */
export interface It {
  (title: string, fn: (store: Store) => Promise<void>): void;
  /** The same, the store on a test clock of its own that stands still until the test moves it. */
  withClock(title: string, fn: (store: Store, clock: TestClock) => Promise<void>): void;
}

/**
 * Runs `body` once per store of the registry, inside a describe named after the store (so a test
 * reads "sqlite > claimJobs > …"); Postgres is skipped with a message when unreachable, required in CI.
 */
export function eachStore(body: (it: It, target: StoreTarget) => void, suffix = ""): void {
  for (const target of targets) {
    describe(`${target.name}${suffix}`, { skip: target.skip || false }, () => {
      const run = async (clock: TestClock | undefined, fn: (store: Store) => Promise<void>) => {
        const { store, cleanup } = await target.openStore({ clock });
        try {
          await fn(store);
        } finally {
          await cleanup();
        }
      };
      const it: It = Object.assign(
        (title: string, fn: (store: Store) => Promise<void>) => {
          test(title, () => run(undefined, fn));
        },
        {
          withClock(title: string, fn: (store: Store, clock: TestClock) => Promise<void>) {
            test(title, () => {
              const clock = testClock();
              return run(clock, (store) => fn(store, clock));
            });
          },
        },
      );
      body(it, target);
    });
  }
}
