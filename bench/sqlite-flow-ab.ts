/**
 * The SQLite store's flow-limited claim (issue 16), this checkout against another one, in one
 * process: for each condition — no limit (claimJobs), a global concurrency limit, a per-key
 * concurrency limit over 100 keys, a queue-wide rate limit, none of them binding — each side
 * opens its own fresh file with N jobs, then the sides take turns: claim B jobs, complete the
 * previous claim's (so B jobs are running at each claim, as in a worker that reads ahead).
 * Prints the CPU time (process.cpuUsage, user + system) per job of the claim and the finish,
 * and each limited condition's (claim + finish) against the unlimited one of the same side.
 * On SQLite the engine runs in the calling process, so CPU time is what a worker pays; turns of
 * a few milliseconds let both sides see the same load on a shared machine.
 *
 *   node --import tsx bench/sqlite-flow-ab.ts OTHER_CHECKOUT [batch, default 250] [jobs, default 20000] [rounds, default 3]
 *
 * OTHER_CHECKOUT is a directory with this repository's src/ (for instance main's tree from
 * `git archive main | tar -x -C DIR`, with node_modules linked).
 */
import { mkdtempSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { ClaimedJob, FlowLimits, Store } from "../src/store/types.js";
import { insertBacklog } from "../test/helpers/plans.js";
import { abSides } from "./ab-sides.js";

const [other, batch = "250", jobs = "20000", rounds = "3"] = process.argv.slice(2);
if (!other) throw new Error("usage: bench/sqlite-flow-ab.ts OTHER_CHECKOUT [batch] [jobs] [rounds]");
const N = Number(jobs);
const B = Number(batch);
const sides = await abSides(other);
// The bench's flow workload (bench/adapters/errand.ts): limits that never bind.
const CONDITIONS: { name: string; flow: FlowLimits | null }[] = [
  { name: "no limit", flow: null },
  { name: "global", flow: { globalConcurrency: 100_000 } },
  { name: "per-key", flow: { keyConcurrency: 100_000 } },
  { name: "rate", flow: { rate: { limit: 1_000_000, perMs: 1000 } } },
];
const cpuUs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};

interface Run {
  side: string;
  condition: string;
  flow: FlowLimits | null;
  store: Store;
  claimUs: number;
  finishUs: number;
  done: number;
  running: ClaimedJob[];
}

async function open(side: (typeof sides)[number], condition: (typeof CONDITIONS)[number]): Promise<Run> {
  const store = await side.open(join(mkdtempSync(join(tmpdir(), "errand-flow-ab-")), "e.db"), {
    schema: "public",
  });
  await store.migrate();
  const keyed = condition.flow?.keyConcurrency !== undefined;
  await insertBacklog(store, "q", N, (i) => (keyed ? `k${i % 100}` : undefined));
  return {
    side: side.name,
    condition: condition.name,
    flow: condition.flow,
    store,
    claimUs: 0,
    finishUs: 0,
    done: 0,
    running: [],
  };
}

async function step(run: Run): Promise<void> {
  let t = process.cpuUsage();
  const req = { queue: "q", limit: B, workerId: "w", leaseMs: 15_000 };
  const claimed = run.flow
    ? (await run.store.claimFlowJobs({ ...req, flow: run.flow })).jobs
    : await run.store.claimJobs(req);
  run.claimUs += cpuUs(t);
  t = process.cpuUsage();
  const applied = await run.store.finishJobs(
    run.running.map((c) => ({ id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "w" })),
  );
  run.finishUs += cpuUs(t);
  if (applied.some((a) => !a)) throw new Error(`${run.side}: a completion was not applied`);
  run.done += run.running.length;
  run.running = claimed;
  if (claimed.length === 0 && run.done < N) throw new Error(`${run.side} ${run.condition}: claimed nothing`);
}

const perJob = (r: Run) => (r.claimUs + r.finishUs) / N;
const table = new Map<string, { claim: number[]; finish: number[]; ratio: number[] }>();
for (let round = 0; round < Number(rounds); round++) {
  const load = loadavg()[0].toFixed(1);
  const results: Run[] = [];
  for (const condition of CONDITIONS) {
    const runs = await Promise.all(sides.map((side) => open(side, condition)));
    while (runs.some((r) => r.done < N)) for (const run of runs) if (run.done < N) await step(run);
    for (const run of runs) await run.store.close();
    results.push(...runs);
  }
  for (const r of results) {
    const base = results.find((b) => b.side === r.side && b.condition === "no limit") as Run;
    const key = `${r.side} | ${r.condition}`;
    const row = table.get(key) ?? { claim: [], finish: [], ratio: [] };
    table.set(key, row);
    row.claim.push(r.claimUs / N);
    row.finish.push(r.finishUs / N);
    row.ratio.push(perJob(base) / perJob(r));
  }
  console.log(`round ${round + 1} done (load ${load} at its start)`);
}
const list = (xs: number[], digits: number) => xs.map((x) => x.toFixed(digits)).join(" / ");
console.log(
  `batches of ${B}, ${N} jobs per condition; CPU µs per job, and no limit ÷ condition (claim + finish)`,
);
for (const [key, row] of table)
  console.log(
    `${key}: claim ${list(row.claim, 1)}, finish ${list(row.finish, 1)}, ratio ${list(row.ratio, 2)}`,
  );
