/**
 * A pool passed in may carry type parsers of its own. The plain-completion finish reads int8 ids
 * as text itself (db.ts: node-postgres's int8 parser makes a RegExp per value) and the claim
 * answers in text arrays (claim-arrays.ts) whose payloads still go through the pool's jsonb
 * parser, so a pool that parses int8 as numbers still gets string ids and applied finishes.
 *
 *   node --import tsx --test test/postgres-store/type-parsers.test.ts
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import pg from "pg";
import { describePostgresStore, job, migrated, schemaName, url } from "./setup.js";

describePostgresStore(() => {
  it("claims and finishes through a pool with its own type parsers", async () => {
    const types = {
      getTypeParser(oid: number, format?: string) {
        if (oid === 20) return (v: string) => Number(v); // int8 as numbers
        if (oid === 3802) return (v: string) => ({ jsonbText: v }); // jsonb kept as its text
        return pg.types.getTypeParser(oid, format as "text");
      },
    };
    const pool = new pg.Pool({ connectionString: url, max: 2, types: types as pg.CustomTypesConfig });
    try {
      const store = await migrated(schemaName(), { pool });
      const [inserted] = await store.insertJobs([job("tp", "typed", { payload: { n: 1 } })]);
      const [claimed] = await store.claimJobs({ queue: "tp", limit: 1, workerId: "w", leaseMs: 60_000 });
      assert.ok(claimed);
      assert.equal(claimed.id, inserted?.job.id);
      assert.equal(typeof claimed.id, "string");
      assert.deepEqual(claimed.payload, { jsonbText: '{"n": 1}' }, "the pool's jsonb parser");
      assert.ok(claimed.runAt instanceof Date);
      const applied = await store.finishJobs([
        { id: claimed.id, leaseToken: claimed.leaseToken, kind: "completed", worker: "w", result: null },
      ]);
      assert.deepEqual(applied, [true]);
    } finally {
      await pool.end();
    }
  });
});
