/**
 * PostgreSQL store: upkeep — vacuuming the churning jobs table once its dead rows pass a threshold
 * (by hand and by a worker), pruning finished jobs by age, and the hourly and daily stats.
 *
 *   node --import tsx --test test/postgres-store/upkeep.test.ts
 *
 * Each file uses schemas of its own in the test database, dropped at the end (setup.ts). Without a
 * reachable server the tests are skipped with a message — or fail when CI=true.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { z } from "zod";
import { ValidationError } from "../../src/errors.js";
import { defineJob, openErrand, silentLogger } from "../../src/index.js";
import { waitFor } from "../helpers/wait.js";
import { admin, describePostgresStore, job, migrated, open, schemaName } from "./setup.js";

describePostgresStore(() => {
  describe("upkeep (vacuum of the churning tables)", () => {
    /**
     * Runs `n` jobs through claim and finish (two dead row versions each), then closes the store
     * (its backends flush their statistics as they exit) and waits for the statistics to show them.
     */
    async function churn(schema: string, n: number): Promise<void> {
      const store = await migrated(schema);
      await store.insertJobs(Array.from({ length: n }, (_, i) => job("churn", `j${i}`)));
      const claimed = await store.claimJobs({ queue: "churn", limit: n, workerId: "w", leaseMs: 60_000 });
      assert.equal(claimed.length, n);
      await store.finishJobs(claimed.map((c) => ({ ...c, kind: "completed" as const, worker: "w" })));
      await store.close();
      await waitFor(
        async () => (await vacuumStats(schema)).dead >= 2 * n,
        "the churn's dead rows in the statistics",
      );
    }

    const vacuumStats = (schema: string) =>
      admin(async (c) => {
        const { rows } = await c.query(
          "SELECT vacuum_count::int AS vacuums, n_dead_tup::int AS dead FROM pg_stat_user_tables WHERE relid = $1::regclass",
          [`"${schema}".jobs`],
        );
        return rows[0] as { vacuums: number; dead: number };
      });

    it("vacuums the jobs table once its dead rows pass the threshold, and not before", async () => {
      const schema = schemaName();
      await churn(schema, 200);

      await open(schema, { vacuumDeadRows: 1_000 }).upkeep();
      assert.equal((await vacuumStats(schema)).vacuums, 0, "400 dead rows are under a threshold of 1,000");
      await open(schema, { vacuumDeadRows: 0 }).upkeep();
      assert.equal((await vacuumStats(schema)).vacuums, 0, "0 turns it off");

      await open(schema, { vacuumDeadRows: 300 }).upkeep();
      assert.equal((await vacuumStats(schema)).vacuums, 1);
      // VACUUM removes only rows no snapshot can see: while another session of the shared
      // server (a parallel test file's open transaction) holds an older one, the dead rows stay
      // and the next upkeep, still past the threshold, vacuums again until they are gone.
      await waitFor(
        async () => {
          if ((await vacuumStats(schema)).dead === 0) return true;
          await open(schema, { vacuumDeadRows: 300 }).upkeep();
          return false;
        },
        "the dead rows removed by the upkeep's vacuums",
        60_000,
        500,
      );
    });

    it("is run by a worker on its own", async () => {
      const schema = schemaName();
      await churn(schema, 50);
      const store = open(schema, { vacuumDeadRows: 10 });
      const noop = defineJob({ name: "noop", queue: "churn", schema: z.object({}), run: () => {} });
      const errand = await openErrand({ store, jobs: [noop], logger: silentLogger() });
      const worker = errand.work({ churn: { concurrency: 1 } });
      try {
        await waitFor(
          async () => (await vacuumStats(schema)).vacuums >= 1,
          "the worker's vacuum",
          15_000,
          100,
        );
      } finally {
        await worker.stop();
        await errand.close();
      }
    });

    it("rejects a threshold that is not a non-negative integer", () => {
      for (const bad of [-1, 1.5, Number.NaN]) {
        assert.throws(
          () => open(schemaName(), { vacuumDeadRows: bad }),
          (err: Error) => {
            assert.ok(err instanceof ValidationError);
            assert.match(err.message, /vacuumDeadRows must be a non-negative integer/);
            return true;
          },
        );
      }
    });
  });

  describe("retention and stats", () => {
    it("prunes by age in batches: completed/cancelled and failed on their own clocks", async () => {
      const store = await migrated();
      await store.insertJobs(Array.from({ length: 30 }, (_, i) => job("old", `j${i}`)));
      const claimed = await store.claimJobs({ queue: "old", limit: 30, workerId: "w", leaseMs: 60_000 });
      await store.finishJobs(
        claimed.map((c, i) => ({
          ...c,
          kind: i < 10 ? "completed" : i < 20 ? "failed" : "cancelled",
          worker: "w",
          error: i >= 10 && i < 20 ? { message: "x", kind: "permanent" as const } : undefined,
        })),
      );
      await store.pool.query(
        `UPDATE "${store.schema}".jobs SET finished_at = finished_at - interval '8 days'`,
      );
      const day = 86_400_000;
      assert.equal(await store.pruneFinished({ completedAgeMs: 7 * day, failedAgeMs: 30 * day }), 20);
      const left = await store.stats();
      assert.equal(left[0].failed, 10);
      assert.equal(left[0].completed + left[0].cancelled, 0);
      assert.equal(await store.pruneFinished({ completedAgeMs: 7 * day, failedAgeMs: 7 * day }), 10);
    });

    it("counts last hour and last day from finished_at", async () => {
      const store = await migrated();
      await store.insertJobs(Array.from({ length: 6 }, (_, i) => job("s", `j${i}`)));
      const claimed = await store.claimJobs({ queue: "s", limit: 6, workerId: "w", leaseMs: 60_000 });
      await store.finishJobs(claimed.map((c) => ({ ...c, kind: "completed" as const, worker: "w" })));
      const ids = claimed.map((c) => c.id);
      await store.pool.query(
        `UPDATE "${store.schema}".jobs SET finished_at = finished_at - interval '2 hours' WHERE id = ANY($1)`,
        [ids.slice(0, 2)],
      );
      await store.pool.query(
        `UPDATE "${store.schema}".jobs SET finished_at = finished_at - interval '2 days' WHERE id = ANY($1)`,
        [ids.slice(2, 3)],
      );
      const [s] = await store.stats();
      assert.deepStrictEqual([s.completed, s.completedLastHour, s.completedLastDay], [6, 3, 5]);
      const buckets = await store.throughput(3 * 3_600_000, 3_600_000);
      assert.equal(
        buckets.reduce((n, b) => n + b.completed, 0),
        5,
      );
    });
  });
});
