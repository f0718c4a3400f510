/**
 * The errand view of the one target registry (./targets.ts), kept for tests written against it:
 * `targets[i].open()` is `openErrand()` of the same target. New tests use ./targets.ts.
 */
import type { Errand } from "../../src/index.js";
import { type StoreTarget, targets as storeTargets, withErrand as withTargetErrand } from "./targets.js";

export interface ErrandTarget {
  name: StoreTarget["name"];
  /** A reason to skip, or false. */
  skip: string | false;
  open: StoreTarget["openErrand"];
}

export const targets: ErrandTarget[] = storeTargets.map((t) => ({
  name: t.name,
  skip: t.skip,
  open: (options) => t.openErrand(options),
}));

/** Runs `fn` on a fresh errand of `target`, cleaning up afterwards whatever happens. */
export function withErrand(target: ErrandTarget, fn: (errand: Errand) => Promise<void>): Promise<void> {
  const found = storeTargets.find((t) => t.name === target.name) as StoreTarget;
  return withTargetErrand(found, fn);
}
