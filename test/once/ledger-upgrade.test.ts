/**
 * ctx.once entries across the migration that gave them a scope (SQLite 7, PostgreSQL 8): a
 * database as the version before left it, holding an entry recorded then (when every key was
 * global), is upgraded in place. The entry becomes global: a global read finds it; the job that
 * recorded it still skips its effect on a retry (a per-job read of its own entry); another job
 * using the same key runs its own. New entries are scoped.
 *
 *   node --import tsx --test test/once/ledger-upgrade.test.ts
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import Database from "better-sqlite3";
import { bindSchema } from "../../src/store/postgres/queries.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import type { Store } from "../../src/store/types.js";
import { openPostgresStoreBelow } from "../helpers/postgres.js";
import { applyMigrationsBelow, tempPath } from "../helpers/sqlite.js";
import { target } from "../helpers/targets.js";

/** The job id (as text) that recorded the old entry "mail:1". */
const RECORDER = "41";

interface OldDatabase {
  name: "sqlite" | "postgres";
  /** Seeds a database at the version before scopes, holding the entry "mail:1" of job 41, and opens the store. */
  open(t: test.TestContext): Promise<Store>;
}

const oldDatabases: OldDatabase[] = [
  {
    name: "sqlite",
    async open(t) {
      const path = await tempPath(t);
      const db = new Database(path);
      applyMigrationsBelow(db, 8); // 8: ctx.once scopes
      db.prepare("INSERT INTO errand_ledger (key, job_id, value, created_at) VALUES ('mail:1', ?, ?, 0)").run(
        RECORDER,
        JSON.stringify({ messageId: "m-1" }),
      );
      db.close();
      const store = openSqliteStore({ path });
      t.after(() => store.close());
      return store;
    },
  },
  {
    name: "postgres",
    async open(t) {
      return openPostgresStoreBelow(t, {
        prefix: "errand_ledger_up",
        version: 8,
        async seed(client, schema) {
          await client.query(
            bindSchema(
              "INSERT INTO {{schema}}.ledger (key, job_id, value) VALUES ('mail:1', $1, $2::jsonb)",
              schema,
            ),
            [RECORDER, JSON.stringify({ messageId: "m-1" })],
          );
        },
      });
    },
  },
];

for (const old of oldDatabases) {
  describe(`${old.name}: ctx.once entries across the scope migration`, {
    skip: target(old.name).skip,
  }, () => {
    test("an entry recorded before becomes global and still serves the job that recorded it", async (t) => {
      const store = await old.open(t);
      await store.migrate();
      const value = { messageId: "m-1" };
      assert.deepEqual(await store.ledgerGet({ key: "mail:1", jobId: "99", global: true }), {
        found: true,
        value,
      });
      assert.deepEqual(
        await store.ledgerGet({ key: "mail:1", jobId: RECORDER, global: false }),
        { found: true, value },
        "a retry of the recording job skips its effect",
      );
      assert.deepEqual(
        await store.ledgerGet({ key: "mail:1", jobId: "42", global: false }),
        { found: false },
        "another job runs its own effect",
      );
      await store.ledgerPut({ key: "mail:1", jobId: "42", global: false }, { messageId: "m-42" });
      assert.deepEqual(await store.ledgerGet({ key: "mail:1", jobId: "42", global: false }), {
        found: true,
        value: { messageId: "m-42" },
      });
      assert.deepEqual(await store.ledgerGet({ key: "mail:1", jobId: "99", global: true }), {
        found: true,
        value,
      });
    });
  });
}
