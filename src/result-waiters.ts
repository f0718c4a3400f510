/**
 * What `errand.waitFor` runs on: every promise waiting for a job's final state in this errand,
 * at the cost of one. All waits share one store subscription (onJobsFinished) and one lookup in
 * flight (getJobs of the ids a wake-up names, or of every id waited for when it names none);
 * wake-ups that arrive during a lookup are merged into the next one. A thousand waits cost one
 * statement per wake-up, not a thousand polls.
 *
 * The wake-ups: Postgres sends a NOTIFY when an awaited job reaches a final state (the jobs are
 * recorded with store.awaitJobs first: migrations.ts 8); SQLite tells of its own writes at once
 * and of other processes' commits through its commit watch; memory tells of every finish.
 * A wake-up can still be missed (a LISTEN connection that was down, a finish that committed
 * between the record and the first lookup), so every wait is also looked at again every
 * `recheckMs` (default 5 s): slow, and the only polling there is.
 *
 * A statement that fails (a connection gone silent, the database away) is tried again soon —
 * 100 ms doubling to 5 s, never later than the recheck — not left to the recheck: after a silent
 * connection the reconnected LISTEN asks for one lookup of every wait, and that lookup is often
 * the one that meets the pool's silent connections (test/chaos/silent-listen.test.ts); a record
 * that failed would leave its job without a NOTIFY (Postgres) until it is made.
 *
 * A wait that times out or is aborted ends only the wait; the job is never touched.
 */
import type { JobRecord } from "./job.js";
import type { Store } from "./store/types.js";
import { WaitForError } from "./wait-error.js";

/** The default of `recheckMs`: how long a missed wake-up can delay a result at most. */
export const DEFAULT_RECHECK_MS = 5_000;
/** Ids per lookup statement. */
const LOOKUP_BATCH = 1_000;
/** The first retry of a failed statement, doubling after each failure in a row up to the last. */
const RETRY_FIRST_MS = 100;
const RETRY_LAST_MS = 5_000;

interface Wait {
  resolve(job: JobRecord): void;
  reject(err: WaitForError): void;
}

export class ResultWaiters {
  private readonly waits = new Map<string, Set<Wait>>();
  private unsubscribe: (() => void) | null = null;
  private recheck: NodeJS.Timeout | null = null;
  /** Ids to look at in the next lookup; "all" after a wake-up that names none. */
  private due: Set<string> | "all" = new Set();
  private looking = false;
  /** Ids to record (Postgres awaitJobs) before their first lookup, and ids no longer waited for. */
  private toRecord = new Set<string>();
  private toForget = new Set<string>();
  private flushing = false;
  private closed = false;
  /** Ids a wake-up named: on Postgres the notifying trigger already dropped their records. */
  private readonly named = new Set<string>();
  /** What failed, for the retry: ids to record, to forget and to look up again. */
  private readonly failed = { record: new Set<string>(), forget: new Set<string>(), look: new Set<string>() };
  private retryTimer: NodeJS.Timeout | null = null;
  /** Failures in a row: the retry's delay doubles with each. */
  private failures = 0;

  constructor(
    private readonly store: Pick<Store, "onJobsFinished" | "awaitJobs" | "unawaitJobs" | "getJobs">,
    private readonly recheckMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** How many jobs are waited for now. */
  get size(): number {
    return this.waits.size;
  }

  /** Resolves with the job once it completed; rejects (WaitForError) when it failed, was cancelled or is gone, or the wait ends first. */
  wait(id: string, timeoutMs: number | null, signal: AbortSignal | undefined): Promise<JobRecord> {
    if (this.closed) return Promise.reject(closedError(id));
    if (signal?.aborted) return Promise.reject(abortedError(id, signal.reason));
    return new Promise<JobRecord>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () => end(abortedError(id, signal?.reason));
      const cleanup = () => {
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const wait: Wait = {
        resolve: (job) => {
          cleanup();
          resolve(job);
        },
        reject: (err) => {
          cleanup();
          reject(err);
        },
      };
      const end = (err: WaitForError) => {
        if (this.remove(id, wait)) this.forget(id);
        wait.reject(err);
      };
      if (timeoutMs !== null)
        timer = setTimeout(
          () => end(new WaitForError("timeout", id, `job ${id} did not finish within ${timeoutMs} ms`)),
          timeoutMs,
        );
      signal?.addEventListener("abort", onAbort, { once: true });
      let set = this.waits.get(id);
      if (!set) {
        set = new Set();
        this.waits.set(id, set);
        this.toForget.delete(id);
        this.toRecord.add(id);
        this.start();
        this.flush();
      }
      set.add(wait);
    });
  }

  /** Rejects every wait ("closed") and lets go of the store. */
  async close(): Promise<void> {
    this.closed = true;
    const ids = [...this.waits.keys()];
    for (const [id, set] of this.waits) for (const wait of set) wait.reject(closedError(id));
    this.waits.clear();
    this.stop();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (ids.length > 0) await this.store.unawaitJobs(ids).catch(this.onError);
  }

  /** Removes one wait; true when it was the last for its job. */
  private remove(id: string, wait: Wait): boolean {
    const set = this.waits.get(id);
    if (!set?.delete(wait) || set.size > 0) return false;
    this.waits.delete(id);
    this.named.delete(id);
    if (this.waits.size === 0) this.stop();
    return true;
  }

  private start(): void {
    if (this.unsubscribe) return;
    this.unsubscribe = this.store.onJobsFinished((ids) => this.look(ids));
    this.recheck = setInterval(() => this.look(null), this.recheckMs);
    this.recheck.unref();
  }

  private stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.recheck) clearInterval(this.recheck);
    this.recheck = null;
  }

  /** A job no longer waited for: its record (Postgres) is dropped with the next flush. */
  private forget(id: string): void {
    if (this.toRecord.delete(id)) return; // never recorded
    this.toForget.add(id);
    this.flush();
  }

  /** Records new ids and reads them (they may be finished already); drops forgotten ones. */
  private flush(): void {
    if (this.flushing) return;
    this.flushing = true;
    // One statement for the waits started in the same turn (1,000 waitFor calls in a loop).
    setImmediate(async () => {
      try {
        while (this.toRecord.size > 0 || this.toForget.size > 0) {
          const record = [...this.toRecord];
          const forget = [...this.toForget];
          this.toRecord.clear();
          this.toForget.clear();
          try {
            if (forget.length > 0) await this.store.unawaitJobs(forget);
          } catch (err) {
            this.retrySoon(err, this.failed.forget, forget);
          }
          try {
            if (record.length > 0) this.settle(record, await this.store.awaitJobs(record));
            this.failures = 0;
          } catch (err) {
            this.retrySoon(err, this.failed.record, record);
            break; // what is left waits for the retry: the next statement would likely fail too
          }
        }
      } finally {
        this.flushing = false;
      }
    });
  }

  /** Asks for a lookup of `ids` (null: of every job waited for); merged with one in flight. */
  private look(ids: string[] | null): void {
    if (this.waits.size === 0) return;
    if (ids === null) this.due = "all";
    else
      for (const id of ids) {
        if (!this.waits.has(id)) continue;
        this.named.add(id);
        if (this.due !== "all") this.due.add(id);
      }
    if (!this.looking && (this.due === "all" || this.due.size > 0)) void this.lookup();
  }

  private async lookup(): Promise<void> {
    this.looking = true;
    try {
      while (this.due === "all" || this.due.size > 0) {
        const ids = this.due === "all" ? [...this.waits.keys()] : [...this.due];
        this.due = new Set();
        for (let i = 0; i < ids.length; i += LOOKUP_BATCH) {
          const batch = ids.slice(i, i + LOOKUP_BATCH).filter((id) => this.waits.has(id));
          if (batch.length === 0) continue;
          let jobs: JobRecord[];
          try {
            jobs = await this.store.getJobs(batch);
            this.failures = 0;
          } catch (err) {
            this.retrySoon(err, this.failed.look, batch);
            continue;
          }
          this.settle(batch, jobs);
        }
      }
    } finally {
      this.looking = false;
    }
  }

  /** Keeps the ids of a failed statement and tries them again after the backoff. */
  private retrySoon(err: unknown, into: Set<string>, ids: string[]): void {
    this.onError(err);
    for (const id of ids) into.add(id);
    if (this.retryTimer || this.closed) return;
    const delay = Math.min(RETRY_FIRST_MS * 2 ** Math.min(this.failures, 16), RETRY_LAST_MS, this.recheckMs);
    this.failures++;
    this.retryTimer = setTimeout(() => this.retry(), delay);
    this.retryTimer.unref();
  }

  private retry(): void {
    this.retryTimer = null;
    const { record, forget, look } = this.failed;
    // A record that failed may still have been made (a timed-out statement can commit):
    // a wait that ended meanwhile has it dropped.
    for (const id of record) (this.waits.has(id) ? this.toRecord : this.toForget).add(id);
    for (const id of forget) if (!this.waits.has(id)) this.toForget.add(id);
    const ids = [...look];
    record.clear();
    forget.clear();
    look.clear();
    this.flush();
    this.look(ids);
  }

  /** Ends the waits of the jobs that reached a final state or are gone. */
  private settle(ids: string[], jobs: JobRecord[]): void {
    const found = new Map(jobs.map((j) => [j.id, j]));
    for (const id of ids) {
      const set = this.waits.get(id);
      if (!set) continue;
      const job = found.get(id);
      let outcome: ((wait: Wait) => void) | null = null;
      if (!job) {
        const err = new WaitForError("not-found", id, `job ${id} does not exist (never created, or deleted)`);
        outcome = (wait) => wait.reject(err);
        this.toForget.add(id);
      } else if (job.state === "completed") outcome = (wait) => wait.resolve(job);
      else if (job.state === "failed") {
        const err = new WaitForError(
          "failed",
          id,
          `job ${id} (${job.name}) failed for good after ${job.attempt} attempt${job.attempt === 1 ? "" : "s"}: ${job.lastError ?? "no error recorded"}`,
          job,
        );
        outcome = (wait) => wait.reject(err);
      } else if (job.state === "cancelled") {
        const err = new WaitForError("cancelled", id, `job ${id} (${job.name}) was cancelled`, job);
        outcome = (wait) => wait.reject(err);
      }
      if (!outcome) continue;
      this.waits.delete(id);
      // Finished before it was recorded, or found by a recheck: its record is still there.
      if (job && !this.named.has(id)) this.toForget.add(id);
      this.named.delete(id);
      for (const wait of set) outcome(wait);
    }
    if (this.toForget.size > 0) this.flush();
    if (this.waits.size === 0) this.stop();
  }
}

function closedError(id: string): WaitForError {
  return new WaitForError("closed", id, `stopped waiting for job ${id}: this errand instance is closed`);
}

function abortedError(id: string, reason: unknown): WaitForError {
  return new WaitForError("aborted", id, `stopped waiting for job ${id}: the signal aborted`, null, reason);
}
