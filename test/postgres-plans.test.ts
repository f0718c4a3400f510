/**
 * The plans of the processing loop's statements (CLAIM_JOBS, FINISH_JOBS, FINISH_COMPLETED,
 * EXTEND_LEASES, RETURN_JOBS) on a 20,000-job table, before and after ANALYZE, for the first (custom) plan and
 * the generic one: each touches jobs through its primary key — never a scan of the whole table,
 * never a nested loop that rescans the batch for every row of jobs. With statistics taken while
 * every job was pending, the planner used to believe no job runs: FINISH_JOBS then scanned jobs
 * and rescanned its 500 outcomes per running row (~100 ms a batch on 50,000 jobs, bench/NOTES.md),
 * and CLAIM_JOBS hashed the whole table.
 *
 *   node --import tsx --test test/postgres-plans.test.ts
 *
 * Plans are read with EXPLAIN (no ANALYZE): nothing is timed, nothing executed.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pg from "pg";
import { openPostgresStore, type PostgresStore } from "../src/store/postgres/index.js";
import * as Q from "../src/store/postgres/queries.js";
import type { NewJob } from "../src/store/types.js";
import { eachNode, type PlanNode } from "./helpers/plans.js";
import { dropSchema, freshSchemaName, postgresUrl, skipUnlessPostgres } from "./helpers/postgres.js";

const skip = await skipUnlessPostgres();
const url = postgresUrl();
const JOBS = 20_000;
const BATCH = 500;

type Node = PlanNode;

/** Every problem of a plan: a scan of jobs not by its primary key, a nested loop rescanning the batch. */
function problems(plan: Node, allowed: Set<string>): string[] {
  const found: string[] = [];
  eachNode(plan, (n) => {
    const type = n["Node Type"] as string;
    // A scan of jobs names its index; a bitmap heap scan's bitmap index scans (below it) do.
    const scansJobs = n["Relation Name"] === "jobs" && type !== "ModifyTable" && type !== "Bitmap Heap Scan";
    if ((scansJobs || type === "Bitmap Index Scan") && !allowed.has(String(n["Index Name"]))) {
      found.push(`${type} on jobs${n["Index Name"] ? ` using ${n["Index Name"]}` : ""}`);
    }
    if (type === "Nested Loop") {
      const inner = (n.Plans ?? []).find((p) => p["Parent Relationship"] === "Inner");
      if (inner && inner["Relation Name"] !== "jobs")
        found.push(`Nested Loop rescanning a ${inner["Node Type"]}`);
    }
  });
  return found;
}

describe("PostgreSQL hot-path plans", { skip }, () => {
  const schemas: string[] = [];
  const stores: PostgresStore[] = [];
  after(async () => {
    for (const s of stores) await s.close();
    for (const s of schemas) await dropSchema(s);
  });

  for (const state of ["never analyzed", "analyzed"] as const) {
    it(`claim, finish, extend and return probe jobs by primary key (${state})`, async () => {
      const schema = freshSchemaName("errand_plans");
      schemas.push(schema);
      const store = await openPostgresStore({ url, schema });
      stores.push(store);
      await store.migrate();
      const job: NewJob = { queue: "q", name: "noop", payload: {}, priority: 0, maxAttempts: 3 };
      for (let i = 0; i < JOBS; i += 5000) await store.insertJobs(Array.from({ length: 5000 }, () => job));
      const client = new pg.Client(url);
      await client.connect();
      try {
        // Statistics taken while every job is pending: the state the bench's steady state reaches.
        if (state === "analyzed") await client.query(`ANALYZE "${schema}".jobs`);
        const claimed = await store.claimJobs({ queue: "q", limit: BATCH, workerId: "w", leaseMs: 60_000 });
        assert.equal(claimed.length, BATCH);
        const ids = `'{${claimed.map((c) => c.id).join(",")}}'`;
        const tokens = `'{${claimed.map((c) => c.leaseToken).join(",")}}'`;
        const fill = (v: string, type: string) => `array_fill(${v}::${type}, ARRAY[${BATCH}])`;
        const statements = [
          {
            name: "claim",
            sql: Q.CLAIM_JOBS,
            types: "text, int, text, float8",
            args: `'q', ${BATCH}, 'w', 60000`,
          },
          {
            name: "finish",
            sql: Q.FINISH_JOBS,
            types: "bigint[], int[], text[], float8[], text[], text[], text[], text[], text[], text[]",
            args: [ids, tokens, fill("'completed'", "text"), fill("0", "float8"), fill("'null'", "text")]
              .concat([fill("'w'", "text"), fill("NULL", "text"), fill("NULL", "text"), fill("NULL", "text")])
              .concat([fill("NULL", "text")]) // the job logs
              .join(", "),
          },
          {
            name: "finish_completed",
            sql: Q.FINISH_COMPLETED,
            types: "bigint[], int[], text[], text[]",
            args: `${ids}, ${tokens}, ${fill("'null'", "text")}, ${fill("'w'", "text")}`,
          },
          {
            name: "extend",
            sql: Q.EXTEND_LEASES,
            types: "bigint[], int[], float8",
            args: `${ids}, ${tokens}, 60000`,
          },
          { name: "return", sql: Q.RETURN_JOBS, types: "bigint[], int[]", args: `${ids}, ${tokens}` },
        ];
        const seen: string[] = [];
        for (const s of statements) {
          await client.query(`PREPARE ${s.name}(${s.types}) AS ${Q.bindSchema(s.sql, schema)}`);
          for (const mode of ["force_custom_plan", "force_generic_plan"]) {
            await client.query(`SET plan_cache_mode = ${mode}`);
            const { rows } = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE ${s.name}(${s.args})`);
            const allowed = new Set(["jobs_pkey", ...(s.name === "claim" ? ["jobs_claim_idx"] : [])]);
            for (const p of problems(rows[0]["QUERY PLAN"][0].Plan, allowed))
              seen.push(`${s.name} (${mode}): ${p}`);
          }
        }
        assert.deepEqual(seen, []);
      } finally {
        await client.end();
      }
    });
  }
});
