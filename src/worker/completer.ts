import { toError } from "../errors.js";
import type { Logger } from "../logger.js";
import { storableText } from "../payload.js";
import type { Outcome, Store } from "../store/types.js";

const MAX_BATCH = 1000;

/**
 * Times an outcome's own write may fail (with an error that does not say "this data", while the
 * writes of other outcomes succeed) before it is given up for a plain failure: a safety net for a
 * refusal isUnstorable does not recognise, which would otherwise hold the job's lease for ever.
 */
const MAX_STRIKES = 3;

/** How many job ids a log line names. */
const NAMED_IDS = 10;

interface Pending {
  outcome: Outcome;
  /** The attempt the outcome ends: with the worker id, it finds our entry in the job's history. */
  attempt: number;
  resolve: (applied: boolean) => void;
  /** A write holding this outcome threw: it may have committed with the reply lost. */
  uncertain: boolean;
  /** Failed writes of this outcome alone while other outcomes were written. */
  strikes: number;
}

/**
 * Writes outcomes in batches: every outcome reported in the same turn of the event loop
 * (and any that arrive while a write is in flight) go to the store in one finishJobs call.
 * One transaction per job cannot go past a few thousand jobs/s on Postgres; batching can.
 *
 * A batch that fails is written again one outcome at a time, so one outcome the store refuses
 * (the executor checks results and error text first; this is for what it could not foresee)
 * never holds back the others: a refused outcome is replaced by a plain `failed` one naming the
 * problem. If the store itself is unreachable the writes are retried with backoff; leases keep
 * the jobs safe meanwhile (a write that arrives after the lease was lost is fenced off).
 */
export class Completer {
  private queue: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private scheduled = false;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    /** The worker's lease: what the probe of a busy outcome's own row extends it by. */
    private readonly leaseMs = 15_000,
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

  /**
   * Queues an outcome; `written` is called once with whether the store applied it (false: the
   * lease was lost). It must not throw. A callback, not a promise: a promise per outcome was
   * measurable at thousands of jobs a second (bench/NOTES.md finding 17).
   */
  finish(outcome: Outcome, attempt: number, written: (applied: boolean) => void): void {
    this.queue.push({ outcome, attempt, resolve: written, uncertain: false, strikes: 0 });
    this.schedule();
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
      let err: unknown;
      try {
        const applied = await this.store.finishJobs(batch.map((b) => b.outcome));
        this.queue.splice(0, batch.length);
        for (let i = 0; i < batch.length; i++) {
          const b = batch[i] as Pending;
          // No await for the common case: a promise per outcome is measurable at this rate.
          if (b.uncertain) await this.settle(b, applied[i] ?? false);
          else b.resolve(applied[i] ?? false);
        }
        failures = 0;
        continue;
      } catch (batchErr) {
        for (const b of batch) b.uncertain = true;
        err = await this.oneByOne(batch, batchErr);
      }
      if (err === null) {
        failures = 0;
        continue;
      }
      const left = batch.filter((b) => this.queue.includes(b));
      failures++;
      if (this.closed && failures > 3) {
        // Giving up at close: the leases will expire and rescuers will return these jobs.
        this.log.error(
          { err, jobs: left.length, jobIds: ids(left) },
          "could not record job outcomes; their leases will expire",
        );
        for (const b of left) this.drop(b, false);
        continue;
      }
      const delay = Math.min(5000, 50 * 2 ** Math.min(failures, 7));
      this.log.warn(
        { err, jobs: left.length, jobIds: ids(left), retryInMs: delay },
        "recording job outcomes failed; retrying",
      );
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  /**
   * After a failed batch: each outcome in a write of its own. An outcome the store refuses (its
   * data, not the store being down) becomes a plain failure. Returns null when every outcome
   * was settled, else the error that left some queued (the store looks unreachable).
   */
  private async oneByOne(batch: Pending[], batchErr: unknown): Promise<unknown> {
    let wrote = 0;
    let lastErr: unknown = null;
    const doubtful: Pending[] = [];
    /** Outcomes whose write failed for no reason the store gave, and those it said it was busy. */
    const unexplained: Pending[] = [];
    const busy: Pending[] = [];
    for (const b of batch) {
      try {
        const [applied] = await this.store.finishJobs([b.outcome]);
        this.drop(b, null);
        await this.settle(b, applied ?? false);
        wrote++;
      } catch (err) {
        if (isUnstorable(err)) await this.refused(b, err);
        else {
          lastErr = err;
          doubtful.push(b);
          // A full disk only waits: that a small write fits says nothing about this one.
          if (!isDiskFull(err)) (isStoreBusy(err) ? busy : unexplained).push(b);
          // Nothing written and the errors say nothing about the data: the store is down, do not
          // spend a timeout on each of up to MAX_BATCH outcomes.
          if (wrote === 0 && doubtful.length >= 3) break;
        }
      }
    }
    if (unexplained.length > 0 && (wrote > 0 || (await this.answers()))) {
      // The store takes other writes, or at least answers: these fail for their own sake.
      for (const b of unexplained) if (++b.strikes >= MAX_STRIKES) await this.refused(b, lastErr ?? batchErr);
    }
    // A lock or a timeout is held against an outcome only when its own job's row takes a write
    // at that moment (its lease is extended): then the write timed out for its own sake (a
    // cascade too slow for the statement timeout, say), and retrying it for ever would hold the
    // job `running` for ever. While the row cannot be written either (another connection's lock),
    // the outcome just waits for the store.
    for (const b of busy) {
      if ((await this.rowWritable(b)) && ++b.strikes >= MAX_STRIKES)
        await this.refused(b, lastErr ?? batchErr);
    }
    return batch.some((b) => this.queue.includes(b)) ? (lastErr ?? batchErr) : null;
  }

  /** The store refused this outcome: record a plain failure naming why instead, once. */
  private async refused(b: Pending, err: unknown): Promise<void> {
    const { outcome } = b;
    const log = { err: toError(err), jobId: outcome.id, kind: outcome.kind };
    if (outcome.kind === "failed" && outcome.error?.kind === "permanent" && b.strikes < 0) {
      this.log.error(log, "the store refused even the plain failure of this job; its lease will expire");
      this.drop(b, false);
      return;
    }
    this.log.error(log, "the store refused this job's outcome; recording it as failed");
    const message = `errand could not store this attempt's outcome (${outcome.kind}): ${toError(err).message}`;
    b.outcome = {
      id: outcome.id,
      leaseToken: outcome.leaseToken,
      worker: outcome.worker,
      kind: "failed",
      error: { message: storableText(message), kind: "permanent" },
    };
    b.strikes = -1; // marks the replacement: refused again, it is given up
    try {
      const [applied] = await this.store.finishJobs([b.outcome]);
      this.drop(b, null);
      await this.settle(b, applied ?? false);
    } catch (again) {
      if (isUnstorable(again)) await this.refused(b, again);
      // else: stays queued, retried with the others after the back-off
    }
  }

  /** Resolves an outcome's promise; a write that came back "not applied" after one that threw is checked. */
  private async settle(b: Pending, applied: boolean): Promise<void> {
    b.resolve(applied || (b.uncertain && (await this.appliedEarlier(b))));
  }

  /** Whether the outcome's job row takes a write now: its lease is extended (as a heartbeat would). */
  private async rowWritable(b: Pending): Promise<boolean> {
    try {
      const { id, leaseToken } = b.outcome;
      await this.store.extendLeases([{ id, leaseToken }], this.leaseMs);
      return true;
    } catch {
      return false;
    }
  }

  /** Whether the store answers at all (a write failed for no reason that names the data). */
  private async answers(): Promise<boolean> {
    try {
      await this.store.now();
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Whether an earlier write of this outcome committed and only its reply was lost: then the
   * job's last history entry is ours (this worker, this attempt) and is not a rescue's `lost`.
   */
  private async appliedEarlier(b: Pending): Promise<boolean> {
    try {
      const job = await this.store.getJob(b.outcome.id);
      const last = job?.attempts.at(-1);
      return (
        last !== undefined &&
        last.worker === b.outcome.worker &&
        last.attempt === b.attempt &&
        last.outcome !== "lost"
      );
    } catch {
      return false;
    }
  }

  /** Takes an outcome off the queue; resolves it when `applied` is given. */
  private drop(b: Pending, applied: boolean | null): void {
    const i = this.queue.indexOf(b);
    if (i >= 0) this.queue.splice(i, 1);
    if (applied !== null) b.resolve(applied);
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

function ids(items: Pending[]): string[] {
  return items.slice(0, NAMED_IDS).map((b) => b.outcome.id);
}

/**
 * What a TypeError or RangeError says when it is about the value: JSON.stringify's "Do not know
 * how to serialize a BigInt" and "Converting circular structure to JSON", V8's "Invalid string
 * length", better-sqlite3's "can only bind numbers, strings, bigints, buffers, and null". Any
 * other TypeError (a driver's "Cannot read properties of null" on a torn connection) says
 * nothing about the data: the outcome is retried, and given up only after MAX_STRIKES.
 */
const ABOUT_THE_VALUE = /serializ|circular|BigInt|Invalid string length|can only bind/i;

/**
 * Whether a write failed because of the data it carried rather than the store being unreachable:
 * errand's own ValidationError, a value JavaScript cannot serialise (a TypeError or RangeError
 * naming it, DataCloneError), a PostgreSQL data exception (SQLSTATE class 22: NUL in text,
 * invalid JSON escapes) or program limit (54), SQLite's "string or blob too big".
 */
export function isUnstorable(err: unknown): boolean {
  try {
    if (err instanceof TypeError || err instanceof RangeError) return ABOUT_THE_VALUE.test(err.message);
    const { code, name } = err as { code?: unknown; name?: unknown };
    if (name === "DataCloneError") return true;
    if (code === "ERR_VALIDATION" || code === "SQLITE_TOOBIG") return true;
    return typeof code === "string" && /^(22|54)[0-9A-Z]{3}$/.test(code);
  } catch {
    return false;
  }
}

/**
 * Whether a write failed because the store could not take a write just then — a lock held by
 * someone else, a timeout, a lost connection, a server shutting down or out of room — rather
 * than anything about the outcome. Such a failure is never held against the outcome: the store
 * still answers reads meanwhile (SQLite while another connection holds the write lock past
 * busy_timeout; PostgreSQL while a CREATE INDEX holds a SHARE lock on the jobs table), and
 * counting it as a strike turned a completed job into a permanent failure after three rounds
 * (test/reliability/locked-store.test.ts). SQLite: SQLITE_BUSY, SQLITE_LOCKED, I/O, full disk.
 * PostgreSQL SQLSTATE classes 08 (connection), 40 (serialization, deadlock), 53 (resources),
 * 57 (statement timeout, shutdown), 58 (system), and 55P03/55006 (lock not available, object in
 * use); errand's and node-postgres's own timeouts; network errors.
 */
/**
 * The disk is full (SQLite's SQLITE_FULL, PostgreSQL's disk_full 53100): an outcome that does not
 * fit waits for space, never taken for a refusal. The lease extension that tells a refusal from
 * a busy store writes in place and fits when a 900 KB result does not: a completed job was
 * recorded failed, its result lost (test/reliability/disk-full.test.ts).
 */
export function isDiskFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_FULL") || code === "53100");
}

export function isStoreBusy(err: unknown): boolean {
  try {
    const { code, message } = err as { code?: unknown; message?: unknown };
    if (typeof code === "string") {
      if (/^SQLITE_(BUSY|LOCKED|IOERR|FULL|PROTOCOL|CANTOPEN)/.test(code)) return true;
      if (/^(08|40|53|57|58)[0-9A-Z]{3}$/.test(code) || code === "55P03" || code === "55006") return true;
      if (
        code === "ERRAND_PG_SILENT" ||
        /^E(CONN|PIPE|TIMEDOUT|NOTFOUND|AI_AGAIN|HOSTUNREACH|NETUNREACH)/.test(code)
      )
        return true;
    }
    return typeof message === "string" && /^(Query read timeout|Connection terminated)/.test(message);
  } catch {
    return false;
  }
}
