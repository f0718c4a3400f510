/**
 * Writing outcomes and claiming when the store misbehaves (issue 12): one outcome the store
 * refuses must not hold back the others, a commit whose reply was lost is reported as applied,
 * and a failing claim's back-off holds even when slots free up. Faults are injected by wrapping
 * one store method of a real store (memory, a SQLite file, a PostgreSQL schema).
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { z } from "zod";
import { createLogger, defineJob, type Errand, type JobRecord, openErrand } from "../../src/index.js";
import type { Outcome, Store } from "../../src/store/types.js";
import { isUnstorable } from "../../src/worker/completer.js";
import { type StoreTarget, targets } from "../helpers/targets.js";
import { waitFor, within } from "../helpers/wait.js";

/** The store with some methods replaced; everything else is the real store's. */
function wrapStore(store: Store, overrides: Partial<Store>): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop in overrides) return overrides[prop as keyof Store];
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A JSON logger whose lines the test can read. */
function capturingLogger() {
  const lines: { msg: string; jobId?: string; jobIds?: string[] }[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ level: "info", pretty: false, destination }), lines };
}

/** An errand over `target`'s fresh store with some of its methods wrapped. */
async function withWrapped(
  target: StoreTarget,
  overrides: (real: Store) => Partial<Store>,
  fn: (errand: Errand, lines: ReturnType<typeof capturingLogger>["lines"]) => Promise<void>,
): Promise<void> {
  const base = await target.openErrand();
  const { logger, lines } = capturingLogger();
  const errand = await openErrand({
    store: wrapStore(base.errand.store, overrides(base.errand.store)),
    logger,
  });
  try {
    await fn(errand, lines);
  } finally {
    await errand.close();
    await base.cleanup();
  }
}

const job = defineJob({
  name: "job",
  queue: "q",
  maxAttempts: 1,
  schema: z.object({ i: z.number() }),
  run: async (p) => ({ ok: p.i }),
});

async function finished(errand: Errand, ids: string[]): Promise<JobRecord[]> {
  return waitFor(
    async () => {
      const jobs = await Promise.all(ids.map((id) => errand.getJob(id)));
      return jobs.every((j) => j && ["completed", "failed"].includes(j.state)) ? (jobs as JobRecord[]) : null;
    },
    `${ids.length} jobs to finish`,
    30_000,
  );
}

for (const target of targets) {
  describe(`outcome writes on ${target.name}`, { skip: target.skip, timeout: 120_000 }, () => {
    test("an outcome the store refuses becomes a plain failure; the others are written", async () => {
      const refuse = new Map<string, Error>();
      await withWrapped(
        target,
        (real) => ({
          async finishJobs(outcomes: Outcome[]) {
            for (const o of outcomes) {
              const err = refuse.get(o.id);
              if (err && o.kind === "completed") throw err;
            }
            return real.finishJobs(outcomes);
          },
        }),
        async (errand, lines) => {
          const ids: string[] = [];
          for (let i = 0; i < 20; i++) ids.push((await errand.enqueue(job, { i })).id);
          // A data error the completer recognises (a Postgres SQLSTATE of class 22) and one it
          // cannot tell from a fault of the store.
          refuse.set(
            ids[3],
            Object.assign(new Error("unsupported Unicode escape sequence"), { code: "22P05" }),
          );
          refuse.set(ids[11], new Error("something odd about this row"));
          const worker = errand.work({ q: { concurrency: 4 } }, { pollInterval: 50 });
          const jobs = await finished(errand, ids);
          await within(worker.stop(), 15_000, "worker.stop()");
          for (const [i, j] of jobs.entries()) {
            if (i === 3 || i === 11) continue;
            assert.equal(j.state, "completed", `job ${i}`);
          }
          assert.equal(jobs[3].state, "failed");
          assert.equal(
            jobs[3].lastError,
            "errand could not store this attempt's outcome (completed): unsupported Unicode escape sequence",
          );
          assert.equal(jobs[11].state, "failed");
          assert.match(jobs[11].lastError ?? "", /\(completed\): something odd about this row$/);
          const named = lines.filter(
            (l) => l.msg === "the store refused this job's outcome; recording it as failed",
          );
          assert.deepEqual(named.map((l) => l.jobId).sort(), [ids[11], ids[3]].sort());
        },
      );
    });

    test("a driver's own TypeError (not about the data) does not fail the job", async () => {
      // A bug or a torn connection inside a driver surfaces as a TypeError too; only a refusal
      // that names the value (a BigInt, a circular structure, a string too long) is about the data.
      let faults = 2;
      let target_id: string | null = null;
      await withWrapped(
        target,
        (real) => ({
          async finishJobs(outcomes: Outcome[]) {
            if (faults > 0 && outcomes.some((o) => o.id === target_id)) {
              faults--;
              throw new TypeError("Cannot read properties of null (reading 'query')");
            }
            return real.finishJobs(outcomes);
          },
        }),
        async (errand) => {
          const ids: string[] = [];
          for (let i = 0; i < 3; i++) ids.push((await errand.enqueue(job, { i })).id);
          target_id = ids[1];
          const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 50 });
          const jobs = await finished(errand, ids);
          await within(worker.stop(), 15_000, "worker.stop()");
          assert.equal(faults, 0, "the fault was injected");
          for (const j of jobs) assert.equal(j.state, "completed", `job ${j.id}: ${j.lastError}`);
        },
      );
    });

    test("an outcome whose write keeps timing out while its job's row takes writes is given up, not retried for ever", async () => {
      // A statement timeout is what a lock held by another connection looks like too, and then
      // the outcome waits (locked-store.test.ts). Here the job's row takes a write (its lease is
      // extended) each time the outcome's write times out: the write fails for its own sake.
      let target_id: string | null = null;
      let timeouts = 0;
      await withWrapped(
        target,
        (real) => ({
          async finishJobs(outcomes: Outcome[]) {
            if (outcomes.some((o) => o.id === target_id && o.kind === "completed")) {
              timeouts++;
              throw Object.assign(new Error("canceling statement due to statement timeout"), {
                code: "57014",
              });
            }
            return real.finishJobs(outcomes);
          },
        }),
        async (errand, lines) => {
          const ids: string[] = [];
          for (let i = 0; i < 3; i++) ids.push((await errand.enqueue(job, { i })).id);
          target_id = ids[1];
          const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 50 });
          const jobs = await finished(errand, ids);
          await within(worker.stop(), 15_000, "worker.stop()");
          assert.equal(jobs[0].state, "completed");
          assert.equal(jobs[2].state, "completed");
          assert.equal(jobs[1].state, "failed");
          assert.match(
            jobs[1].lastError ?? "",
            /\(completed\): canceling statement due to statement timeout$/,
          );
          assert.ok(timeouts >= 3, `the write timed out ${timeouts} times before it was given up`);
          assert.ok(
            lines.some((l) => l.msg === "the store refused this job's outcome; recording it as failed"),
          );
        },
      );
    });

    test("a commit whose reply was lost is reported as applied, with its completed event", async () => {
      let lose: string | null = null;
      await withWrapped(
        target,
        (real) => ({
          async finishJobs(outcomes: Outcome[]) {
            const applied = await real.finishJobs(outcomes);
            if (lose && outcomes.some((o) => o.id === lose)) {
              lose = null; // once
              throw Object.assign(new Error("Connection terminated unexpectedly"), { code: "ECONNRESET" });
            }
            return applied;
          },
        }),
        async (errand, lines) => {
          const ids: string[] = [];
          for (let i = 0; i < 5; i++) ids.push((await errand.enqueue(job, { i })).id);
          lose = ids[2];
          const completed = new Set<string>();
          errand.on("completed", (e) => completed.add(e.job.id));
          const worker = errand.work({ q: { concurrency: 2 } }, { pollInterval: 50 });
          const jobs = await finished(errand, ids);
          await within(worker.stop(), 15_000, "worker.stop()");
          assert.equal(lose, null, "the fault was injected");
          for (const j of jobs) assert.equal(j.state, "completed");
          assert.deepEqual([...completed].sort(), [...ids].sort(), "a completed event for every job");
          assert.deepEqual(
            lines.filter((l) => /outcome rejected/.test(l.msg)),
            [],
            "no job reported as rejected",
          );
          const warned = lines.find((l) => l.msg === "recording job outcomes failed; retrying");
          if (warned) assert.ok(warned.jobIds?.includes(ids[2]), "the retry warning names the job");
        },
      );
    });

    test("a failing claim's back-off holds while slots free up", async () => {
      const failures: number[] = [];
      let claims = 0;
      await withWrapped(
        target,
        (real) => ({
          async claimJobs(req) {
            if (claims++ === 0) return real.claimJobs(req);
            failures.push(performance.now());
            throw new Error("database disk image is malformed");
          },
        }),
        async (errand) => {
          const gates: (() => void)[] = [];
          const gated = defineJob({
            name: "gated",
            queue: "g",
            schema: z.object({ i: z.number() }),
            run: (p) => new Promise<void>((resolve) => (gates[p.i] = resolve)),
          });
          const ids: string[] = [];
          for (let i = 0; i < 10; i++) ids.push((await errand.enqueue(gated, { i })).id);
          const done = new Set<string>();
          errand.on("completed", (e) => done.add(e.job.id));
          const worker = errand.work({ g: { concurrency: 10 } }, { pollInterval: "10s", readAhead: 0 });
          await waitFor(() => gates.filter(Boolean).length === 10, "ten jobs running");
          // Free the slots one at a time: each release wakes the claim loop.
          for (let i = 0; i < 10; i++) {
            gates[i]();
            await waitFor(() => done.has(ids[i]), `job ${i} to complete`);
          }
          const end = performance.now();
          await within(worker.stop(), 15_000, "worker.stop()");
          assert.ok(failures.length >= 1, "the first freed slot tried a claim");
          // The back-off after failure k is 100·2^k ms: within `elapsed` ms of the first
          // failure, at most this many claims can have been tried.
          const elapsed = end - failures[0];
          let allowed = 1;
          for (let k = 1, t = 200; t <= elapsed; k++, t += Math.min(10_000, 100 * 2 ** Math.min(k, 7)))
            allowed++;
          const during = failures.filter((t) => t <= end).length;
          assert.ok(
            during <= allowed,
            `${during} failing claims in ${elapsed.toFixed(0)} ms (at most ${allowed})`,
          );
        },
      );
    });
  });
}

test("isUnstorable knows the real refusals of a value, and not a driver's own TypeError", async () => {
  const Database = (await import("better-sqlite3")).default;
  const thrown = (fn: () => unknown): unknown => {
    try {
      fn();
    } catch (err) {
      return err;
    }
    assert.fail("expected a throw");
  };
  const circular: Record<string, unknown> = {};
  circular.self = circular;
  const db = new Database(":memory:");
  try {
    const about = [
      thrown(() => JSON.stringify({ n: 1n })),
      thrown(() => JSON.stringify(circular)),
      thrown(() => db.prepare("SELECT ?").get(true)),
      thrown(() => "x".repeat(2 ** 29 + 1).repeat(2)),
    ];
    for (const err of about) assert.equal(isUnstorable(err), true, String(err));
  } finally {
    db.close();
  }
  const driverBug = thrown(() => (null as unknown as { query: () => void }).query());
  assert.equal(isUnstorable(driverBug), false, String(driverBug));
  assert.equal(isUnstorable(new RangeError("Maximum call stack size exceeded")), false);
});
