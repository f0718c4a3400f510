/**
 * A test clock for a store (`openStore({ clock })`, `new MemoryStore({ clock })`): the store reads
 * "now" from it instead of its database's clock, and time passes only when the test moves it — a
 * lease expires, a delay comes due, a worker goes stale the moment the test says so, however
 * loaded the machine is.
 */
export interface TestClock {
  /** Now, in ms since the epoch. */
  (): number;
  /** Moves the clock forward by `ms`. */
  advance(ms: number): void;
}

/** A clock standing still at `start` (default: the real now, to the ms) until advanced. */
export function testClock(start = Date.now()): TestClock {
  let now = Math.floor(start);
  const clock = (() => now) as TestClock;
  clock.advance = (ms: number) => {
    if (!(ms >= 0)) throw new Error(`a test clock only moves forward; got ${ms}`);
    now += ms;
  };
  return clock;
}
