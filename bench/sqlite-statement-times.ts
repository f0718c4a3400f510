/**
 * The SQLite store's statements, timed one by one (wall time per claim, from hrtime around each
 * prepared statement's all/get/run): N=20,000 jobs over 100 flow keys, claims of B (default 50)
 * under a per-key limit that never binds (the bench's flow workload), each claim's jobs finished
 * after the next claim. PLAIN=1 claims with claimJobs instead; UNKEYED=1 inserts jobs without keys;
 * HELD=K keeps the last K claimed jobs running (a worker's read-ahead buffer holds up to
 * `batchSize`), finishing the older ones after each claim. UNTIMED=1 leaves the statements
 * unwrapped: the CPU per job without the timing's own cost (a Proxy and a label per statement).
 *
 *   node --import tsx bench/sqlite-statement-times.ts [B]
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClaimedJob, Outcome } from "../src/store/claim-types.js";
import { Connection } from "../src/store/sqlite/connection.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { insertBacklog } from "../test/helpers/plans.js";

const B = Number(process.argv[2] ?? 50);
const N = 20000;
const times = new Map<string, { n: number; ns: bigint }>();
const orig = Connection.prototype.q;
if (!process.env.UNTIMED)
  Connection.prototype.q = function (sql: string) {
    const st = orig.call(this, sql);
    const label = sql.replace(/\s+/g, " ").trim().slice(0, 70);
    return new Proxy(st, {
      get(t, p) {
        const v = Reflect.get(t, p);
        if (typeof v !== "function" || !["all", "get", "run"].includes(p as string)) return v;
        return (...args: unknown[]) => {
          const s = process.hrtime.bigint();
          const r = v.apply(t, args);
          const e = times.get(label) ?? { n: 0, ns: 0n };
          e.n++;
          e.ns += process.hrtime.bigint() - s;
          times.set(label, e);
          return r;
        };
      },
    });
  };
const file = join(mkdtempSync(join(tmpdir(), "st-")), "e.db");
const store = await openSqliteStore({ path: file });
await store.migrate();
await insertBacklog(store, "q", N, (i) => (process.env.UNKEYED ? undefined : `k${i % 100}`));
times.clear();
const running: ClaimedJob[] = [];
let done = 0;
const t0 = process.cpuUsage();
let claims = 0;
let claimNs = 0n;
while (done < N) {
  const s = process.hrtime.bigint();
  const jobs = process.env.PLAIN
    ? await store.claimJobs({ queue: "q", limit: B, workerId: "w", leaseMs: 15000 })
    : (
        await store.claimFlowJobs({
          queue: "q",
          limit: B,
          workerId: "w",
          leaseMs: 15000,
          flow: { keyConcurrency: 100000 },
        })
      ).jobs;
  claimNs += process.hrtime.bigint() - s;
  claims++;
  const keep = jobs.length === 0 ? 0 : Number(process.env.HELD ?? 0);
  const old = running.splice(0, Math.max(0, running.length - keep));
  await store.finishJobs(
    old.map((c): Outcome => ({ id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "w" })),
  );
  done += old.length;
  running.push(...jobs);
}
const cpu = process.cpuUsage(t0);
console.log(
  `claims ${claims}, cpu µs/job ${((cpu.user + cpu.system) / N).toFixed(1)}, claim wall µs/claim ${(Number(claimNs) / 1000 / claims).toFixed(0)}`,
);
for (const [k, v] of [...times].sort((a, b) => Number(b[1].ns - a[1].ns)))
  console.log(
    `${(Number(v.ns) / 1000 / claims).toFixed(1).padStart(7)} µs/claim  n/claim ${(v.n / claims).toFixed(1)}  ${k}`,
  );
await store.close();
