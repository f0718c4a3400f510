import { type Duration, parseDuration } from "./duration.js";
import { ValidationError } from "./errors.js";
import { checkDelay } from "./instant.js";
import { knownFields, onlyKnownFields } from "./known-fields.js";

/** Exponential backoff `base × 2^(k−1)`, capped at `max`, spread by ±`jitter` (a fraction), or an explicit list. */
export type Backoff = { base?: Duration; max?: Duration; jitter?: number } | Duration[];

export const DEFAULT_BACKOFF = { base: 1000, max: 15 * 60_000, jitter: 0.2 } as const;

const BACKOFF_FIELDS = knownFields("base", "max", "jitter");

/**
 * A compiled backoff: the delay before retry after failed attempt `attempt` (1-based). `random`
 * draws the jitter (default: the one given to compileBackoff, Math.random); errand/testing
 * passes a seeded one so a test's retry times repeat run after run.
 */
export type BackoffFn = (attempt: number, random?: () => number) => number;

export function compileBackoff(backoff: Backoff | undefined, random: () => number = Math.random): BackoffFn {
  if (Array.isArray(backoff)) {
    if (backoff.length === 0) throw new ValidationError("backoff list must hold at least one delay");
    const delays = backoff.map((d, i) => checkDelay(parseDuration(d, `backoff[${i}]`), d, `backoff[${i}]`));
    // Past the end of the list, the last delay repeats.
    return (attempt) => delays[Math.min(Math.max(attempt, 1), delays.length) - 1];
  }
  if (backoff !== undefined && backoff !== null && typeof backoff === "object")
    onlyKnownFields(backoff, BACKOFF_FIELDS, "backoff");
  const base = parseDuration(backoff?.base ?? DEFAULT_BACKOFF.base, "backoff.base");
  const maxGiven = backoff?.max ?? DEFAULT_BACKOFF.max;
  const max = checkDelay(parseDuration(maxGiven, "backoff.max"), maxGiven, "backoff.max");
  const jitter = backoff?.jitter ?? DEFAULT_BACKOFF.jitter;
  if (!(jitter >= 0 && jitter <= 1))
    throw new ValidationError(`backoff.jitter must be between 0 and 1, got ${jitter}`);
  return (attempt, draw = random) => {
    const exponential = Math.min(max, base * 2 ** Math.min(Math.max(attempt, 1) - 1, 52));
    const spread = exponential * jitter * (draw() * 2 - 1);
    return Math.max(0, Math.min(max, Math.round(exponential + spread)));
  };
}
