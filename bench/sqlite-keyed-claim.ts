/**
 * What flow keys cost a plain SQLite claim: N no-op jobs in a fresh file, unkeyed or keyed over
 * 100 keys (k0..k99 in turn, as the bench's per-key condition), claimed B at a time with
 * claimJobs and finished a claim later, with the connection's wal_autocheckpoint (pages;
 * SQLite's default 1000, 0 = never) given. Keyed jobs sit in errand_jobs_flow_idx, ordered by
 * key, so each claim deletes entries from one leaf page per key where an unkeyed claim deletes a
 * contiguous run; this shows that page cost apart from the flow plan. Prints ms per claim and
 * per finish. Count the writes with `strace -f -c -e trace=pwrite64,pread64`.
 *
 *   node --import tsx bench/sqlite-keyed-claim.ts [keyed|unkeyed] [walAutocheckpoint, default 1000] [batch, default 250] [jobs, default 20000]
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import type { ClaimedJob } from "../src/store/types.js";
import { insertBacklog } from "../test/helpers/plans.js";

const [kind = "keyed", checkpoint = "1000", batch = "250", jobs = "20000"] = process.argv.slice(2);
const B = Number(batch);
const N = Number(jobs);
const db = new Database(join(mkdtempSync(join(tmpdir(), "errand-keyed-claim-")), "e.db"));
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL"); // as the store sets its own connections
db.pragma(`wal_autocheckpoint = ${Number(checkpoint)}`);
const store = openSqliteStore({ db });
await store.migrate();
await insertBacklog(store, "q", N, (i) => (kind === "keyed" ? `k${i % 100}` : undefined));
let running: ClaimedJob[] = [];
let claims = 0;
let claimMs = 0;
let finishMs = 0;
for (let done = 0; done < N; ) {
  let t = performance.now();
  const claimed = await store.claimJobs({ queue: "q", limit: B, workerId: "w", leaseMs: 15_000 });
  claimMs += performance.now() - t;
  claims++;
  t = performance.now();
  await store.finishJobs(
    running.map((c) => ({ id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "w" })),
  );
  finishMs += performance.now() - t;
  done += running.length;
  running = claimed;
}
console.log(
  `${kind}, wal_autocheckpoint ${checkpoint}, claims of ${B}: claim ${(claimMs / claims).toFixed(2)} ms, finish ${(finishMs / claims).toFixed(2)} ms (${claims} claims)`,
);
await store.close();
db.close();
