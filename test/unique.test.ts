/**
 * Scoped keys and debounce through the public API, on every store: what enqueue returns
 * (`created`, `replaced`), a definition's debounce with a key function, enqueueMany and
 * transactional enqueue, and bad options refused with a clear error before anything is stored.
 * The store-level scope rules are specified in test/conformance/unique.test.ts.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import pg from "pg";
import { z } from "zod";
import { defineJob, type Errand, ValidationError } from "../src/index.js";
import { postgresUrl } from "./helpers/postgres.js";
import { target, targets, withErrand } from "./helpers/targets.js";

const sync = defineJob({
  name: "sync",
  queue: "q",
  schema: z.object({ user: z.number(), v: z.number() }),
  run: () => {},
});

const reindex = defineJob({
  name: "reindex",
  queue: "q",
  schema: z.object({ user: z.number(), v: z.number() }),
  debounce: { key: (p) => `reindex:${p.user}`, delay: "1m", maxWait: "5m" },
  run: () => {},
});

const count = async (errand: Errand) => (await errand.listJobs({ limit: 1000 })).jobs.length;

/** Each bad option, and the words its error must contain. */
const BAD: Array<[string, Record<string, unknown>, RegExp]> = [
  [
    "an unknown while",
    { key: "k", unique: { while: "running" } },
    /unique\.while must be "pending", "unfinished" or "retained"; got "running"/,
  ],
  [
    "a for that is not a duration",
    { key: "k", unique: { for: "an hour" } },
    /unique\.for must be .*"5m".*got "an hour"/,
  ],
  ["a for of zero", { key: "k", unique: { for: 0 } }, /unique\.for must be longer than 0/],
  [
    "an unknown unique field",
    { key: "k", unique: { scope: "pending" } },
    /unique has an unknown field "scope"/,
  ],
  ["unique without a key", { unique: { while: "pending" } }, /unique needs a key/],
  ["onConflict without a key", { onConflict: "replace" }, /onConflict needs a key/],
  [
    "an unknown onConflict",
    { key: "k", onConflict: "merge" },
    /onConflict must be "keep" or "replace"; got "merge"/,
  ],
  ["debounce without a key", { debounce: { delay: "1s" } }, /debounce needs a key/],
  [
    "debounce with an empty key",
    { debounce: { key: "", delay: "1s" } },
    /debounce\.key must be a non-empty string/,
  ],
  ["debounce without a delay", { debounce: { key: "k" } }, /debounce needs a delay/],
  [
    "debounce with maxWait < delay",
    { debounce: { key: "k", delay: "5s", maxWait: "1s" } },
    /maxWait \("1s"\) must be at least its delay \("5s"\)/,
  ],
  [
    "debounce with its own key",
    { key: "k", debounce: { key: "k", delay: "1s" } },
    /key cannot be given with debounce/,
  ],
  [
    "debounce with a delay",
    { delay: "1m", debounce: { key: "k", delay: "1s" } },
    /delay cannot be given with debounce/,
  ],
];

for (const t of targets) {
  describe(`scoped keys through enqueue on ${t.name}`, { skip: t.skip }, () => {
    test("a new key's meaning is unchanged: a completed job still matches; while pending makes a new one", () =>
      withErrand(t, async (errand) => {
        const first = await errand.enqueue(sync, { user: 1, v: 1 }, { key: "sync-1" });
        assert.deepEqual([first.created, first.replaced], [true, false]);
        const [c] = await errand.store.claimJobs({ queue: "q", limit: 1, workerId: "w", leaseMs: 60_000 });
        await errand.store.finishJobs([
          { id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "w" },
        ]);
        const plain = await errand.enqueue(sync, { user: 1, v: 2 }, { key: "sync-1" });
        assert.deepEqual([plain.created, plain.id, plain.state], [false, first.id, "completed"]);
        const scoped = await errand.enqueue(
          sync,
          { user: 1, v: 3 },
          { key: "sync-1", unique: { while: "pending" } },
        );
        assert.equal(scoped.created, true);
        assert.deepEqual(scoped.payload, { user: 1, v: 3 });
        const replaced = await errand.enqueue(
          sync,
          { user: 1, v: 4 },
          { key: "sync-1", unique: { while: "pending" }, onConflict: "replace", delay: "10m" },
        );
        assert.deepEqual([replaced.created, replaced.replaced, replaced.id], [false, true, scoped.id]);
        assert.deepEqual((await errand.getJob(scoped.id))?.payload, { user: 1, v: 4 });
      }));

    test("a definition's debounce keys each payload with its function; enqueueMany collapses per key", () =>
      withErrand(t, async (errand) => {
        const seen: number[] = [];
        errand.on("enqueued", (jobs) => seen.push(jobs.length));
        const jobs = await errand.enqueueMany(reindex, [
          { payload: { user: 1, v: 1 } },
          { payload: { user: 2, v: 1 } },
          { payload: { user: 1, v: 2 } },
        ]);
        assert.deepEqual(
          jobs.map((j) => [j.key, j.created, j.replaced]),
          [
            ["reindex:1", true, false],
            ["reindex:2", true, false],
            ["reindex:1", false, true],
          ],
        );
        assert.deepEqual(seen, [2], "the enqueued event has the two new jobs");
        const again = await errand.enqueue(reindex, { user: 1, v: 3 });
        assert.equal(again.id, jobs[0].id);
        assert.deepEqual((await errand.getJob(jobs[0].id))?.payload, { user: 1, v: 3 });
        // Due a minute after the last enqueue, and never later than five after the first.
        const delay = again.runAt.getTime() - again.createdAt.getTime();
        assert.ok(delay >= 60_000 && delay <= 5 * 60_000, `runs ${delay} ms after the first enqueue`);
        assert.equal(await count(errand), 2);
        // The enqueue's own debounce overrides the definition's.
        const own = await errand.enqueue(
          reindex,
          { user: 1, v: 4 },
          { debounce: { key: "mine", delay: "1s" } },
        );
        assert.deepEqual([own.key, own.created], ["mine", true]);
        await assert.rejects(
          errand.enqueue(reindex, { user: 1, v: 5 }, { key: "k" }),
          /key cannot be given with the debounce of job "reindex"/,
        );
      }));

    test("a replace with dependsOn is refused: the pending duplicate would take the payload and run without waiting", () =>
      withErrand(t, async (errand) => {
        const held = await errand.enqueue(sync, { user: 1, v: 1 }, { key: "sync-1" });
        const first = await errand.enqueue(sync, { user: 2, v: 1 });
        for (const options of [
          { key: "sync-1", unique: { while: "pending" as const }, onConflict: "replace" as const },
          { debounce: { key: "sync-1", delay: "1s" as const } },
        ]) {
          await assert.rejects(
            errand.enqueue(sync, { user: 1, v: 2 }, { ...options, dependsOn: [first.id] }),
            (err: unknown) => {
              assert.ok(err instanceof ValidationError, String(err));
              assert.match(err.message, /dependsOn cannot be given with (onConflict "replace"|debounce)/);
              return true;
            },
          );
        }
        const after = await errand.getJob(held.id);
        assert.deepEqual([after?.state, after?.payload], ["pending", { user: 1, v: 1 }]);
        assert.equal(await count(errand), 2);
        // Without a replace, a key and dependencies go together as before.
        const waiting = await errand.enqueue(
          sync,
          { user: 3, v: 1 },
          { key: "sync-3", dependsOn: [first.id] },
        );
        assert.equal(waiting.state, "waiting");
      }));

    for (const [what, options, message] of BAD) {
      test(`bad input: ${what} is refused and stores nothing`, () =>
        withErrand(t, async (errand) => {
          await assert.rejects(errand.enqueue(sync, { user: 1, v: 1 }, options as never), (err: unknown) => {
            assert.ok(err instanceof ValidationError, String(err));
            assert.match(err.message, message);
            return true;
          });
          await assert.rejects(
            errand.enqueueMany(sync, [
              { payload: { user: 1, v: 1 } },
              { payload: { user: 1, v: 2 }, ...options } as never,
            ]),
            (err: unknown) => err instanceof ValidationError && /^item 1 payload: /.test(err.message),
          );
          assert.equal(await count(errand), 0);
        }));
    }
  });
}

test("bad debounce on defineJob is refused at definition time", () => {
  const define = (debounce: unknown) =>
    defineJob({ name: "d", schema: z.object({}), debounce: debounce as never, run: () => {} });
  assert.throws(() => define({ delay: "1s" }), /job "d" debounce needs a key/);
  assert.throws(() => define({ key: 42, delay: "1s" }), /job "d" debounce\.key must be a non-empty string/);
  assert.throws(() => define({ key: "k", delay: "soon" }), /job "d" debounce\.delay must be/);
  assert.throws(
    () => define({ key: "k", delay: "1m", maxWait: "30s" }),
    /maxWait \("30s"\) must be at least its delay/,
  );
  const bad = defineJob({
    name: "e",
    schema: z.object({}),
    debounce: { key: () => "", delay: "1s" },
    run: () => {},
  });
  return withErrand(target("memory"), async (errand) => {
    await assert.rejects(
      errand.enqueue(bad, {}),
      /the debounce key of job "e" \(from its key function\) must be a non-empty string/,
    );
    assert.equal(await count(errand), 0);
  });
});

describe("scoped keys in the caller's transaction", () => {
  test("SQLite: inside db.transaction, a replace is synchronous and rolls back with it", () =>
    withErrand(target("sqlite"), async (errand) => {
      const db = (errand.store as unknown as { db: import("better-sqlite3").Database }).db;
      const first = await errand.enqueue(sync, { user: 1, v: 1 }, { key: "k", unique: { while: "pending" } });
      const options = {
        key: "k",
        unique: { while: "pending" as const },
        onConflict: "replace" as const,
        tx: db,
      };
      assert.throws(() =>
        db.transaction(() => {
          void errand.enqueue(sync, { user: 1, v: 2 }, options);
          throw new Error("business rule failed");
        })(),
      );
      assert.deepEqual((await errand.getJob(first.id))?.payload, { user: 1, v: 1 }, "rolled back");
      let replaced: Promise<{ replaced: boolean }> | undefined;
      db.transaction(() => {
        replaced = errand.enqueue(sync, { user: 1, v: 3 }, options);
      })();
      assert.equal((await replaced)?.replaced, true);
      assert.deepEqual((await errand.getJob(first.id))?.payload, { user: 1, v: 3 });
    }));

  test("Postgres: a scoped enqueue joins the caller's transaction", { skip: target("postgres").skip }, () =>
    withErrand(target("postgres"), async (errand) => {
      const schema = (errand.store as unknown as { schema: string }).schema;
      const client = new pg.Client({ connectionString: postgresUrl() });
      await client.connect();
      try {
        const options = { key: "k", unique: { while: "pending" as const }, onConflict: "replace" as const };
        await client.query("BEGIN");
        const inTx = await errand.enqueue(sync, { user: 1, v: 1 }, { ...options, tx: client });
        assert.equal(inTx.created, true);
        const replacedInTx = await errand.enqueue(sync, { user: 1, v: 2 }, { ...options, tx: client });
        assert.deepEqual([replacedInTx.replaced, replacedInTx.id], [true, inTx.id]);
        await client.query("ROLLBACK");
        assert.equal(await errand.getJob(inTx.id), null, "nothing stored after the rollback");
        await client.query("BEGIN");
        const kept = await errand.enqueue(sync, { user: 1, v: 3 }, { ...options, tx: client });
        await client.query("COMMIT");
        assert.deepEqual((await errand.getJob(kept.id))?.payload, { user: 1, v: 3 });
        const count = await client.query(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE key = 'k'`);
        assert.equal(count.rows[0].n, 1);
      } finally {
        await client.end();
      }
    }),
  );
});
