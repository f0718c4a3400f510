/**
 * What tracing costs a job when no OpenTelemetry SDK is registered: the per-attempt check
 * (`startAttemptSpan`, which answers null) and the per-enqueue one (`startEnqueueSpan`), timed
 * (CPU time) over a million calls each, with @opentelemetry/api installed (the costlier of the two
 * untraced cases: without the package both return after one variable read).
 *
 *   node --import tsx bench/tracing-off.ts
 */

import type { ClaimedJob, NewJob } from "../src/store/types.js";
import { startAttemptSpan, startEnqueueSpan } from "../src/tracing/spans.js";

const claimed: ClaimedJob = {
  id: "1",
  queue: "q",
  name: "noop",
  payload: {},
  priority: 0,
  attempt: 1,
  maxAttempts: 3,
  key: null,
  runAt: new Date(),
  createdAt: new Date(),
  leaseToken: 1,
  lockedUntil: new Date(),
  traceContext: null,
};
const rows: NewJob[] = [{ queue: "q", name: "noop", payload: {}, priority: 0, maxAttempts: 3 }];
const N = 1_000_000;
for (const [what, call] of [
  ["attempt", () => startAttemptSpan(claimed, "w")],
  ["enqueue", () => startEnqueueSpan(rows)],
] as const) {
  for (let round = 0; round < 3; round++) {
    let spans = 0;
    // CPU time, not wall time: on a loaded machine the wall clock counts other processes' turns.
    const t0 = process.cpuUsage();
    for (let i = 0; i < N; i++) if (call() !== null) spans++;
    const { user, system } = process.cpuUsage(t0);
    console.log(`${what}: ${(((user + system) * 1000) / N).toFixed(1)} ns of CPU per call (${spans} spans)`);
  }
}
