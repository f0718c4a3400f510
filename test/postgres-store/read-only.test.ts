/**
 * PostgreSQL: errand's reads on a session that cannot write — a read replica, a hot standby, an
 * old primary demoted by a failover, or a role with `default_transaction_read_only = on` (what
 * this test sets through the URL's `options`). The commands that only read (`errand stats`,
 * `queue list`, `jobs list`, …) and the library's reads must answer there, as they do on the
 * primary.
 *
 * Before the fix stats() and throughput() began by folding the counter deltas (a DELETE and an
 * upsert, only a saving: the reads add the deltas anyway), so on such a session they failed with
 * "cannot execute SELECT in a read-only transaction", and `errand stats` / `errand queue list`
 * exited 1 with "unexpected error" and a stack trace.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { defineJob, openErrand, silentLogger } from "../../src/index.js";
import { run } from "../cli/helpers.js";
import { freshSchema, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";

const skip = await skipUnlessPostgres();

const work = defineJob({ name: "work", queue: "ro", schema: z.object({ n: z.number() }), run: () => {} });

test("reads and the read-only CLI commands answer on a session that cannot write", { skip }, async () => {
  const { schema, drop } = freshSchema("errand_ro");
  const primary = await openErrand({ url: postgresUrl(), schema, logger: silentLogger(), jobs: [work] });
  const readOnlyUrl = `${postgresUrl()}?options=-c%20default_transaction_read_only%3Don`;
  try {
    for (let n = 0; n < 3; n++) await primary.enqueue(work, { n });
    await primary.processJobs({ limit: 2 });
    const expected = await primary.stats();

    const replica = await openErrand({ url: readOnlyUrl, schema, logger: silentLogger(), migrate: false });
    try {
      const stats = await replica.stats();
      assert.deepEqual(
        stats.map((s) => [s.queue, s.pending, s.completed]),
        expected.map((s) => [s.queue, s.pending, s.completed]),
      );
      assert.deepEqual(
        stats.map((s) => [s.queue, s.pending, s.completed]),
        [["ro", 1, 2]],
      );
      const buckets = await replica.throughput(3_600_000, 60_000);
      assert.equal(
        buckets.reduce((n, b) => n + b.completed, 0),
        2,
      );
      assert.equal((await replica.listJobs({ queue: "ro" })).jobs.length, 3);
      await replica.listWorkers(60_000);
      await replica.listSchedules();
      await replica.deadLetterGroups();
      await replica.queueTimings(3_600_000, 100);
    } finally {
      await replica.close();
    }

    for (const args of [
      ["stats"],
      ["queue", "list"],
      ["jobs", "list"],
      ["dlq", "list"],
      ["schedule", "list"],
    ]) {
      const result = await run([...args, "--url", readOnlyUrl, "--schema", schema]);
      assert.equal(result.code, 0, `errand ${args.join(" ")}: ${result.stderr}`);
    }
  } finally {
    await primary.close();
    await drop();
  }
});
