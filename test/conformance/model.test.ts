/**
 * Model-based test of the Store contract: fast-check generates random sequences of
 * operations (insert, claim, extend, finish with every outcome kind, let a lease expire,
 * rescue, cancel, retry, discard, prune, progress) and runs each against a real store
 * of the one registry (test/helpers/targets.ts) AND against the small reference model of
 * model/reference.ts, written from docs/semantics.md (it does not reuse src/store/common.ts); the
 * commands are in model/worker-commands.ts and model/admin-commands.ts. After every step the
 * observable state must agree: each job's state, attempt, history length, cancel flag, due time; what claim
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
import { describe, test } from "node:test";
import fc from "fast-check";
import type { OutcomeKind } from "../../src/store/types.js";
import { type TestClock, testClock } from "../helpers/clock.js";
import { type OpenedStore, type StoreTarget, targets } from "../helpers/targets.js";
import { CancelCmd, DiscardCmd, PruneCmd, RetryJobsCmd, type Selection } from "./model/admin-commands.js";
import { type Cmd, held, type LeaseRef, type Model, type Queue, type Real } from "./model/reference.js";
import {
  ClaimCmd,
  ExtendCmd,
  FinishCmd,
  InsertCmd,
  ProgressCmd,
  RescueCmd,
} from "./model/worker-commands.js";

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
