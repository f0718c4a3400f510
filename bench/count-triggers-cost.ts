/**
 * What the statement-level triggers on jobs cost the Postgres server per job of the claim →
 * finish loop: the count trigger (jobs_count_update, OLD and NEW transition tables) and the
 * awaited-jobs trigger (jobs_notify_awaited, NEW TABLE), which every claim and finish batch fires.
 * Each round runs the store's own claimJobs and finishJobs (claim B, finish the previous claim)
 * over N no-op jobs in a fresh schema, tables analyzed and checkpointed first, once with the
 * triggers and once with them dropped, and prints the wall time and the CPU of every postgres
 * process on the machine (/proc; the server must be otherwise idle) per job.
 *
 *   node --import tsx bench/count-triggers-cost.ts [batch, default 250] [jobs, default 50000] [rounds, default 3]
 *
 * Dropping the triggers breaks the exact stats (what the bench's own "every job finished" reads):
 * this measures their price, it is not a setting.
 */
import { readdirSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import pg from "pg";
import { openStore } from "../src/store/open.js";
import type { ClaimedJob, NewJob } from "../src/store/types.js";

const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const [batch = "250", jobs = "50000", rounds = "3"] = process.argv.slice(2);
const B = Number(batch);
const N = Number(jobs);
const TRIGGERS = ["jobs_count_update", "jobs_notify_awaited"];
const TICKS_PER_S = 100; // getconf CLK_TCK on Linux

/** utime + stime of every postgres process, in ms. */
function postgresCpuMs(): number {
  let ticks = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (!stat.includes("(postgres)")) continue;
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended between readdir and read
    }
  }
  return (ticks * 1000) / TICKS_PER_S;
}

async function run(dropTriggers: boolean): Promise<{ wallUs: number; serverUs: number }> {
  const schema = `trigger_cost_${process.pid}`;
  const store = await openStore(PG_URL, { schema });
  await store.migrate();
  const admin = new pg.Client(PG_URL);
  await admin.connect();
  try {
    if (dropTriggers) for (const t of TRIGGERS) await admin.query(`DROP TRIGGER ${t} ON ${schema}.jobs`);
    const job: NewJob = { queue: "q", name: "noop", payload: {}, priority: 0, maxAttempts: 3 };
    for (let i = 0; i < N; i += 5000)
      await store.insertJobs(Array.from({ length: Math.min(5000, N - i) }, () => job));
    await admin.query(`ANALYZE ${schema}.jobs`);
    await admin.query("CHECKPOINT");
    const cpuBefore = postgresCpuMs();
    const started = performance.now();
    let running: ClaimedJob[] = [];
    for (let done = 0; done < N; ) {
      const claimed = await store.claimJobs({ queue: "q", limit: B, workerId: "w", leaseMs: 15_000 });
      await store.finishJobs(
        running.map((j) => ({ id: j.id, leaseToken: j.leaseToken, kind: "completed", worker: "w" })),
      );
      done += running.length;
      running = claimed;
    }
    const wallMs = performance.now() - started;
    const serverMs = postgresCpuMs() - cpuBefore;
    return { wallUs: (wallMs * 1000) / N, serverUs: (serverMs * 1000) / N };
  } finally {
    await store.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

for (let r = 1; r <= Number(rounds); r++) {
  const load = loadavg()[0].toFixed(1);
  const kept = await run(false);
  const dropped = await run(true);
  console.log(
    `round ${r} (load ${load}), claims of ${B}, ${N} jobs: with the triggers ${kept.wallUs.toFixed(1)} µs wall and ${kept.serverUs.toFixed(1)} µs server CPU per job; without ${dropped.wallUs.toFixed(1)} and ${dropped.serverUs.toFixed(1)}`,
  );
}
