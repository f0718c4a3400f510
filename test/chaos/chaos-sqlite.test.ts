/**
 * Chaos on SQLite: four worker processes on one database file, kill -9 and SIGSTOP/SIGCONT at
 * random moments, handlers that hang, throw synchronously or reject after their deadline.
 * See run.ts for the run and check.ts for what is checked. CHAOS_JOBS / CHAOS_SEED scale and
 * reseed it.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/index.js";
import { effectTableSql } from "../fixtures/chaos-jobs.js";
import { scratchDir } from "./harness.js";
import { chaosRun } from "./run.js";

const dir = scratchDir("errand-chaos-sqlite-db-");
let store: SqliteStore | undefined;
after(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

test("SQLite: nothing lost, no effect twice, no overlap under valid leases, under kill -9 and SIGSTOP", {
  timeout: 420_000,
}, async () => {
  const path = join(dir, "errand.db");
  store = openSqliteStore({ path });
  await store.migrate();
  store.db.exec(effectTableSql("sqlite"));
  const db = store.db;
  const result = await chaosRun({
    label: "sqlite",
    url: path,
    store,
    faults: { kill9: 3, stop: 3 },
    effects: async () =>
      db.prepare("SELECT CAST(job_id AS TEXT) AS jobId, pid FROM chaos_effects").all() as {
        jobId: string;
        pid: number;
      }[],
    ledger: async () =>
      db.prepare("SELECT key, CAST(job_id AS TEXT) AS jobId FROM errand_ledger").all() as {
        key: string;
        jobId: string;
      }[],
  });
  assert.deepEqual(result.verdict.violations, [], result.summary);
  assert.ok(result.faults.kill9 + result.faults.stop > 0, "faults were injected");
  assert.equal(result.verdict.stats.lost, 0);
  assert.equal(result.verdict.stats.duplicateEffects, 0);
});
