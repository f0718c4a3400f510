/**
 * `kill -9` of a worker process holding a per-key concurrency slot, on a SQLite file (README,
 * Flow control: "a worker killed with kill -9 holds it until its lease runs out and a rescuer
 * returns the job"). Two `errand worker` processes serve a queue with one job at a time per key;
 * the first job of key a hangs, and its worker is killed. Key a's other jobs wait for the slot:
 * none starts while the dead worker holds it; once its lease runs out a rescuer returns the job
 * and key a's jobs run, still one at a time, the killed one included (history: lost, completed).
 * Key b's jobs go on meanwhile. test/flow/processes.test.ts does the same for globalConcurrency.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { openErrand, silentLogger } from "../../src/index.js";
import { FLOW_JOBS, type Running, scratch, start, waitFor } from "../cli/helpers.js";
import { flowKeyed, readTraces } from "../fixtures/flow-jobs.js";

const s = scratch("errand-kill-keyed-");
const errand = await openErrand({ url: s.db, logger: silentLogger(), jobs: [flowKeyed] });
const workers: Running[] = [];
after(async () => {
  for (const w of workers) w.child.kill("SIGKILL");
  await Promise.all(workers.map((w) => w.exited.catch(() => {})));
  await errand.close();
  s.cleanup();
});

test("kill -9 of a worker holding a key's slot: the key waits for the lease, then runs one at a time; other keys go on", {
  timeout: 120_000,
}, async () => {
  for (let i = 0; i < 2; i++)
    workers.push(
      start(
        [
          "worker",
          "--jobs",
          FLOW_JOBS,
          "--url",
          s.db,
          "--concurrency",
          "4",
          "--lease",
          "2s",
          "--poll-interval",
          "200ms",
        ],
        { ERRAND_FIXTURE_DIR: s.dir },
      ),
    );
  await waitFor("two workers", async () => (await errand.listWorkers(10_000)).length === 2);

  const hung = await errand.enqueue(flowKeyed, { key: "a", hang: true });
  const holder = await waitFor("the hanging job to start", () =>
    readTraces(s.dir).find((t) => t.what === "start" && t.id === hung.id),
  );
  const rest = await errand.enqueueMany(flowKeyed, [
    ...Array.from({ length: 3 }, () => ({ payload: { key: "a", ms: 50 } })),
    ...Array.from({ length: 3 }, () => ({ payload: { key: "b", ms: 50 } })),
  ]);
  const done = async (ids: string[]) => {
    for (const id of ids) if ((await errand.getJob(id))?.state !== "completed") return false;
    return true;
  };
  const bIds = rest.slice(3).map((j) => j.id);
  await waitFor("key b's jobs, while key a's slot is held", () => done(bIds));
  const aIds = rest.slice(0, 3).map((j) => j.id);
  for (const id of aIds)
    assert.equal((await errand.getJob(id))?.state, "pending", "key a waits for its slot");

  const victim = workers.find((w) => w.pid === holder.pid);
  assert.ok(victim, "the hanging job runs on one of our workers");
  const killedAt = Date.now();
  victim.child.kill("SIGKILL");
  await victim.exited;
  await waitFor("key a's jobs after the lease ran out", () => done([hung.id, ...aIds]), 60_000);

  const record = await errand.getJob(hung.id);
  assert.deepEqual(
    record?.attempts.map((a) => a.outcome),
    ["lost", "completed"],
  );
  const a = readTraces(s.dir).filter((t) => t.key === "a" && !(t.id === hung.id && t.pid === holder.pid));
  for (const t of a.filter((t) => t.what === "start"))
    assert.ok(t.at > killedAt, `job ${t.id} of key a started ${killedAt - t.at} ms before the kill`);
  // One at a time: each start of key a comes after the previous job's end.
  const events = a.sort((x, y) => x.at - y.at || (x.what === "end" ? -1 : 1));
  let running = 0;
  for (const e of events) {
    running += e.what === "start" ? 1 : -1;
    assert.ok(running <= 1, `key a ran ${running} at once at ${e.at}`);
  }
});
