/**
 * Fencing with real processes. Worker A claims four `hold` jobs (test/fixtures/chaos-jobs.ts)
 * with a 1 s lease, and freezes in the first handler; the test also SIGSTOPs it. Past the
 * lease, worker B rescues the jobs and completes them. Then A is resumed (SIGCONT) and its
 * handlers write their late outcomes at once — complete, fail (PermanentError), retry (a
 * transient error) and a completion in a transaction. The store must reject every one of
 * them: the spy in chaos-worker.ts sees each write reach the store and come back "not
 * applied", and each job keeps B's result and a history of exactly [lost by A, completed by B].
 *
 * SQLite (a temp file) and PostgreSQL (a fresh schema on the test server; skipped when it is
 * unreachable, required when CI=true — test/helpers/postgres.ts, the in-process probe).
 */
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { openErrand, silentLogger } from "../../src/index.js";
import type { AnyJobDefinition } from "../../src/job.js";
import { hold } from "../fixtures/chaos-jobs.js";
import { type StoreTarget, sqlTargets } from "../helpers/targets.js";
import {
  killAll,
  type Proc,
  readExecutions,
  readFinishes,
  scratchDir,
  signal,
  spawnWorker,
  stopAll,
  waitUntil,
  whenReady,
} from "./harness.js";

// The SQL stores, from the one registry: SQLite in the test's scratch folder, Postgres in a schema
// of this test's own on the shared server (never restarted or cut here); Postgres is skipped with a
// message when unreachable, a failure when CI is set.
const open = async (target: StoreTarget, dir: string) => {
  const { store, url, schema, cleanup } = await target.openStore({
    dir,
    poolSize: 2,
    schemaPrefix: "errand_fence",
  });
  return { store, env: { CHAOS_URL: url, ...(schema ? { CHAOS_SCHEMA: schema } : {}) }, cleanup };
};

const MODES = ["complete", "fail", "retry", "tx"] as const;
const LATE_KIND = { complete: "completed", fail: "failed", retry: "retry", tx: "tx" } as const;

for (const target of sqlTargets) {
  describe(`fencing on ${target.name}`, { skip: target.skip }, () => {
    test("a worker paused past its lease cannot complete, fail or retry the job another worker took over", {
      timeout: 180_000,
    }, async () => {
      const dir = scratchDir(`errand-fence-${target.name}-`);
      const { store, env, cleanup } = await open(target, dir);
      const procs: Proc[] = [];
      const t0 = Date.now();
      const step = (what: string) =>
        console.log(`# fencing ${target.name} +${((Date.now() - t0) / 1000).toFixed(1)}s: ${what}`);
      try {
        const errand = await openErrand({
          store,
          jobs: [hold] as unknown as AnyJobDefinition[],
          logger: silentLogger(),
        });
        const ids: Record<string, string> = {};
        for (const mode of MODES) ids[mode] = (await errand.enqueue(hold, { mode })).id;
        const workerEnv = {
          ...env,
          CHAOS_DIR: dir,
          CHAOS_QUEUES: "hold",
          CHAOS_CONCURRENCY: "4",
          CHAOS_LEASE_MS: "1000",
          CHAOS_POLL_MS: "100",
        };

        // A claims all four and freezes in the first handler; then it is stopped for good measure.
        const a = spawnWorker(workerEnv);
        procs.push(a);
        await whenReady(a);
        const aId = `chaos:${a.pid}`;
        await waitUntil(
          async () => {
            const jobs = await Promise.all(MODES.map((m) => store.getJob(ids[m])));
            const held = jobs.every((j) => j?.state === "running" && j.lockedBy === aId);
            return held && readExecutions(dir).some((x) => x.pid === a.pid);
          },
          "worker A to hold the four jobs and start one",
          60_000,
        );
        signal(a, "SIGSTOP");
        step("A holds the jobs and is stopped");

        // B rescues them once A's lease has expired (database clock) and completes them.
        const b = spawnWorker(workerEnv);
        procs.push(b);
        await whenReady(b);
        await waitUntil(
          async () =>
            (await Promise.all(MODES.map((m) => store.getJob(ids[m])))).every(
              (j) => j?.state === "completed",
            ),
          "worker B to rescue and complete the four jobs",
          60_000,
        );

        step("B completed them");
        // A resumes and writes its four late outcomes: each reaches the store and is refused.
        writeFileSync(join(dir, "go"), "");
        signal(a, "SIGCONT");
        const late = await waitUntil(
          () => {
            const mine = readFinishes(dir).filter((f) => f.pid === a.pid);
            return mine.length >= MODES.length ? mine : null;
          },
          "worker A's late writes to reach the store",
          30_000,
        );
        step("A's late writes reached the store");
        await stopAll(procs);

        for (const mode of MODES) {
          const write = late.find((f) => f.id === ids[mode]);
          assert.ok(write, `${mode}: A's late write reached the store`);
          assert.equal(write.kind, LATE_KIND[mode], `${mode}: the late write is a ${LATE_KIND[mode]}`);
          assert.equal(write.applied, false, `${mode}: the store rejected A's late ${write.kind}`);
          const job = await store.getJob(ids[mode]);
          assert.ok(job);
          assert.equal(job.state, "completed", `${mode}: still completed`);
          assert.deepEqual(job.result, { by: b.pid, attempt: 2 }, `${mode}: B's result`);
          assert.deepEqual(
            job.attempts.map((x) => [x.attempt, x.outcome, x.worker]),
            [
              [1, "lost", aId],
              [2, "completed", `chaos:${b.pid}`],
            ],
            `${mode}: history`,
          );
        }
        const bWrites = readFinishes(dir).filter((f) => f.pid === b.pid);
        assert.equal(
          bWrites.filter((f) => f.applied && f.kind === "completed").length,
          MODES.length,
          "B's completions were applied",
        );
        await errand.close();
      } finally {
        await killAll(procs);
        await cleanup();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
