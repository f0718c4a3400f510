/**
 * What src/index.ts leaves out on purpose: the Worker constructor (workers come from
 * `errand.work()`; the class is exported as a type only) and the `Store` interface (a custom
 * backend needs the conformance suite, which the package does not ship). The @ts-expect-error
 * lines make `npm run typecheck` fail if either comes back.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
// @ts-expect-error: Store is not part of the public API
import type { Store, Worker } from "../src/index.js";
import * as api from "../src/index.js";

test("the public API exports the Worker type but not its constructor, and not Store", () => {
  assert.equal("Worker" in api, false, "no Worker value: `new Worker(...)` is internal");
  assert.equal(typeof api.openErrand, "function");
  // The Worker type is still usable for what errand.work() returns.
  const stop = (w: Worker) => w.stop();
  assert.equal(typeof stop, "function");
  const noStore: Store | undefined = undefined;
  assert.equal(noStore, undefined);
});
