/**
 * `errand queue resume-limits <queue> [--key K | --queue-budget] [--json]`: lifting the flow
 * budget pauses a rate-limited answer set (adaptive flow control), on a SQLite file, as a user
 * types it. The pauses are set through the store as a worker's 429 sets them (pauseFlow).
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import type { Errand } from "../../src/index.js";
import { hasStack, inspect, run, scratch } from "./helpers.js";

const s = scratch("errand-resume-limits-cli-");
after(() => s.cleanup());
const url = ["--url", s.db];
const YEAR = 365 * 24 * 3600_000;

/** The keys of `queue` paused now ("" = the queue-wide budget), sorted. */
async function pausedKeys(errand: Errand, queue: string): Promise<string[]> {
  const status = await errand.store.flowStatus({ queue, windowMs: 0 });
  return [...status.pausedUntil.keys()].sort();
}

async function pause(errand: Errand, queue: string, keys: (string | null)[]): Promise<void> {
  for (const key of keys) await errand.store.pauseFlow({ queue, key, ms: 10 * YEAR });
}

test("resume-limits lifts one key, the queue budget, then every pause, and says how many", async () => {
  const errand = await inspect(s.db);
  try {
    await pause(errand, "crm", ["acme", "globex", "initech", null]);
    await pause(errand, "other", ["acme"]);
    assert.deepEqual(await pausedKeys(errand, "crm"), ["", "acme", "globex", "initech"]);

    const one = await run(["queue", "resume-limits", "crm", "--key", "acme", ...url]);
    assert.equal(one.code, 0, one.stderr);
    assert.equal(one.stdout.trim(), 'lifted 1 rate-limit pause of flow key "acme" in queue "crm"');
    assert.deepEqual(await pausedKeys(errand, "crm"), ["", "globex", "initech"]);

    const budget = await run(["queue", "resume-limits", "crm", "--queue-budget", "--json", ...url]);
    assert.equal(budget.code, 0, budget.stderr);
    assert.deepEqual(JSON.parse(budget.stdout), { queue: "crm", key: null, all: false, lifted: 1 });
    assert.deepEqual(await pausedKeys(errand, "crm"), ["globex", "initech"]);

    const again = await run(["queue", "resume-limits", "crm", "--queue-budget", ...url]);
    assert.equal(again.stdout.trim(), `no rate-limit pause in effect of queue "crm"'s queue-wide budget`);

    const all = await run(["queue", "resume-limits", "crm", ...url]);
    assert.equal(all.code, 0, all.stderr);
    assert.equal(all.stdout.trim(), 'lifted 2 rate-limit pauses of queue "crm"');
    assert.deepEqual(await pausedKeys(errand, "crm"), []);
    assert.deepEqual(await pausedKeys(errand, "other"), ["acme"], "another queue's pause stays");

    const none = await run(["queue", "resume-limits", "crm", "--json", ...url]);
    assert.deepEqual(JSON.parse(none.stdout), { queue: "crm", key: null, all: true, lifted: 0 });
    const noneText = await run(["queue", "resume-limits", "crm", ...url]);
    assert.equal(noneText.stdout.trim(), 'queue "crm" had no rate-limit pause in effect');
  } finally {
    await errand.close();
  }
});

test("resume-limits bad input: a clear one-line error, exit 2, nothing lifted", async () => {
  const errand = await inspect(s.db);
  try {
    await pause(errand, "crm", ["acme"]);
    const cases: Array<{ args: string[]; message: RegExp }> = [
      { args: ["bad name!"], message: /invalid queue name "bad name!"/ },
      {
        args: ["crm", "--key", "acme", "--queue-budget"],
        message: /--key and --queue-budget pick different pauses: give one of them/,
      },
      { args: ["crm", "--key", ""], message: /--key needs a flow key, not an empty string/ },
    ];
    for (const c of cases) {
      const r = await run(["queue", "resume-limits", ...c.args, ...url]);
      assert.equal(r.code, 2, `${c.args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, c.message);
      assert.equal(r.stderr.trim().split("\n").length, 1, `one line: ${r.stderr}`);
      assert.ok(!hasStack(r.stderr));
    }
    assert.deepEqual(await pausedKeys(errand, "crm"), ["acme"]);
  } finally {
    await errand.close();
  }
});
