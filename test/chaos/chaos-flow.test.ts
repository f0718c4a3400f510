/**
 * A flow of 1,000 jobs under chaos (flow-run.ts), on a PRIVATE PostgreSQL cluster (the machine's
 * shared server is never restarted or cut) and on a SQLite file: every job runs to completion
 * once, in dependency order, the final job sees all 999 results, nothing stuck, nothing lost.
 * Without PostgreSQL binaries (or root) the Postgres case is skipped — unless CI=true.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import pg from "pg";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/index.js";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/index.js";
import { effectTableSql } from "../fixtures/chaos-jobs.js";
import { flowChaosRun } from "./flow-run.js";
import { type PrivatePostgres, privatePostgresUnavailable, startPrivatePostgres } from "./harness.js";

const unavailable = privatePostgresUnavailable();
if (unavailable && process.env.CI === "true")
  throw new Error(`CI=true requires the Postgres chaos test, but: ${unavailable}`);
if (unavailable) console.warn(`# SKIPPED: ${unavailable}`);

const SCHEMA = "errand_flow_chaos";
let server: PrivatePostgres | undefined;
let pgStore: PostgresStore | undefined;
let pool: pg.Pool | undefined;
let sqliteStore: SqliteStore | undefined;
let dir: string | undefined;
after(async () => {
  await pgStore?.close().catch(() => {});
  await pool?.end().catch(() => {});
  server?.destroy();
  await sqliteStore?.close().catch(() => {});
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function countEffects(rows: Array<{ jobId: string }>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(String(r.jobId), (counts.get(String(r.jobId)) ?? 0) + 1);
  return counts;
}

test("PostgreSQL: a 1,000-job flow under kill -9, SIGSTOP past the lease and cut connections", {
  skip: unavailable ?? false,
  timeout: 420_000,
}, async () => {
  server = await startPrivatePostgres();
  const url = server.url;
  pool = new pg.Pool({ connectionString: url, max: 4, application_name: "chaos-inspector" });
  pool.on("error", () => {});
  pgStore = openPostgresStore({ pool, schema: SCHEMA });
  await pgStore.migrate();
  await pool.query(effectTableSql("postgres", SCHEMA));
  const p = pool;
  const result = await flowChaosRun({
    label: "postgres",
    url,
    schema: SCHEMA,
    store: pgStore,
    effects: async () =>
      countEffects((await p.query(`SELECT job_id AS "jobId" FROM "${SCHEMA}".chaos_effects`)).rows),
    async terminate(rand) {
      const client = new pg.Client({ connectionString: url, application_name: "chaos-admin" });
      client.on("error", () => {});
      await client.connect();
      try {
        const { rows } = await client.query(
          "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'errand%' AND pid <> pg_backend_pid()",
        );
        const victims = rows.map((r) => Number(r.pid)).filter(() => rand() < 0.5);
        if (victims.length === 0) return 0;
        const res = await client.query(
          "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM unnest($1::int[]) AS pid",
          [victims],
        );
        return Number(res.rows[0].n);
      } finally {
        await client.end().catch(() => {});
      }
    },
  });
  assert.deepEqual(result.violations, []);
  assert.equal(result.jobs, 1000);
  assert.ok(result.faults.kill9 + result.faults.stop + result.faults.terminate > 0, "faults were injected");
});

test("SQLite: a 1,000-job flow under kill -9 and SIGSTOP past the lease", { timeout: 420_000 }, async () => {
  dir = mkdtempSync(join(tmpdir(), "errand-flow-chaos-sqlite-"));
  const path = join(dir, "errand.db");
  sqliteStore = openSqliteStore({ path });
  await sqliteStore.migrate();
  sqliteStore.db.exec(effectTableSql("sqlite"));
  const db = sqliteStore.db;
  const result = await flowChaosRun({
    label: "sqlite",
    url: path,
    store: sqliteStore,
    effects: async () =>
      countEffects(
        db.prepare("SELECT CAST(job_id AS TEXT) AS jobId FROM chaos_effects").all() as { jobId: string }[],
      ),
  });
  assert.deepEqual(result.violations, []);
  assert.equal(result.jobs, 1000);
  assert.ok(result.faults.kill9 + result.faults.stop > 0, "faults were injected");
});
