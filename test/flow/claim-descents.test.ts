/**
 * The flow_claim function (PostgreSQL) descends jobs_flow_idx once per key it visits. A per-key
 * claim of 250 over 100 keys takes a share of 3 jobs from every key; before migration 14 the key
 * walk read each key's first job (one descent per key) and the candidates read the other two
 * (a second descent per key): 203 index scans of jobs_flow_idx per claim, against 103 now (the
 * walk reads the key's share in the descent that finds it: bench/NOTES.md finding 16). Counted
 * with auto_explain (loops of the index scans), which does not depend on the machine's load.
 *
 *   node --import tsx --test test/flow/claim-descents.test.ts
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
const KEYS = 100;
const CLAIM = 250;
/** Claims (each finishing the claim before it) before the plans are read. */
const CYCLES = 8;

/** Index scans of jobs_flow_idx the plan ran (its nodes' loops). */
function flowIndexScans(plan: PlanNode): number {
  let scans = 0;
  eachNode(plan, (n) => {
    if (n["Index Name"] === "jobs_flow_idx") scans += Number(n["Actual Loops"] ?? 0);
  });
  return scans;
}

describe("flow_claim's key walk (PostgreSQL)", { skip }, () => {
  const fixture = new FlowPlanFixture();
  after(() => fixture.cleanUp());

  for (const state of ["never analyzed", "analyzed"] as const) {
    it(`per-key claim of ${CLAIM} over ${KEYS} keys, ${state}: one descent of jobs_flow_idx per key`, async () => {
      const { schema, store } = await fixture.backlog("errand_flow_descents", JOBS, true);
      const explaining = new ExplainingClient(fixture.url);
      await explaining.connect();
      try {
        if (state === "analyzed") await explaining.client.query(`ANALYZE "${schema}".jobs`);
        const cycle = flowClaimCycle(explaining.client, store, schema, CLAIM, {
          global: null,
          perKey: 10_000,
        });
        for (let i = 0; i < CYCLES; i++) await cycle();
        await explaining.explain();
        await explaining.client.query("SET auto_explain.log_analyze = on; SET auto_explain.log_timing = off");
        const claims = 3;
        for (let i = 0; i < claims; i++) await cycle();
        const walks = explaining.plans().filter((p) => p.query.includes("WITH RECURSIVE walk"));
        assert.equal(walks.length, claims, "auto_explain logged each claim's statement");
        // The walk: one descent per key (100) and one past the last key from the start (the
        // rotation wraps); the keyless check: one. Before migration 14, 100 more.
        for (const { plan } of walks)
          assert.ok(flowIndexScans(plan) <= KEYS + 3, `${flowIndexScans(plan)} index scans`);
      } finally {
        await explaining.end();
      }
    });
  }
});
