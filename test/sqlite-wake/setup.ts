/**
 * What the SQLite wake-up tests (test/sqlite-wake/) share: the waits, a commit from another
 * connection, a listener's wake-ups, and a spy on fs.watch.
 */
import fs from "node:fs";
import type { TestContext } from "node:test";
import type Database from "better-sqlite3";
import type { SqliteStore } from "../../src/store/sqlite/index.js";
/** Long enough that a wake-up seen within WAIT_MS cannot have come from the poll. */
export const NO_POLL = { pollIntervalMs: 60_000 };
export const WAIT_MS = 5_000;

let commits = 0;
/** One commit on `db` (a row in errand's ledger, which nothing in these tests reads). */
export function commitOn(db: Database.Database): void {
  db.prepare("INSERT INTO errand_ledger (key, job_id, value, created_at) VALUES (?, '1', NULL, 0)").run(
    `commit-${commits++}`,
  );
}

/** Subscribes to `store` and hands out one promise per expected wake-up. */
export function wakes(t: TestContext, store: SqliteStore) {
  const calls: (string | null)[] = [];
  let resolve: (queue: string | null) => void = () => {};
  const off = store.onJobsAvailable((queue) => {
    calls.push(queue);
    resolve(queue);
  });
  t.after(off);
  return {
    calls,
    off,
    /** The next wake-up (call before the commit that should cause it). */
    next(): Promise<string | null> {
      return new Promise((r) => (resolve = r));
    },
  };
}

/**
 * Spies on fs.watch (calls go through to the real one): every watcher made, and whether it was
 * closed. `fail` makes fs.watch throw instead, or the watcher emit an error once it is made.
 */
export function spyOnWatch(t: TestContext, fail?: { throws?: Error; emits?: Error }) {
  const real = fs.watch;
  const made: { dir: string; closed: boolean }[] = [];
  t.mock.method(fs, "watch", (...args: Parameters<typeof fs.watch>) => {
    if (fail?.throws) throw fail.throws;
    const watcher = real(...args);
    const entry = { dir: String(args[0]), closed: false };
    made.push(entry);
    const close = watcher.close.bind(watcher);
    watcher.close = () => {
      entry.closed = true;
      close();
    };
    const emits = fail?.emits;
    if (emits) setImmediate(() => watcher.emit("error", emits));
    return watcher;
  });
  return made;
}
