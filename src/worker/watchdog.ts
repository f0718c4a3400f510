/**
 * Warns when the event loop was blocked long enough to endanger leases (issue 12, item 7).
 *
 * Leases are kept alive by a heartbeat timer on the event loop; a handler that computes for
 * longer than the lease without yielding stops that timer, its lease expires, another worker's
 * rescuer takes the job and runs it again while the first run still computes (history
 * `lost, lost, lost`). errand cannot interrupt synchronous code, but it can say so afterwards:
 * a timer that ticks every `checkMs` measures how late it ran, and a lateness past half the
 * lease is logged with the jobs that were running then, and those started since the last tick
 * (a synchronous handler has already returned by the time the late tick runs). Half the lease: the heartbeat runs every
 * third of it, so a stall of half the lease already leaves only a sixth of it as margin.
 * A timer rather than perf_hooks.monitorEventLoopDelay: the histogram says how long the worst
 * stall was, not when it ended, and the warning should come right after the stall.
 */
export interface StalledJob {
  id: string;
  name: string;
  queue: string;
}

export class Watchdog {
  private timer: NodeJS.Timeout | undefined;
  private last = 0;
  /** Jobs started since the last tick (the latest few). */
  private recent: StalledJob[] = [];
  readonly checkMs: number;
  readonly warnMs: number;

  constructor(
    private readonly leaseMs: number,
    private readonly running: () => StalledJob[],
    private readonly warn: (fields: Record<string, unknown>, message: string) => void,
  ) {
    this.warnMs = Math.max(50, Math.floor(leaseMs / 2));
    this.checkMs = Math.max(10, Math.min(500, Math.floor(this.warnMs / 5)));
  }

  start(): void {
    this.last = performance.now();
    this.timer = setInterval(() => this.check(), this.checkMs);
    this.timer.unref();
  }

  /** A job starts: cheap, since a worker may start thousands a second. */
  started(job: StalledJob): void {
    if (this.recent.length >= 20) this.recent = this.recent.slice(-9);
    this.recent.push(job);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    const now = performance.now();
    const blockedMs = Math.round(now - this.last - this.checkMs);
    this.last = now;
    const recent = this.recent;
    if (recent.length > 0) this.recent = [];
    if (blockedMs < this.warnMs) return;
    // Id, name and queue only: a claimed job carries its payload, which logs must not show.
    const jobs = [
      ...new Map(
        [...recent, ...this.running()].map(({ id, name, queue }) => [id, { id, name, queue }]),
      ).values(),
    ].slice(-10);
    const names = jobs.map((j) => `${j.name} ${j.id}`).join(", ");
    this.warn(
      { blockedMs, leaseMs: this.leaseMs, jobs },
      `event loop blocked for ${blockedMs} ms (lease ${this.leaseMs} ms) while running ${names || "no job"}: ` +
        "leases are not extended while the loop is blocked, so a job may be run again elsewhere; " +
        "run CPU-bound handlers in a thread (runInThread) or yield more often",
    );
  }
}
