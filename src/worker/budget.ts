/**
 * A bounded run's claims (Errand.processJobs, an HTTP tick): at most `limit` jobs, none once
 * `deadline` (epoch ms) has passed. Claim loops reserve before they claim and give back what the
 * store did not return, so several queues share one budget without overshooting it.
 *
 * Shared fairly. A reservation takes at most an equal share of the limit (limit / queues, at
 * least 1), so the first queue's loop cannot take the whole budget while the others wait; and a
 * loop that finds nothing left while other loops' claims are still out waits for what those give
 * back (`changed`) instead of ending. Before, with a limit under 10 per queue (or the default 100
 * over 12 queues), the later queues' loops found the budget reserved and ended for good, so their
 * due jobs were never claimed, tick after tick (test/schedule/process.test.ts).
 */
/** What a claim loop asks of its worker's claim budget; a worker that is not bounded has NO_BUDGET. */
export interface Claims {
  /** A bounded run: claim loops end when nothing is due instead of waiting for more. */
  readonly bounded: boolean;
  reserve(wanted: number): number;
  settle(reserved: number, unused: number): void;
  changed(): Promise<boolean>;
  /** Past the deadline: nothing more is claimed. */
  readonly timeUp: boolean;
  readonly claimed: number;
}

/** A worker that is not bounded: every claim it asks for, for as long as it runs. */
export const NO_BUDGET: Claims = {
  bounded: false,
  reserve: (wanted) => wanted,
  settle: () => {},
  changed: () => Promise.resolve(false),
  timeUp: false,
  claimed: 0,
};

export class ClaimBudget implements Claims {
  readonly bounded = true;
  private left: number;
  private out = 0;
  private readonly share: number;
  private wakeUps: (() => void)[] = [];

  constructor(
    readonly limit: number,
    readonly deadline: number,
    queues = 1,
  ) {
    this.left = limit;
    this.share = Math.max(1, Math.ceil(limit / Math.max(1, queues)));
  }

  /** Takes up to `wanted` claims (at most a queue's share): 0 once the budget is out or the deadline passed. */
  reserve(wanted: number): number {
    if (Date.now() >= this.deadline) return 0;
    const granted = Math.min(wanted, this.left, this.share);
    this.left -= granted;
    this.out += granted;
    return granted;
  }

  /** Settles a reservation of `reserved` claims: `unused` of them come back (fewer were due, or the claim failed). */
  settle(reserved: number, unused: number): void {
    this.out -= reserved;
    if (unused > 0) this.left += unused;
    const wakeUps = this.wakeUps;
    this.wakeUps = [];
    for (const wake of wakeUps) wake();
  }

  /**
   * For a loop that got nothing: resolves true once another loop's claim settles (its unused
   * claims may come back), false at once when no claim is out or the deadline passed (the
   * budget is spent for good).
   */
  changed(): Promise<boolean> {
    if (this.out === 0 || this.msLeft === 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), this.msLeft);
      timer.unref();
      this.wakeUps.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Jobs claimed so far. */
  get claimed(): number {
    return this.limit - this.left - this.out;
  }

  get timeUp(): boolean {
    return this.msLeft === 0;
  }

  /** Milliseconds until the deadline, 0 once it passed. */
  get msLeft(): number {
    return Math.max(0, this.deadline - Date.now());
  }
}
