/**
 * Model-based test of the Store contract: fast-check generates random sequences of
 * operations (insert, claim, extend, finish with every outcome kind, let a lease expire,
 * rescue, cancel, retry, discard, prune, progress) and runs each against a real store
 * of the one registry (test/helpers/targets.ts) AND against the small reference model below,
 * written from docs/semantics.md (it does not reuse src/store/common.ts). After every step the observable state must
 * agree: each job's state, attempt, history length, cancel flag, due time; what claim
 * returns, in which order; which writes a lease token still fences in.
 * Any divergence fails with fast-check's shrunk counterexample.
 *
 * Time is a test clock each store reads instead of its database's (test/helpers/clock.ts), and
 * it moves only when a command moves it: a "short" lease is 20 ms and the command that takes one
 * moves the clock 35 ms, so it has expired when the command ends, while "long" leases (60 s)
 * never expire during a run. Due times are either now or an hour ahead, so which jobs are
 * claimable never depends on timing. Each step ends by moving the clock 2 ms so that two steps
 * never share a millisecond: run_at values read back from a store (truncated to ms) then order
 * jobs exactly as the store's own clock did.
 *
 * Runs: ERRAND_MODEL_RUNS (default 25) of up to 30 commands per store, after a seed insert.
 * Consecutive passing runs share one store, emptied in between (see `drain`).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { JobRecord, JobState } from "../../src/job.js";
import type { Lease, Outcome, OutcomeKind, Store } from "../../src/store/types.js";
import { type TestClock, testClock } from "../helpers/clock.js";
import { type OpenedStore, type StoreTarget, targets } from "../helpers/targets.js";

const HOUR = 3_600_000;
const LONG_LEASE = 60_000;
const SHORT_LEASE = 20;
const SHORT_WAIT = 35;
const STEP_GAP = 2;
const SLACK_MS = 5;
type Queue = "a" | "b";

// ---------------------------------------------------------------- the reference model

interface MJob {
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

interface Model {
  jobs: MJob[];
  leases: MLease[];
}

interface Real {
  store: Store;
  /** The store's test clock: time passes only when a command moves it. */
  clock: TestClock;
  /** Store id of each model job, by seq. */
  ids: string[];
  /** Store leases, parallel to model.leases. */
  leases: Lease[];
}

const held = (m: Model, lease: MLease): MJob | undefined => {
  const job = m.jobs[lease.seq];
  return !job.deleted && job.state === "running" && job.gen === lease.gen ? job : undefined;
};

/** docs/semantics.md, Order: priority desc, then run_at, then insertion order. */
function expectedClaim(m: Model, queue: Queue, limit: number): MJob[] {
  return m.jobs
    .filter((j) => !j.deleted && j.queue === queue && j.state === "pending" && j.due)
    .sort((x, y) => y.priority - x.priority || x.runAt - y.runAt || x.seq - y.seq)
    .slice(0, limit);
}

/** How an outcome moves a job (docs/semantics.md, States and Attempts; types.ts OutcomeKind). */
function applyOutcome(job: MJob, kind: OutcomeKind, delayed: boolean, t0: number, t1: number): void {
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

abstract class Cmd implements fc.AsyncCommand<Model, Real> {
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
const pick = <T>(list: readonly T[], index: number): T => list[fromEnd(list.length, index)];

/**
 * Which lease a command uses: `live` picks among the leases still held, so most finishes and
 * extends act on running jobs; `stale` picks a lease whose job was taken over (rescued and
 * claimed again) — the case fencing exists for. With none of that kind, any lease ever
 * handed out (counted from the newest).
 */
interface LeaseRef {
  live: boolean;
  index: number;
}

function resolveLease(m: Model, ref: LeaseRef): number {
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

const leaseString = (ref: LeaseRef) => `${ref.live ? "live" : "stale"} lease ${ref.index}`;

interface InsertSpec {
  queue: Queue;
  priority: number;
  maxAttempts: number;
  key: string | null;
  delayed: boolean;
}

/** One insertJobs call of 1–3 jobs: results in input order, a key repeated in the batch creates one job. */
class InsertCmd extends Cmd {
  constructor(readonly specs: InsertSpec[]) {
    super();
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const t0 = (await r.store.now()).getTime();
    const results = await r.store.insertJobs(
      this.specs.map((spec, i) => ({
        queue: spec.queue,
        name: "model",
        payload: { n: m.jobs.length + i, text: "módel ✓" },
        priority: spec.priority,
        maxAttempts: spec.maxAttempts,
        key: spec.key,
        delayMs: spec.delayed ? HOUR : 0,
      })),
    );
    const t1 = (await r.store.now()).getTime();
    assert.equal(results.length, this.specs.length, `${this}: one result per job`);
    for (const [i, spec] of this.specs.entries()) {
      const res = results[i];
      const existing = m.jobs.find(
        (j) => !j.deleted && j.queue === spec.queue && spec.key !== null && j.key === spec.key,
      );
      if (existing) {
        assert.equal(res.created, false, `${this} [${i}]: a duplicate key returns the existing job`);
        assert.equal(res.job.id, r.ids[existing.seq], `${this} [${i}]: the existing job (#${existing.seq})`);
        continue;
      }
      assert.equal(res.created, true, `${this} [${i}]: created`);
      assert.ok(!r.ids.includes(res.job.id), `${this} [${i}]: a new id, never reused (${res.job.id})`);
      const d = spec.delayed ? HOUR : 0;
      r.ids.push(res.job.id);
      m.jobs.push({
        seq: m.jobs.length,
        queue: spec.queue,
        priority: spec.priority,
        maxAttempts: spec.maxAttempts,
        key: spec.key,
        state: "pending",
        attempt: 0,
        history: 0,
        due: !spec.delayed,
        runAt: 0,
        runAtWindow: [t0 + d, t1 + d],
        gen: 0,
        cancelRequested: false,
        expired: false,
        deleted: false,
      });
    }
  }
  toString(): string {
    const one = (s: InsertSpec) =>
      `{${s.queue} prio ${s.priority} max ${s.maxAttempts}${s.key ? ` key ${s.key}` : ""}${s.delayed ? " +1h" : ""}}`;
    return `insert(${this.specs.map(one).join(", ")})`;
  }
}

class ClaimCmd extends Cmd {
  constructor(
    readonly queue: Queue,
    readonly limit: number,
    readonly short: boolean,
  ) {
    super();
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const expected = expectedClaim(m, this.queue, this.limit);
    const claimed = await r.store.claimJobs({
      queue: this.queue,
      limit: this.limit,
      workerId: "model-worker",
      leaseMs: this.short ? SHORT_LEASE : LONG_LEASE,
    });
    assert.deepEqual(
      claimed.map((c) => ({
        id: c.id,
        attempt: c.attempt,
        maxAttempts: c.maxAttempts,
        priority: c.priority,
      })),
      expected.map((j) => ({
        id: r.ids[j.seq],
        attempt: j.attempt + 1,
        maxAttempts: j.maxAttempts,
        priority: j.priority,
      })),
      `${this}: claimed jobs, in order (model seqs ${expected.map((j) => j.seq).join(",") || "none"})`,
    );
    for (const [i, job] of expected.entries()) {
      job.state = "running";
      job.attempt += 1;
      job.gen += 1;
      job.expired = false;
      job.cancelRequested = false;
      m.leases.push({ seq: job.seq, gen: job.gen });
      r.leases.push({ id: claimed[i].id, leaseToken: claimed[i].leaseToken });
    }
    if (this.short && expected.length > 0) {
      r.clock.advance(SHORT_WAIT);
      for (const job of expected) job.expired = true;
    }
  }
  toString(): string {
    return `claim(${this.queue}, limit ${this.limit}, ${this.short ? "short lease" : "long lease"})`;
  }
}

class ExtendCmd extends Cmd {
  constructor(
    readonly lease: LeaseRef,
    readonly short: boolean,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.leases.length > 0;
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const i = resolveLease(m, this.lease);
    const job = held(m, m.leases[i]);
    const [status] = await r.store.extendLeases([r.leases[i]], this.short ? SHORT_LEASE : LONG_LEASE);
    assert.equal(status.id, r.leases[i].id);
    assert.equal(status.held, job !== undefined, `${this}: held (lease ${i} of job #${m.leases[i].seq})`);
    if (!job) return;
    assert.equal(status.cancelRequested, job.cancelRequested, `${this}: cancelRequested`);
    job.expired = false;
    if (this.short) {
      r.clock.advance(SHORT_WAIT);
      job.expired = true;
    }
  }
  toString(): string {
    return `extend(${leaseString(this.lease)}, ${this.short ? "short → expires" : "long"})`;
  }
}

class FinishCmd extends Cmd {
  constructor(
    readonly lease: LeaseRef,
    readonly kind: OutcomeKind,
    readonly delayed: boolean,
    readonly twice: boolean,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.leases.length > 0;
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const i = resolveLease(m, this.lease);
    const job = held(m, m.leases[i]);
    const outcome: Outcome = {
      ...r.leases[i],
      kind: this.kind,
      worker: "model-worker",
      delayMs: this.delayed ? HOUR : 0,
      ...(this.kind === "completed" ? { result: { ok: i } } : {}),
      ...(this.kind === "retry" || this.kind === "failed"
        ? { error: { message: `boom ${i}`, kind: this.kind === "retry" ? "retryable" : "permanent" } }
        : {}),
    };
    const batch: Outcome[] = this.twice ? [outcome, { ...outcome, kind: "completed" }] : [outcome];
    const t0 = (await r.store.now()).getTime();
    const applied = await r.store.finishJobs(batch);
    const t1 = (await r.store.now()).getTime();
    const expected = this.twice ? [job !== undefined, false] : [job !== undefined];
    assert.deepEqual(applied, expected, `${this}: applied (lease ${i} of job #${m.leases[i].seq})`);
    if (job) applyOutcome(job, this.kind, this.delayed, t0, t1);
  }
  toString(): string {
    return `finish(${leaseString(this.lease)}, ${this.kind}${this.delayed ? ", +1h" : ""}${this.twice ? ", twice" : ""})`;
  }
}

class ProgressCmd extends Cmd {
  constructor(readonly lease: LeaseRef) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.leases.length > 0;
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const i = resolveLease(m, this.lease);
    const ok = await r.store.setProgress(r.leases[i], { fraction: 0.5, message: "half" });
    assert.equal(ok, held(m, m.leases[i]) !== undefined, `${this}: applied`);
  }
  toString(): string {
    return `setProgress(${leaseString(this.lease)})`;
  }
}

class RescueCmd extends Cmd {
  protected async step(m: Model, r: Real): Promise<void> {
    const t0 = (await r.store.now()).getTime();
    const rescued = await r.store.rescueExpiredLeases();
    const t1 = (await r.store.now()).getTime();
    const expected: Array<{ id: string; state: string; attempt: number }> = [];
    for (const job of m.jobs) {
      if (job.deleted || job.state !== "running" || !job.expired) continue;
      job.history += 1;
      job.expired = false;
      job.state = job.cancelRequested ? "cancelled" : job.attempt >= job.maxAttempts ? "failed" : "pending";
      job.cancelRequested = false;
      if (job.state === "pending") {
        job.due = true;
        job.runAtWindow = [t0, t1];
      }
      expected.push({ id: r.ids[job.seq], state: job.state, attempt: job.attempt });
    }
    const byId = (x: { id: string }, y: { id: string }) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0);
    assert.deepEqual(
      rescued.map((x) => ({ id: x.id, state: x.state, attempt: x.attempt })).sort(byId),
      expected.sort(byId),
      `${this}: rescued jobs`,
    );
  }
  toString(): string {
    return "rescue()";
  }
}

/** Cancels a running job when `running` and there is one (a cancel request), else any job. */
class CancelCmd extends Cmd {
  constructor(
    readonly running: boolean,
    readonly job: number,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.jobs.length > 0;
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const running = m.jobs.filter((j) => !j.deleted && j.state === "running");
    const job = this.running && running.length > 0 ? pick(running, this.job) : pick(m.jobs, this.job);
    const rec = await r.store.cancelJob(r.ids[job.seq]);
    if (job.deleted) {
      assert.equal(rec, null, `${this}: a deleted job`);
      return;
    }
    if (job.state === "pending") job.state = "cancelled";
    else if (job.state === "running") job.cancelRequested = true;
    assert.ok(rec, `${this}: the job`);
    assert.deepEqual(
      { state: rec.state, cancelRequested: rec.cancelRequested },
      { state: job.state, cancelRequested: job.cancelRequested },
      `${this}: job #${job.seq} after cancel`,
    );
  }
  toString(): string {
    return `cancel(${this.running ? "running" : "any"} job ${this.job})`;
  }
}

type Selection = { queue: Queue } | { jobs: number[] };

function select(
  m: Model,
  r: Real,
  sel: Selection,
  states: JobState[],
): { filter: { ids?: string[]; queue?: string }; hit: MJob[] } {
  if ("queue" in sel) {
    return {
      filter: { queue: sel.queue },
      hit: m.jobs.filter((j) => !j.deleted && j.queue === sel.queue && states.includes(j.state)),
    };
  }
  const chosen = [...new Set(sel.jobs.map((i) => pick(m.jobs, i)))];
  return {
    filter: { ids: chosen.map((j) => r.ids[j.seq]) },
    hit: chosen.filter((j) => !j.deleted && states.includes(j.state)),
  };
}

const selString = (sel: Selection) => ("queue" in sel ? `queue ${sel.queue}` : `jobs ${sel.jobs.join(",")}`);

class RetryJobsCmd extends Cmd {
  constructor(readonly sel: Selection) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.jobs.length > 0;
  }
  protected async step(m: Model, r: Real): Promise<void> {
    // By ids: failed or cancelled; a whole queue: its dead-letter queue, failed only.
    const states: JobState[] = "queue" in this.sel ? ["failed"] : ["failed", "cancelled"];
    const { filter, hit } = select(m, r, this.sel, states);
    const t0 = (await r.store.now()).getTime();
    const n = await r.store.retryJobs(filter);
    const t1 = (await r.store.now()).getTime();
    assert.equal(n, hit.length, `${this}: retried (model seqs ${hit.map((j) => j.seq).join(",") || "none"})`);
    for (const job of hit) {
      job.state = "pending";
      job.attempt = 0;
      job.due = true;
      job.runAtWindow = [t0, t1];
    }
  }
  toString(): string {
    return `retryJobs(${selString(this.sel)})`;
  }
}

class DiscardCmd extends Cmd {
  constructor(readonly sel: Selection) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.jobs.length > 0;
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const { filter, hit } = select(m, r, this.sel, ["failed"]);
    const n = await r.store.discardJobs(filter);
    assert.equal(
      n,
      hit.length,
      `${this}: discarded (model seqs ${hit.map((j) => j.seq).join(",") || "none"})`,
    );
    for (const job of hit) job.deleted = true;
  }
  toString(): string {
    return `discardJobs(${selString(this.sel)})`;
  }
}

class PruneCmd extends Cmd {
  constructor(readonly failedToo: boolean) {
    super();
  }
  protected async step(m: Model, r: Real): Promise<void> {
    r.clock.advance(5); // everything finished so far is now older than 1 ms
    const n = await r.store.pruneFinished({ completedAgeMs: 1, failedAgeMs: this.failedToo ? 1 : HOUR });
    const gone = m.jobs.filter(
      (j) =>
        !j.deleted &&
        (j.state === "completed" || j.state === "cancelled" || (this.failedToo && j.state === "failed")),
    );
    assert.equal(
      n,
      gone.length,
      `${this}: pruned (model seqs ${gone.map((j) => j.seq).join(",") || "none"})`,
    );
    for (const job of gone) job.deleted = true;
  }
  toString(): string {
    return `prune(${this.failedToo ? "completed, cancelled and failed" : "completed and cancelled"})`;
  }
}

// ---------------------------------------------------------------- generators

/** Mostly queue "a", so claims find work; "b" checks that queues stay apart. */
const queue: fc.Arbitrary<Queue> = fc.oneof(
  { arbitrary: fc.constant("a" as const), weight: 3 },
  { arbitrary: fc.constant("b" as const), weight: 1 },
);
const selection: fc.Arbitrary<Selection> = fc.oneof(
  queue.map((q) => ({ queue: q })),
  fc.array(fc.nat(40), { minLength: 1, maxLength: 3 }).map((jobs) => ({ jobs })),
);

const leaseRef: fc.Arbitrary<LeaseRef> = fc.record({
  live: fc.oneof({ arbitrary: fc.constant(true), weight: 2 }, { arbitrary: fc.constant(false), weight: 1 }),
  index: fc.nat(40),
});

const insertSpecs = (minLength: number) =>
  fc.array(
    fc.record({
      queue,
      priority: fc.integer({ min: 0, max: 2 }),
      maxAttempts: fc.integer({ min: 1, max: 3 }),
      key: fc.oneof(
        { arbitrary: fc.constant(null), weight: 3 },
        { arbitrary: fc.constantFrom("k0", "k1", "k2"), weight: 1 },
      ),
      delayed: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
    }),
    { minLength, maxLength: 3 },
  );
const insertCmd = insertSpecs(1).map((specs) => new InsertCmd(specs));
/** Every run starts with a few jobs, so that its first commands have work to act on. */
const seedCmd = insertSpecs(2).map((specs) => new InsertCmd(specs));
const claimCmd = fc
  .tuple(queue, fc.integer({ min: 1, max: 3 }), fc.boolean())
  .map(([q, limit, short]) => new ClaimCmd(q, limit, short));
const finishCmd = fc
  .tuple(
    leaseRef,
    fc.constantFrom<OutcomeKind>("completed", "retry", "failed", "snoozed", "released", "cancelled"),
    fc.boolean(),
    fc.boolean(),
  )
  .map(([lease, kind, delayed, twice]) => new FinishCmd(lease, kind, delayed, twice));

/** Weights: work has to be inserted and claimed before the other commands have anything to act on. */
const commands: Array<fc.Arbitrary<Cmd>> = [
  fc.oneof(
    { arbitrary: insertCmd, weight: 3 },
    { arbitrary: claimCmd, weight: 4 },
    { arbitrary: finishCmd, weight: 6 },
    {
      arbitrary: fc.tuple(leaseRef, fc.boolean()).map(([lease, short]) => new ExtendCmd(lease, short)),
      weight: 2,
    },
    { arbitrary: leaseRef.map((lease) => new ProgressCmd(lease)), weight: 1 },
    { arbitrary: fc.constant(new RescueCmd()), weight: 3 },
    {
      arbitrary: fc.tuple(fc.boolean(), fc.nat(40)).map(([running, job]) => new CancelCmd(running, job)),
      weight: 2,
    },
    { arbitrary: selection.map((sel) => new RetryJobsCmd(sel)), weight: 2 },
    { arbitrary: selection.map((sel) => new DiscardCmd(sel)), weight: 1 },
    { arbitrary: fc.boolean().map((failedToo) => new PruneCmd(failedToo)), weight: 2 },
  ),
];

// ---------------------------------------------------------------- the property, per store

const NUM_RUNS = Number(process.env.ERRAND_MODEL_RUNS ?? 25);

/**
 * Empties the store after a passing run, through the Store API (cancel what is pending or
 * running, then prune), so the next run can reuse it: opening a store costs a migration
 * (about a second for a fresh Postgres schema), which would dominate 25 short runs.
 * Returns false if anything is left, and the store is then replaced by a fresh one.
 */
async function drain(m: Model, r: Real): Promise<boolean> {
  for (const [i, lease] of m.leases.entries()) {
    if (held(m, lease)) await r.store.finishJobs([{ ...r.leases[i], kind: "cancelled", worker: "drain" }]);
  }
  for (const job of m.jobs)
    if (!job.deleted && job.state === "pending") await r.store.cancelJob(r.ids[job.seq]);
  r.clock.advance(5);
  await r.store.pruneFinished({ completedAgeMs: 1, failedAgeMs: 1 });
  return (await r.store.listJobs({ limit: 1 })).jobs.length === 0;
}

/** A fresh store on a test clock of its own. */
async function openClocked(target: StoreTarget): Promise<OpenedStore & { clock: TestClock }> {
  const clock = testClock();
  return { ...(await target.openStore({ clock })), clock };
}

function modelSuite(target: StoreTarget): void {
  test("agrees with the reference model on random operation sequences", async () => {
    // One store for consecutive runs while they pass and drain; a failed run gets a fresh one.
    let current: (OpenedStore & { clock: TestClock }) | null = null;
    try {
      await fc.assert(
        fc.asyncProperty(
          seedCmd,
          fc.commands(commands, { maxCommands: 30, size: "max" }),
          async (seed, cmds) => {
            const opened = current ?? (await openClocked(target));
            current = null;
            const model: Model = { jobs: [], leases: [] };
            const real: Real = { store: opened.store, clock: opened.clock, ids: [], leases: [] };
            let reusable = false;
            try {
              await seed.run(model, real);
              await fc.asyncModelRun(() => ({ model, real }), cmds);
              reusable = await drain(model, real);
            } finally {
              if (reusable) current = opened;
              else await opened.cleanup();
            }
          },
        ),
        {
          numRuns: NUM_RUNS,
          includeErrorInReport: true,
          // Replay a reported failure: ERRAND_MODEL_SEED=<seed from the report>.
          seed: process.env.ERRAND_MODEL_SEED ? Number(process.env.ERRAND_MODEL_SEED) : undefined,
        },
      );
    } finally {
      const left = current as OpenedStore | null;
      if (left) await left.cleanup();
    }
  });
}

for (const target of targets) {
  describe(`${target.name} (model)`, { skip: target.skip || false }, () => modelSuite(target));
}
