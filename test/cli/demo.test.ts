/** `errand demo`: the seed scenario runs, exits 0, and shows the priority order and the retry. */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { run, scratch } from "./helpers.js";

describe("errand demo", () => {
  const s = scratch();
  after(() => s.cleanup());

  test("runs from the source entry on a fresh temp file: priority order 10, 5, 1 and report-1's retry", async () => {
    const result = await run(["demo"], {}, { source: true });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const out = result.stdout;
    assert.match(out, /store: sqlite:.*errand-demo-.*demo\.db \(sqlite\)/);
    assert.match(out, /e-mails started in order: 10, 5, 1/);
    const starts = [...out.matchAll(/emails\s+start\s+e-mail to \S+ \(priority (\d+)\)/g)].map((m) => m[1]);
    assert.deepEqual(starts, ["10", "5", "1"], "live progress shows the e-mails starting by priority");
    assert.match(out, /report-1 \(priority 10\)\s+attempt 1\/3 is pending again: retry in 200ms/);
    assert.match(out, /report-1 \(priority 10\)\s+attempt 2\/3 completed/);
    assert.match(out, /retried: report-1 — attempt 1 retried .*attempt 2 completed/);
    assert.match(out, /failed: report-2 after 2 attempts \(in the dead-letter queue\)/);
    assert.match(out, /worker stopped cleanly/);
  });

  test("with --url: the jobs stay for inspection, and a second run refuses a store that holds jobs", async () => {
    const first = await run(["demo", "--url", s.db]);
    assert.equal(first.code, 0, `${first.stdout}\n${first.stderr}`);
    const list = JSON.parse((await run(["jobs", "list", "--url", s.db, "--json"])).stdout);
    assert.deepEqual(list.jobs.map((j: { name: string; state: string }) => `${j.name}:${j.state}`).sort(), [
      "build-report:completed",
      "build-report:failed",
      "send-email:completed",
      "send-email:completed",
      "send-email:completed",
    ]);
    const again = await run(["demo", "--url", s.db]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /the demo needs an empty store/);
  });
});
