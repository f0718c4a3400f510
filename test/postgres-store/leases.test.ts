/**
 * PostgreSQL store: claiming across pools (SKIP LOCKED), fencing a stale lease, rescuing expired
 * leases once, and completeInTransaction (the handler's write and the completion in one
 * transaction, under the lease).
 *
 *   node --import tsx --test test/postgres-store/leases.test.ts
 *
 * Each file uses schemas of its own in the test database, dropped at the end (setup.ts). Without a
 * reachable server the tests are skipped with a message — or fail when CI=true.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type pg from "pg";
import { testClock } from "../helpers/clock.js";
import { describePostgresStore, job, migrated, schemaName } from "./setup.js";

describePostgresStore(() => {
  describe("claiming", () => {
    it("never hands one job to two claimers across pools (SKIP LOCKED)", async () => {
      const schema = schemaName();
      const stores = await Promise.all(Array.from({ length: 4 }, () => migrated(schema, { poolSize: 3 })));
      await stores[0].insertJobs(
        Array.from({ length: 3_000 }, (_, i) => job("race", `j${i}`, { priority: i % 3 })),
      );
      const claimed: string[][] = await Promise.all(
        stores.flatMap((s, si) =>
          [0, 1].map(async (k) => {
            const mine: string[] = [];
            for (;;) {
              const batch = await s.claimJobs({
                queue: "race",
                limit: 25,
                workerId: `w${si}.${k}`,
                leaseMs: 60_000,
              });
              if (batch.length === 0) return mine;
              mine.push(...batch.map((c) => c.id));
            }
          }),
        ),
      );
      const all = claimed.flat();
      assert.equal(all.length, 3_000);
      assert.equal(new Set(all).size, 3_000, "no job claimed twice");
      assert.ok(claimed.filter((c) => c.length > 0).length > 1, "the work was shared");
    });

    it("fences a stale lease: it can neither finish, extend, nor report progress", async () => {
      const store = await migrated();
      await store.insertJobs([job("fence", "x")]);
      const [first] = await store.claimJobs({ queue: "fence", limit: 1, workerId: "slow", leaseMs: -1 });
      assert.equal((await store.rescueExpiredLeases()).length, 1);
      const [second] = await store.claimJobs({ queue: "fence", limit: 1, workerId: "fast", leaseMs: 60_000 });
      assert.equal(second.id, first.id);
      assert.equal(second.leaseToken, first.leaseToken + 1);
      assert.deepStrictEqual(await store.extendLeases([first], 60_000), [
        { id: first.id, held: false, cancelRequested: false },
      ]);
      assert.equal(await store.setProgress(first, { fraction: 1 }), false);
      assert.deepStrictEqual(await store.finishJobs([{ ...first, kind: "completed", worker: "slow" }]), [
        false,
      ]);
      assert.deepStrictEqual(await store.finishJobs([{ ...second, kind: "completed", worker: "fast" }]), [
        true,
      ]);
      const done = await store.getJob(first.id);
      assert.equal(done?.state, "completed");
      assert.deepStrictEqual(
        done?.attempts.map((a) => [a.attempt, a.outcome, a.worker]),
        [
          [1, "lost", "slow"],
          [2, "completed", "fast"],
        ],
      );
    });

    it("rescues each expired lease once when many rescuers run at once", async () => {
      const schema = schemaName();
      const stores = await Promise.all(Array.from({ length: 4 }, () => migrated(schema, { poolSize: 2 })));
      await stores[0].insertJobs(Array.from({ length: 2_500 }, (_, i) => job("lost", `j${i}`)));
      await stores[0].claimJobs({ queue: "lost", limit: 2_500, workerId: "dead", leaseMs: -1 });
      const rescued = (
        await Promise.all(stores.flatMap((s) => [s.rescueExpiredLeases(), s.rescueExpiredLeases()]))
      ).flat();
      assert.equal(rescued.length, 2_500);
      assert.equal(new Set(rescued.map((r) => r.id)).size, 2_500);
      const sample = await stores[1].getJob(rescued[0].id);
      assert.equal(sample?.attempts.length, 1);
      assert.equal(sample?.state, "pending");
    });
  });

  describe("completeInTransaction", () => {
    async function setup() {
      const store = await migrated();
      await store.pool.query(`CREATE TABLE "${store.schema}".effects (job_id text PRIMARY KEY)`);
      await store.insertJobs([job("tx", "x")]);
      const [claimed] = await store.claimJobs({ queue: "tx", limit: 1, workerId: "w", leaseMs: 60_000 });
      const effects = async () =>
        (await store.pool.query(`SELECT job_id FROM "${store.schema}".effects`)).rows.length;
      const write = (tx: unknown) =>
        (tx as pg.PoolClient).query(`INSERT INTO "${store.schema}".effects VALUES ($1)`, [claimed.id]);
      return { store, claimed, effects, write };
    }

    it("commits the handler's write and the completion together", async () => {
      const { store, claimed, effects, write } = await setup();
      const result = await store.completeInTransaction(claimed, "w", async (tx) => {
        await write(tx);
        return { done: 1 };
      });
      assert.deepStrictEqual(result, { applied: true, value: { done: 1 } });
      assert.equal(await effects(), 1);
      const done = await store.getJob(claimed.id);
      assert.equal(done?.state, "completed");
      assert.deepStrictEqual(done?.result, { done: 1 });
    });

    it("with a lost lease does nothing: no business write, no completion", async () => {
      const { store, claimed, effects, write } = await setup();
      const stale = { id: claimed.id, leaseToken: claimed.leaseToken + 1 };
      let ran = false;
      const result = await store.completeInTransaction(stale, "w", async (tx) => {
        ran = true;
        await write(tx);
      });
      assert.deepStrictEqual(result, { applied: false });
      assert.equal(ran, false);
      assert.equal(await effects(), 0);
      assert.equal((await store.getJob(claimed.id))?.state, "running");
    });

    it("rolls the business write back when the handler throws", async () => {
      const { store, claimed, effects, write } = await setup();
      await assert.rejects(
        () =>
          store.completeInTransaction(claimed, "w", async (tx) => {
            await write(tx);
            throw new Error("after the write");
          }),
        /after the write/,
      );
      assert.equal(await effects(), 0);
      assert.equal((await store.getJob(claimed.id))?.state, "running");
      assert.deepStrictEqual(await store.extendLeases([claimed], 60_000), [
        { id: claimed.id, held: true, cancelRequested: false },
      ]);
    });

    it("holds the lease while the handler runs: a rescuer cannot take the job", async () => {
      const clock = testClock();
      const store = await migrated(schemaName(), { clock });
      await store.insertJobs([job("tx", "x")]);
      const [claimed] = await store.claimJobs({ queue: "tx", limit: 1, workerId: "w", leaseMs: 50 });
      const result = await store.completeInTransaction(claimed, "w", async () => {
        clock.advance(120); // the lease expires meanwhile
        return await store.rescueExpiredLeases();
      });
      assert.equal(result.applied, true);
      assert.deepStrictEqual(result.value, []);
      assert.equal((await store.getJob(claimed.id))?.attempts.length, 1);
    });
  });
});
