import type { Logger } from "../logger.js";
import type { Outcome, Store } from "../store/types.js";

const MAX_BATCH = 1000;

/**
 * Writes outcomes in batches: every outcome reported in the same turn of the event loop
 * (and any that arrive while a write is in flight) go to the store in one finishJobs call.
 * One transaction per job cannot go past a few thousand jobs/s on Postgres; batching can.
 * If the store is unreachable the batch is retried with backoff; leases keep the jobs safe
 * meanwhile (a write that arrives after the lease was lost is fenced off by the store).
 */
export class Completer {
  private queue: { outcome: Outcome; resolve: (applied: boolean) => void }[] = [];
  private flushing: Promise<void> | null = null;
  private scheduled = false;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  /** Outcomes reported and not yet written. */
  get backlog(): number {
    return this.queue.length;
  }

  /** Resolves when the write in flight (if any) has landed or failed. */
  async settled(): Promise<void> {
    if (this.flushing) await this.flushing;
    else await new Promise((r) => setImmediate(r));
  }

  /** Resolves with whether the store applied the outcome (false: the lease was lost). */
  finish(outcome: Outcome): Promise<boolean> {
    return new Promise((resolve) => {
      this.queue.push({ outcome, resolve });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flushing = this.flushAll().finally(() => {
        this.flushing = null;
        if (this.queue.length > 0) this.schedule();
      });
    });
  }

  private async flushAll(): Promise<void> {
    let failures = 0;
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, MAX_BATCH);
      try {
        const applied = await this.store.finishJobs(batch.map((b) => b.outcome));
        this.queue.splice(0, batch.length);
        for (const [i, b] of batch.entries()) b.resolve(applied[i] ?? false);
        failures = 0;
      } catch (err) {
        failures++;
        if (this.closed && failures > 3) {
          // Giving up at close: the leases will expire and rescuers will return these jobs.
          this.log.error(
            { err, jobs: batch.length },
            "could not record job outcomes; their leases will expire",
          );
          this.queue.splice(0, batch.length);
          for (const b of batch) b.resolve(false);
          continue;
        }
        const delay = Math.min(5000, 50 * 2 ** Math.min(failures, 7));
        this.log.warn(
          { err, jobs: batch.length, retryInMs: delay },
          "recording job outcomes failed; retrying",
        );
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /** Waits until every reported outcome is written (or given up after a few tries). */
  async drain(): Promise<void> {
    this.closed = true;
    while (this.queue.length > 0 || this.flushing || this.scheduled) {
      if (this.flushing) await this.flushing;
      else await new Promise((r) => setImmediate(r));
    }
  }
}
