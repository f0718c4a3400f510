import { EventEmitter } from "node:events";
import { hostname } from "node:os";
import { type Duration, parseTimerDuration } from "../duration.js";
import { ValidationError } from "../errors.js";
import type { Logger } from "../logger.js";
import type { ClaimedJob, Store } from "../store/types.js";
import { ClaimBudget, type Claims, NO_BUDGET } from "./budget.js";
import { Completer } from "./completer.js";
import { Deadline } from "./deadline.js";
import { executorDeps } from "./executor-deps.js";
import { Heartbeat } from "./heartbeat.js";
import { Maintenance, pruneFinished, rescueExpiredLeases } from "./maintenance.js";
import {
  type QueueOptions,
  queueConcurrency,
  type WorkerOptions,
  type WorkerSettings,
  workerSettings,
} from "./options.js";
import { emitSafely } from "./outcome-events.js";
import { Producer, type ProducerHost, returnBuffered } from "./producer.js";
import { RunningJobs } from "./running.js";
import type { Deps, StopResult, WorkerSignals } from "./types.js";
import { Watchdog } from "./watchdog.js";

export type { Deps, QueueOptions, StopResult, WorkerOptions, WorkerSignals };

/** How often a worker runs its store's upkeep (Store.upkeep: Postgres vacuums when dead rows pile up). */
const UPKEEP_MS = 10_000;

/**
 * Past the shutdown timeout, how long the released jobs' outcomes may take to be written before
 * the stop gives up on them; after a second signal or a crash, HURRY_MS. A healthy store writes
 * them in milliseconds (a second leaves room for a loaded machine); one that cannot must not
 * hold the process: the unwritten jobs' leases expire and rescuers return them.
 */
export const FINAL_WRITE_MS = 1000;
const HURRY_MS = 500;
/** A stopping worker's longest wait for another connection's lock (Store.limitLockWaits). */
const STOP_LOCK_WAIT_MS = 250;

/**
 * One worker process's runtime and its lifecycle (start, graceful and hard stop, hurry, crash).
 * Its parts live beside it: a producer per queue with its own concurrency (producer.ts: claims in
 * batches sized to the free slots; an idle one sleeps until a wake-up signal — in-process
 * enqueue, LISTEN/NOTIFY, another process's SQLite commit —, the next delayed job's due time, or
 * the poll interval; it never busy-spins), the running jobs (running.ts), a batched completer,
 * and the maintenance services: one heartbeat for all leases, a rescuer for dead workers' jobs,
 * a pruner, the schedule ticker and the store's upkeep (maintenance.ts).
 */
export class Worker implements ProducerHost {
  readonly id: string;
  /** Test signals: see WorkerSignals. */
  readonly signals = new EventEmitter<WorkerSignals>();
  private readonly settings: WorkerSettings;
  private readonly completer: Completer;
  /** The jobs this worker runs now. */
  private readonly jobs: RunningJobs;
  private readonly producers: Producer[];
  private readonly maintenance: Maintenance;
  /** A bounded run's wake-up at its deadline. */
  private boundedTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | null = null;
  private stopping: Promise<StopResult> | null = null;
  private started = false;
  private registered: Promise<void> = Promise.resolve();
  private readonly watchdog: Watchdog;
  private readonly heartbeat: Heartbeat;
  /** Set by stop(): the hard limit every wait of the stop is raced against. */
  private deadline: Deadline | null = null;
  /** When a stop aborts the jobs still running and releases them (its timeout). */
  private grace: Deadline | null = null;
  /** A bounded run (Errand.processJobs): claims left, and when claiming ends. Null for a normal worker. */
  private readonly bounded: ClaimBudget | null;
  /** The claim budget the claim loops reserve from: the bounded run's, else NO_BUDGET. */
  readonly claims: Claims;

  constructor(
    private readonly deps: Deps,
    queues: Record<string, QueueOptions>,
    options: WorkerOptions = {},
    /** Internal: claim at most `limit` jobs, none after `deadline` (epoch ms), and stop claiming when nothing is due. */
    bounded?: { limit: number; deadline: number },
  ) {
    this.bounded = bounded
      ? new ClaimBudget(bounded.limit, bounded.deadline, Object.keys(queues).length)
      : null;
    this.claims = this.bounded ?? NO_BUDGET;
    this.settings = workerSettings(options, bounded !== undefined, deps.store.kind);
    this.id = this.settings.id;
    this.completer = new Completer(deps.store, deps.log, this.settings.leaseMs);
    this.jobs = new RunningJobs({
      completer: this.completer,
      events: deps.events,
      log: deps.log,
      findJob: deps.findJob,
      started: (claimed) => this.watchdog.started(claimed),
    });
    this.producers = Object.entries(queues).map(([queue, q]) => {
      const concurrency = queueConcurrency(queue, q);
      const flow = deps.flowLimits?.(queue) ?? null;
      return new Producer(this, queue, concurrency, executorDeps(deps, this.id, q.classify), flow);
    });
    if (this.producers.length === 0) throw new ValidationError("a worker needs at least one queue");
    this.maintenance = new Maintenance(deps.log, () => this.stopping !== null);
    this.heartbeat = new Heartbeat(
      deps.store,
      this.id,
      this.settings.leaseMs,
      this.jobs.active,
      this.producers,
    );
    this.watchdog = new Watchdog(
      this.settings.leaseMs,
      () =>
        [...this.jobs.active.values()].map(({ claimed: c }) => ({ id: c.id, name: c.name, queue: c.queue })),
      (fields, message) => deps.log.warn(fields, message),
    );
  }

  get queues(): Record<string, number> {
    return Object.fromEntries(this.producers.map((r) => [r.queue, r.concurrency]));
  }

  /** Jobs currently held by this worker. */
  get running(): number {
    return this.jobs.active.size;
  }

  start(): this {
    if (this.started) return this;
    this.started = true;
    const { store, log } = this.deps;
    store.useLease?.(this.settings.leaseMs);
    this.unsubscribe = store.onJobsAvailable((queue) => {
      for (const producer of this.producers) if (queue === null || queue === producer.queue) producer.wake();
    });
    this.maintenance.add(
      "heartbeat",
      this.settings.heartbeatMs,
      async () => {
        await this.heartbeat.beat(this.jobs.processed);
        this.signal("heartbeat");
      },
      false,
      true,
    );
    if (!this.bounded) this.maintenance.add("rescuer", this.settings.rescueMs, () => this.rescue(), true); // a bounded run rescues once, before it starts
    if (this.settings.pruneMs > 0)
      this.maintenance.add("pruner", this.settings.pruneMs, () => this.prune(), true);
    if (this.deps.maintenance)
      this.maintenance.add("schedules", Math.min(1000, this.settings.pollMs), this.deps.maintenance, true);
    if (store.upkeep && !this.bounded)
      this.maintenance.add("upkeep", UPKEEP_MS, () => (store.upkeep as () => Promise<void>)(), true);
    this.maintenance.start();
    this.registered = store
      .registerWorker({
        id: this.id,
        host: hostname(),
        pid: process.pid,
        queues: this.queues,
        running: 0,
        processed: 0,
      })
      .catch((err) => log.warn({ err }, "could not register worker"));
    if (this.bounded) {
      // At the deadline, wake loops waiting for a free slot so they see the time is up.
      const timer = setTimeout(() => {
        for (const producer of this.producers) producer.wake();
      }, this.bounded.msLeft);
      timer.unref();
      this.boundedTimer = timer;
    }
    // A bounded run offers its budget to the queues from a random one on: with more queues than
    // claims, starting at the first every time served the same queues tick after tick.
    const n = this.producers.length;
    const from = this.bounded ? Math.floor(Math.random() * n) : 0;
    for (let i = 0; i < n; i++) this.producers[(from + i) % n].start();
    this.watchdog.start();
    log[this.lifecycleLevel]({ worker: this.id, queues: this.queues }, "worker started");
    return this;
  }

  /** Returns dead workers' jobs (expired leases) to pending; run periodically, and by a bounded run before it claims. */
  async rescue(): Promise<void> {
    const { store, log, events } = this.deps;
    this.signal("rescued", await rescueExpiredLeases(store, log, events));
  }

  /** Deletes finished jobs past retention; run periodically, and once by a bounded run when it ends. */
  async prune(): Promise<void> {
    await pruneFinished(this.deps.store, this.deps.log, this.settings.retention);
  }

  /** Runs a claimed job in a slot of `producer` (ProducerHost): it is told when the slot is free and when the job is over. */
  run(claimed: ClaimedJob, producer: Producer): void {
    this.jobs.run(claimed, producer);
  }

  /** Outcomes run but not yet written; the claim loops pause while it is large (back-pressure). */
  get outcomeBacklog(): number {
    return this.completer.backlog;
  }

  outcomesWritten(): Promise<void> {
    return this.completer.settled();
  }

  get claimOptions() {
    return {
      workerId: this.id,
      leaseMs: this.settings.leaseMs,
      batchSize: this.settings.batchSize,
      pollMs: this.settings.pollMs,
      readAheadMs: this.settings.readAheadMs,
    };
  }

  get store(): Store {
    return this.deps.store;
  }

  get log(): Logger {
    return this.deps.log;
  }

  idle(queue: string): void {
    this.signal("idle", queue);
  }

  throttled(queue: string, held: number, retryInMs: number | null): void {
    emitSafely(this.deps.events, this.deps.log, "throttled", { queue, held, retryInMs });
  }

  /** A test signal (WorkerSignals); a listener that throws is logged and breaks nothing. */
  private signal<K extends keyof WorkerSignals>(name: K, ...args: WorkerSignals[K]): void {
    emitSafely(this.signals as EventEmitter, this.deps.log, name, ...args);
  }

  get isStopping(): boolean {
    return this.stopping !== null;
  }

  /** Start and stop lines: a bounded run (one per tick) logs them at debug. */
  private get lifecycleLevel(): "info" | "debug" {
    return this.bounded ? "debug" : "info";
  }

  /**
   * A bounded run's end: waits until every claim loop has ended by itself (budget spent,
   * deadline passed, nothing due), then stops gracefully. Jobs still running get until the
   * deadline plus `graceMs` to finish; then they are aborted and released, like at shutdown.
   */
  async settle(graceMs: number): Promise<StopResult> {
    await Promise.all(this.producers.map((r) => r.stopped));
    const untilDeadline = this.bounded?.msLeft ?? 0;
    return this.stop({ timeout: untilDeadline + graceMs });
  }

  /**
   * Graceful stop: claim nothing more, let running jobs finish; past `timeout` abort their
   * signals and return them to pending (the attempt is recorded, not charged). Idempotent.
   */
  stop(options: { timeout?: Duration } = {}): Promise<StopResult> {
    if (!this.stopping) {
      const timeoutMs = parseTimerDuration(options.timeout ?? this.settings.shutdownMs, "timeout");
      this.grace = new Deadline(timeoutMs);
      this.deadline = new Deadline(timeoutMs + FINAL_WRITE_MS);
      this.stopping = this.stopBy(this.deadline, timeoutMs);
    }
    return this.stopping;
  }

  /**
   * A stop that ends within `timeoutMs`: begins one, or brings a stop under way with a longer
   * timeout closer (a bounded run's own end, with its finish timeout). For errand.close({ timeout })
   * — errand serve's SIGTERM — where stop() would join the longer stop.
   */
  stopWithin(timeoutMs: number): Promise<StopResult> {
    if (!this.stopping) return this.stop({ timeout: timeoutMs });
    this.grace?.shorten(timeoutMs);
    this.deadline?.shorten(timeoutMs + FINAL_WRITE_MS);
    return this.stopping;
  }

  /**
   * A stop resolves by its timeout plus FINAL_WRITE_MS whatever the store does: waits that the
   * store holds past that are abandoned (their jobs come back when their leases expire).
   */
  private async stopBy(deadline: Deadline, timeoutMs: number): Promise<StopResult> {
    const restoreWaits = this.deps.store.limitLockWaits?.(STOP_LOCK_WAIT_MS) ?? (() => {});
    const result = await deadline.race(this.doStop(timeoutMs));
    deadline.cancel();
    if (result) {
      restoreWaits();
      return result;
    }
    const unwritten = this.jobs.active.size + this.completer.backlog;
    this.abortRunning();
    // Not awaited: it makes the completer give up after a few more tries instead of retrying
    // forever, so an embedding program is not kept alive by its retry timer.
    void this.completer.drain().finally(restoreWaits);
    this.maintenance.stop();
    clearTimeout(this.boundedTimer);
    this.watchdog.stop();
    this.deps.log.error(
      { worker: this.id, unwritten },
      "shutdown deadline passed with the store not answering: stopping without recording the remaining outcomes; their jobs return when their leases expire",
    );
    return { clean: false, released: this.jobs.active.size, abandoned: true };
  }

  /** A second signal: abort running jobs now and give their outcomes HURRY_MS at most. */
  hurry(): number {
    this.deadline?.shorten(HURRY_MS);
    return this.abortRunning();
  }

  /**
   * A crash (crash.ts): the job at fault is charged for it if it still runs (none is, when its
   * handler had already ended); when no job's code caused it, every running job is. Every
   * running job is aborted. Returns how many were aborted.
   */
  crashed(culprit: string | undefined, error: Error): number {
    this.jobs.chargeCrash(culprit, error);
    this.deadline?.shorten(HURRY_MS);
    return this.abortRunning();
  }

  private async doStop(timeoutMs: number): Promise<StopResult> {
    const { log, store } = this.deps;
    this.watchdog.stop();
    log[this.lifecycleLevel](
      { worker: this.id, running: this.jobs.active.size, timeoutMs },
      "worker stopping: no new claims",
    );
    this.unsubscribe?.();
    for (const producer of this.producers) producer.wake();
    // The timeout counts from the stop: a claim the store holds (a lock, a dead connection) must
    // not postpone it.
    const grace = this.grace ?? new Deadline(timeoutMs);
    const drained =
      (await grace.race(
        (async () => {
          await Promise.all(this.producers.map((r) => r.stopped));
          await returnBuffered(this.producers, this.deps.store, this.deps.log);
          await this.allSettled();
          return true;
        })(),
      )) === true;
    grace.cancel();
    let released = 0;
    if (!drained) {
      released = this.jobs.active.size;
      log.warn({ released }, "shutdown timeout reached: aborting running jobs and returning them to pending");
      this.abortRunning();
      // Draining now tells the completer to give up after a few failed writes: with the store
      // unreachable, the aborted jobs' outcomes would otherwise be retried forever and stop()
      // would never return (their leases expire and rescuers take the jobs back).
      await Promise.all([this.allSettled(), this.completer.drain()]);
    }
    await this.completer.drain();
    this.maintenance.stop();
    clearTimeout(this.boundedTimer);
    await this.registered; // on a pool, an unregister must not overtake the register still in flight
    await store.unregisterWorker(this.id).catch((err) => log.warn({ err }, "could not unregister worker"));
    log[this.lifecycleLevel](
      { worker: this.id, clean: drained, processed: this.jobs.processed },
      "worker stopped",
    );
    return { clean: drained, released };
  }

  /**
   * Ends the grace period now: aborts every running job's signal with the shutdown reason, so
   * each is released (recorded as interrupted, not charged). What the hard timeout does; also for
   * a second SIGTERM or a crash during a graceful stop. Returns how many jobs were aborted.
   */
  abortRunning(): number {
    return this.jobs.abortAll();
  }

  private async allSettled(): Promise<void> {
    while (this.producers.some((r) => r.hasInFlight)) {
      await Promise.all(this.producers.map((r) => r.settled()));
    }
  }
}
