/**
 * A worker's background services (River's internal/maintenance, Oban's plugins): the heartbeat,
 * the rescuer (dead workers' jobs back to pending), the pruner (finished jobs past retention),
 * the schedule ticker and the store's upkeep. Each is a named Service with start and stop; the
 * worker holds them in one Maintenance and stops them all at once.
 */
import type { EventEmitter } from "node:events";
import type { Logger } from "../logger.js";
import type { PruneRequest, RescuedJob, Store } from "../store/types.js";

/**
 * Runs `task` every `everyMs` — jittered by ±20% and run once at start when asked, so workers
 * started together do not all hit the store at the same instant — never two runs at once, none
 * while `paused()` (the worker is stopping). Errors are logged, not thrown: the next run tries again.
 */
export class Service {
  private timer: NodeJS.Timeout | null = null;
  private busy = false;

  constructor(
    readonly name: string,
    private readonly everyMs: number,
    private readonly task: () => Promise<unknown>,
    private readonly options: { jitter: boolean; log: Logger; paused: () => boolean },
  ) {}

  start(): void {
    if (this.timer) return;
    const { jitter } = this.options;
    const interval = jitter ? Math.round(this.everyMs * (0.8 + Math.random() * 0.4)) : this.everyMs;
    this.timer = setInterval(() => this.run(), interval);
    this.timer.unref();
    if (jitter) setImmediate(() => this.run());
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async run(): Promise<void> {
    if (this.busy || !this.timer || this.options.paused()) return;
    this.busy = true;
    try {
      await this.task();
    } catch (err) {
      this.options.log.warn({ err, service: this.name }, "background task failed; will try again");
    } finally {
      this.busy = false;
    }
  }
}

/** A worker's services, started in the order added and stopped together. */
export class Maintenance {
  private readonly services: Service[] = [];

  constructor(
    private readonly log: Logger,
    private readonly paused: () => boolean,
  ) {}

  /**
   * Adds a service; start() starts it. Services pause while the worker stops, except those that
   * `runWhileStopping` (the heartbeat: the jobs a graceful stop waits for must keep their leases,
   * or another worker rescues and runs them again while they still run).
   */
  add(
    name: string,
    everyMs: number,
    task: () => Promise<unknown>,
    jitter = false,
    runWhileStopping = false,
  ): this {
    const paused = runWhileStopping ? () => false : this.paused;
    this.services.push(new Service(name, everyMs, task, { jitter, log: this.log, paused }));
    return this;
  }

  start(): void {
    for (const service of this.services) service.start();
  }

  stop(): void {
    for (const service of this.services) service.stop();
  }
}

/** The rescuer's pass: expired leases back to pending, each logged and emitted as "lost". */
export async function rescueExpiredLeases(
  store: Store,
  log: Logger,
  events: EventEmitter,
): Promise<RescuedJob[]> {
  const rescued = await store.rescueExpiredLeases();
  for (const job of rescued) {
    log.warn(
      { jobId: job.id, job: job.name, queue: job.queue, attempt: job.attempt, state: job.state },
      "rescued a job whose lease expired (its worker stopped heartbeating)",
    );
    events.emit("lost", job);
  }
  return rescued;
}

/** The pruner's pass: finished jobs past retention deleted (with their own ctx.once entries), and old global entries. */
export async function pruneFinished(store: Store, log: Logger, retention: PruneRequest): Promise<void> {
  const pruned = await store.pruneFinished(retention);
  if (pruned > 0) log.info({ pruned }, "pruned finished jobs past retention");
}
