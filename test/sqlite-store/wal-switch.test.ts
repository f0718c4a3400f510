/**
 * Opening a file another process is writing in rollback-journal mode (a new file, before any
 * errand switched it to WAL): SQLite answers the switch to WAL with SQLITE_BUSY at once, without
 * waiting for its busy handler, so a process opening one new file together with others failed
 * with "database is locked" (CI, test/sqlite-store/migrations.test.ts's several-processes test,
 * once in a few runs). Here another process holds the write lock for 400 ms, deterministically:
 * the open waits for it, as busy_timeout promises, and ends in WAL mode.
 *
 *   node --import tsx --test test/sqlite-store/wal-switch.test.ts
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { tempPath } from "../helpers/sqlite.js";

/**
 * A process that writes `path` in rollback mode and holds its write lock `ms`, then commits and
 * exits; resolves once the lock is held, with the process's exit.
 */
async function holdWriteLock(path: string, ms: number): Promise<{ exited: Promise<unknown> }> {
  const child = spawn(
    process.execPath,
    [
      "-e",
      `const Database = require("better-sqlite3");
       const db = new Database(process.argv[1]);
       db.exec("CREATE TABLE IF NOT EXISTS app (x)");
       db.exec("BEGIN IMMEDIATE");
       db.exec("INSERT INTO app VALUES (1)");
       console.log("locked");
       setTimeout(() => { db.exec("COMMIT"); db.close(); }, Number(process.argv[2]));`,
      path,
      String(ms),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = once(child, "exit");
  const lines = createInterface({ input: child.stdout });
  const [line] = (await once(lines, "line")) as [string];
  assert.equal(line, "locked");
  return { exited };
}

test("opening a file another process holds the write lock of waits for it and switches to WAL", async (t) => {
  const path = await tempPath(t);
  const { exited } = await holdWriteLock(path, 400);
  const store = openSqliteStore({ path });
  try {
    assert.equal(store.db.pragma("journal_mode", { simple: true }), "wal");
    await store.migrate();
    assert.equal(store.db.prepare("SELECT count(*) FROM app").pluck().get(), 1, "the other process's commit");
  } finally {
    await store.close();
    await exited;
  }
});

test("a switch still busy after busy_timeout fails with SQLITE_BUSY, not later", async (t) => {
  const path = await tempPath(t);
  const { exited } = await holdWriteLock(path, 1500);
  try {
    assert.throws(() => openSqliteStore({ path, busyTimeoutMs: 200 }), { code: "SQLITE_BUSY" });
  } finally {
    await exited;
  }
});
