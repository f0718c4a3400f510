/**
 * The keys `ctx.once` stores in the ledger, on every store (test/helpers/targets.ts). A key no
 * store can hold as given — a NUL character (PostgreSQL text refuses it), a lone UTF-16 surrogate
 * (SQLite and PostgreSQL write U+FFFD in its place, so two different keys would meet and one
 * job skip an effect it never ran), empty, over 512 characters, not a string — fails that job
 * with the same ValidationError naming the problem, before its effect runs and before anything
 * is written; the worker goes on with the other jobs.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob } from "../../src/index.js";
import { targets, withErrand } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";

const PREFIX = "ctx.once key ";
const notString = (got: string) => `must be a non-empty string of at most 512 characters; got ${got}`;

/** Keys by the name a payload gives, each with the problem its job's error must name. */
const KEYS: Record<string, { key: unknown; problem: string | null }> = {
  nul: { key: "charge\u0000a", problem: "contains a NUL character (\\u0000), which cannot be stored" },
  "surrogate-high": { key: "charge\ud800", problem: "contains a lone UTF-16 surrogate (invalid Unicode)" },
  "surrogate-low": { key: "charge\udbff", problem: "contains a lone UTF-16 surrogate (invalid Unicode)" },
  empty: { key: "", problem: notString("a string of 0") },
  "one-megabyte": { key: "k".repeat(1024 * 1024), problem: notString("a string of 1048576") },
  number: { key: 42, problem: notString("42") },
  // What a store writes for a lone surrogate: a key of its own, kept as given.
  replacement: { key: "charge\ufffd", problem: null },
};

for (const target of targets) {
  describe(`unstorable ctx.once keys: ${target.name}`, { skip: target.skip || false }, () => {
    test("fail their job before the effect runs; the other jobs run theirs", () => {
      const effects: string[] = [];
      const charge = defineJob({
        name: "charge",
        queue: "charges",
        maxAttempts: 1,
        schema: z.object({ key: z.string() }),
        run: async (p, ctx) => {
          await ctx.once(KEYS[p.key].key as string, () => effects.push(p.key), { scope: "global" });
        },
      });
      return withErrand(
        target,
        async (errand) => {
          const jobs = await errand.enqueueMany(
            charge,
            Object.keys(KEYS).map((key) => ({ payload: { key } })),
          );
          const worker = errand.work({ charges: { concurrency: 1 } }, { pollInterval: "20ms" });
          try {
            await waitFor(
              async () =>
                (await errand.listJobs({ limit: 100 })).jobs.every(
                  (j) => j.state === "completed" || j.state === "failed",
                ),
              "every job finished",
              20_000,
            );
          } finally {
            await worker.stop();
          }
          for (const [i, name] of Object.keys(KEYS).entries()) {
            const job = await errand.getJob(jobs[i].id);
            const { problem } = KEYS[name];
            if (problem === null) {
              assert.equal(job?.state, "completed", name);
              continue;
            }
            assert.equal(job?.state, "failed", name);
            assert.equal(job?.lastError, `${PREFIX}${problem}`, name);
            assert.equal(job?.attempts.at(-1)?.kind, "validation", name);
          }
          assert.deepEqual(effects, ["replacement"], "only the storable key's effect ran");
        },
        { jobs: [charge] },
      );
    });
  });
}
