/**
 * Clock independence: worker processes whose own clock is hours off (test/fixtures/
 * chaos-clock-shift.mjs shifts Date.now and new Date() by ±3 h) still honour leases, delays
 * and schedules, because every deadline comes from the database clock.
 *
 * - Leases: a job running 3.5× its 1 s lease on a skewed worker keeps its lease by heartbeat
 *   (one history entry); when that worker is killed, a worker skewed the other way rescues the
 *   job one lease after the kill — not at once, not hours later.
 * - Delays: `errand enqueue --delay 3s` from a process 3 h behind (and one 3 h ahead) makes a job
 *   due 3 s after its creation on the database clock, and it is not claimed before.
 * - Schedules: both skewed workers fire an every-second schedule; its slots are the database's
 *   seconds, not the workers'.
 *
 * SQLite (a temp file) and PostgreSQL (a fresh schema on the test server; skipped when it is
 * unreachable, required when CI=true).
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { describe, test } from "node:test";
import { openErrand, silentLogger } from "../../src/index.js";
import type { AnyJobDefinition, JobRecord } from "../../src/job.js";
import { clock } from "../fixtures/chaos-jobs.js";
import { sqlTargets } from "../helpers/targets.js";
import {
  allJobs,
  CLI,
  CLOCK_SHIFT,
  JOBS,
  killAll,
  type Proc,
  readExecutions,
  scratchDir,
  signal,
  spawnNode,
  spawnWorker,
  stopAll,
  waitUntil,
  whenReady,
} from "./harness.js";

const HOURS_3 = 3 * 3_600_000;
const LEASE_MS = 1000;

for (const target of sqlTargets) {
  describe(`clock independence on ${target.name}`, { skip: target.skip }, () => {
    test("workers hours off honour leases, delays and schedules", { timeout: 240_000 }, async () => {
      const dir = scratchDir(`errand-clock-${target.name}-`);
      const { store, url, schema, cleanup } = await target.openStore({
        dir,
        poolSize: 2,
        schemaPrefix: "errand_clock",
      });
      const procs: Proc[] = [];
      const errand = await openErrand({
        store,
        jobs: [clock] as unknown as AnyJobDefinition[],
        logger: silentLogger(),
      });
      const dbNow = async () => (await store.now()).getTime();
      const env = (shift: number) => ({
        CHAOS_URL: url,
        ...(schema ? { CHAOS_SCHEMA: schema } : {}),
        CHAOS_DIR: dir,
        CHAOS_QUEUES: "clock",
        CHAOS_CONCURRENCY: "2",
        CHAOS_LEASE_MS: String(LEASE_MS),
        CHAOS_POLL_MS: "100",
        CHAOS_SCHEDULE: "1",
        CHAOS_CLOCK_SHIFT_MS: String(shift),
      });
      const worker = async (shift: number) => {
        const proc = spawnWorker(env(shift), CLOCK_SHIFT);
        procs.push(proc);
        await whenReady(proc);
        return proc;
      };
      const finished = (id: string, timeoutMs = 60_000) =>
        waitUntil(
          async () => {
            const job = await store.getJob(id);
            return job && (job.state === "completed" || job.state === "failed") ? job : null;
          },
          `job ${id} to finish`,
          timeoutMs,
          50,
        );
      const outcomes = (job: JobRecord) => job.attempts.map((a) => a.outcome);

      /** A 3.5 s job on `holder`: its lease holds by heartbeat, on the database clock. */
      const longJob = async (holder: Proc) => {
        const job = await errand.enqueue(clock, { ms: 3.5 * LEASE_MS, firstOnly: false });
        const done = await finished(job.id);
        assert.deepEqual(
          outcomes(done),
          ["completed"],
          `a job running 3.5 leases on worker ${holder.pid} keeps its lease`,
        );
        assert.equal(done.attempts[0].worker, `chaos:${holder.pid}`);
      };

      /** Kills the holder of a running job; a worker skewed by `rescuerShift` must rescue it one lease later. */
      const killAndRescue = async (victim: Proc, rescuerShift: number) => {
        const job = await errand.enqueue(clock, { ms: 60_000, firstOnly: true });
        await waitUntil(
          async () => (await store.getJob(job.id))?.lockedBy === `chaos:${victim.pid}`,
          "the victim to hold the job",
          30_000,
        );
        // Let a heartbeat or two extend the lease first, so the deadline is one the victim wrote.
        await new Promise((r) => setTimeout(r, 1.5 * LEASE_MS));
        signal(victim, "SIGKILL");
        await victim.exited;
        const killedAt = await dbNow();
        const held = await store.getJob(job.id);
        assert.ok(held?.lockedUntil, "the job is still leased when its worker dies");
        const rescuer = await worker(rescuerShift);
        const done = await finished(job.id);
        assert.deepEqual(outcomes(done), ["lost", "completed"], "rescued once, then completed");
        assert.equal(done.attempts[1].worker, `chaos:${rescuer.pid}`);
        const rescuedAt = Date.parse(done.attempts[0].finishedAt);
        assert.ok(
          rescuedAt >= held.lockedUntil.getTime(),
          "not rescued before the lease (database clock) ran out",
        );
        assert.ok(
          rescuedAt - killedAt < 20_000,
          `rescued ${rescuedAt - killedAt} ms after the kill (lease ${LEASE_MS} ms), not hours later`,
        );
        assert.ok(
          held.lockedUntil.getTime() - killedAt <= LEASE_MS + 200,
          "the lease deadline is at most one lease after the last heartbeat",
        );
        return rescuer;
      };

      /** `errand enqueue --delay 3s` from a process whose clock is `shift` off. */
      const delayedEnqueue = async (shift: number) => {
        const args = [
          "--url",
          url,
          ...(schema ? ["--schema", schema] : []),
          "enqueue",
          "clock",
          "--jobs",
          JOBS,
          "--payload",
          '{"ms":0}',
          "--delay",
          "3s",
          "--json",
        ];
        const proc = spawnNode(CLI, args, { CHAOS_CLOCK_SHIFT_MS: String(shift) }, CLOCK_SHIFT);
        procs.push(proc);
        const exit = await proc.exited;
        assert.equal(exit.code, 0, `errand enqueue failed: ${proc.stderr()}`);
        const enqueued = JSON.parse(proc.stdout()) as { id: string };
        const job = await store.getJob(String(enqueued.id));
        assert.ok(job);
        const delay = job.runAt.getTime() - job.createdAt.getTime();
        assert.ok(
          delay >= 2_990 && delay <= 3_500,
          `run_at is 3 s after creation on the database clock, not ${delay} ms (clock ${shift / 3_600_000} h)`,
        );
        return job;
      };

      try {
        const startedAt = await dbNow();
        // Phase 1: a worker 3 h ahead holds a long job; killed, a worker 3 h behind rescues its job.
        const ahead = await worker(+HOURS_3);
        const delayed = [await delayedEnqueue(-HOURS_3), await delayedEnqueue(+HOURS_3)];
        await longJob(ahead);
        // The shift is real: the worker's own traces are stamped 3 h ahead.
        const traced = readExecutions(dir).find((x) => x.pid === ahead.pid);
        assert.ok(
          traced && Math.abs(traced.start - Date.now() - HOURS_3) < 60_000,
          "the worker's clock runs 3 h ahead",
        );
        const behind = await killAndRescue(ahead, -HOURS_3);
        // Phase 2: the other way round.
        await longJob(behind);
        await killAndRescue(behind, +HOURS_3);

        for (const d of delayed) {
          const done = await finished(d.id);
          assert.equal(done.state, "completed");
          assert.ok(
            Date.parse(done.attempts[0].startedAt) >= d.runAt.getTime(),
            "a delayed job is not claimed before its run_at",
          );
        }

        // Schedules: every slot the skewed workers fired is a second of the database clock.
        const now = await dbNow();
        const slots = (await allJobs(store))
          .filter((j) => j.key?.startsWith("cron:every-second:"))
          .map((j) => ({ job: j, slot: Date.parse(j.key!.slice("cron:every-second:".length)) }));
        assert.ok(slots.length >= 3, `the schedule fired (${slots.length} slots)`);
        for (const { job, slot } of slots) {
          assert.ok(
            slot >= startedAt - 2_000 && slot <= now + 1_000,
            `slot ${job.key} lies within the run on the database clock`,
          );
          // An attempt that sent it back to pending (a killed worker's lease rescued, a release
          // at shutdown) moves run_at on; otherwise the job is due exactly at its slot.
          if (job.attempts.some((a) => a.outcome === "lost" || a.outcome === "interrupted")) {
            assert.ok(job.runAt.getTime() >= slot, `slot ${job.key}: requeued no earlier than its slot`);
          } else {
            assert.equal(job.runAt.getTime(), slot, "a slot's job is due at its slot");
          }
        }
        assert.equal(new Set(slots.map((s) => s.slot)).size, slots.length, "each slot fired once");
        await stopAll(procs);
      } finally {
        await killAll(procs);
        await errand.close();
        await cleanup();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
