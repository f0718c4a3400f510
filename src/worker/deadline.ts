import { MAX_TIMER_MS } from "../duration.js";

/**
 * The hard limit of a worker's stop (docs/semantics.md, Shutdown, "a shutdown's hard timeout is hard
 * whatever the store does"). A stop awaits store calls — the claim in flight, the outcome
 * writes, the unregister — and a store that is down or locked can hold any of them for as long
 * as it likes (issue 12: a worker exited 45 s after SIGTERM, once the database came back).
 * Every wait of the stop is raced against one Deadline, which a second signal can bring closer.
 */
export class Deadline {
  private timer: NodeJS.Timeout | undefined;
  private at: number;
  private fire!: () => void;
  /** Resolves when the deadline passes (never rejects). */
  readonly passed: Promise<void>;
  private done = false;

  constructor(ms: number) {
    this.at = Date.now() + ms;
    this.passed = new Promise<void>((resolve) => {
      this.fire = () => {
        this.done = true;
        resolve();
      };
    });
    this.arm();
  }

  get expired(): boolean {
    return this.done;
  }

  /** Moves the deadline to `ms` from now, if that is sooner. */
  shorten(ms: number): void {
    const at = Date.now() + ms;
    if (this.done || at >= this.at) return;
    this.at = at;
    this.arm();
  }

  /** Resolves with `work`'s value, or with `undefined` once the deadline has passed. */
  race<T>(work: Promise<T>): Promise<T | undefined> {
    return Promise.race([work, this.passed.then(() => undefined)]);
  }

  cancel(): void {
    clearTimeout(this.timer);
  }

  private arm(): void {
    clearTimeout(this.timer);
    // A timer holds at most MAX_TIMER_MS (a longer one fires after 1 ms): past it, arm again.
    const left = Math.max(0, this.at - Date.now());
    this.timer = setTimeout(left > MAX_TIMER_MS ? () => this.arm() : this.fire, Math.min(left, MAX_TIMER_MS));
  }
}
