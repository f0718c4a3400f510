/**
 * "Jobs may be available" for the SQLite store's listeners (`onJobsAvailable`).
 *
 * In-process: `notify(queue)` after an insert, retry or rescue that makes pending work; raised
 * while completeInTransaction holds the gate, it is deferred until the gate opens (after the
 * commit: `flushDeferred`). Across processes, while anyone listens: a change of
 * `PRAGMA data_version` on this connection — another connection committed — calls listeners
 * with null. It is looked at after every event of a watch on the database's files (watch.ts),
 * and by a poll (an unref'd timer): every 250 ms behind the watch, every 50 ms without one.
 *
 * waitFor's wake-ups (`onJobsFinished`) ride on the same machinery: `finished(ids)` after this
 * store's own writes that may end jobs, and null to those listeners too when another
 * connection committed (the waiters then read every job they wait for, in one statement).
 */
import type { Connection } from "./connection.js";
import * as Q from "./queries.js";
import { type CommitWatch, watchCommits } from "./watch.js";

export interface NotifierOptions {
  /**
   * Learn of other processes' commits as they happen by watching the database's directory
   * (fs.watch; watch.ts); default true. Without it, only the poll sees them.
   */
  watch?: boolean;
  /**
   * How often `PRAGMA data_version` is polled while someone listens for new jobs: the safety
   * net behind the watch (default 250 ms), or the only way to see other processes' commits
   * when there is no watch (`watch: false`, an in-memory database, or a watch that failed;
   * default 50 ms).
   */
  pollIntervalMs?: number;
  /**
   * Called when the database's directory cannot be watched, or the watch fails later
   * (inotify's watches spent — ENOSPC —, the directory removed, …): the poll takes over at
   * its no-watch interval. Never throws into the store.
   */
  onWatchError?: (err: Error) => void;
}

/** The poll behind a working watch: it only catches what the watch missed. */
const SAFETY_POLL_MS = 250;
/** The poll without a watch: half of it is the average wait for another process's job. */
const FALLBACK_POLL_MS = 50;

type Listener = (queue: string | null) => void;
type FinishedListener = (ids: string[] | null) => void;

export class Notifier {
  private readonly pollIntervalMs: number | undefined;
  private readonly watchFiles: boolean;
  private readonly onWatchError: ((err: Error) => void) | undefined;
  private readonly listeners = new Set<Listener>();
  private readonly finishedListeners = new Set<FinishedListener>();
  private pollTimer: NodeJS.Timeout | null = null;
  private commitWatch: CommitWatch | null = null;
  private dataVersion: unknown = null;
  /** Wake-ups raised while the gate is held, sent once it opens (after the commit). */
  private readonly deferredWake = new Set<string>();

  constructor(
    private readonly c: Connection,
    options: NotifierOptions,
  ) {
    this.pollIntervalMs = options.pollIntervalMs;
    this.watchFiles = options.watch ?? true;
    this.onWatchError = options.onWatchError;
  }

  notify(queue: string | null): void {
    if (queue !== null && this.c.gate.held) {
      this.deferredWake.add(queue);
      return;
    }
    for (const listener of this.listeners) queueMicrotask(() => listener(queue));
  }

  /** Notifies each queue once. */
  notifyEach(queues: Iterable<string>): void {
    for (const queue of new Set(queues)) this.notify(queue);
  }

  /** Sends the wake-ups deferred while the gate was held. */
  flushDeferred(): void {
    const wake = [...this.deferredWake];
    this.deferredWake.clear();
    for (const queue of wake) this.notify(queue);
  }

  subscribe(listener: Listener): () => void {
    return this.join(this.listeners, listener);
  }

  subscribeFinished(listener: FinishedListener): () => void {
    return this.join(this.finishedListeners, listener);
  }

  /** Jobs this store's own write may have ended (null: some did, which is not known). */
  finished(ids: string[] | null): void {
    if (this.finishedListeners.size === 0 || (ids !== null && ids.length === 0)) return;
    for (const listener of this.finishedListeners) queueMicrotask(() => listener(ids));
  }

  private join<L>(set: Set<L>, listener: L): () => void {
    set.add(listener);
    this.startWatching();
    return () => {
      if (set.delete(listener) && this.listeners.size + this.finishedListeners.size === 0)
        this.stopWatching();
    };
  }

  close(): void {
    this.stopWatching();
    this.listeners.clear();
    this.finishedListeners.clear();
  }

  private startWatching(): void {
    if (this.pollTimer !== null || this.c.closed) return;
    let file: string;
    try {
      this.dataVersion = this.c.q(Q.DATA_VERSION).pluck().get();
      file = this.watchFiles ? this.mainFile() : "";
    } catch {
      return; // the shared handle is closed: nothing to watch
    }
    if (file !== "") {
      try {
        this.commitWatch = watchCommits(
          file,
          () => this.checkDataVersion(),
          (err) => this.watchFailed(err),
        );
      } catch (err) {
        this.reportWatchError(err);
      }
    }
    this.startPoll();
  }

  /** The database file, '' for an in-memory or temporary database (nothing to watch). */
  private mainFile(): string {
    const file = this.c.q(Q.MAIN_FILE).pluck().get();
    return typeof file === "string" ? file : "";
  }

  private startPoll(): void {
    if (this.pollTimer !== null) clearInterval(this.pollTimer);
    const ms = this.pollIntervalMs ?? (this.commitWatch !== null ? SAFETY_POLL_MS : FALLBACK_POLL_MS);
    this.pollTimer = setInterval(() => this.checkDataVersion(), ms);
    this.pollTimer.unref();
  }

  /** The watch failed after it started (watch.ts closed it): the poll speeds up in its place. */
  private watchFailed(err: Error): void {
    this.commitWatch = null;
    this.reportWatchError(err);
    if (this.pollTimer !== null) this.startPoll();
  }

  private reportWatchError(err: unknown): void {
    try {
      this.onWatchError?.(err instanceof Error ? err : new Error(String(err)));
    } catch {
      // a throwing callback must not break the fallback
    }
  }

  private stopWatching(): void {
    this.commitWatch?.close();
    this.commitWatch = null;
    if (this.pollTimer !== null) clearInterval(this.pollTimer);
    this.pollTimer = null;
  }

  /** Calls listeners with null if another connection committed since the last look. */
  private checkDataVersion(): boolean {
    let version: unknown;
    try {
      version = this.c.q(Q.DATA_VERSION).pluck().get();
    } catch {
      // The application closed the handle it shared: stop. Anything else (SQLITE_BUSY in
      // rollback-journal mode while another connection commits): the next look will tell.
      if (!this.c.db.open) this.stopWatching();
      return false;
    }
    if (version === this.dataVersion) return false;
    this.dataVersion = version;
    for (const listener of this.listeners) queueMicrotask(() => listener(null));
    for (const listener of this.finishedListeners) queueMicrotask(() => listener(null));
    return true;
  }
}
