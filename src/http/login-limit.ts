/**
 * A limit on failed logins through the dashboard's form: at most `max` failures in any
 * `windowMs`; past it the form answers 429 (with Retry-After) without looking at the token, the
 * right one included, until the oldest failure ages out. One limiter per handler, not per client:
 * the Fetch handler does not know the client's address reliably (behind a proxy every request
 * comes from the proxy), and a per-address limit is beaten by spreading guesses over addresses.
 * The cost is that someone hammering the form can keep it locked for others; bearer calls
 * (scripts, Prometheus) are not limited, and a signed-in session keeps working.
 * Default 10 per minute: a person mistyping a token never meets it, and at that rate a
 * 32-character random token (the minimum beyond loopback) is out of reach for any guesser.
 */
export interface FailedLoginLimiterOptions {
  max?: number;
  windowMs?: number;
  now?: () => number;
}

export class FailedLoginLimiter {
  private readonly max: number;
  private readonly windowMs: number;
  private readonly now: () => number;
  /** Times of the failures inside the window, oldest first; never more than `max`. */
  private failures: number[] = [];

  constructor(options: FailedLoginLimiterOptions = {}) {
    this.max = options.max ?? 10;
    this.windowMs = options.windowMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /** 0 when a login may be tried now, else how long until one may. */
  retryAfterMs(): number {
    const now = this.now();
    while (this.failures.length > 0 && this.failures[0] + this.windowMs <= now) this.failures.shift();
    return this.failures.length < this.max ? 0 : this.failures[0] + this.windowMs - now;
  }

  recordFailure(): void {
    this.retryAfterMs(); // drops the failures that aged out
    this.failures.push(this.now());
    if (this.failures.length > this.max) this.failures.shift();
  }
}
