/**
 * The application's better-sqlite3 handle passed as `tx` (transactional enqueue): recognizing
 * one inside a transaction, and checking it is on errand's own file before anything is written
 * through it. A handle on another file has no errand tables (`no such table`) or, worse, other
 * ones: the job would land where no worker looks.
 */
import { ValidationError } from "../../errors.js";
import { type Db, describe, isDatabase, type Statements } from "./handle.js";
import { MAIN_FILE } from "./queries.js";

/**
 * A better-sqlite3 Database with a transaction open: `db.transaction(() => …)` cannot wait for a
 * promise, so an enqueue into it must happen — or fail — before it returns (errand.ts).
 */
export function inSynchronousTransaction(tx: unknown): tx is Db {
  return isDatabase(tx) && tx.open && tx.inTransaction;
}

/** The file of each handle seen (a connection's main database never changes). */
const files = new WeakMap<Db, string>();

/** The handle's database file as SQLite opened it (full path, symlinks resolved); '' in memory. */
function mainFile(db: Db, statements: Statements): string {
  let file = files.get(db);
  if (file === undefined) {
    const value = statements.get(db, MAIN_FILE).pluck().get();
    file = typeof value === "string" ? value : "";
    files.set(db, file);
  }
  return file;
}

/** `tx` as a Database on errand's own file (`own`), or a ValidationError saying what it is instead. */
export function checkTxHandle(tx: unknown, own: Db, statements: Statements): Db {
  if (!isDatabase(tx)) {
    // fromKysely / fromKnex / fromPrisma wrap a PostgreSQL transaction; their `orm` names it.
    const orm = (tx as { orm?: unknown } | null)?.orm;
    const got = typeof orm === "string" ? `a ${orm} transaction wrapped for PostgreSQL` : describe(tx);
    throw new ValidationError(
      `enqueue tx: the SQLite store joins the transaction of a better-sqlite3 Database — pass that Database as tx (with an ORM, the one it runs on); got ${got}`,
    );
  }
  if (!tx.open) throw new ValidationError("enqueue tx: the better-sqlite3 Database passed as tx is closed");
  if (tx === own) return tx;
  const file = mainFile(tx, statements);
  const ownFile = mainFile(own, statements);
  if (file === "" || file !== ownFile) {
    throw new ValidationError(
      `enqueue tx: the better-sqlite3 Database passed as tx is on ${file || "an in-memory database"}, but errand's jobs are in ${ownFile || "an in-memory database"}; a job can only join a transaction on errand's own database (open errand on that file, or with { db })`,
    );
  }
  return tx;
}
