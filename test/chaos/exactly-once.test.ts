/**
 * Exactly-once database effects: `ctx.once` inside `ctx.completeInTransaction` must commit or
 * roll back together with the effect and the completion. Found by the Postgres chaos run:
 * a connection cut between the ledger write and the COMMIT left the ledger saying "done" while
 * the effect had rolled back, so the retry skipped it and the job completed with no effect.
 * Here the same thing happens deterministically: attempt 1 makes its effect through the ledger,
 * then throws inside the transaction; attempt 2 must make the effect again (exactly one in all).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob } from "../../src/index.js";
import type { PostgresStore } from "../../src/store/postgres/index.js";
import type { SqliteStore } from "../../src/store/sqlite/index.js";
import { targets } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";

for (const target of targets) {
  describe(`exactly-once effects on ${target.name}`, { skip: target.skip }, () => {
    test("a ledger entry made inside completeInTransaction rolls back with it", async () => {
      const { errand, cleanup } = await target.openErrand();
      try {
        const memoryEffects: string[] = [];
        let effect: (tx: unknown, id: string) => Promise<void>;
        let count: () => Promise<number>;
        if (errand.store.kind === "sqlite") {
          const db = (errand.store as SqliteStore).db;
          db.exec("CREATE TABLE effects (job_id TEXT NOT NULL)");
          effect = async (tx, id) => {
            (tx as SqliteStore["db"]).prepare("INSERT INTO effects (job_id) VALUES (?)").run(id);
          };
          count = async () => (db.prepare("SELECT count(*) AS n FROM effects").get() as { n: number }).n;
        } else if (errand.store.kind === "postgres") {
          const pg = errand.store as PostgresStore;
          const table = `"${pg.schema}".effects`;
          await pg.pool.query(`CREATE TABLE ${table} (job_id text NOT NULL)`);
          effect = async (tx, id) => {
            await (tx as { query(sql: string, v: unknown[]): Promise<unknown> }).query(
              `INSERT INTO ${table} (job_id) VALUES ($1)`,
              [id],
            );
          };
          count = async () => Number((await pg.pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
        } else {
          // The memory store has no transactions: its effect cannot roll back, so it happens once.
          effect = async (_tx, id) => {
            memoryEffects.push(id);
          };
          count = async () => memoryEffects.length;
        }
        const job = defineJob({
          name: "effect-then-throw",
          queue: "q",
          schema: z.object({}),
          maxAttempts: 3,
          backoff: { base: 5, max: 5, jitter: 0 },
          async run(_p, ctx) {
            await ctx.completeInTransaction(async (tx) => {
              await ctx.once(`effect:${ctx.job.id}`, () => effect(tx, ctx.job.id));
              if (ctx.attempt === 1) throw new Error("failed after the effect, before the commit");
            });
          },
        });
        const enqueued = await errand.enqueue(job, {});
        const worker = errand.work({ q: { concurrency: 1 } }, { pollInterval: 20 });
        const done = await waitFor(async () => {
          const j = await errand.getJob(enqueued.id);
          return j && (j.state === "completed" || j.state === "failed") ? j : null;
        }, "the job to finish");
        await worker.stop();
        assert.equal(done.state, "completed");
        assert.deepEqual(
          done.attempts.map((a) => a.outcome),
          ["retried", "completed"],
        );
        assert.equal(await count(), 1, "exactly one effect");
        assert.deepEqual(
          await errand.store.ledgerGet({ key: `effect:${enqueued.id}`, jobId: enqueued.id, global: false }),
          { found: true, value: null },
        );
      } finally {
        await cleanup();
      }
    });
  });
}
