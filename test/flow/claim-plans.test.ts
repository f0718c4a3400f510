/**
 * The plans inside the flow_claim function (PostgreSQL), read with auto_explain as the function
 * runs them: on 20,000 pending jobs of a limited queue, before and after ANALYZE, for a global
 * limit, a per-key limit and a rate limit, over the first claims (custom plans) and the later
 * ones (generic). No statement may read jobs except through an index, AND a whole index into a
 * bitmap, or rescan a CTE for every row of another (quadratic in the claim's size).
 *
 * Before migration 11, on a never-analyzed table, the running jobs were counted with a
 * sequential scan of jobs (5.8 ms a claim), the claiming UPDATE ANDed jobs_claim_idx's every
 * pending entry into its bitmap, and the claimed rows were joined back to the picks with a
 * nested loop over both CTEs: a globally limited queue ran at 0.11 of an unlimited one's speed
 * (bench/NOTES.md finding 16).
 *
 *   node --import tsx --test test/flow/claim-plans.test.ts
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pg from "pg";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/index.js";
import type { NewJob } from "../../src/store/types.js";
import { dropSchema, freshSchemaName, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";

const skip = await skipUnlessPostgres();
const url = postgresUrl();
const JOBS = 20_000;
const KEYS = 100;
const CLAIM = 50;
/** More than the five custom plans a cached statement gets before a generic one is considered. */
const CALLS = 8;

type Node = Record<string, unknown> & { Plans?: Node[] };

/** What is wrong with one statement's plan (empty when nothing). */
function problems(plan: Node): string[] {
  const found: string[] = [];
  const walk = (n: Node) => {
    const type = n["Node Type"] as string;
    if (n["Relation Name"] === "jobs" && type === "Seq Scan") found.push("Seq Scan on jobs");
    if (type === "BitmapAnd") found.push("BitmapAnd (a whole index read into a bitmap)");
    if (type === "Nested Loop") {
      const inner = (n.Plans ?? []).find((p) => p["Parent Relationship"] === "Inner");
      if (inner?.["Node Type"] === "CTE Scan") found.push(`Nested Loop rescanning CTE ${inner["CTE Name"]}`);
    }
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(plan);
  return found;
}

const LIMITS = {
  global: { key: false, args: [10_000, null, null, null, null, null] },
  "per-key": { key: true, args: [null, 10_000, null, null, null, null] },
  rate: { key: false, args: [null, null, 1_000_000, 1000, null, null] },
} as const;

describe("flow_claim plans (PostgreSQL)", { skip }, () => {
  const schemas: string[] = [];
  const stores: PostgresStore[] = [];
  after(async () => {
    for (const s of stores) await s.close();
    for (const s of schemas) await dropSchema(s);
  });

  for (const state of ["never analyzed", "analyzed"] as const) {
    for (const [limit, { key, args }] of Object.entries(LIMITS)) {
      it(`${limit} limit, ${state}: every statement reads jobs by index, no quadratic join`, async () => {
        const schema = freshSchemaName("errand_flow_plans");
        schemas.push(schema);
        const store = await openPostgresStore({ url, schema });
        stores.push(store);
        await store.migrate();
        for (let i = 0; i < JOBS; i += 5000) {
          const batch = Array.from(
            { length: 5000 },
            (_, j): NewJob => ({
              queue: "q",
              name: "noop",
              payload: {},
              priority: 0,
              maxAttempts: 3,
              flowKey: key ? `k${(i + j) % KEYS}` : undefined,
            }),
          );
          await store.insertJobs(batch);
        }
        const client = new pg.Client(url);
        await client.connect();
        const notices: string[] = [];
        client.on("notice", (msg) => notices.push(msg.message ?? ""));
        try {
          if (state === "analyzed") await client.query(`ANALYZE "${schema}".jobs`);
          await client.query("LOAD 'auto_explain'");
          await client.query(
            "SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; " +
              "SET auto_explain.log_format = 'json'; SET auto_explain.log_level = 'notice'",
          );
          const found = new Set<string>();
          let claimed = 0;
          for (let call = 0; call < CALLS; call++) {
            const { rows } = await client.query(
              `SELECT id FROM "${schema}".flow_claim($1, 'q', $2, 'w', 60000, $3, $4, $5, $6, $7, $8, NULL)`,
              [`plans:${schema}`, CLAIM, ...args],
            );
            claimed += rows.filter((r) => r.id !== null).length;
          }
          assert.equal(claimed, CALLS * CLAIM, "every claim took its full batch");
          let plans = 0;
          for (const text of notices) {
            const json = text.slice(text.indexOf("{"));
            const { Plan, "Query Text": query } = JSON.parse(json) as { Plan: Node; "Query Text": string };
            plans++;
            for (const p of problems(Plan)) found.add(`${p} in: ${query.trim().slice(0, 60)}`);
          }
          assert.ok(plans >= CALLS * 5, `auto_explain reported ${plans} plans`);
          assert.deepEqual([...found], []);
        } finally {
          await client.end();
        }
      });
    }
  }
});
