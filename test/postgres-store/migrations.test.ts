/**
 * PostgreSQL store: migrations under an advisory lock (several pools migrating one fresh schema),
 * a schema carrying a breaking migration this errand does not know, and the schema name's checks.
 * The scripted scenario run against the memory store and every other store is
 * test/conformance/differential.test.ts.
 *
 *   node --import tsx --test test/postgres-store/migrations.test.ts
 *
 * Each file uses schemas of its own in the test database, dropped at the end (setup.ts). Without a
 * reachable server the tests are skipped with a message — or fail when CI=true.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ValidationError } from "../../src/errors.js";
import { openPostgresStore } from "../../src/store/postgres/index.js";
import { LATEST_VERSION, MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { admin, describePostgresStore, job, migrated, open, schemaName, url } from "./setup.js";

describePostgresStore(() => {
  describe("migrations", () => {
    it("migrates a fresh schema from five pools at once, once", async () => {
      const schema = schemaName();
      const stores = Array.from({ length: 5 }, () => open(schema, { poolSize: 2 }));
      await Promise.all(stores.map((s) => s.migrate()));
      const rows = await admin(
        async (c) => (await c.query(`SELECT version FROM "${schema}".migrations ORDER BY version`)).rows,
      );
      assert.deepStrictEqual(
        rows.map((r) => r.version),
        // Every version this errand knows, once (numbers assigned to parallel work may leave gaps).
        MIGRATIONS.map((m) => m.version),
      );
      await Promise.all(stores.map((s) => s.migrate())); // idempotent, fast path
      await stores[0].insertJobs([job("q", "x")]);
      assert.equal((await stores[4].stats())[0].pending, 1);
    });

    it("refuses a schema carrying a breaking migration it does not know", async () => {
      const store = await migrated();
      await admin((c) =>
        c.query(
          `INSERT INTO "${store.schema}".migrations (version, name, breaking) VALUES ($1, 'future', true)`,
          [LATEST_VERSION + 1],
        ),
      );
      await assert.rejects(() => store.migrate(), /cannot work with: upgrade errand/);
    });

    it("validates the schema name", () => {
      for (const bad of ["", "1abc", "a-b", 'x"; drop', "pg_catalog", "a".repeat(51)]) {
        assert.throws(() => openPostgresStore({ url, schema: bad }), ValidationError, bad);
      }
      assert.throws(() => openPostgresStore({ url: "" }), ValidationError);
    });
  });
});
