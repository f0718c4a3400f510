/**
 * A store that cannot take a handler's own writes just then — ctx.once's ledger entry,
 * ctx.completeInTransaction — because another connection holds SQLite's write lock past
 * busy_timeout (a backup, a migration, an operator's sqlite3 shell). The call waits for the
 * store, as outcome writes do; it is not the job's failure.
 *
 * Found by a helper (another process holding BEGIN IMMEDIATE for 8 s): with `maxAttempts: 1`
 * the job went to the dead-letter queue with "database is locked" — after its ctx.once effect
 * had run, and with more attempts the effect ran twice (its ledger entry was never written); a
 * completeInTransaction that met the lock charged the attempt. Here busy_timeout is 100 ms and
 * the lock is held 1.5 s, so each call meets the lock many times over.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import { z } from "zod";
import { defineJob, type Errand, openErrand, silentLogger } from "../../src/index.js";
import type { AnyJobDefinition, JobRecord } from "../../src/job.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { waitFor } from "../helpers/wait.js";

/** An errand on a fresh file with a 100 ms busy_timeout, a second connection for the lock, and the jobs. */
async function withLockedFile<J extends AnyJobDefinition>(
  makeJob: (holdLock: () => void) => J,
  fn: (errand: Errand, job: J, other: Database.Database) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "errand-ctx-busy-"));
  const path = join(dir, "jobs.db");
  const other = new Database(path);
  other.pragma("busy_timeout = 100");
  const holdLock = () => {
    other.exec("BEGIN IMMEDIATE");
    setTimeout(() => other.exec("COMMIT"), 1_500);
  };
  const job = makeJob(holdLock);
  const errand = await openErrand({
    store: new SqliteStore({ path, busyTimeoutMs: 100 }),
    logger: silentLogger(),
    jobs: [job],
  });
  try {
    await fn(errand, job, other);
  } finally {
    await errand.close();
    other.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Enqueues `job`, works its queue until the job ends, and answers its record. */
async function runToEnd(errand: Errand, job: AnyJobDefinition): Promise<JobRecord | null> {
  const { id } = await errand.enqueue(job, {});
  const worker = errand.work([job.queue], { lease: "10s" });
  try {
    await waitFor(
      async () => !["pending", "running"].includes((await errand.getJob(id))?.state ?? "pending"),
      "the job to end",
      20_000,
    );
    return await errand.getJob(id);
  } finally {
    await worker.stop();
  }
}

test("ctx.once: a ledger entry that meets a lock waits for it; the effect runs once and the job completes", async () => {
  let effects = 0;
  await withLockedFile(
    (holdLock) =>
      defineJob({
        name: "send",
        queue: "mail",
        schema: z.object({}),
        maxAttempts: 1,
        async run(_p, ctx) {
          return ctx.once("send-mail", () => {
            effects++;
            holdLock(); // the entry is written after the effect: it meets the lock
            return "sent";
          });
        },
      }),
    async (errand, job) => {
      const record = await runToEnd(errand, job);
      assert.equal(record?.state, "completed", record?.lastError ?? "");
      assert.equal(record?.result, "sent");
      assert.equal(effects, 1);
    },
  );
});

test("ctx.completeInTransaction that meets a lock waits for it: its write commits once, no attempt charged", async () => {
  await withLockedFile(
    (holdLock) =>
      defineJob({
        name: "book",
        queue: "books",
        schema: z.object({}),
        maxAttempts: 1,
        async run(_p, ctx) {
          holdLock();
          return ctx.completeInTransaction((tx) => {
            (tx as Database.Database).prepare("INSERT INTO bookings (at) VALUES (?)").run(Date.now());
            return "booked";
          });
        },
      }),
    async (errand, job, other) => {
      other.exec("CREATE TABLE bookings (at INTEGER)");
      const record = await runToEnd(errand, job);
      assert.equal(record?.state, "completed", record?.lastError ?? "");
      assert.deepEqual(
        record?.attempts.map((a) => a.outcome),
        ["completed"],
      );
      assert.equal(other.prepare("SELECT count(*) FROM bookings").pluck().get(), 1);
    },
  );
});

test("ctx.completeInTransaction: an error its fn throws itself, however busy it looks, is not retried", async () => {
  let runs = 0;
  await withLockedFile(
    () =>
      defineJob({
        name: "call",
        queue: "calls",
        schema: z.object({}),
        maxAttempts: 1,
        async run(_p, ctx) {
          return ctx.completeInTransaction(() => {
            runs++;
            throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });
          });
        },
      }),
    async (errand, job) => {
      const record = await runToEnd(errand, job);
      assert.equal(record?.state, "failed");
      assert.match(record?.lastError ?? "", /ECONNREFUSED/);
      assert.equal(runs, 1, "the application's fn ran once");
    },
  );
});
