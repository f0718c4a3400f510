/**
 * The shutdown timeout is hard on SQLite too, while another process holds the file's write lock
 * (an application's long transaction, a backup, a VACUUM). A SQLite statement that meets the
 * lock waits up to busy_timeout (5 s by default) *inside the thread*: no timer, no signal handler
 * runs meanwhile, so errand's deadline cannot cut it short. `errand worker --shutdown-timeout 2s`
 * runs a 60 s job; the test sends SIGTERM, then takes the lock (BEGIN IMMEDIATE on its own
 * connection) and holds it: the worker must exit 1 about 3 s after the signal (the timeout, then
 * 1 s for the outcomes), the job not lost. (A statement already waiting when the signal arrives
 * still waits out its busy_timeout before the signal is even seen: that much cannot be cut.)
 *
 * Before the fix it exited about 10 s after SIGTERM: the released job's outcome, the worker's
 * unregistering and their retries each blocked the thread for a whole busy_timeout. A stopping
 * worker now lowers the busy_timeout of a SQLite handle errand opened to 250 ms
 * (Store.limitLockWaits), so each blocked write costs at most that.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import { openErrand, silentLogger } from "../../src/index.js";
import { exitOf, FIXTURE_JOBS, start, waitFor } from "../cli/helpers.js";
import { nap } from "../fixtures/jobs.js";

/** The shutdown timeout, the deadline's second for the last outcomes, and 3 s for a loaded machine. */
const TIMEOUT_MS = 2_000;
const EXIT_BOUND_MS = TIMEOUT_MS + 1_000 + 3_000;

test("SIGTERM while another process holds the SQLite write lock: exit 1 about --shutdown-timeout later", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "errand-sqlite-deadline-"));
  const path = join(dir, "errand.db");
  const errand = await openErrand({ url: path, logger: silentLogger(), jobs: [nap] });
  const job = await errand.enqueue(nap, { ms: 60_000 });
  const proc = start(
    [
      "--url",
      path,
      "worker",
      "--jobs",
      FIXTURE_JOBS,
      "--queue",
      "slow",
      "--shutdown-timeout",
      "2s",
      "--lease",
      "30s",
    ],
    { ERRAND_FIXTURE_DIR: dir },
  );
  const app = new Database(path);
  try {
    await waitFor("the nap to run", async () => (await errand.getJob(job.id))?.state === "running", 60_000);
    const sent = Date.now();
    proc.child.kill("SIGTERM");
    // The lock is taken once the stop has begun: a statement the worker had begun before the
    // signal would wait out its whole busy_timeout first (the signal handler runs only after it).
    await waitFor("the graceful stop to begin", () => proc.stderr().includes("SIGTERM received"), 30_000);
    app.exec("BEGIN IMMEDIATE");
    const result = await exitOf(proc, EXIT_BOUND_MS);
    const tookMs = Date.now() - sent;
    t.diagnostic(`exited ${tookMs} ms after SIGTERM (--shutdown-timeout 2s, busy_timeout 5 s)`);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /shutdown timeout reached/);
    app.exec("ROLLBACK");
    const after = await errand.getJob(job.id);
    assert.ok(after?.state === "running" || after?.state === "pending", `not lost: ${after?.state}`);
    assert.ok(
      after.attempts.every((a) => a.outcome === "interrupted"),
      JSON.stringify(after.attempts),
    );
  } finally {
    proc.child.kill("SIGKILL");
    if (app.inTransaction) app.exec("ROLLBACK");
    app.close();
    await errand.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the lowered lock wait lasts only while a worker stops, and never touches the application's own handle", async () => {
  const dir = mkdtempSync(join(tmpdir(), "errand-sqlite-waits-"));
  const path = join(dir, "errand.db");
  const busy = (db: Database.Database) => db.pragma("busy_timeout", { simple: true });
  try {
    const owned = await openErrand({ url: path, logger: silentLogger(), jobs: [nap] });
    const db = (owned.store as unknown as { db: Database.Database }).db;
    assert.equal(busy(db), 5000);
    const worker = owned.work({ slow: { concurrency: 1 } }, { pollInterval: 50 });
    const stopping = worker.stop({ timeout: "1s" });
    assert.equal(busy(db), 250, "lowered while the worker stops");
    assert.equal((await stopping).clean, true);
    assert.equal(busy(db), 5000, "restored after a clean stop");
    // Two stops at once (two workers of one errand): the first to end does not restore the wait
    // the other still needs lowered.
    const first = owned.store.limitLockWaits?.(250);
    const second = owned.store.limitLockWaits?.(250);
    first?.();
    assert.equal(busy(db), 250, "still lowered while the other stop runs");
    second?.();
    assert.equal(busy(db), 5000, "restored once both ended");
    await owned.close();

    const app = new Database(path);
    app.pragma("busy_timeout = 7000");
    const shared = await openErrand({ db: app, logger: silentLogger(), jobs: [nap] });
    const other = shared.work({ slow: { concurrency: 1 } }, { pollInterval: 50 });
    const stopped = other.stop({ timeout: "1s" });
    assert.equal(busy(app), 7000, "the application's handle keeps its setting");
    await stopped;
    await shared.close();
    app.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
