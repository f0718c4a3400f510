/**
 * Durations past what a Node timer holds (2^31 - 1 ms, about 24.8 days). Node fires such a timer
 * after 1 ms (with only a TimeoutOverflowWarning): a job `timeout` of 30 days timed every attempt
 * out at once (the job failed for good after 3 attempts in 3 s), and a stop with a 30-day timeout
 * released the running job at once. Each duration a timer waits is now refused past the limit with
 * an error naming it, as `waitFor`'s timeout already was; up to the limit it is waited for, the
 * stop's own deadline (its timeout plus a second) included.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { defineJob, type Errand, openErrand, silentLogger, ValidationError } from "../src/index.js";
import { PROCESS_JOBS, run, scratch } from "./cli/helpers.js";

const slowDef = (timeout: `${number}d`) =>
  defineJob({
    name: "slow",
    schema: z.object({ ms: z.number() }),
    timeout,
    async run({ ms }) {
      await sleep(ms);
      return "done";
    },
  });

/** Runs `fn` with an errand on the memory store that knows `job`, closed afterwards. */
async function withErrand(
  job: ReturnType<typeof slowDef>,
  fn: (errand: Errand) => Promise<void>,
): Promise<void> {
  const errand = await openErrand({ url: "memory:", logger: silentLogger(), jobs: [job] });
  try {
    await fn(errand);
  } finally {
    await errand.close();
  }
}

const tooLong = (what: string) => (err: unknown) =>
  err instanceof ValidationError && err.message.includes(what) && /24\.8 days/.test(err.message);

describe("durations longer than a Node timer holds", () => {
  test("a job timeout past 24.8 days is refused at defineJob; 24 days is waited for", async () => {
    assert.throws(() => slowDef("30d"), tooLong('job "slow" timeout'));
    const slow = slowDef("24d");
    await withErrand(slow, async (errand) => {
      const job = await errand.enqueue(slow, { ms: 200 });
      const worker = errand.work();
      assert.equal(await errand.waitFor(job), "done");
      await worker.stop();
      const done = await errand.getJob(job.id);
      assert.deepEqual(
        done?.attempts.map((a) => a.outcome),
        ["completed"],
      );
    });
  });

  test("a stop timeout past 24.8 days is refused, and the worker runs on; the limit itself lets the job finish", async () => {
    const slow = slowDef("1d");
    await withErrand(slow, async (errand) => {
      const job = await errand.enqueue(slow, { ms: 300 });
      const worker = errand.work();
      for (let i = 0; i < 100 && (await errand.getJob(job.id))?.state !== "running"; i++) await sleep(10);
      assert.throws(() => worker.stop({ timeout: "30d" }), tooLong("timeout"));
      // The limit itself plus the stop's second for outcomes is past a timer's limit: the deadline re-arms.
      const result = await worker.stop({ timeout: 2_147_483_647 });
      assert.equal(result.clean, true, JSON.stringify(result));
      assert.equal((await errand.getJob(job.id))?.state, "completed");
    });
  });

  test("durations a timer waits are refused past 24.8 days, each by name", async () => {
    const slow = slowDef("1d");
    await withErrand(slow, async (errand) => {
      for (const name of [
        "lease",
        "pollInterval",
        "rescueInterval",
        "shutdownTimeout",
        "readAhead",
        "pruneInterval",
      ])
        assert.throws(() => errand.work(undefined, { [name]: "30d" }), tooLong(name), name);
      assert.throws(() => errand.work(undefined, { lease: "80d", heartbeat: "30d" }), tooLong("lease"));
      await assert.rejects(errand.processJobs({ timeBudget: "30d" }), tooLong("timeBudget"));
      await assert.rejects(
        openErrand({ url: "memory:", logger: silentLogger(), waitRecheck: "30d" }),
        tooLong("waitRecheck"),
      );
    });
  });

  test("the CLI refuses such durations by flag, exit 2", async () => {
    const s = scratch("errand-long-");
    try {
      for (const [args, flag] of [
        [
          ["worker", "--jobs", PROCESS_JOBS, "--url", s.db, "--shutdown-timeout", "30d"],
          "--shutdown-timeout",
        ],
        [["worker", "--jobs", PROCESS_JOBS, "--url", s.db, "--lease", "25d"], "--lease"],
        [["stats", "--url", s.db, "--watch", "25d"], "--watch"],
      ] as const) {
        const r = await run([...args]);
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, new RegExp(`${flag} must be at most 24\\.8 days`));
      }
    } finally {
      s.cleanup();
    }
  });
});
