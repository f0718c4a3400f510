/**
 * The SQLite store's claim and finish, this checkout against another one, in one process: each
 * opens its own fresh file with N jobs, then they take turns — B claimed and B completed by one,
 * then by the other — until all are done. Prints the CPU time (process.cpuUsage, user + system)
 * per job of each call for each side. On a loaded machine a turn is a few hundred microseconds,
 * so both sides see the same load; the CPU time is what the worker process pays (on SQLite the
 * engine runs in it), not the wall time another process's scheduling adds.
 *
 *   node --import tsx bench/sqlite-finish-ab.ts OTHER_CHECKOUT [batch, default 10] [jobs, default 30000]
 *
 * OTHER_CHECKOUT is a directory with this repository's src/ (for instance main's tree from
 * `git archive main | tar -x -C DIR`, with node_modules linked).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NewJob } from "../src/store/types.js";
import { abSides } from "./ab-sides.js";

const [other, batch = "10", jobs = "30000"] = process.argv.slice(2);
if (!other) throw new Error("usage: bench/sqlite-finish-ab.ts OTHER_CHECKOUT [batch] [jobs]");
const N = Number(jobs);
const B = Number(batch);
const sides = await abSides(other);
const job: NewJob = { queue: "q", name: "noop", payload: {}, priority: 0, maxAttempts: 3 };
const runs = await Promise.all(
  sides.map(async (side) => {
    const store = await side.open(join(mkdtempSync(join(tmpdir(), "errand-finish-ab-")), "e.db"), {
      schema: "public",
    });
    await store.migrate();
    for (let i = 0; i < N; i += 5000)
      await store.insertJobs(Array.from({ length: Math.min(5000, N - i) }, () => job));
    return { ...side, store, claimUs: 0, finishUs: 0, done: 0 };
  }),
);
const cpuUs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};
while (runs.some((r) => r.done < N)) {
  for (const run of runs) {
    if (run.done >= N) continue;
    let t = process.cpuUsage();
    const claimed = await run.store.claimJobs({ queue: "q", limit: B, workerId: "w", leaseMs: 15_000 });
    run.claimUs += cpuUs(t);
    t = process.cpuUsage();
    const applied = await run.store.finishJobs(
      claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, kind: "completed", worker: "w" })),
    );
    run.finishUs += cpuUs(t);
    if (applied.some((a) => !a)) throw new Error(`${run.name}: a completion was not applied`);
    run.done += claimed.length;
  }
}
for (const run of runs) {
  console.log(
    `${run.name}, batches of ${B}: claim ${(run.claimUs / N).toFixed(1)} µs CPU/job, finish ${(run.finishUs / N).toFixed(1)} µs CPU/job`,
  );
  await run.store.close();
}
