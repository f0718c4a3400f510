/**
 * The LISTEN side of "jobs may be available": one dedicated connection per store (not a pool
 * client: a LISTEN belongs to a session and a pool would hand the session to someone else).
 *
 * NOTIFY is sent by the statements that create due work (insert, retry, rescue — queries.ts)
 * with the queue name as payload, one per queue per statement, delivered at commit. Listeners
 * get that queue name. A payload starting with "!" (never a queue name: names start with a
 * letter or digit) tells that awaited jobs finished — "!" and their ids, comma-separated, or "!"
 * alone for "look at all of them" (migrations.ts 8) — and goes to `subscribeFinished`'s listeners.
 *
 * The connection is opened when the first listener subscribes and closed with the last one.
 * A `SELECT 1` every `checkEveryMs` (bounded by the client's query_timeout) finds a connection
 * gone silent, which would otherwise deliver nothing and report nothing, forever.
 * When it drops (server restart, pg_terminate_backend, network, silence) it reconnects with exponential
 * backoff (100 ms doubling to 5 s, jittered) forever, and after every re-LISTEN (or a first
 * LISTEN that needed retries) calls the listeners with `null`: notifications sent while it was
 * away are lost, so every queue may have work. After a first LISTEN the awaited-job listeners get
 * `null` too: a job awaited before the LISTEN was up may have finished unheard. It never logs and never throws: errors go to
 * `onError` when one is given. Until the first LISTEN is up, the store also notifies in-process
 * listeners of its own inserts directly (notifyLocally below), so a subscribe-then-enqueue is never missed.
 */
import type pg from "pg";
import { destroyClient, endClient, isReadTimeout } from "./connection.js";
import { quoteIdent } from "./queries.js";

export interface NotifierOptions {
  /** A new, unconnected client for the LISTEN session. */
  createClient: () => pg.Client;
  channel: string;
  onError?: (err: Error) => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /**
   * How often to check the connection with `SELECT 1` (the client's query_timeout bounds it). A
   * connection gone silent delivers no notification and no error: only a statement finds it.
   */
  checkEveryMs?: () => number;
  /** The check got no answer (the connection is then dropped and reopened). */
  onSilent?: (ms: number) => void;
}

type Listener = (queue: string | null) => void;
/** Ids of awaited jobs that finished; null: any of them may have (a notification may be lost). */
type FinishedListener = (ids: string[] | null) => void;

export class Notifier {
  private readonly listeners = new Set<Listener>();
  private readonly finishedListeners = new Set<FinishedListener>();
  private client: pg.Client | null = null;
  private listening = false;
  private active = false;
  private everListened = false;
  private failures = 0;
  /** Bumped on every (re)connect and on stop: events of an older connection are ignored. */
  private generation = 0;
  private timer: NodeJS.Timeout | null = null;
  private checkTimer: NodeJS.Timeout | null = null;
  private waiters: Array<() => void> = [];

  constructor(private readonly options: NotifierOptions) {}

  /** True while the LISTEN is in effect: every commit from now on reaches the listeners. */
  get isListening(): boolean {
    return this.listening;
  }

  get size(): number {
    return this.listeners.size;
  }

  subscribe(listener: Listener): () => void {
    return this.join(this.listeners, listener);
  }

  /** Listens for awaited jobs that finished (waitFor). */
  subscribeFinished(listener: FinishedListener): () => void {
    return this.join(this.finishedListeners, listener);
  }

  private join<L>(set: Set<L>, listener: L): () => void {
    set.add(listener);
    if (!this.active) {
      this.active = true;
      void this.connect();
    }
    return () => {
      if (set.delete(listener) && this.listeners.size + this.finishedListeners.size === 0) void this.stop();
    };
  }

  /** Calls every listener of the payload; one that throws does not stop the others. null: everyone. */
  emit(payload: string | null): void {
    const finished = payload === null ? null : payload.startsWith("!") ? finishedIds(payload) : undefined;
    const calls: Array<() => void> = [];
    if (finished === undefined || payload === null)
      for (const listener of this.listeners) calls.push(() => listener(payload));
    if (finished !== undefined)
      for (const listener of this.finishedListeners) calls.push(() => listener(finished));
    for (const call of calls) {
      try {
        call();
      } catch (err) {
        this.report(err);
      }
    }
  }

  /** Resolves once the LISTEN is in effect (tests; a store that is not subscribed waits forever). */
  whenListening(): Promise<void> {
    if (this.listening) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.active = false;
    this.generation++;
    this.listening = false;
    this.everListened = false;
    this.failures = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.checkTimer) clearTimeout(this.checkTimer);
    this.checkTimer = null;
    const client = this.client;
    this.client = null;
    // Bounded: on a silent connection the goodbye is never acknowledged.
    if (client) await endClient(client, 1_000);
  }

  /** Closes for good: drops the listeners too. */
  async close(): Promise<void> {
    this.listeners.clear();
    this.finishedListeners.clear();
    await this.stop();
  }

  private report(err: unknown): void {
    try {
      this.options.onError?.(err instanceof Error ? err : new Error(String(err)));
    } catch {
      // an error reporter that throws must not take the notifier down
    }
  }

  private async connect(): Promise<void> {
    const generation = ++this.generation;
    const client = this.options.createClient();
    this.client = client;
    let dropped = false;
    const drop = (err?: unknown) => {
      if (dropped) return;
      dropped = true;
      if (isReadTimeout(err)) destroyClient(client);
      else client.end().catch(() => {});
      if (generation !== this.generation) return;
      if (this.checkTimer) clearTimeout(this.checkTimer);
      this.checkTimer = null;
      this.client = null;
      this.listening = false;
      // A silent check was reported by onSilent already, in words.
      if (err && !isReadTimeout(err)) this.report(err);
      this.scheduleReconnect();
    };
    // Both stay attached after the end: a late error on a dead socket must never be unhandled.
    client.on("error", (err) => drop(err));
    client.on("end", () => drop());
    client.on("notification", (msg) => {
      if (generation === this.generation && msg.channel === this.options.channel)
        this.emit(msg.payload ?? null);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdent(this.options.channel)}`);
    } catch (err) {
      drop(err);
      return;
    }
    if (generation !== this.generation || dropped) {
      if (!dropped) client.end().catch(() => {});
      return;
    }
    this.listening = true;
    this.scheduleCheck(client, generation, drop);
    // After a drop, or a first connection that took several tries: notifications were missed.
    const reconnected = this.everListened || this.failures > 0;
    this.failures = 0;
    this.everListened = true;
    for (const resolve of this.waiters.splice(0)) resolve();
    if (reconnected) this.emit(null);
    // A first LISTEN: a job awaited before it was up may have finished meanwhile, its NOTIFY
    // heard by nobody (a CI run lost one so), so the waiters look at all their jobs once now.
    else if (this.finishedListeners.size > 0) this.emitFinishedToAll();
  }

  private emitFinishedToAll(): void {
    for (const listener of this.finishedListeners) {
      try {
        listener(null);
      } catch (err) {
        this.report(err);
      }
    }
  }

  private scheduleCheck(client: pg.Client, generation: number, drop: (err?: unknown) => void): void {
    const everyMs = this.options.checkEveryMs?.();
    if (!everyMs) return;
    this.checkTimer = setTimeout(async () => {
      this.checkTimer = null;
      const started = Date.now();
      try {
        await client.query("SELECT 1");
      } catch (err) {
        if (isReadTimeout(err)) this.options.onSilent?.(Date.now() - started);
        drop(err);
        return;
      }
      if (generation === this.generation && this.client === client)
        this.scheduleCheck(client, generation, drop);
    }, everyMs);
    this.checkTimer.unref();
  }

  private scheduleReconnect(): void {
    if (!this.active || this.timer) return;
    const min = this.options.minBackoffMs ?? 100;
    const max = this.options.maxBackoffMs ?? 5_000;
    const delay = Math.min(max, min * 2 ** Math.min(this.failures, 16)) * (0.5 + Math.random() * 0.5);
    this.failures++;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.active) void this.connect();
    }, delay);
    this.timer.unref();
  }
}

/**
 * Runs the notifications for in-process listeners of a statement that ran while the LISTEN
 * connection was not (yet, or no longer) up (`wasListening` false): its NOTIFY reached no one here.
 * `queues` is only computed then (the statement's rows, on the hot paths of finish and rescue).
 */
export function notifyLocally(
  notifier: Notifier,
  wasListening: boolean,
  queues: () => Iterable<string>,
): void {
  if (wasListening || notifier.size === 0) return;
  for (const queue of new Set(queues())) queueMicrotask(() => notifier.emit(queue));
}

/** The ids of a "!" payload, or null for "!" alone (the ids did not fit: look at every one). */
function finishedIds(payload: string): string[] | null {
  return payload.length > 1 ? payload.slice(1).split(",") : null;
}
