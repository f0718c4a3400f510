/**
 * How a pause reaches jobs a worker already holds.
 *
 * A claim of a paused queue takes nothing (the store checks the pause inside the claim's own
 * statement or transaction). But a worker holds claimed jobs that have not started yet — its
 * read-ahead buffer, and the jobs of a claim still on its way back — and `pauseQueue` promises
 * that once it returns no handler of that queue starts anywhere. Asking the store before each
 * start would cost a round trip per job. Instead each producer keeps a *start window*:
 *
 * - a claim that took jobs saw the queue unpaused at some instant after the worker sent it
 *   (`sentAt`, the worker's monotonic clock), and so did a probe (`Store.isQueuePaused`) that
 *   answered false;
 * - the producer starts jobs only until `sentAt + START_WINDOW_MS`; a job due to start later
 *   waits for a probe (one round trip per window per queue, only while jobs sit in the buffer
 *   longer than that), which either opens a new window or, when the queue is paused, gives the
 *   buffered jobs back untouched (returnJobs: no attempt, no history entry);
 * - `pauseQueue` returns PAUSE_SETTLE_MS after the pause committed. Any claim or probe that did
 *   not see the pause was sent before that commit, so its window closed before pauseQueue
 *   returns: no start on any worker of any host comes after it. Only elapsed time is compared,
 *   each side on its own monotonic clock, so the hosts' wall clocks need not agree.
 *
 * The margin between the two (PAUSE_SETTLE_MS − START_WINDOW_MS) covers the few milliseconds
 * between the producer's check and the handler's first line (an async payload schema). A worker
 * whose event loop was blocked checks the window when it wakes, so it cannot start a job late.
 *
 * The window is about 400 ms: most claims of a busy queue come back well within it (a batch
 * of 500 on Postgres: 6-9 ms, bench/hot-plans.ts), and a read-ahead job waits about 100 ms.
 */

/** How long after sending a claim or probe that saw its queue unpaused a producer may start that queue's jobs. */
export const START_WINDOW_MS = 400;

/** How long pauseQueue waits after the pause committed, so that every start window opened before it has closed. */
export const PAUSE_SETTLE_MS = 500;

/** A producer's start window: open until a deadline on the monotonic clock. */
export class StartWindow {
  private openUntil = Number.NEGATIVE_INFINITY;

  /** A claim or probe sent at `sentAt` (performance.now()) found the queue unpaused. */
  confirm(sentAt: number): void {
    this.openUntil = Math.max(this.openUntil, sentAt + START_WINDOW_MS);
  }

  get isOpen(): boolean {
    return performance.now() < this.openUntil;
  }
}
