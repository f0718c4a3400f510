/**
 * A bounded run's claims (Errand.processJobs, an HTTP tick): at most `limit` jobs, none once
 * `deadline` (epoch ms) has passed. Claim loops reserve before they claim and give back what the
 * store did not return, so several queues share one budget without overshooting it.
 */
export class ClaimBudget {
  private left: number;

  constructor(
    readonly limit: number,
    readonly deadline: number,
  ) {
    this.left = limit;
  }

  /** Takes up to `wanted` claims: 0 once the budget is spent or the deadline passed. */
  reserve(wanted: number): number {
    if (Date.now() >= this.deadline) return 0;
    const granted = Math.min(wanted, this.left);
    this.left -= granted;
    return granted;
  }

  /** Gives back claims reserved but not used (fewer jobs were due, or the claim failed). */
  giveBack(unused: number): void {
    if (unused > 0) this.left += unused;
  }

  /** Jobs claimed so far. */
  get claimed(): number {
    return this.limit - this.left;
  }

  /** Milliseconds until the deadline, 0 once it passed. */
  get msLeft(): number {
    return Math.max(0, this.deadline - Date.now());
  }
}
