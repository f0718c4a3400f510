import type { ClaimedJob } from "./claim-types.js";

/**
 * A claimed job whose three times stay as the store's row gave them (epoch milliseconds, or a
 * Date from a pool with its own type parsers) until first read: the worker itself reads none of
 * them, and three Dates per claimed job were a tenth of what the worker allocated per no-op job
 * on Postgres (heap sampling of bench/one-worker.ts, bench/NOTES.md finding 17), an eighth on
 * SQLite. The times are accessors, not own properties: a spread or Object.keys of a claimed job
 * does not show them (ActiveJob's job view adds them; flow claims set flowKey on the job).
 */
export class ClaimedRow implements ClaimedJob {
  /** Set by a flow claim only: not an own property otherwise, as on the plain objects before. */
  declare flowKey?: string | null;
  #runAt: unknown;
  #createdAt: unknown;
  #lockedUntil: unknown;

  constructor(
    readonly id: string,
    readonly queue: string,
    readonly name: string,
    readonly payload: unknown,
    readonly priority: number,
    readonly attempt: number,
    readonly maxAttempts: number,
    readonly key: string | null,
    readonly leaseToken: number,
    readonly traceContext: string | null,
    runAt: unknown,
    createdAt: unknown,
    lockedUntil: unknown,
  ) {
    this.#runAt = runAt;
    this.#createdAt = createdAt;
    this.#lockedUntil = lockedUntil;
  }

  // Each made once, on first read (the same Date after that, as a plain field would be).
  get runAt(): Date {
    if (!(this.#runAt instanceof Date)) this.#runAt = new Date(this.#runAt as string | number);
    return this.#runAt as Date;
  }

  get createdAt(): Date {
    if (!(this.#createdAt instanceof Date)) this.#createdAt = new Date(this.#createdAt as string | number);
    return this.#createdAt as Date;
  }

  get lockedUntil(): Date {
    if (!(this.#lockedUntil instanceof Date))
      this.#lockedUntil = new Date(this.#lockedUntil as string | number);
    return this.#lockedUntil as Date;
  }
}
