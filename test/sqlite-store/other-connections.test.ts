/**
 * What only the SQLite store has to prove about other connections on its file: SQLITE_BUSY past
 * busy_timeout is thrown, and another connection's commit wakes listeners.
 * What every store shares is in test/conformance/. Each test gets its own database file under
 * os.tmpdir().
 *
 *   node --import tsx --test test/sqlite-store/other-connections.test.ts
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { connection, fresh, job } from "../helpers/sqlite.js";
import { sleep, within } from "../helpers/wait.js";

// ── errors surface ─────────────────────────────────────────────────────────────────────────

test("SQLITE_BUSY past busy_timeout is thrown, not swallowed", async (t) => {
  const { path, store } = await fresh(t, { busyTimeoutMs: 20 });
  await store.insertJobs([job()]);
  const other = connection(t, path);
  other.exec("BEGIN IMMEDIATE");
  await assert.rejects(store.claimJobs({ queue: "q", limit: 1, workerId: "w", leaseMs: 1000 }), {
    code: "SQLITE_BUSY",
  });
  await assert.rejects(store.insertJobs([job()]), { code: "SQLITE_BUSY" });
  other.exec("ROLLBACK");
  assert.equal((await store.claimJobs({ queue: "q", limit: 1, workerId: "w", leaseMs: 1000 })).length, 1);
});

// ── wake-ups ───────────────────────────────────────────────────────────────────────────────

test("another connection's commit wakes listeners (PRAGMA data_version); unsubscribing stops it", async (t) => {
  const { path, store } = await fresh(t, { pollIntervalMs: 10 });
  const other = openSqliteStore({ path });
  t.after(() => other.close());

  const calls: (string | null)[] = [];
  let wake: (value: string | null) => void = () => {};
  const unsubscribe = store.onJobsAvailable((queue) => {
    calls.push(queue);
    wake(queue);
  });
  const own = new Promise<string | null>((resolve) => (wake = resolve));
  await store.insertJobs([job({ queue: "mine" })]);
  assert.equal(await within(own, 2000, "an in-process wake-up"), "mine");

  const remote = new Promise<string | null>((resolve) => (wake = resolve));
  await other.insertJobs([job({ queue: "theirs" })]);
  assert.equal(await within(remote, 2000, "a wake-up from another connection"), null);

  unsubscribe();
  const seen = calls.length;
  await other.insertJobs([job({ queue: "theirs" })]);
  await sleep(60);
  assert.equal(calls.length, seen, "no calls after unsubscribe");
});
