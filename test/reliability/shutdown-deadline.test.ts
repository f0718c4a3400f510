/**
 * The shutdown timeout is a hard limit (issue 12, item 4): `errand worker` on PostgreSQL whose
 * jobs table another session holds under an ACCESS EXCLUSIVE lock, so no outcome can be written
 * (every write of the worker waits on the lock, as on a database that does not answer). After
 * SIGTERM the worker must exit non-zero about its --shutdown-timeout later, and about a second
 * after a second SIGTERM; the outcome it could not write is simply not recorded (the job stays
 * `running` until its lease expires and a rescuer returns it, unless the server still runs the
 * write queued behind the lock once it is released).
 * Only this test's fresh schema is locked: the shared server is never stopped or cut.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import pg from "pg";
import { type Errand, openErrand, silentLogger } from "../../src/index.js";
import { exitOf, FIXTURE_JOBS, start, waitFor } from "../cli/helpers.js";
import { nap } from "../fixtures/jobs.js";
import { dropSchema, freshSchemaName, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";

const skip = await skipUnlessPostgres();

/**
 * The job is still `running` (its lease brings it back) or, when the server ran the write that
 * was queued behind the lock after the worker had gone, `pending` again, uncharged: never lost.
 */
async function assertNotLost(errand: Errand, id: string): Promise<void> {
  const job = await errand.getJob(id);
  assert.ok(job?.state === "running" || job?.state === "pending", `job state ${job?.state}`);
  assert.ok(
    job.attempts.every((a) => a.outcome === "interrupted"),
    JSON.stringify(job.attempts),
  );
}

describe("errand worker: the shutdown deadline holds when outcomes cannot be written", { skip }, () => {
  const schemas: string[] = [];
  const dirs: string[] = [];
  after(async () => {
    for (const schema of schemas) await dropSchema(schema);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** A worker running a 60 s nap, then the jobs table locked by another session. */
  async function lockedWorker(timeout: string) {
    const schema = freshSchemaName("errand_deadline");
    schemas.push(schema);
    const url = postgresUrl();
    const errand = await openErrand({ url, schema, logger: silentLogger(), jobs: [nap] });
    const job = await errand.enqueue(nap, { ms: 60_000 });
    const dir = mkdtempSync(join(tmpdir(), "errand-deadline-"));
    dirs.push(dir);
    const proc = start(
      ["--url", url, "--schema", schema, "worker", "--jobs", FIXTURE_JOBS, "--queue", "slow"].concat([
        "--shutdown-timeout",
        timeout,
        "--lease",
        "30s",
      ]),
      { ERRAND_FIXTURE_DIR: dir },
    );
    await waitFor("the nap to run", async () => (await errand.getJob(job.id))?.state === "running", 60_000);
    const locker = new pg.Client({ connectionString: url });
    locker.on("error", () => {});
    await locker.connect();
    await locker.query("BEGIN");
    await locker.query(`LOCK TABLE "${schema}".jobs IN ACCESS EXCLUSIVE MODE`);
    const unlock = async () => {
      await locker.query("ROLLBACK").catch(() => {});
      await locker.end().catch(() => {});
    };
    return { errand, job, proc, unlock };
  }

  test("SIGTERM: exits 1 about --shutdown-timeout later; the unwritten outcome is not recorded", async (t) => {
    const w = await lockedWorker("2s");
    try {
      const sent = Date.now();
      w.proc.child.kill("SIGTERM");
      // Before the fix the worker waited for the lock for as long as it was held.
      const result = await exitOf(w.proc, 15_000);
      const tookMs = Date.now() - sent;
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /shutdown timeout reached/);
      assert.match(result.stderr, /shutdown deadline passed with the store not answering/);
      assert.ok(tookMs >= 2000, `exited ${tookMs} ms after SIGTERM, before its 2 s timeout`);
      t.diagnostic(`exited ${tookMs} ms after SIGTERM (--shutdown-timeout 2s)`);
      await w.unlock();
      await assertNotLost(w.errand, w.job.id);
    } finally {
      w.proc.child.kill("SIGKILL");
      await w.unlock();
      await w.errand.close();
    }
  });

  test("a second SIGTERM: exits 1 within about a second, whatever the store does", async (t) => {
    const w = await lockedWorker("10m");
    try {
      w.proc.child.kill("SIGTERM");
      await waitFor("the graceful stop to begin", () => w.proc.stderr().includes("SIGTERM received"), 30_000);
      const sent = Date.now();
      w.proc.child.kill("SIGTERM");
      const result = await exitOf(w.proc, 10_000);
      t.diagnostic(`exited ${Date.now() - sent} ms after the second SIGTERM`);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /received again: releasing running jobs now/);
      await w.unlock();
      await assertNotLost(w.errand, w.job.id);
    } finally {
      w.proc.child.kill("SIGKILL");
      await w.unlock();
      await w.errand.close();
    }
  });
});
