/**
 * The schedules' flow_key column added in place (SQLite and PostgreSQL): a schedule an older
 * errand stored reads back with no key, still fires, and gains its key when a process that knows
 * the job adds it again — after which a scheduler that does not know the job fires it under that
 * key.
 */
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import Database from "better-sqlite3";
import { z } from "zod";
import { defineJob, openErrand, silentLogger } from "../../src/index.js";
import type { AnyJobDefinition } from "../../src/job.js";
import { MIGRATIONS as PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { bindSchema } from "../../src/store/postgres/queries.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import type { Store } from "../../src/store/types.js";
import { openPostgresStoreBelow } from "../helpers/postgres.js";
import { applyMigrationsBelow, tempPath } from "../helpers/sqlite.js";
import { target } from "../helpers/targets.js";

const report = defineJob({
  name: "tenant-report",
  queue: "reports",
  schema: z.object({ tenant: z.string() }),
  concurrency: { key: (p) => p.tenant, limit: 1 },
  run: () => {},
});

/** The version that adds the column, found by name so a renumbering keeps this test true. */
function columnVersion(migrations: readonly { version: number; name: string }[]): number {
  const m = migrations.find((x) => x.name === "schedules: the flow key of the enqueued jobs");
  assert.ok(m, "the migration exists");
  return m.version;
}

const COLUMNS =
  "name, cron, timezone, job_name, queue, payload, priority, missed, source, next_run_at, created_at";

const oldDatabases: Array<{ name: "sqlite" | "postgres"; open(t: TestContext): Promise<Store> }> = [
  {
    name: "sqlite",
    async open(t) {
      const path = await tempPath(t);
      const db = new Database(path);
      applyMigrationsBelow(db, columnVersion(SQLITE_MIGRATIONS));
      db.prepare(
        `INSERT INTO errand_schedules (${COLUMNS}) VALUES ('old-nightly', '* * * * *', 'UTC', 'tenant-report', 'reports', '{"tenant":"e"}', 0, 'latest', 'cli', 0, 0)`,
      ).run();
      db.close();
      const store = openSqliteStore({ path });
      t.after(() => store.close());
      return store;
    },
  },
  {
    name: "postgres",
    open: (t) =>
      openPostgresStoreBelow(t, {
        prefix: "errand_schedkey_up",
        version: columnVersion(PG_MIGRATIONS),
        async seed(client, schema) {
          await client.query(
            bindSchema(
              `INSERT INTO {{schema}}.schedules (${COLUMNS}) VALUES ('old-nightly', '* * * * *', 'UTC', 'tenant-report', 'reports', '{"tenant":"e"}', 0, 'latest', 'cli', 'epoch', 'epoch')`,
              schema,
            ),
          );
        },
      }),
  },
];

for (const old of oldDatabases) {
  describe(`${old.name}: schedules across the flow_key migration`, { skip: target(old.name).skip }, () => {
    test("an old schedule reads back keyless and gains its key when re-added by a process that knows the job", async (t) => {
      const store = await old.open(t);
      await store.migrate();
      const [row] = await store.listSchedules();
      assert.equal(row.name, "old-nightly");
      assert.equal(row.flowKey, null, "nothing is rewritten");
      const knows = await openErrand({
        store,
        logger: silentLogger(),
        jobs: [report as unknown as AnyJobDefinition],
      });
      const blind = await openErrand({ store, logger: silentLogger() });
      try {
        const readded = await knows.addSchedule({
          name: "old-nightly",
          cron: "* * * * *",
          jobName: "tenant-report",
          queue: "reports",
          payload: { tenant: "e" },
        });
        assert.equal(readded.flowKey, "e");
        assert.equal(readded.nextRunAt.getTime(), 0, "an unchanged cron keeps its place in time");
        assert.equal((await blind.fireSchedules()).fired, 1);
        const claim = await store.claimFlowJobs({
          queue: "reports",
          limit: 10,
          workerId: "w",
          leaseMs: 60_000,
          flow: { keyConcurrency: 1 },
        });
        assert.deepEqual(
          claim.jobs.map((j) => j.flowKey),
          ["e"],
        );
      } finally {
        await blind.close();
        await knows.close();
      }
    });
  });
}
