import type { Duration } from "../duration.js";
import type { Logger } from "../logger.js";
import type { ClaimedJob, TxHandle } from "../store/types.js";

/** What a handler receives besides its payload. */
export interface JobContext {
  /** The claimed job (id, name, queue, priority, attempt, maxAttempts, key, runAt, …). */
  readonly job: Readonly<Omit<ClaimedJob, "leaseToken" | "lockedUntil">>;
  /** Which execution this is, 1-based. */
  readonly attempt: number;
  /** Aborts on timeout, cancellation, lost lease or hard shutdown; `signal.reason` says which. */
  readonly signal: AbortSignal;
  /** A logger whose lines carry the job's id, name, queue and attempt. */
  readonly log: Logger;
  /**
   * Runs `fn` once per `key` across all attempts of all jobs: a retry skips side effects that
   * already completed and gets the value recorded the first time (the ledger).
   */
  once<T>(key: string, fn: () => Promise<T> | T): Promise<T>;
  /** Reports progress (0..1) and an optional message; shown by the dashboard and `errand jobs show`. */
  progress(fraction: number, message?: string): Promise<void>;
  /** Asks to run again after `delay` without spending an attempt. Ends the handler (throws). */
  snooze(delay: Duration): never;
  /**
   * Runs `fn` in a store transaction and completes the job in that same transaction:
   * database writes made through `tx` commit if and only if the job completes (exactly-once
   * for database effects). `tx` is a node-postgres client or the better-sqlite3 Database.
   */
  completeInTransaction<T>(fn: (tx: TxHandle) => Promise<T> | T): Promise<T>;
}
