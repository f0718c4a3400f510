/**
 * Transactional enqueue with Knex on PostgreSQL (the pg driver):
 *
 *   await knex.transaction(async (trx) => {
 *     const [user] = await trx("users").insert({ email }).returning("id");
 *     await errand.enqueue(sendEmail, { userId: user.id }, { tx: fromKnex(trx) });
 *   });
 */
import { ValidationError } from "../errors.js";
import type { TxHandle } from "../job.js";
import { notATransaction, OrmTransaction, type Statement, type StatementResult } from "./transaction.js";

interface KnexTransaction {
  isTransaction?: unknown;
  isCompleted?: () => boolean;
  client?: { acquireConnection?: () => Promise<unknown> };
}

interface PgConnection {
  query(statement: Statement): Promise<StatementResult>;
}

/**
 * errand's statements on the connection a Knex transaction holds. They go to that connection
 * directly rather than through `trx.raw`: raw results pass through the application's
 * `postProcessResponse` (knexSnakeCaseMappers renames `now_ms` to `nowMs`), and raw bindings
 * are `?`, not the `$1` errand's SQL is written with.
 */
export function fromKnex(trx: object): TxHandle {
  const t = trx as KnexTransaction;
  if (t?.isTransaction !== true || typeof t.isCompleted !== "function" || !t.client?.acquireConnection) {
    throw notATransaction(
      "fromKnex",
      "the transaction Knex passes to knex.transaction(async (trx) => …) (not the knex instance itself)",
      trx,
    );
  }
  return new OrmTransaction("Knex", async (statement) => {
    // After commit or rollback the connection is back in the pool: a statement on it would
    // store the job outside any transaction.
    if (t.isCompleted?.()) {
      throw new ValidationError("fromKnex: the Knex transaction has already been committed or rolled back");
    }
    const connection = (await t.client?.acquireConnection?.()) as PgConnection | undefined;
    if (typeof connection?.query !== "function") {
      throw new ValidationError(
        "fromKnex: the Knex transaction is not on the pg driver (errand's PostgreSQL store needs a pg connection)",
      );
    }
    return connection.query(statement);
  });
}
