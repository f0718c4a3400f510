/**
 * The flow_claim function (PostgreSQL) reads no index through a bitmap once jobs have been
 * claimed and finished, before and after ANALYZE. The running jobs are counted through
 * jobs_lease_idx, which keeps the entries of finished jobs, dead, until a vacuum; a bitmap scan
 * never marks them dead, so before migration 12 the count visited every job finished since the
 * last vacuum on every claim (a Bitmap Heap Scan of 17,500 entries and 683 heap pages after 300
 * claims of 50: bench/NOTES.md finding 16). A plain index scan marks each dead entry the first
 * time it finds one, and later claims skip it.
 *
 *   node --import tsx --test test/flow/claim-dead-entries.test.ts
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import {
  ExplainingClient,
  eachNode,
  FlowPlanFixture,
  flowClaimCycle,
  type PlanNode,
} from "../helpers/plans.js";
import { skipUnlessPostgres } from "../helpers/postgres.js";

const skip = await skipUnlessPostgres();
const JOBS = 10_000;
const CLAIM = 50;
/** Claims (each finishing the claim before it) before the plans are read. */
const CYCLES = 60;

function bitmapScans(plan: PlanNode): string[] {
  const found: string[] = [];
  eachNode(plan, (n) => {
    if (n["Node Type"] === "Bitmap Heap Scan") found.push(`Bitmap Heap Scan on ${n["Relation Name"]}`);
  });
  return found;
}

const LIMITS = {
  global: { key: false, args: [10_000, null] },
  "per-key": { key: true, args: [null, 10_000] },
} as const;

describe("flow_claim after claims and finishes (PostgreSQL)", { skip }, () => {
  const fixture = new FlowPlanFixture();
  after(() => fixture.cleanUp());

  for (const state of ["never analyzed", "analyzed"] as const) {
    for (const [limit, { key, args }] of Object.entries(LIMITS)) {
      it(`${limit} limit, ${state}: no bitmap scan walks the finished jobs' dead entries`, async () => {
        const { schema, store } = await fixture.backlog("errand_flow_dead", JOBS, key);
        const explaining = new ExplainingClient(fixture.url);
        await explaining.connect();
        try {
          if (state === "analyzed") await explaining.client.query(`ANALYZE "${schema}".jobs`);
          const [global, perKey] = args;
          const cycle = flowClaimCycle(explaining.client, store, schema, CLAIM, { global, perKey });
          for (let i = 0; i < CYCLES; i++) await cycle();
          await explaining.explain();
          for (let i = 0; i < 3; i++) await cycle();
          const plans = explaining.plans().length;
          assert.ok(plans >= 15, `auto_explain reported ${plans} plans`);
          assert.deepEqual(explaining.problems(bitmapScans), []);
        } finally {
          await explaining.end();
        }
      });
    }
  }
});
