/**
 * Where a SQLite claim's CPU goes, statement by statement, on a fresh file of N pending jobs read
 * through better-sqlite3 directly (no store, no worker): the claim's SELECT alone, CLAIM_JOBS in
 * a BEGIN IMMEDIATE transaction at 1, 10 and 100 jobs, and one job's claim UPDATE by id in a
 * transaction. User and system CPU (process.cpuUsage) per transaction, so the load of other
 * processes does not count; the system share is the transaction's file locks and WAL writes.
 *
 *   node --import tsx bench/sqlite-tx-cost.ts [jobs, default 50000] [transactions per case, default 300; jobs must exceed 112 × that]
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openStore } from "../src/store/open.js";
import * as Q from "../src/store/sqlite/queries.js";

const [jobs = "50000", runs = "300"] = process.argv.slice(2);
const N = Number(jobs);
const R = Number(runs);
const path = join(mkdtempSync(join(tmpdir(), "errand-tx-cost-")), "e.db");
const store = await openStore(path, { schema: "public" });
await store.migrate();
for (let i = 0; i < N; i += 5000)
  await store.insertJobs(
    Array.from({ length: Math.min(5000, N - i) }, () => ({
      queue: "q",
      name: "noop",
      payload: {},
      priority: 0,
      maxAttempts: 3,
    })),
  );
await store.close();
const db = new Database(path);
db.pragma(Q.PRAGMA_WAL);
db.pragma(Q.PRAGMA_SYNCHRONOUS_NORMAL);
const select = db.prepare(
  "SELECT id FROM errand_jobs WHERE state = 'pending' AND queue = @queue AND run_at <= @now ORDER BY priority DESC, run_at, id LIMIT @limit",
);
const claimOne = db.prepare(
  "UPDATE errand_jobs SET state = 'running', attempt = attempt + 1, lease_token = lease_token + 1, locked_by = 'w', locked_until = @now + 60000, started_at = @now, progress = NULL WHERE id = @id",
);
const claim = db.prepare(Q.CLAIM_JOBS);
const measure = (label: string, fn: () => void) => {
  const t = process.cpuUsage();
  for (let i = 0; i < R; i++) fn();
  const used = process.cpuUsage(t);
  console.log(
    `${label}: ${((used.user + used.system) / R).toFixed(0)} µs CPU per call (user ${(used.user / R).toFixed(0)}, system ${(used.system / R).toFixed(0)})`,
  );
};
const claimIn = (limit: number) =>
  db.transaction(() => claim.all({ queue: "q", limit, worker: "w", leaseMs: 60_000, now: Date.now() }));
measure("claim's SELECT of 10 ids, no transaction", () =>
  select.all({ queue: "q", now: Date.now(), limit: 10 }),
);
for (const limit of [1, 10, 100]) {
  const tx = claimIn(limit);
  measure(`CLAIM_JOBS of ${limit} in BEGIN IMMEDIATE`, () => tx.immediate());
}
const byId = db.transaction(() => {
  const row = select.get({ queue: "q", now: Date.now(), limit: 1 }) as { id: number };
  claimOne.run({ id: row.id, now: Date.now() });
});
measure("SELECT 1 id + UPDATE it by id in BEGIN IMMEDIATE", () => byId.immediate());
db.close();
