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
import pg from "pg";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/index.js";
import type { NewJob } from "../../src/store/types.js";
import { dropSchema, freshSchemaName, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";

const skip = await skipUnlessPostgres();
const url = postgresUrl();
const JOBS = 10_000;
const CLAIM = 50;
/** Claims (each finishing the claim before it) before the plans are read. */
const CYCLES = 60;

type Node = Record<string, unknown> & { Plans?: Node[] };

function bitmapScans(plan: Node): string[] {
  const found: string[] = [];
  const walk = (n: Node) => {
    if (n["Node Type"] === "Bitmap Heap Scan") found.push(`Bitmap Heap Scan on ${n["Relation Name"]}`);
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(plan);
  return found;
}

const LIMITS = {
  global: { key: false, args: [10_000, null] },
  "per-key": { key: true, args: [null, 10_000] },
} as const;

describe("flow_claim after claims and finishes (PostgreSQL)", { skip }, () => {
  const schemas: string[] = [];
  const stores: PostgresStore[] = [];
  after(async () => {
    for (const s of stores) await s.close();
    for (const s of schemas) await dropSchema(s);
  });

  for (const state of ["never analyzed", "analyzed"] as const) {
    for (const [limit, { key, args }] of Object.entries(LIMITS)) {
      it(`${limit} limit, ${state}: no bitmap scan walks the finished jobs' dead entries`, async () => {
        const schema = freshSchemaName("errand_flow_dead");
        schemas.push(schema);
        const store = await openPostgresStore({ url, schema });
        stores.push(store);
        await store.migrate();
        for (let i = 0; i < JOBS; i += 5000) {
          await store.insertJobs(
            Array.from(
              { length: 5000 },
              (_, j): NewJob => ({
                queue: "q",
                name: "noop",
                payload: {},
                priority: 0,
                maxAttempts: 3,
                flowKey: key ? `k${(i + j) % 100}` : undefined,
              }),
            ),
          );
        }
        const client = new pg.Client(url);
        await client.connect();
        const notices: string[] = [];
        client.on("notice", (msg) => notices.push(msg.message ?? ""));
        try {
          if (state === "analyzed") await client.query(`ANALYZE "${schema}".jobs`);
          let running: { id: string; lease_token: number }[] = [];
          const cycle = async () => {
            const { rows } = await client.query(
              `SELECT id, lease_token FROM "${schema}".flow_claim($1, 'q', $2, 'w', 60000, $3, $4, NULL, NULL, NULL, NULL, NULL)`,
              [`dead:${schema}`, CLAIM, ...args],
            );
            await store.finishJobs(
              running.map((j) => ({
                id: String(j.id),
                leaseToken: j.lease_token,
                kind: "completed" as const,
                worker: "w",
              })),
            );
            running = rows.filter((r) => r.id !== null);
            assert.equal(running.length, CLAIM, "every claim takes its full batch");
          };
          for (let i = 0; i < CYCLES; i++) await cycle();
          await client.query("LOAD 'auto_explain'");
          await client.query(
            "SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; " +
              "SET auto_explain.log_format = 'json'; SET auto_explain.log_level = 'notice'",
          );
          for (let i = 0; i < 3; i++) await cycle();
          const found = new Set<string>();
          let plans = 0;
          for (const text of notices) {
            const { Plan, "Query Text": query } = JSON.parse(text.slice(text.indexOf("{"))) as {
              Plan: Node;
              "Query Text": string;
            };
            plans++;
            for (const p of bitmapScans(Plan)) found.add(`${p} in: ${query.trim().slice(0, 60)}`);
          }
          assert.ok(plans >= 15, `auto_explain reported ${plans} plans`);
          assert.deepEqual([...found], []);
        } finally {
          await client.end();
        }
      });
    }
  }
});
