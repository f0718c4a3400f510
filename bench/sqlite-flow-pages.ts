/**
 * Why a per-key SQLite claim costs more than a plain one (issue 16, bench/NOTES.md finding 16):
 * the pages each claim writes. For each case a fresh file gets N jobs (keyed over 100 flow keys
 * or not), then the store claims B and finishes the previous claim's B, in turns, as a worker
 * that reads ahead does. With automatic checkpoints off on the store's connection, the WAL's
 * growth counts the pages each claim and finish wrote (a page is written whole, once per
 * transaction that changes it) — a count that does not depend on the machine's load; CPU µs per
 * job (process.cpuUsage) is given beside it.
 *
 *   node --import tsx bench/sqlite-flow-pages.ts [batch, default 250] [jobs, default 20000] [rounds, default 3]
 *
 * Cases: unkeyed jobs through claimJobs; keyed jobs through claimJobs (what keeping
 * errand_jobs_flow_idx costs a claim that does not plan); keyed jobs through claimJobs with that
 * index dropped (a diagnosis: the flow queries need it); keyed jobs through claimFlowJobs with a
 * per-key limit that never binds (the bench's flow workload).
 */
import { mkdtempSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore, type SqliteStore } from "../src/store/sqlite/index.js";
import type { ClaimedJob } from "../src/store/types.js";
import { insertBacklog } from "../test/helpers/plans.js";

const [batch = "250", jobs = "20000", rounds = "3"] = process.argv.slice(2);
const B = Number(batch);
const N = Number(jobs);
const FRAME = 4096 + 24; // a WAL frame: one page and its header (SQLite's default page size)

type Case = { name: string; keyed: boolean; dropIndex: boolean; flow: boolean };
const CASES: Case[] = [
  { name: "unkeyed, claimJobs", keyed: false, dropIndex: false, flow: false },
  { name: "keyed, claimJobs", keyed: true, dropIndex: false, flow: false },
  { name: "keyed, claimJobs, flow index dropped", keyed: true, dropIndex: true, flow: false },
  { name: "keyed, per-key limit (claimFlowJobs)", keyed: true, dropIndex: false, flow: true },
];

type Totals = { claimUs: number; finishUs: number; claimPages: number; finishPages: number; claims: number };

async function measure(c: Case): Promise<Totals> {
  const path = join(mkdtempSync(join(tmpdir(), "errand-flow-pages-")), "e.db");
  const store: SqliteStore = openSqliteStore({ path });
  await store.migrate();
  await insertBacklog(store, "q", N, (i) => (c.keyed ? `k${i % 100}` : undefined));
  if (c.dropIndex) store.db.exec("DROP INDEX errand_jobs_flow_idx");
  store.db.exec("ANALYZE");
  store.db.pragma("wal_checkpoint(TRUNCATE)");
  store.db.pragma("wal_autocheckpoint = 0");
  const walBytes = () => statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  const cpu = (since: NodeJS.CpuUsage) => {
    const used = process.cpuUsage(since);
    return used.user + used.system;
  };
  const t: Totals = { claimUs: 0, finishUs: 0, claimPages: 0, finishPages: 0, claims: 0 };
  const req = { queue: "q", limit: B, workerId: "w", leaseMs: 15_000 };
  let running: ClaimedJob[] = [];
  let done = 0;
  while (done < N) {
    let wal = walBytes();
    let since = process.cpuUsage();
    const claimed = c.flow
      ? (await store.claimFlowJobs({ ...req, flow: { keyConcurrency: 100_000 } })).jobs
      : await store.claimJobs(req);
    t.claimUs += cpu(since);
    t.claimPages += (walBytes() - wal) / FRAME;
    t.claims++;
    wal = walBytes();
    since = process.cpuUsage();
    await store.finishJobs(
      running.map((j) => ({ id: j.id, leaseToken: j.leaseToken, kind: "completed", worker: "w" })),
    );
    t.finishUs += cpu(since);
    t.finishPages += (walBytes() - wal) / FRAME;
    done += running.length;
    running = claimed;
    if (claimed.length === 0 && done < N) throw new Error(`${c.name}: claimed nothing`);
  }
  await store.close();
  return t;
}

const rows = new Map<string, string[]>();
for (let round = 0; round < Number(rounds); round++) {
  const load = loadavg()[0].toFixed(1);
  for (const c of CASES) {
    const t = await measure(c);
    const line = `claim ${(t.claimUs / N).toFixed(1)} µs + finish ${(t.finishUs / N).toFixed(1)} µs per job; pages per claim ${(t.claimPages / t.claims).toFixed(0)}, per finish ${(t.finishPages / t.claims).toFixed(0)} (load ${load})`;
    rows.set(c.name, [...(rows.get(c.name) ?? []), line]);
  }
}
console.log(`batches of ${B}, ${N} jobs per case, ${rounds} rounds`);
for (const [name, lines] of rows) console.log(`${name}\n  ${lines.join("\n  ")}`);
