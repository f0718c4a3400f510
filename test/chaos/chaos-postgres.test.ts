/**
 * Chaos on PostgreSQL: four worker processes, kill -9, SIGSTOP/SIGCONT, pg_terminate_backend of
 * the workers' connections, black holes (every open connection of the workers goes silent for
 * 2-4 leases, through a loopback proxy: proxy.ts) and a restart of the server, at random moments; handlers that hang,
 * throw synchronously or reject after their deadline. See run.ts and check.ts.
 *
 * The server is a PRIVATE PostgreSQL 15 cluster (initdb into a temp folder, a free port, run as
 * the postgres OS user), stopped and deleted at the end: the machine's shared server is never
 * restarted or cut. Without PostgreSQL binaries (or root) the test is skipped — unless CI=true,
 * where it must run.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import pg from "pg";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/index.js";
import { effectTableSql } from "../fixtures/chaos-jobs.js";
import { withClient } from "../helpers/postgres.js";
import { type PrivatePostgres, privatePostgresUnavailable, startPrivatePostgres } from "./harness.js";
import { TcpProxy } from "./proxy.js";
import { chaosRun } from "./run.js";

const unavailable = privatePostgresUnavailable();
if (unavailable && process.env.CI === "true")
  throw new Error(`CI=true requires the Postgres chaos test, but: ${unavailable}`);
if (unavailable) console.warn(`# SKIPPED: ${unavailable}`);

const SCHEMA = "errand_chaos";
let server: PrivatePostgres | undefined;
let store: PostgresStore | undefined;
let pool: pg.Pool | undefined;
let proxy: TcpProxy | undefined;
after(async () => {
  await proxy?.close();
  await store?.close().catch(() => {});
  await pool?.end().catch(() => {});
  server?.destroy();
});

test("PostgreSQL: nothing lost, no effect twice, under kill -9, SIGSTOP, pg_terminate_backend, black-holed connections and a server restart", {
  skip: unavailable ?? false,
  timeout: 420_000,
}, async () => {
  server = await startPrivatePostgres();
  const url = server.url;
  // The workers connect through a loopback proxy that can black-hole their connections.
  proxy = new TcpProxy({ host: "127.0.0.1", port: server.port });
  await proxy.listen();
  const px = proxy;
  // The test's own connections are named apart, so pg_terminate_backend cuts only the workers'.
  pool = new pg.Pool({ connectionString: url, max: 4, application_name: "chaos-inspector" });
  pool.on("error", () => {});
  store = openPostgresStore({ pool, schema: SCHEMA });
  await store.migrate();
  await pool.query(effectTableSql("postgres", SCHEMA));
  const admin = <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> =>
    withClient(fn, { url, applicationName: "chaos-admin" });
  const p = pool;
  const srv = server;
  const result = await chaosRun({
    label: "postgres",
    url: px.url(url),
    schema: SCHEMA,
    store,
    faults: { kill9: 3, stop: 3, terminate: 3, restart: 0, blackhole: 2 },
    blackhole() {
      const n = px.connections;
      px.pause({ newConnections: "pass" });
      return n;
    },
    heal: () => px.resume(),
    async terminate(rand) {
      return admin(async (c) => {
        const { rows } = await c.query(
          "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'errand%' AND pid <> pg_backend_pid()",
        );
        const victims = rows.map((r) => Number(r.pid)).filter(() => rand() < 0.5);
        if (victims.length === 0) return 0;
        const res = await c.query(
          "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM unnest($1::int[]) AS pid",
          [victims],
        );
        return Number(res.rows[0].n);
      });
    },
    async restart() {
      srv.restart();
    },
    effects: async () => (await p.query(`SELECT job_id AS "jobId", pid FROM "${SCHEMA}".chaos_effects`)).rows,
    ledger: async () => (await p.query(`SELECT key, job_id::text AS "jobId" FROM "${SCHEMA}".ledger`)).rows,
  });
  assert.deepEqual(result.verdict.violations, [], result.summary);
  assert.equal(result.faults.restart, 1, "the server was restarted once");
  assert.ok(result.faults.terminate > 0 || result.faults.kill9 > 0, "connection faults were injected");
  assert.ok(result.faults.blackhole > 0, "connections were black-holed");
  assert.equal(result.verdict.stats.lost, 0);
  assert.equal(result.verdict.stats.duplicateEffects, 0);
});
