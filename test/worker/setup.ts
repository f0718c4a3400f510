/** What the worker tests (test/worker/) share: the describe per store, a fast backoff, a job's final state. */
import { describe } from "node:test";
import type { Errand } from "../../src/index.js";
import { type StoreTarget, targets } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";

/** A backoff short enough for retries to follow each other within a test. */
export const fast = { base: 5, max: 20, jitter: 0 };

/** The file's tests, once per store: "worker on memory", "worker on sqlite", "worker on postgres". */
export function describeWorker(body: (target: StoreTarget) => void): void {
  for (const target of targets) {
    describe(`worker on ${target.name}`, { skip: target.skip }, () => body(target));
  }
}
export async function finalState(errand: Errand, id: string, states = ["completed", "failed", "cancelled"]) {
  return waitFor(
    async () => {
      const job = await errand.getJob(id);
      return job && states.includes(job.state) ? job : null;
    },
    `job ${id} to reach ${states.join("/")}`,
  );
}
