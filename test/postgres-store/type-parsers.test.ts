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

  it("claims through a client's own jsonb parser, set after the store opened", async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on("connect", (client) => client.setTypeParser(3802, (v: string) => ({ perClient: v })));
    try {
      const store = await migrated(schemaName(), { pool });
      await store.insertJobs([job("tp-client", "typed", { payload: { n: 2 } })]);
      const [claimed] = await store.claimJobs({
        queue: "tp-client",
        limit: 1,
        workerId: "w",
        leaseMs: 60_000,
      });
      assert.deepEqual(claimed?.payload, { perClient: '{"n": 2}' }, "the connection's jsonb parser");
    } finally {
      await pool.end();
    }
  });

  it("claims exact times whatever the session's extra_float_digits", async () => {
    // A float8's text is rounded when extra_float_digits is below 0 (-3: 1.79661178712e+12 ms).
    const pool = new pg.Pool({ connectionString: url, max: 2, options: "-c extra_float_digits=-3" });
    try {
      const store = await migrated(schemaName(), { pool });
      const runAt = new Date("2026-12-07T02:49:47.123Z");
      await store.insertJobs([job("tp-float", "typed", { runAt })]);
      const [claimed] = await store.claimJobs({
        queue: "tp-float",
        limit: 1,
        workerId: "w",
        leaseMs: 60_000,
      });
      assert.ok(claimed);
      assert.equal(claimed.runAt.toISOString(), runAt.toISOString());
      const stored = await store.getJob(claimed.id);
      assert.equal(claimed.createdAt.getTime(), stored?.createdAt.getTime());
      assert.equal(claimed.lockedUntil.getTime(), stored?.lockedUntil?.getTime());
    } finally {
      await pool.end();
    }
  });
});
