/**
 * The SQLite store's one connection: opening the file (or sharing the application's handle),
 * its pragmas, the statement cache, SQLite's clock, and how operations get onto the connection.
 *
 * better-sqlite3 is synchronous, so every operation is a synchronous transaction no other
 * JavaScript can interleave with — except completeInTransaction (leases.ts), whose `fn` may be
 * async: it holds the gate (gate.ts) and `run` makes every other operation wait for it.
 */
import Database from "better-sqlite3";
import { ErrandError, ValidationError } from "../../errors.js";
import { Gate } from "./gate.js";
import { type Db, describe, isDatabase, type Statement, Statements } from "./handle.js";
import * as Q from "./queries.js";

export interface ConnectionOptions {
  /** Database file; default `./errand.db`. `:memory:` works for a single connection. */
  path?: string;
  /** The application's own better-sqlite3 handle: errand shares it and never closes it. */
  db?: Db;
  /** busy_timeout set on a handle errand opens; default 5000 ms. */
  busyTimeoutMs?: number;
  /**
   * For tests only: the store's "now" in ms since the epoch, instead of SQLite's clock, so a test
   * can move time (leases, due times, retention) without waiting. Production leaves it unset.
   */
  clock?: () => number;
}

export class Connection {
  /** The connection errand uses: its own, or the application's shared handle. */
  readonly db: Db;
  readonly ownsDb: boolean;
  readonly statements: Statements;
  /** Held by completeInTransaction while its transaction spans an await (gate.ts). */
  readonly gate = new Gate();
  closed = false;

  constructor(options: ConnectionOptions) {
    this.statements = new Statements(options.clock);
    if (options.db !== undefined && options.path !== undefined) {
      throw new ValidationError("openSqliteStore: pass either `path` or `db`, not both");
    }
    if (options.db !== undefined) {
      if (!isDatabase(options.db)) {
        throw new ValidationError(
          `openSqliteStore: \`db\` must be a better-sqlite3 Database; got ${describe(options.db)}`,
        );
      }
      this.db = options.db;
      this.ownsDb = false;
    } else {
      this.db = new Database(options.path ?? "./errand.db");
      this.ownsDb = true;
      // busy_timeout first: switching to WAL needs a lock another process may hold right now.
      this.db.pragma(Q.PRAGMA_BUSY_TIMEOUT(options.busyTimeoutMs ?? 5000));
      switchToWal(this.db, options.busyTimeoutMs ?? 5000);
      this.db.pragma(Q.PRAGMA_SYNCHRONOUS_NORMAL);
    }
  }

  /** The prepared statement for `sql` on errand's connection. */
  q(sql: string): Statement {
    return this.statements.get(this.db, sql);
  }

  /** SQLite's clock, in ms since the epoch. */
  now(): number {
    return this.statements.now(this.db);
  }

  /**
   * Runs a synchronous operation on the connection — at once, unless completeInTransaction
   * holds it from another async context: then once it lets go.
   */
  run<T>(operation: () => T): Promise<T> {
    if (this.closed) return Promise.reject(closedError());
    if (this.gate.blocked) return this.gate.released.then(() => this.run(operation));
    try {
      return Promise.resolve(operation());
    } catch (err) {
      return Promise.reject(err);
    }
  }
}

export function closedError(): ErrandError {
  return new ErrandError("ERR_CLOSED", "the SQLite store is closed");
}

/** A worker operation refused while the application holds a transaction open on a shared handle. */
export function storeBusy(operation: string): ErrandError {
  return new ErrandError(
    "ERR_STORE_BUSY",
    `${operation}: the application holds a transaction open on the SQLite connection errand shares; retry after it ends`,
  );
}

/**
 * `journal_mode = WAL`, tried again while the file is busy, up to the busy timeout. SQLite does
 * not call the busy handler for this switch when another connection holds the write lock of a
 * file still in rollback mode (the pragma already reads the file, and waiting could deadlock): it
 * answers SQLITE_BUSY at once, so processes opening one new file together failed with "database
 * is locked" (seen in CI; test/sqlite-store/wal-switch.test.ts holds the lock from another
 * process). Waiting here blocks the thread, as every SQLite wait does (busy_timeout too).
 */
function switchToWal(db: Db, timeoutMs: number): void {
  const deadline = Date.now() + timeoutMs;
  for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, 50)) {
    try {
      db.pragma(Q.PRAGMA_WAL);
      return;
    } catch (err) {
      if ((err as { code?: unknown }).code !== "SQLITE_BUSY" || Date.now() >= deadline) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pauseMs);
    }
  }
}
