import type { Logger } from "../logger.js";
import type { ClaimedJob, FlowLimits, Store } from "../store/types.js";
import type { Claims } from "./budget.js";
import type { ExecutorDeps } from "./executor.js";
import { StartWindow } from "./pause-window.js";

/** What a producer needs of its worker (Worker is one); tests can stand in a fake. */
export interface ProducerHost {
  readonly store: Store;
  readonly log: Logger;
  /** The worker is stopping: claim nothing more, start no buffered job. */
  readonly isStopping: boolean;
  /** Outcomes run but not yet written (back-pressure), and a promise of their writing. */
  readonly outcomeBacklog: number;
  outcomesWritten(): Promise<void>;
  readonly claimOptions: {
    workerId: string;
    leaseMs: number;
    batchSize: number;
    pollMs: number;
    readAheadMs: number;
  };
  /** The claim budget: a bounded run's (takes up to `wanted`, gives back what was not used), else none. */
  readonly claims: Claims;
  /**
   * Runs one claimed job in a slot of `producer`, which has counted it in: calls
   * producer.release() when the slot is free and producer.jobEnded() when the job is over.
   */
  run(job: ClaimedJob, producer: Producer): void;
  /** Test signal: the producer found fewer jobs than it asked for and waits. */
  idle(queue: string): void;
  /** Flow control held `held` due jobs back from a claim (metrics, the `throttled` event). */
  throttled(queue: string, held: number, retryInMs: number | null): void;
}

/**
 * The claim loop of one queue. Claimed jobs wait in `buffer` until a slot is free; a freed slot
 * takes the next buffered job at once (no round trip), and the loop refills the buffer in the
 * background when it runs low. How far ahead it claims follows the queue's recent rate
 * (`readAheadMs` of work, capped by the batch size), so fast jobs are claimed hundreds at a
 * time and slow ones hardly ahead at all — a buffered job is one another worker cannot take.
 */
export class Producer {
  /** Returns of a paused queue's claimed jobs still being written (the stop waits for them). */
  readonly inFlight = new Set<Promise<void>>();
  /**
   * Jobs started and not over yet (outcome written or dropped). A count, not a set of promises:
   * a promise and its `.then` per job were measurable (bench/NOTES.md finding 17).
   */
  private jobsInFlight = 0;
  /** settled() callers waiting for jobsInFlight to reach 0. */
  private idleWaiters: Array<() => void> = [];
  /** dispatch() is running: a slot freed by a job that ended synchronously is taken by its loop. */
  private dispatching = false;
  stopped: Promise<void> = Promise.resolve();
  private busy = 0;
  private signaled = true;
  private wakeUp: (() => void) | null = null;
  private buffer: ClaimedJob[] = [];
  /** Jobs to hold claimed beyond the concurrency, from the rate. */
  private ahead = 0;
  /** Rate estimate: jobs finished per ms (smoothed), and the current measuring window. */
  private rate = 0;
  private windowStart = performance.now();
  private windowCount = 0;
  /** Until when buffered jobs may start without asking whether the queue was paused (pause-window.ts). */
  private readonly startWindow = new StartWindow();
  private probing = false;
  /** A rate-limited queue's last claim was held back by a limit: no read-ahead until one is not. */
  private rateBinds = false;

  constructor(
    private readonly worker: ProducerHost,
    readonly queue: string,
    readonly concurrency: number,
    readonly executor: ExecutorDeps,
    /**
     * The queue's flow limits (flow control), or null. A limited queue claims with
     * claimFlowJobs. Concurrency limits keep read-ahead: a job buffered here (only when this
     * worker's own slots are full) holds its slot for at most about `readAheadMs`, and without
     * it a claim round trip per free slot cost non-binding limits half the throughput of no-op
     * jobs (bench/flow-control.ts). A rate-limited one reads ahead only while its last claim was
     * not held back: once the rate binds, a buffered job would take a rate token long before its
     * handler starts; before, a claim per free slot cost a non-binding rate limit 85% of the
     * throughput.
     */
    readonly flow: FlowLimits | null = null,
  ) {}

  start(): void {
    this.stopped = this.loop();
  }

  /** Something changed (enqueue, slot freed, stop): run the loop again now. */
  wake(): void {
    this.signaled = true;
    this.cancelWait();
  }

  private cancelWait(): void {
    const wake = this.wakeUp;
    this.wakeUp = null;
    wake?.();
  }

  /** A slot is free: the next buffered job takes it at once; the loop refills the buffer when low. */
  release(): void {
    this.busy--;
    this.windowCount++;
    this.dispatch();
    if (this.buffer.length <= this.ahead / 2) this.wake();
  }

  /** Claimed jobs not started yet (their leases are extended by the heartbeat). */
  get buffered(): readonly ClaimedJob[] {
    return this.buffer;
  }

  take(id: string): ClaimedJob | undefined {
    const i = this.buffer.findIndex((job) => job.id === id);
    return i < 0 ? undefined : this.buffer.splice(i, 1)[0];
  }

  /** A job run by this producer is over (RunningJobs.run): its outcome written or dropped. */
  jobEnded(): void {
    if (--this.jobsInFlight > 0 || this.idleWaiters.length === 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }

  /** Whether a started job or a return of buffered jobs is still in flight. */
  get hasInFlight(): boolean {
    return this.jobsInFlight > 0 || this.inFlight.size > 0;
  }

  /** Resolves when every job started so far is over and every return of buffered jobs has landed. */
  async settled(): Promise<void> {
    while (this.hasInFlight) {
      if (this.jobsInFlight > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      else await Promise.allSettled([...this.inFlight]);
    }
  }

  drainBuffer(): ClaimedJob[] {
    const jobs = this.buffer;
    this.buffer = [];
    return jobs;
  }

  /**
   * Starts buffered jobs in the free slots (none once the worker is stopping), while the start
   * window is open; past it, asks the store first (pause-window.ts).
   */
  private dispatch(): void {
    // A job whose handler returns synchronously ends inside worker.run, and its release() calls
    // dispatch again: that call returns here, and this loop takes the freed slot (no recursion
    // as deep as the buffer).
    if (this.dispatching) return;
    this.dispatching = true;
    try {
      while (this.busy < this.concurrency && this.buffer.length > 0 && !this.worker.isStopping) {
        if (!this.startWindow.isOpen) {
          this.probe();
          return;
        }
        const job = this.buffer.shift() as ClaimedJob;
        // Counted before the run: the job may be over when run returns.
        this.busy++;
        this.jobsInFlight++;
        this.worker.run(job, this);
      }
    } finally {
      this.dispatching = false;
    }
  }

  /**
   * Is the queue paused? No: a new start window, and the buffered jobs start. Yes: they go back
   * to the queue untouched. A failed probe is tried again by the loop (at the latest after a poll
   * interval), not at once.
   */
  private probe(): void {
    if (this.probing) return;
    this.probing = true;
    const sentAt = performance.now();
    this.worker.store.isQueuePaused(this.queue).then(
      (paused) => {
        this.probing = false;
        if (!paused) {
          this.startWindow.confirm(sentAt);
          this.dispatch();
        } else if (!this.worker.isStopping) {
          const held = this.drainBuffer();
          this.worker.log.info(
            { queue: this.queue, returned: held.length },
            "queue paused: claimed jobs given back",
          );
          // In flight like a running job: the worker's stop waits for it before the store closes.
          const giving = returnJobs(held, this.worker.store, this.worker.log);
          this.inFlight.add(giving);
          void giving.finally(() => this.inFlight.delete(giving));
        }
      },
      (err) => {
        this.probing = false;
        this.worker.log.warn(
          { err, queue: this.queue },
          "could not ask whether the queue is paused; asking again",
        );
      },
    );
  }

  /** Re-estimates the rate (at most every 50 ms) and from it how many jobs to claim ahead. */
  private updateReadAhead(readAheadMs: number, batchSize: number): void {
    if (readAheadMs === 0) return;
    if (this.rateBinds) {
      this.ahead = 0;
      return;
    }
    const now = performance.now();
    const elapsed = now - this.windowStart;
    if (elapsed < 50) return;
    const measured = this.windowCount / elapsed;
    this.rate = this.rate === 0 ? measured : (this.rate + measured) / 2;
    this.windowStart = now;
    this.windowCount = 0;
    this.ahead = Math.min(batchSize, Math.floor(this.rate * readAheadMs));
  }

  private wait(ms: number): Promise<void> {
    if (this.signaled) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakeUp = null;
        resolve();
      }, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async loop(): Promise<void> {
    const { store, log } = this.worker;
    const { workerId, leaseMs, batchSize, pollMs, readAheadMs } = this.worker.claimOptions;
    let failures = 0;
    while (!this.worker.isStopping) {
      this.dispatch();
      this.updateReadAhead(readAheadMs, batchSize);
      const room = this.concurrency + this.ahead - this.busy - this.buffer.length;
      // Refill when the buffer is down to half the read-ahead (empty, without read-ahead).
      if (room <= 0 || this.buffer.length > this.ahead / 2) {
        // A bounded run past its deadline ends here too, not only at a claim: with every slot
        // held by a handler that does not finish, no claim comes (the stop releases them).
        if (this.worker.claims.timeUp) break;
        this.signaled = false;
        await this.wait(pollMs);
        continue;
      }
      if (this.worker.outcomeBacklog >= 2 * batchSize) {
        // Claiming faster than outcomes are written would pile up run-but-unrecorded jobs in
        // memory (and re-run them all after a crash): wait for the completer to catch up.
        this.signaled = false;
        await Promise.race([this.worker.outcomesWritten(), this.wait(pollMs)]);
        this.cancelWait();
        continue;
      }
      this.signaled = false;
      let claimed: ClaimedJob[];
      const limit = this.worker.claims.reserve(Math.min(room, batchSize));
      if (limit === 0) {
        // A bounded run's budget: what other queues' claims hold may come back; else it is spent.
        if (await this.worker.claims.changed()) continue;
        break;
      }
      let retryInMs: number | null = null;
      let held = 0;
      const claimStarted = performance.now();
      try {
        if (this.flow) {
          const claim = await store.claimFlowJobs({
            queue: this.queue,
            limit,
            workerId,
            leaseMs,
            flow: this.flow,
          });
          claimed = claim.jobs;
          held = claim.held;
          retryInMs = claim.retryInMs;
          if (held > 0) this.worker.throttled(this.queue, held, retryInMs);
          this.rateBinds = held > 0 && (this.flow.rate !== undefined || this.flow.keyRate !== undefined);
        } else claimed = await store.claimJobs({ queue: this.queue, limit, workerId, leaseMs });
        // Jobs came back: the queue was not paused when the claim ran, after claimStarted.
        if (claimed.length > 0) this.startWindow.confirm(claimStarted);
        this.worker.claims.settle(limit, limit - claimed.length);
        failures = 0;
      } catch (err) {
        this.worker.claims.settle(limit, limit);
        failures++;
        const delay = Math.min(10_000, 100 * 2 ** Math.min(failures, 7));
        log.warn({ err, queue: this.queue, retryInMs: delay }, "claiming jobs failed; backing off");
        // The whole back-off, even when slots free up meanwhile: each freed slot wakes the loop,
        // and a broken store was being asked again at once (99 failing claims in 100 ms).
        const until = performance.now() + delay;
        while (!this.worker.isStopping && performance.now() < until) {
          this.signaled = false;
          await this.wait(until - performance.now());
        }
        continue;
      }
      // Claimed as the stop began, they stay buffered and go back untouched (Worker.returnBuffered).
      this.buffer.push(...claimed);
      this.dispatch();
      if (claimed.length < limit) {
        if (this.worker.claims.bounded) break; // nothing more is due: a bounded run does not wait for more
        if (held > 0) {
          // Held back by a limit: wait until its window or pause frees. A concurrency slot
          // counts as free in the store once its outcome is written, which comes after this
          // worker released the slot: claim again when the completer wrote it. Another
          // worker's freed slot is seen at the next poll.
          // retryInMs counts from when the store read its clock, early in the claim: the rest
          // of the claim's time is already waited (each late wake would shift the windows after it).
          const elapsed = performance.now() - claimStarted;
          const delay = Math.min(pollMs, retryInMs === null ? pollMs : Math.max(0, retryInMs - elapsed));
          this.worker.idle(this.queue);
          if (this.worker.outcomeBacklog > 0) {
            await Promise.race([this.worker.outcomesWritten(), this.wait(delay)]);
            this.cancelWait();
          } else await this.wait(delay);
          continue;
        }
        const delay = await this.idleDelay(pollMs);
        this.worker.idle(this.queue);
        await this.wait(delay);
      }
    }
  }

  /** Sleep until the next delayed job is due, capped by the poll interval (the whole interval while paused). */
  private async idleDelay(pollMs: number): Promise<number> {
    if (this.signaled) return 0;
    try {
      const [next, now] = await Promise.all([
        this.worker.store.nextRunAt([this.queue]),
        this.worker.store.now(),
      ]);
      if (!next) return pollMs;
      const untilNext = next.getTime() - now.getTime() + 1;
      // Due jobs the claim did not take: a paused queue (wait for the resume's wake-up, or the
      // poll) — without this probe the loop claimed again at once, 58-233 times a second.
      if (untilNext <= 0 && (await this.worker.store.isQueuePaused(this.queue))) return pollMs;
      return Math.max(0, Math.min(pollMs, untilNext));
    } catch {
      return pollMs;
    }
  }
}

/** At stop: claimed-but-unstarted jobs go back to pending untouched (else their leases would expire). */
export async function returnBuffered(
  producers: readonly Producer[],
  store: Store,
  log: Logger,
): Promise<void> {
  await returnJobs(
    producers.flatMap((r) => r.drainBuffer()),
    store,
    log,
  );
}

/** Claimed-but-unstarted jobs back to pending untouched, tried three times; past that their leases bring them back. */
async function returnJobs(jobs: ClaimedJob[], store: Store, log: Logger): Promise<void> {
  if (jobs.length === 0) return;
  for (let attempt = 1; ; attempt++) {
    try {
      await store.returnJobs(jobs);
      log.debug({ returned: jobs.length }, "returned claimed jobs not started");
      return;
    } catch (err) {
      if (attempt >= 3) {
        log.warn(
          { err, jobs: jobs.length },
          "could not return claimed jobs not started; they come back when their leases expire",
        );
        return;
      }
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
}
