/**
 * A job's outcome while someone else holds the lock its write needs, for longer than errand
 * waits for it: on SQLite the application's own write transaction on errand's file (a long
 * import, a VACUUM) past busy_timeout; on PostgreSQL a SHARE lock on the jobs table (what a plain
 * `CREATE INDEX` takes) past the statement timeout. Reads go on, writes fail. Once the lock goes,
 * the job the handler finished must end `completed` with its result — never `failed`.
 *
 * Before the fix the completer counted each failed write of the outcome as a strike against the
 * outcome itself (the store still answered its `SELECT now()` probe), and after three it
 * replaced the outcome by a permanent failure: the job landed in the dead-letter queue with
 * "errand could not store this attempt's outcome (completed): database is locked" (SQLite) or
 * "canceling statement due to statement timeout" (PostgreSQL), its result lost, though its
 * work was done. A lock or timeout error is now never held against the outcome; it waits for
 * the store like any other unreachable-store error.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import Database from "better-sqlite3";
import pg from "pg";
import { z } from "zod";
import { createLogger, type Duration, defineJob, type Errand, openErrand } from "../../src/index.js";
import { checkedStore } from "../../src/store/checked.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { target } from "../helpers/targets.js";
import { waitFor, within } from "../helpers/wait.js";

/** A JSON logger whose messages the test reads. */
function capturingLogger() {
  const lines: { msg: string; err?: { message?: string } }[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ level: "info", pretty: false, destination }), lines };
}

let release: () => void = () => {};
const held = defineJob({
  name: "held",
  queue: "locked",
  maxAttempts: 3,
  schema: z.object({}),
  async run(_payload, ctx) {
    // Only the first run waits for the test: with PostgreSQL's 1 s lease the job may be rescued
    // while the lock is held and run again once it goes (at least once), which then completes.
    if (ctx.attempt === 1)
      await new Promise<void>((resolve) => {
        release = resolve;
      });
    return { done: true };
  },
});

/**
 * Runs one job: once its handler is running, `lock()` takes the lock, the handler returns, and
 * the lock is held until the worker has failed to write the outcome four times in a row (past
 * the three strikes that used to fail it) — or has given the outcome up. Then `unlock()`.
 */
async function runUnderLock(
  errand: Errand,
  lines: ReturnType<typeof capturingLogger>["lines"],
  lock: () => Promise<void>,
  unlock: () => Promise<void>,
  lease: Duration,
) {
  const worker = errand.work({ locked: { concurrency: 1 } }, { pollInterval: 50, lease });
  try {
    const job = await errand.enqueue(held, {});
    await waitFor(async () => (await errand.getJob(job.id))?.state === "running", "the job to run", 30_000);
    await lock();
    let unlocked = false;
    try {
      release();
      await waitFor(
        () =>
          lines.filter((l) => l.msg === "recording job outcomes failed; retrying").length >= 4 ||
          lines.some((l) => l.msg === "the store refused this job's outcome; recording it as failed"),
        "four failed writes of the outcome",
        90_000,
      );
      await unlock();
      unlocked = true;
    } finally {
      if (!unlocked) await unlock();
    }
    const done = await waitFor(
      async () => {
        const j = await errand.getJob(job.id);
        return j && ["completed", "failed"].includes(j.state) ? j : null;
      },
      "the job to finish",
      60_000,
    );
    assert.equal(
      done.state,
      "completed",
      `the job completed, not ${done.state}: ${done.lastError ?? ""} — ${JSON.stringify(done.attempts)}`,
    );
    assert.deepEqual(done.result, { done: true });
    assert.ok(
      !lines.some((l) => l.msg === "the store refused this job's outcome; recording it as failed"),
      "the outcome was never given up",
    );
  } finally {
    await within(worker.stop(), 60_000, "worker.stop()");
  }
}

describe("an outcome written while another connection holds the lock", { timeout: 240_000 }, () => {
  test("SQLite: the application's write transaction outlasts busy_timeout", async () => {
    const dir = await mkdtemp(join(tmpdir(), "errand-locked-"));
    const path = join(dir, "errand.db");
    const { logger, lines } = capturingLogger();
    // A short busy_timeout: each write of the outcome gives up after 100 ms, so four rounds of
    // them pass in about a second instead of the default 5 s each.
    const errand = await openErrand({
      store: checkedStore(openSqliteStore({ path, busyTimeoutMs: 100 })),
      logger,
      jobs: [held],
    });
    const app = new Database(path);
    try {
      await runUnderLock(
        errand,
        lines,
        async () => {
          app.exec("BEGIN IMMEDIATE");
        },
        async () => {
          app.exec("COMMIT");
        },
        "30s",
      );
    } finally {
      app.close();
      await errand.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("PostgreSQL: a SHARE lock on the jobs table (CREATE INDEX) outlasts the statement timeout", {
    skip: target("postgres").skip,
  }, async () => {
    const opened = await target("postgres").openStore();
    await opened.store.close();
    const { logger, lines } = capturingLogger();
    const errand = await openErrand({ url: opened.url, schema: opened.schema, logger, jobs: [held] });
    const app = new pg.Client({ connectionString: opened.url });
    await app.connect();
    try {
      await runUnderLock(
        errand,
        lines,
        async () => {
          await app.query("BEGIN");
          await app.query(`LOCK TABLE "${opened.schema}".jobs IN SHARE MODE`);
        },
        async () => {
          await app.query("COMMIT");
        },
        // The shortest lease: statements time out after 1 s, so four rounds pass in seconds.
        "1s",
      );
    } finally {
      await app.end();
      await errand.close();
      await opened.cleanup();
    }
  });
});
