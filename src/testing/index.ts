/**
 * errand/testing: the toolkit for an application's own tests. An errand in memory on a fake
 * clock; drain and advance run its jobs through the real worker; expectEnqueued checks what the
 * code under test enqueued. See docs/testing.md.
 */
export type { TimeInput } from "./clock.js";
export { FakeClock } from "./clock.js";
export type { DrainResult } from "./drain.js";
export type { CountOption } from "./expect.js";
export type { DeepPartial, EnqueuedMatch, JobRef } from "./match.js";
// The TestErrand type only: test errands are made by createTestErrand.
export type { DrainOptions, TestErrand, TestErrandOptions } from "./test-errand.js";
export { createTestErrand } from "./test-errand.js";
