/**
 * Transactional enqueue with Drizzle ORM (node-postgres or better-sqlite3 driver):
 *
 *   await db.transaction(async (tx) => {
 *     const [user] = await tx.insert(users).values({ email }).returning();
 *     await errand.enqueue(sendEmail, { userId: user.id }, { tx: fromDrizzle(tx) });
 *   });
 */
import type { TxHandle } from "../job.js";
import { notATransaction } from "./transaction.js";

/**
 * The driver connection under a Drizzle transaction: the node-postgres client that holds its
 * BEGIN, or the better-sqlite3 Database whose transaction is open (Drizzle's SQLite transactions
 * are synchronous, and so is the enqueue into them). errand's stores join either as they join
 * one passed by hand, so the job commits or rolls back with the application's writes.
 */
export function fromDrizzle(tx: object): TxHandle {
  // Drizzle keeps a transaction's driver connection on its session and has no public accessor
  // for it. `rollback` tells a transaction from the database object, whose session's client is
  // the pool (statements on it would run outside the transaction).
  const candidate = tx as { rollback?: unknown; session?: { client?: unknown } } | null;
  const client = candidate?.session?.client;
  if (typeof candidate?.rollback !== "function" || typeof client !== "object" || client === null) {
    throw notATransaction(
      "fromDrizzle",
      "the transaction Drizzle passes to db.transaction((tx) => …) on the node-postgres or better-sqlite3 driver (not the db object itself)",
      tx,
    );
  }
  return client;
}
