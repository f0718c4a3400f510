/**
 * The shape of the code: no import cycles. src/worker/ and src/job.ts have none; cycles elsewhere
 * are listed below while they are being cut apart, and the list only shrinks.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
// @ts-expect-error: a plain .mjs script without types
import { findCycles } from "../scripts/import-cycles.mjs";

interface Cycle {
  files: string[];
  example: string[];
}

const cycles: Cycle[] = findCycles(join(import.meta.dirname, "..", "src"));
const describe = (c: Cycle) => `${c.files.join(", ")} (e.g. ${c.example.join(" -> ")})`;

test("src/worker/ and src/job.ts are in no import cycle", () => {
  const touching = cycles.filter((c) => c.files.some((f) => f.startsWith("worker/") || f === "job.ts"));
  assert.deepEqual(touching.map(describe), []);
});

test("src/ has no import cycle at all", () => {
  assert.deepEqual(cycles.map(describe), []);
});

test("the cycle finder finds a cycle", () => {
  // Guards the two tests above against a finder that finds nothing: the fixture has a -> b -> a.
  const found: Cycle[] = findCycles(join(import.meta.dirname, "fixtures", "import-cycle"));
  assert.deepEqual(
    found.map((c) => c.files),
    [["a.ts", "b.ts"]],
  );
});
