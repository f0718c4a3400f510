/**
 * Scoped keys under concurrent enqueue from ten processes, on the stores other processes can open
 * (SQLite, Postgres): for each `while` scope, exactly the jobs the scope allows exist afterwards.
 *
 * Before the race each key has one job holding it, in a different state: "done" (completed),
 * "running" (claimed), "pending" and "replace" (pending) — one such key per scope. Then ten
 * processes, released at once, each enqueue every key three times under `unique: { while }` of
 * its scope ("replace" with onConflict "replace"). A holder the scope counts is returned to all of them; one it does not count gives
 * the key up to exactly one new job, which every other enqueue then meets.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type Errand, openErrand, silentLogger, type UniqueWhile } from "../src/index.js";
import { touch } from "./fixtures/unique-jobs.js";
import { releasedTogether } from "./helpers/processes.js";
import { sqlTargets } from "./helpers/targets.js";

const PROCESSES = 10;
const ROUNDS = 3;
const SCOPES = ["pending", "unfinished", "retained"] as const;
const NAMES = ["done", "running", "pending", "replace"];
/** One key per scope and seeded state: "<scope>/<name>" (the enqueuers read the scope from it). */
const KEYS = SCOPES.flatMap((scope) => NAMES.map((name) => `${scope}/${name}`));

interface Enqueued {
  key: string;
  id: string;
  created: boolean;
  replaced: boolean;
}

/** Starts the enqueuers, releases them together once all are up, and gathers what each printed. */
async function race(env: Record<string, string>): Promise<Enqueued[]> {
  const printed = await releasedTogether<Enqueued[]>(
    PROCESSES,
    ["--import", "tsx", "test/fixtures/unique-enqueuer.ts"],
    {
      env: { ...env, ROUNDS: String(ROUNDS), KEYS: KEYS.join(",") },
      label: "enqueuer",
      what: "the enqueuers",
      timeoutMs: 240_000,
    },
  );
  return printed.flat();
}

/** One job holding each key, in the state its name says. */
async function seed(errand: Errand): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  for (const key of KEYS) {
    const name = key.split("/")[1];
    const running = name === "done" || name === "running";
    ids[key] = (
      await errand.enqueue(touch, { child: -1, key, round: -1 }, { key, delay: running ? 0 : "1h" })
    ).id;
    if (!running) continue;
    const [c] = await errand.store.claimJobs({
      queue: "unique",
      limit: 1,
      workerId: "seed",
      leaseMs: 600_000,
    });
    assert.equal(c.id, ids[key]);
    if (name === "done")
      await errand.store.finishJobs([
        { id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "seed" },
      ]);
  }
  return ids;
}

/** Per scope and seeded state: does the scope count the holder (no new job), or not (exactly one new job)? */
const COUNTED: Record<UniqueWhile, Record<string, boolean>> = {
  retained: { done: true, running: true, pending: true, replace: true },
  unfinished: { done: false, running: true, pending: true, replace: true },
  pending: { done: false, running: false, pending: true, replace: true },
};

for (const target of sqlTargets) {
  test(`ten processes enqueue the same keys at once under each while scope, on ${target.name}: exactly the jobs the scope allows exist`, {
    skip: target.skip,
  }, async () => {
    const db = await target.openStore();
    await db.store.close(); // it made the database; errand opens its own on it
    const errand = await openErrand({
      url: db.url,
      ...(db.schema ? { schema: db.schema } : {}),
      logger: silentLogger(),
      jobs: [touch],
    });
    try {
      const seeded = await seed(errand);
      const results = await race({ ERRAND_TEST_URL: db.url, ERRAND_TEST_SCHEMA: db.schema ?? "" });
      assert.equal(results.length, PROCESSES * ROUNDS * KEYS.length);
      const all = (await errand.listJobs({ queue: "unique", limit: 1000 })).jobs;
      for (const key of KEYS) {
        const [scope, name] = key.split("/") as [UniqueWhile, string];
        const stored = all.filter((j) => j.key === key);
        const mine = results.filter((r) => r.key === key);
        const returned = new Set(mine.map((r) => r.id));
        assert.equal(returned.size, 1, `${key}: every enqueue got the same job`);
        if (COUNTED[scope][name]) {
          assert.deepEqual(
            stored.map((j) => j.id),
            [seeded[key]],
            `${key}: the seeded job alone`,
          );
          assert.equal(mine.filter((r) => r.created).length, 0, `${key}: nothing created`);
          assert.ok(returned.has(seeded[key]), `${key}: the seeded job returned`);
        } else {
          assert.equal(stored.length, 2, `${key}: the seeded job and one new one`);
          assert.equal(mine.filter((r) => r.created).length, 1, `${key}: exactly one created`);
          assert.ok(!returned.has(seeded[key]), `${key}: the new job returned`);
        }
        // Replace: every enqueue replaced the pending holder, which holds one racer's payload.
        if (name === "replace") {
          assert.ok(
            mine.every((r) => r.replaced && !r.created),
            `${key}: every enqueue replaced`,
          );
          const holder = all.find((j) => j.id === seeded[key]);
          assert.ok(holder && (holder.payload as { child: number }).child >= 0, `${key}: a racer's payload`);
          assert.equal(holder.state, "pending");
        } else
          assert.ok(
            mine.every((r) => !r.replaced),
            `${key}: nothing replaced`,
          );
      }
    } finally {
      await errand.close();
      await db.cleanup();
    }
  });
}
