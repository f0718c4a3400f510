/**
 * Poison outcomes (issue 12, items 1 and 6): a handler whose result, error or ledger value no
 * store can hold, or whose thrown value errand cannot describe, fails that one job with a clear
 * error; the worker's other jobs complete, its slots free up, and stop() resolves. On every
 * store: memory, a real SQLite file and a real PostgreSQL schema.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob, type Errand, type JobRecord } from "../../src/index.js";
import { targets, withErrand } from "../helpers/targets.js";
import { waitFor, within } from "../helpers/wait.js";

const TERMINAL = ["completed", "failed", "cancelled"];

async function settledJobs(errand: Errand, ids: string[]): Promise<JobRecord[]> {
  return waitFor(
    async () => {
      const jobs = await Promise.all(ids.map((id) => errand.getJob(id)));
      return jobs.every((j) => j && TERMINAL.includes(j.state)) ? (jobs as JobRecord[]) : null;
    },
    `${ids.length} jobs to finish`,
    30_000,
  );
}

/** A circular object, a BigInt, strings Postgres cannot hold, and a result over the 1 MiB limit. */
const POISON_RESULTS: Record<string, { make: () => unknown; error: RegExp }> = {
  circular: {
    make: () => {
      const o: Record<string, unknown> = { a: 1 };
      o.self = o;
      return o;
    },
    error: /^result is not JSON-serialisable: .*circular/i,
  },
  bigint: { make: () => ({ n: 10n }), error: /^result is not JSON-serialisable: .*BigInt/ },
  nul: { make: () => "a\u0000b", error: /^result string contains a NUL character/ },
  surrogate: { make: () => ({ text: "x\ud800y" }), error: /^result string contains a lone UTF-16 surrogate/ },
  big: {
    make: () => "x".repeat(2 * 1024 * 1024),
    error: /^result is 2097154 bytes, over the limit of 1048576 bytes \(payloadLimit\)/,
  },
};

for (const target of targets) {
  describe(`poison outcomes on ${target.name}`, { skip: target.skip, timeout: 120_000 }, () => {
    test("an unstorable result or error fails that job alone; the others complete and stop() resolves", () =>
      withErrand(target, async (errand) => {
        const innocent = defineJob({
          name: "innocent",
          queue: "mixed",
          schema: z.object({ i: z.number() }),
          run: async (p) => ({ ok: p.i }),
        });
        const poison = defineJob({
          name: "poison",
          queue: "mixed",
          maxAttempts: 1,
          schema: z.object({ how: z.string() }),
          run: async (p) => {
            if (p.how === "nul-error") throw new Error("bad\u0000message \ud800 here");
            return POISON_RESULTS[p.how].make();
          },
        });
        const ids: string[] = [];
        const poisonIds = new Map<string, string>();
        for (let i = 0; i < 30; i++) {
          ids.push((await errand.enqueue(innocent, { i })).id);
          const how = [...Object.keys(POISON_RESULTS), "nul-error"][i % 6];
          if (i < 6) {
            const { id } = await errand.enqueue(poison, { how });
            poisonIds.set(how, id);
          }
        }
        const worker = errand.work({ mixed: { concurrency: 4 } }, { pollInterval: 50, lease: "3s" });
        const all = await settledJobs(errand, [...ids, ...poisonIds.values()]);
        await within(worker.stop(), 15_000, "worker.stop()");

        for (const job of all.slice(0, ids.length)) {
          assert.equal(job.state, "completed", `innocent job ${job.id}`);
          assert.deepEqual(job.result, { ok: (job.payload as { i: number }).i });
        }
        for (const [how, { error }] of Object.entries(POISON_RESULTS)) {
          const job = await errand.getJob(poisonIds.get(how) as string);
          assert.equal(job?.state, "failed", `${how}: failed`);
          assert.equal(job?.attempts.length, 1, `${how}: one attempt`);
          assert.equal(job?.attempts[0].kind, "validation", `${how}: kind`);
          assert.match(job?.lastError ?? "", error, `${how}: error names the problem`);
        }
        const nul = await errand.getJob(poisonIds.get("nul-error") as string);
        assert.equal(nul?.state, "failed");
        // The message is kept, made storable: NUL and the lone surrogate become U+FFFD.
        assert.equal(nul?.lastError, "bad\ufffdmessage \ufffd here");
        assert.equal(nul?.attempts[0].error, "bad\ufffdmessage \ufffd here");
        assert.ok(!nul?.attempts[0].stack?.includes("\u0000"), "stack without NUL");
      }));

    test("thrown values errand cannot describe fail their job with a described error, and free the slot", () =>
      withErrand(target, async (errand) => {
        const throwers: Record<string, () => unknown> = {
          "revoked proxy": () => {
            const { proxy, revoke } = Proxy.revocable({}, {});
            revoke();
            return proxy;
          },
          "message getter throws": () => {
            const e = new Error("hidden");
            Object.defineProperty(e, "message", {
              get() {
                throw new Error("no message for you");
              },
            });
            return e;
          },
          "stack getter throws": () => {
            const e = new Error("stackless");
            Object.defineProperty(e, "stack", {
              get() {
                throw new Error("no stack for you");
              },
            });
            return e;
          },
          "circular null-prototype object": () => {
            const o = Object.create(null) as Record<string, unknown>;
            o.self = o;
            return o;
          },
        };
        const thrower = defineJob({
          name: "thrower",
          queue: "narrow",
          maxAttempts: 1,
          schema: z.object({ what: z.string() }),
          run: async (p) => {
            throw throwers[p.what]();
          },
        });
        const after = defineJob({
          name: "after",
          queue: "narrow",
          schema: z.object({ i: z.number() }),
          run: async (p) => p.i,
        });
        const thrown: string[] = [];
        for (const what of Object.keys(throwers)) thrown.push((await errand.enqueue(thrower, { what })).id);
        const later: string[] = [];
        for (let i = 0; i < 6; i++) later.push((await errand.enqueue(after, { i }, { priority: -1 })).id);
        const worker = errand.work({ narrow: { concurrency: 2 } }, { pollInterval: 50 });
        const jobs = await settledJobs(errand, [...thrown, ...later]);
        await within(worker.stop(), 15_000, "worker.stop()");
        const described: Record<string, RegExp> = {
          "revoked proxy": /^a thrown value errand could not describe \(TypeError: .*revoked/,
          "message getter throws":
            /^Error thrown; its message could not be read \(Error: no message for you\)/,
          "stack getter throws": /^stackless$/,
          "circular null-prototype object": /^non-Error thrown: \[object with a null prototype\]/,
        };
        for (const [i, what] of Object.keys(throwers).entries()) {
          const job = jobs[i];
          assert.equal(job.state, "failed", `${what}: failed`);
          assert.match(job.lastError ?? "", described[what], `${what}: described`);
        }
        for (const job of jobs.slice(thrown.length))
          assert.equal(job.state, "completed", `later job ${job.id}`);
      }));

    test("a ctx.once value or progress message that cannot be stored is refused (the once value before the effect counts as done)", () =>
      withErrand(target, async (errand) => {
        const effects: string[] = [];
        const once = defineJob({
          name: "once",
          queue: "ledger",
          maxAttempts: 3,
          schema: z.object({ how: z.string() }),
          run: async (p, ctx) => {
            await ctx.once(`effect-${p.how}`, () => {
              effects.push(p.how);
              return p.how === "nul" ? "a\u0000b" : p.how === "bigint" ? 1n : "x".repeat(1024 * 1024 + 1);
            });
            return "done";
          },
        });
        const inTx = defineJob({
          name: "in-tx",
          queue: "ledger",
          maxAttempts: 3,
          schema: z.object({}),
          run: async (_p, ctx) => {
            const cycle: unknown[] = [];
            cycle.push(cycle);
            await ctx.completeInTransaction(() => cycle);
          },
        });
        const progress = defineJob({
          name: "progress",
          queue: "ledger",
          maxAttempts: 3,
          schema: z.object({}),
          run: async (_p, ctx) => {
            await ctx.progress(0.5, "half\u0000way");
          },
        });
        const ids: Record<string, string> = {};
        for (const how of ["nul", "bigint", "big"]) ids[how] = (await errand.enqueue(once, { how })).id;
        ids.tx = (await errand.enqueue(inTx, {})).id;
        ids.progress = (await errand.enqueue(progress, {})).id;
        const worker = errand.work({ ledger: { concurrency: 2 } }, { pollInterval: 50 });
        await settledJobs(errand, Object.values(ids));
        await within(worker.stop(), 15_000, "worker.stop()");
        const expected: Record<string, RegExp> = {
          nul: /^ctx\.once value for key "effect-nul" string contains a NUL character/,
          bigint: /^ctx\.once value for key "effect-bigint" is not JSON-serialisable: .*BigInt/,
          big: /^ctx\.once value for key "effect-big" is 1048579 bytes, over the limit of 1048576 bytes/,
          tx: /^result is not JSON-serialisable: .*circular/i,
          progress: /^progress message string contains a NUL character/,
        };
        for (const [how, error] of Object.entries(expected)) {
          const job = await errand.getJob(ids[how]);
          assert.equal(job?.state, "failed", `${how}: failed`);
          assert.equal(job?.attempts.length, 1, `${how}: failed at once, not retried`);
          assert.equal(job?.attempts[0].kind, "validation", `${how}: kind`);
          assert.match(job?.lastError ?? "", error, `${how}: error`);
          if (how !== "tx" && how !== "progress") {
            const entry = await errand.store.ledgerGet({
              key: `effect-${how}`,
              jobId: ids[how],
              global: false,
            });
            assert.equal(entry.found, false, `${how}: no ledger entry`);
          }
        }
        assert.deepEqual(effects.sort(), ["big", "bigint", "nul"], "each effect ran once");
      }));
  });
}
