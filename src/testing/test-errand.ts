/**
 * createTestErrand: errand in-process for an application's unit tests — the memory store on a
 * fake clock, seeded backoff jitter, silent logs — with the helpers a test needs: drain and
 * advance to run jobs, and expectEnqueued to check what the code under test enqueued.
 */
import type { Duration } from "../duration.js";
import { parseDuration } from "../duration.js";
import { Errand } from "../errand.js";
import type { AnyJobDefinition, JobRecord } from "../job.js";
import { knownFields, onlyKnownFields } from "../known-fields.js";
import { checkLogger, type Logger, silentLogger } from "../logger.js";
import { FakeClock, seededRandom, type TimeInput } from "./clock.js";
import { advanceBy, type DrainResult, drainNow, drainUntilIdle, type Runner } from "./drain.js";
import { type CountOption, expectEnqueued, expectNotEnqueued, findEnqueued } from "./expect.js";
import type { EnqueuedMatch, JobRef } from "./match.js";
import { RecordingMemoryStore } from "./recording-store.js";

export interface TestErrandOptions {
  /** The job definitions, as for openErrand (jobs enqueued by definition are added on the way). */
  jobs?: readonly AnyJobDefinition[];
  /** Where the fake clock starts (a Date, ISO text or epoch ms). Default 2026-01-01T00:00:00Z. */
  now?: TimeInput;
  /** Seed of the backoff jitter: the same seed, the same retry times. Default 1. */
  seed?: number;
  /** false: no jitter at all, every retry waits exactly its backoff (base × 2^(attempt−1)). */
  jitter?: boolean;
  /** Real time a handler may run inside drain or advance before they fail the test. Default 5s. */
  stuckAfter?: Duration;
  /** Jobs of one queue run at once by drain (default 1: one after another, in claim order). */
  concurrency?: number;
  /** Jobs one drain or advance may run before it is taken for an endless loop. Default 10 000. */
  maxJobs?: number;
  /** Default: silent. */
  logger?: Logger;
  /** As for openErrand. */
  payloadLimit?: number;
}

export interface DrainOptions {
  /**
   * Also wait for what is scheduled later: move the clock to each delayed job, retry backoff,
   * snooze and lease expiry in turn, until no job is pending. (Future schedule slots are not
   * waited for: use advance.)
   */
  untilIdle?: boolean;
}

const TEST_ERRAND_FIELDS = knownFields(
  "jobs",
  "now",
  "seed",
  "jitter",
  "stuckAfter",
  "concurrency",
  "maxJobs",
  "logger",
  "payloadLimit",
);
const DRAIN_FIELDS = knownFields("untilIdle");

export class TestErrand implements Runner {
  /** The errand to hand to the code under test: enqueue, schedule, listJobs, getJob, … */
  readonly errand: Errand;
  /** errand's clock in this test: run times, backoff, leases and schedule slots follow it. */
  readonly clock: FakeClock;
  readonly stuckAfterMs: number;
  readonly maxJobs: number;
  readonly concurrency: number;
  private readonly store: RecordingMemoryStore;

  constructor(options: TestErrandOptions = {}) {
    onlyKnownFields(options, TEST_ERRAND_FIELDS, "createTestErrand options");
    this.clock = new FakeClock(options.now);
    this.store = new RecordingMemoryStore({ clock: this.clock.nowMs });
    this.stuckAfterMs = parseDuration(options.stuckAfter ?? "5s", "stuckAfter");
    this.maxJobs = positiveInteger(options.maxJobs ?? 10_000, "maxJobs");
    this.concurrency = positiveInteger(options.concurrency ?? 1, "concurrency");
    const random = options.jitter === false ? () => 0.5 : seededRandom(options.seed ?? 1);
    this.errand = new Errand(this.store, {
      jobs: options.jobs,
      logger: checkLogger(options.logger) ?? silentLogger(),
      payloadLimit: options.payloadLimit,
      ownsStore: true,
      random,
    });
  }

  /**
   * Runs every job due now, and the jobs they enqueue, until none is due; fires due schedules
   * first. A failed attempt is retried only once its backoff is due: move the clock, or pass
   * `untilIdle`. Failures do not throw (they are the jobs' outcomes): see `errors` in the result.
   */
  readonly drain = (options: DrainOptions = {}): Promise<DrainResult> => {
    try {
      onlyKnownFields(options, DRAIN_FIELDS, "drain options");
    } catch (err) {
      return Promise.reject(err);
    }
    return options.untilIdle ? drainUntilIdle(this) : drainNow(this);
  };

  /**
   * Lets `duration` pass as if a worker ran all along: the clock stops at each moment something
   * is due — a delayed job, a retry, a schedule slot, an expired lease — and runs it, in order.
   */
  readonly advance = (duration: Duration): Promise<DrainResult> =>
    advanceBy(this, parseDuration(duration, "advance"));

  /** The jobs enqueued since the start (or clearEnqueued) as they were enqueued, filtered. */
  readonly enqueued = <P>(job?: JobRef<P>, match?: EnqueuedMatch<P>): JobRecord<P>[] =>
    job === undefined
      ? (this.store.created.slice() as JobRecord<P>[])
      : findEnqueued(this.store.created, job, match);

  /**
   * Throws an AssertionError unless a job of `job` matching `match` was enqueued (with `count`:
   * exactly that many). Counts every job created since the start or clearEnqueued — also those
   * that have run since. Answers the matching jobs as enqueued.
   */
  readonly expectEnqueued = <P>(
    job: JobRef<P>,
    match?: EnqueuedMatch<P>,
    options?: CountOption,
  ): JobRecord<P>[] => expectEnqueued(this.store.created, job, match, options);

  /** Throws an AssertionError if a job of `job` matching `match` was enqueued. */
  readonly expectNotEnqueued = <P>(job: JobRef<P>, match?: EnqueuedMatch<P>): void =>
    expectNotEnqueued(this.store.created, job, match);

  /** Forgets what was enqueued so far (the jobs stay in the store). */
  readonly clearEnqueued = (): void => {
    this.store.created.length = 0;
  };

  /** The job as it is now (state, attempts, result), or an error if there is none. */
  readonly job = async (id: string): Promise<JobRecord> => {
    const job = await this.errand.getJob(id);
    if (!job) throw new Error(`errand/testing: there is no job ${JSON.stringify(id)}`);
    return job;
  };

  readonly close = (): Promise<void> => this.errand.close();
}

function positiveInteger(value: number, what: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new TypeError(`${what} must be a positive integer; got ${value}`);
  return value;
}

/** An errand for unit tests: in memory, on a fake clock, jitter seeded, logs silent. */
export async function createTestErrand(options: TestErrandOptions = {}): Promise<TestErrand> {
  return new TestErrand(options);
}
