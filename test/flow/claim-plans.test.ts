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
import { ExplainingClient, eachNode, FlowPlanFixture, type PlanNode } from "../helpers/plans.js";
import { skipUnlessPostgres } from "../helpers/postgres.js";

const skip = await skipUnlessPostgres();
const JOBS = 20_000;
const CLAIM = 50;
/** More than the five custom plans a cached statement gets before a generic one is considered. */
const CALLS = 8;

/** What is wrong with one statement's plan (empty when nothing). */
function problems(plan: PlanNode): string[] {
  const found: string[] = [];
  eachNode(plan, (n) => {
    const type = n["Node Type"] as string;
    if (n["Relation Name"] === "jobs" && type === "Seq Scan") found.push("Seq Scan on jobs");
    if (type === "BitmapAnd") found.push("BitmapAnd (a whole index read into a bitmap)");
    if (type === "Nested Loop") {
      const inner = (n.Plans ?? []).find((p) => p["Parent Relationship"] === "Inner");
      if (inner?.["Node Type"] === "CTE Scan") found.push(`Nested Loop rescanning CTE ${inner["CTE Name"]}`);
    }
  });
  return found;
}

const LIMITS: Record<string, { key: boolean; args: (number | null)[]; claim?: number }> = {
  global: { key: false, args: [10_000, null, null, null, null, null] },
  "per-key": { key: true, args: [null, 10_000, null, null, null, null] },
  // Claims of 250 over 100 keys take 3 jobs a key: after the first, the function runs the
  // statement whose walk reads a key's share per step (migration 13, sql/flow-claim-walk.ts).
  "per-key, several jobs a key": { key: true, args: [null, 10_000, null, null, null, null], claim: 250 },
  rate: { key: false, args: [null, null, 1_000_000, 1000, null, null] },
};

describe("flow_claim plans (PostgreSQL)", { skip }, () => {
  const fixture = new FlowPlanFixture();
  after(() => fixture.cleanUp());

  for (const state of ["never analyzed", "analyzed"] as const) {
    for (const [limit, { key, args, claim = CLAIM }] of Object.entries(LIMITS)) {
      it(`${limit} limit, ${state}: every statement reads jobs by index, no quadratic join`, async () => {
        const { schema } = await fixture.backlog("errand_flow_plans", JOBS, key);
        const explaining = new ExplainingClient(fixture.url);
        await explaining.connect();
        try {
          if (state === "analyzed") await explaining.client.query(`ANALYZE "${schema}".jobs`);
          await explaining.explain();
          let claimed = 0;
          for (let call = 0; call < CALLS; call++) {
            const { rows } = await explaining.client.query(
              `SELECT id FROM "${schema}".flow_claim($1, 'q', $2, 'w', 60000, $3, $4, $5, $6, $7, $8, NULL)`,
              [`plans:${schema}`, claim, ...args],
            );
            claimed += rows.filter((r) => r.id !== null).length;
          }
          assert.equal(claimed, CALLS * claim, "every claim took its full batch");
          const plans = explaining.plans().length;
          assert.ok(plans >= CALLS * 5, `auto_explain reported ${plans} plans`);
          if (claim > 100) {
            const many = explaining.plans().filter((p) => p.query.includes("array_agg(f.id)")).length;
            assert.ok(many >= CALLS - 1, `the share-reading statement ran ${many} times`);
          }
          assert.deepEqual(explaining.problems(problems), []);
        } finally {
          await explaining.end();
        }
      });
    }
  }
});
