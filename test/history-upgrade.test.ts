/**
 * Attempt history across the migration that keeps a completed job's last attempt in columns,
 * rebuilt by the readers (SQLite migration 2, PostgreSQL migration 3): a database as the version
 * before left it, holding a completed job, is upgraded in place and reads back the same history;
 * a job completed after the upgrade reads back with the entry the store used to append, in
 * getJob, listJobs and the lookup by key. Same check on both SQL stores; only the seeding of the
 * old database differs.
 *
 *   node --import tsx --test test/history-upgrade.test.ts
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import Database from "better-sqlite3";
import type { AttemptRecord } from "../src/job.js";
import { bindSchema } from "../src/store/postgres/queries.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { MIGRATIONS_TABLE_SQL, MIGRATIONS as SQLITE_MIGRATIONS } from "../src/store/sqlite/migrations.js";
import type { NewJob, Store } from "../src/store/types.js";
import { openPostgresStoreBelow } from "./helpers/postgres.js";
import { tempPath } from "./helpers/sqlite.js";
import { target } from "./helpers/targets.js";

/** The history of the job completed before the upgrade: a retry, then the completing attempt. */
const OLD: AttemptRecord[] = [
  {
    attempt: 1,
    startedAt: "2026-01-01T00:00:00.000Z",
    finishedAt: "2026-01-01T00:00:01.000Z",
    worker: "w0",
    outcome: "retried",
    error: "boom",
    kind: "retryable",
    retryAt: "2026-01-01T00:00:02.000Z",
  },
  {
    attempt: 2,
    startedAt: "2026-01-01T00:00:02.500Z",
    finishedAt: "2026-01-01T00:00:03.000Z",
    worker: "w0",
    outcome: "completed",
  },
];

interface OldDatabase {
  name: "sqlite" | "postgres";
  /** The schema version the old database is at. */
  version: number;
  /** Seeds a database at `version` holding one job completed then (key "old-key"), and opens the store on it. */
  open(t: test.TestContext): Promise<Store>;
}

const oldDatabases: OldDatabase[] = [
  {
    name: "sqlite",
    version: 1,
    async open(t) {
      const path = await tempPath(t);
      const db = new Database(path);
      db.exec(MIGRATIONS_TABLE_SQL);
      db.exec(SQLITE_MIGRATIONS[0].sql);
      db.prepare("INSERT INTO errand_migrations (version, name, applied_at) VALUES (1, ?, 0)").run(
        SQLITE_MIGRATIONS[0].name,
      );
      db.prepare(
        `INSERT INTO errand_jobs (queue, name, state, attempt, max_attempts, run_at, payload, key, attempts, created_at, started_at, finished_at)
         VALUES ('q', 'old', 'completed', 2, 3, 0, '{}', 'old-key', ?, 0, ?, ?)`,
      ).run(JSON.stringify(OLD), Date.parse(OLD[1].startedAt), Date.parse(OLD[1].finishedAt));
      db.close();
      const store = openSqliteStore({ path });
      t.after(() => store.close());
      return store;
    },
  },
  {
    name: "postgres",
    version: 2,
    async open(t) {
      return openPostgresStoreBelow(t, {
        prefix: "errand_hist",
        version: 3,
        async seed(client, schema) {
          await client.query(
            bindSchema(
              `INSERT INTO {{schema}}.jobs (queue, name, state, attempt, max_attempts, run_at, payload, key, attempts, created_at, started_at, finished_at)
               VALUES ('q', 'old', 'completed', 2, 3, '2026-01-01T00:00:02Z', '{}', 'old-key', $1::jsonb, '2026-01-01T00:00:00Z', '2026-01-01T00:00:02.5Z', '2026-01-01T00:00:03Z')`,
              schema,
            ),
            [JSON.stringify(OLD)],
          );
        },
      });
    },
  },
];

for (const old of oldDatabases) {
  describe(`${old.name}: attempt history across the upgrade`, { skip: target(old.name).skip }, () => {
    test(`keeps a version-${old.version} database's history and rebuilds the completing attempt of new completions`, async (t) => {
      const store = await old.open(t);
      await store.migrate();
      const oldJob = (await store.listJobs({ queue: "q", limit: 10 })).jobs.find((j) => j.name === "old");
      assert.ok(oldJob, "the old job is listed");
      assert.deepEqual(oldJob.attempts, OLD);

      const job: NewJob = {
        queue: "q",
        name: "new",
        payload: {},
        priority: 0,
        maxAttempts: 3,
        key: "new-key",
      };
      const [inserted] = await store.insertJobs([job]);
      const [first] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w1", leaseMs: 60_000 });
      assert.equal(first.id, inserted.job.id);
      await store.finishJobs([
        {
          id: first.id,
          leaseToken: first.leaseToken,
          kind: "retry",
          delayMs: 0,
          worker: "w1",
          error: { message: "once", kind: "retryable" },
        },
      ]);
      const [second] = await store.claimJobs({ queue: "q", limit: 1, workerId: "w2", leaseMs: 60_000 });
      assert.deepEqual(
        await store.finishJobs([
          { id: second.id, leaseToken: second.leaseToken, kind: "completed", result: 7, worker: "w2" },
        ]),
        [true],
      );

      const done = await store.getJob(first.id);
      assert.ok(done?.startedAt && done.finishedAt);
      assert.equal(done.state, "completed");
      assert.equal(done.result, 7);
      assert.deepEqual(
        done.attempts.map((a) => [a.attempt, a.worker, a.outcome]),
        [
          [1, "w1", "retried"],
          [2, "w2", "completed"],
        ],
      );
      assert.deepEqual(done.attempts[1], {
        attempt: 2,
        startedAt: done.startedAt.toISOString(),
        finishedAt: done.finishedAt.toISOString(),
        worker: "w2",
        outcome: "completed",
      });
      // Every reader rebuilds it: the listing, and the lookup by key of a duplicate enqueue.
      const listed = (await store.listJobs({ queue: "q", limit: 10 })).jobs.find((j) => j.id === first.id);
      assert.deepEqual(listed?.attempts, done.attempts);
      const [again] = await store.insertJobs([job]);
      assert.equal(again.created, false);
      assert.deepEqual(again.job.attempts, done.attempts);
    });
  });
}
