/**
 * Attempt history across the storage change of migration 3 (a completed job's last attempt in
 * columns, rebuilt by the readers): a database at version 2 with completed jobs is upgraded in
 * place and reads back the same history; jobs completed after the upgrade read back with an
 * entry exactly like the one that used to be stored, in getJob, listJobs and by key.
 *
 *   node --import tsx --test test/postgres-history.test.ts
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pg from "pg";
import { openPostgresStore, type PostgresStore } from "../src/store/postgres/index.js";
import { MIGRATIONS } from "../src/store/postgres/migrations.js";
import { bindSchema } from "../src/store/postgres/queries.js";
import type { NewJob } from "../src/store/types.js";
import { dropSchema, freshSchemaName, postgresUrl, skipUnlessPostgres } from "./helpers/postgres.js";

const skip = await skipUnlessPostgres();
const url = postgresUrl();

describe("PostgreSQL attempt history across migration 3", { skip }, () => {
  const schema = freshSchemaName("errand_hist");
  const stores: PostgresStore[] = [];
  after(async () => {
    for (const s of stores) await s.close();
    await dropSchema(schema);
  });

  it("keeps a version-2 database's history and rebuilds the completing attempt of new completions", async () => {
    // A database as errand with migrations 1-2 left it, holding one job completed then.
    const client = new pg.Client(url);
    await client.connect();
    const old = [
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
    try {
      await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(
        bindSchema(
          "CREATE TABLE {{schema}}.migrations (version integer PRIMARY KEY, name text NOT NULL, breaking boolean NOT NULL DEFAULT false, applied_at timestamptz NOT NULL DEFAULT statement_timestamp())",
          schema,
        ),
      );
      for (const m of MIGRATIONS.filter((x) => x.version <= 2)) {
        await client.query(bindSchema(m.sql, schema));
        await client.query(
          bindSchema("INSERT INTO {{schema}}.migrations (version, name) VALUES ($1, $2)", schema),
          [m.version, m.name],
        );
      }
      await client.query(
        bindSchema(
          `INSERT INTO {{schema}}.jobs (queue, name, state, attempt, max_attempts, run_at, payload, key, attempts, created_at, started_at, finished_at)
           VALUES ('q', 'old', 'completed', 2, 3, '2026-01-01T00:00:02Z', '{}', 'old-key', $1::jsonb, '2026-01-01T00:00:00Z', '2026-01-01T00:00:02.5Z', '2026-01-01T00:00:03Z')`,
          schema,
        ),
        [JSON.stringify(old)],
      );
    } finally {
      await client.end();
    }

    const store = await openPostgresStore({ url, schema });
    stores.push(store);
    await store.migrate();
    const page = await store.listJobs({ queue: "q", limit: 10 });
    const oldJob = page.jobs.find((j) => j.name === "old");
    assert.ok(oldJob, "the old job is listed");
    assert.deepEqual(oldJob.attempts, old);

    const job: NewJob = { queue: "q", name: "new", payload: {}, priority: 0, maxAttempts: 3, key: "new-key" };
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
